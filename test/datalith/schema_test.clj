(ns datalith.schema-test
  "Schema: installed through connect and as data, read back with d/schema,
  schemaless attributes, every value type (URIs since stop 47), long values, alterations."
  (:require [clojure.java.io :as io]
            [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu :refer [each-store]])
  (:import (clojure.lang Keyword Symbol)
           (java.net URI)
           (java.util Arrays Date UUID)))

(def map-schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity
                :db/cardinality :db.cardinality/one}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/friend {:db/valueType :db.type/ref}})

(def vector-schema
  [{:db/ident :user/email :db/valueType :db.type/string :db/unique :db.unique/identity
    :db/cardinality :db.cardinality/one}
   {:db/ident :user/tags :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   {:db/ident :user/friend :db/valueType :db.type/ref}])

(defn- props [db attr ks]
  (select-keys (get (d/schema db) attr) ks))

(defn- error-of [f]
  (try (f) :no-error
       (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))

(deftest schema-through-connect
  (doseq [s [map-schema vector-schema]]
    (each-store [conn {:schema s}]
      (let [db (d/db conn)]
        (is (= 1 (d/basis-t db)))
        (is (= {:db/valueType :db.type/string :db/unique :db.unique/identity
                :db/cardinality :db.cardinality/one :db/ident :user/email}
               (props db :user/email [:db/valueType :db/unique :db/cardinality :db/ident])))
        (is (= {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
               (props db :user/tags [:db/valueType :db/cardinality])))
        (is (= #{:user/email :user/tags :user/friend} (set (keys (d/schema db)))))
        (testing "the schema is in force"
          (d/transact! conn [{:user/email "a@x" :user/tags [:a :b]}])
          (d/transact! conn [{:user/email "a@x" :user/tags [:c]}])
          (is (= #{:a :b :c} (:user/tags (d/entity (d/db conn) [:user/email "a@x"])))))))))

(deftest reconnect-with-same-schema
  (let [dir (tu/temp-dir)
        path (.getPath dir)]
    (try
      (with-open [conn (d/connect path {:schema map-schema})]
        (d/transact! conn [{:user/email "a@x"}])
        (is (= 2 (d/basis-t (d/db conn)))))
      (testing "the same schema, in either form, is a no-op"
        (doseq [s [map-schema vector-schema (select-keys map-schema [:user/email])]]
          (with-open [conn (d/connect path {:schema s})]
            (is (= 2 (d/basis-t (d/db conn))))
            (is (= #{:user/email :user/tags :user/friend} (set (keys (d/schema (d/db conn))))))
            (is (some? (d/entid (d/db conn) [:user/email "a@x"]))))))
      (testing "a new attribute is installed; only it is transacted"
        (with-open [conn (d/connect path {:schema (assoc map-schema :user/age
                                                         {:db/valueType :db.type/long})})]
          (is (= 3 (d/basis-t (d/db conn))))
          (is (= [:user/age] (keep (fn [[e a v]] (when (= a :db/ident) v))
                                   (:data (first (d/tx-range conn 3 nil))))))))
      (finally (tu/delete-tree dir)))))

(deftest connect-forms
  (with-open [conn (d/connect)]
    (is (= 0 (d/basis-t (d/db conn)))))
  (with-open [conn (d/connect {:schema map-schema})]
    (is (= 1 (d/basis-t (d/db conn))))
    (is (contains? (d/schema (d/db conn)) :user/tags)))
  (let [dir (tu/temp-dir)]
    (try
      (with-open [conn (d/connect {:dir (.getPath dir) :schema vector-schema})]
        (d/transact! conn [{:user/email "a@x"}]))
      (with-open [conn (d/connect dir {:schema map-schema})]
        (is (= 2 (d/basis-t (d/db conn))))
        (is (some? (d/entid (d/db conn) [:user/email "a@x"]))))
      (finally (tu/delete-tree dir)))))

(deftest schema-as-data
  (each-store [conn {}]
    (let [r (d/transact! conn [{:db/ident :book/title :db/valueType :db.type/string
                                :db/cardinality :db.cardinality/one :db/doc "A title"}
                               {:db/ident :book/isbn :db/valueType :db.type/string
                                :db/unique :db.unique/identity}
                               {:db/ident :book/authors :db/valueType :db.type/ref
                                :db/cardinality :db.cardinality/many}])]
      (is (= {:db/ident :book/title :db/valueType :db.type/string
              :db/cardinality :db.cardinality/one :db/doc "A title"}
             (props (:db-after r) :book/title [:db/ident :db/valueType :db/cardinality :db/doc])))
      (d/transact! conn [{:book/isbn "1" :book/title "T" :book/authors [{:book/isbn "a1"}]}])
      (d/transact! conn [{:book/isbn "1" :book/title "U"}])
      (let [book (d/entity (d/db conn) [:book/isbn "1"])]
        (is (= "U" (:book/title book)))
        (is (= #{"a1"} (set (map :book/isbn (:book/authors book))))))
      (testing "the schema is data: its datoms are in the indexes"
        (let [db (d/db conn)
              title (d/entid db :book/title)]
          (is (= [title] (map :e (d/datoms db :avet :db/ident :book/title))))
          (is (= [(d/entid db :db.type/string)] (map :v (d/datoms db :eavt title :db/valueType)))))))))

(deftest schemaless-attributes
  (each-store [conn {}]
    (let [e (get-in (d/transact! conn [{:db/id "e" :free/x 1}]) [:tempids "e"])
          value (fn [] (:free/x (d/entity (d/db conn) e)))]
      (are [v] (let [_ (d/transact! conn [[:db/add e :free/x v]])
                     ds (d/datoms (d/db conn) :eavt e :free/x)]
                 (and (= v (value)) (= [v] (map :v ds))))
        "s" 42 1.5 :k 'sym true false #inst "2020-01-01" #uuid "0b0e4f5c-4f1b-4d8c-9d8b-5a7c3f2e1d00"
        {:a 1 :b [1 2]} [1 "two" :three] #{1 2 3} '(1 2) 12345678901234567890N 2.5M
        [:user/email "not a lookup ref"])
      (testing "a map form stores a collection as one value"
        (d/transact! conn [{:db/id e :free/x #{:a :b}}])
        (is (= #{:a :b} (value)))
        (is (= 1 (count (d/datoms (d/db conn) :eavt e :free/x))))))))

(def typed-schema
  {:t/string {:db/valueType :db.type/string}
   :t/long {:db/valueType :db.type/long}
   :t/double {:db/valueType :db.type/double}
   :t/float {:db/valueType :db.type/float}
   :t/boolean {:db/valueType :db.type/boolean}
   :t/keyword {:db/valueType :db.type/keyword}
   :t/symbol {:db/valueType :db.type/symbol}
   :t/ref {:db/valueType :db.type/ref}
   :t/instant {:db/valueType :db.type/instant}
   :t/uuid {:db/valueType :db.type/uuid}
   :t/bigint {:db/valueType :db.type/bigint}
   :t/bigdec {:db/valueType :db.type/bigdec}
   :t/bytes {:db/valueType :db.type/bytes}
   :t/tuple {:db/valueType :db.type/tuple :db/tupleTypes [:db.type/string :db.type/long]}
   :t/tuple1 {:db/valueType :db.type/tuple :db/tupleType :db.type/long}
   :t/uri {:db/valueType :db.type/uri}
   :t/uris {:db/valueType :db.type/tuple :db/tupleType :db.type/uri}})

(def typed-values
  "[attribute given stored-class]"
  [[:t/string "héllo, wörld" String]
   [:t/string "nul \u0000 byte, emoji \uD83D\uDE00, and \uFFFF" String]
   [:t/string "" String]
   [:t/long 42 Long]
   [:t/long (int 7) Long]
   [:t/long -9223372036854775808 Long]
   [:t/double 3.25 Double]
   [:t/double -0.5 Double]
   [:t/float (float 1.5) Float]
   [:t/boolean false Boolean]
   [:t/keyword :a/b Keyword]
   [:t/symbol 'a/b Symbol]
   [:t/instant #inst "2021-02-03T04:05:06.007Z" Date]
   [:t/uuid #uuid "6f1c1d6e-0b7a-4b8e-9c55-1a2b3c4d5e6f" UUID]
   [:t/bigint 123456789012345678901234567890N clojure.lang.BigInt]
   [:t/bigint (biginteger 5) clojure.lang.BigInt]
   [:t/bigdec 3.14159265358979323846M BigDecimal]
   [:t/tuple ["a" 1] clojure.lang.IPersistentVector]
   [:t/tuple1 [1 2 3] clojure.lang.IPersistentVector]
   [:t/uri (URI. "https://a.example/p%C3%A4/ä?q=1#f") URI]
   [:t/uri (URI. "urn:isbn:0451450523") URI]
   [:t/uris [(URI. "a:b") (URI. "http://c.example/")] clojure.lang.IPersistentVector]])

(deftest value-types-round-trip
  (each-store [conn {:schema typed-schema}]
    (doseq [[a v] typed-values]
      (let [e (get-in (d/transact! conn [{:db/id "e" a v}]) [:tempids "e"])
            db (d/db conn)
            got (map :v (d/datoms db :eavt e a))]
        (is (= [v] got) (str a))
        (is (instance? (some #(when (= [a v] (take 2 %)) (nth % 2)) typed-values) (first got))
            (str a))
        (is (= [e] (map :e (d/datoms db :avet a v))) (str a " by AVET"))
        (is (= v (get (d/entity db e) a)) (str a " by entity"))))
    (testing "refs and bytes"
      (let [r (d/transact! conn [{:db/id "e" :t/ref "f" :t/bytes (byte-array [0 1 -1 127])}
                                 {:db/id "f" :t/string "target"}])
            {:strs [e f]} (:tempids r)
            db (d/db conn)]
        (is (= [f] (map :v (d/datoms db :eavt e :t/ref))))
        (is (= "target" (:t/string (:t/ref (d/entity db e)))))
        (is (Arrays/equals (byte-array [0 1 -1 127]) ^bytes (:t/bytes (d/entity db e))))
        (is (= [e] (map :e (d/datoms db :avet :t/bytes (byte-array [0 1 -1 127])))))))
    (testing "a value of the wrong type is refused"
      (are [a v] (= :tx/value-type (error-of #(d/transact! conn [[:db/add "e" a v]])))
        :t/long "1" :t/long 1.5 :t/string 1 :t/double 1 :t/boolean "true" :t/keyword "k"
        :t/symbol "s" :t/instant 1 :t/uuid "u" :t/bigint 1.5 :t/bigdec 1.5 :t/bytes "b"
        :t/tuple ["a" "b"] :t/tuple ["a" 1 2] :t/tuple1 [1 "x"] :t/float 0.1
        :t/uri "https://a.example/" :t/uri (java.net.URL. "https://a.example/")
        :t/uris ["a:b" "c:d"]))))

(deftest uri-values
  ;; :db.type/uri holds java.net.URIs, as Datomic's does: unique, looked up, ordered by their
  ;; string forms in AVET and index-range, exported as #datalith/uri and imported back
  (let [a (URI. "http://a.example/")
        b (URI. "http://a.example/b?c=1")
        c (URI. "HTTP://z.example/")
        u (URI. "urn:isbn:0451450523")]
    (each-store [conn {:schema {:site/url {:db/valueType :db.type/uri :db/unique :db.unique/identity}
                                :site/links {:db/valueType :db.type/uri
                                             :db/cardinality :db.cardinality/many}
                                :site/name {:db/valueType :db.type/string}}}]
      (let [e (get-in (d/transact! conn [{:db/id "s" :site/url a :site/links #{b c u}}])
                      [:tempids "s"])]
        (testing "upserts by URI, and lookup refs, inputs and literals find it"
          (is (= e (get-in (d/transact! conn [{:db/id "t" :site/url (URI. "http://a.example/")
                                               :site/name "A"}])
                           [:tempids "t"])))
          (is (= "A" (:site/name (d/entity (d/db conn) [:site/url a]))))
          (is (= #{[e]} (d/q '[:find ?e :in $ ?u :where [?e :site/links ?u]] (d/db conn) u)))
          (is (= #{[e]} (d/q [:find '?e :where ['?e :site/links b]] (d/db conn))))
          (is (= {:site/url a :site/links [c a b u]}
                 (-> (d/pull (d/db conn) '[:site/url :site/links] e)
                     (update :site/links (fn [l] (vec (sort-by str (conj l a)))))))))
        (testing "AVET and index-range order URIs by their string forms"
          (is (= (sort-by str [b c u]) (map :v (d/datoms (d/db conn) :avet :site/links))))
          (is (= [b] (map :v (d/index-range (d/db conn) :site/links a u)))))
        (testing "a retraction by an equal URI"
          (d/transact! conn [[:db/retract e :site/links (URI. "urn:isbn:0451450523")]])
          (is (= #{b c} (set (:site/links (d/entity (d/db conn) e))))))
        (testing "an export file holds #datalith/uri and imports back into an equal database"
          (let [dir (tu/temp-dir)
                file (io/file dir "export.edn")]
            (try
              (d/export conn file)
              (is (re-find #"#datalith/uri \"http://a.example/b\?c=1\"" (slurp file)))
              (doseq [into tu/stores]
                (tu/with-conn [copy into]
                  (d/import! copy (.getPath file))
                  (is (= (vec (d/datoms (d/history (d/db conn)) :eavt))
                         (vec (d/datoms (d/history (d/db copy)) :eavt))))))
              (finally (tu/delete-tree dir)))))))))

(deftest values-survive-reopening
  (let [dir (tu/temp-dir)
        one-each (vals (reduce (fn [m [a :as row]] (if (m a) m (assoc m a row))) {} typed-values))]
    (try
      (let [e (with-open [conn (d/connect (.getPath dir) {:schema typed-schema})]
                (-> (d/transact! conn [(into {:db/id "e"} (map (juxt first second)) one-each)])
                    (get-in [:tempids "e"])))]
        (with-open [conn (d/connect (.getPath dir) {:schema typed-schema})]
          (let [db (d/db conn)]
            (is (= 2 (d/basis-t db)) "the same schema, tuples too, is a no-op")
            (doseq [[a v cls] one-each
                    :let [got (map :v (d/datoms db :eavt e a))]]
              (is (= [v] got) (str a))
              (is (instance? cls (first got)) (str a))))))
      (finally (tu/delete-tree dir)))))

(deftest long-values
  (each-store [conn {:schema {:doc/text {:db/valueType :db.type/string :db/unique :db.unique/identity}
                              :doc/body {:db/valueType :db.type/string}}}]
    (let [base (apply str (repeat 2000 "x"))
          s1 (str base "1")
          s2 (str base "2")
          s3 (str "a" base)
          r (d/transact! conn [{:db/id "a" :doc/text s1 :doc/body s1}
                               {:db/id "b" :doc/text s2}
                               {:db/id "c" :doc/text s3 :free/long {:text s1}}])
          {:strs [a b c]} (:tempids r)
          db (d/db conn)]
      (is (= [s1] (map :v (d/datoms db :eavt a :doc/text))))
      (is (= [s1] (map :v (d/datoms db :eavt a :doc/body))))
      (is (= {:text s1} (:free/long (d/entity db c))))
      (is (= [[a s1]] (map (juxt :e :v) (d/datoms db :avet :doc/text s1))))
      (is (= [[b s2]] (map (juxt :e :v) (d/datoms db :avet :doc/text s2))))
      (is (= [[a s1]] (map (juxt :e :v) (d/datoms db :avet :doc/body s1))))
      (is (empty? (d/datoms db :avet :doc/text (str base "3"))))
      (is (= #{s1 s2 s3} (set (map :v (d/datoms db :avet :doc/text)))))
      (is (= s3 (:v (first (d/datoms db :avet :doc/text)))) "values differing early sort by value")
      (is (= b (d/entid db [:doc/text s2])))
      (testing "upsert through a long identity"
        (d/transact! conn [{:doc/text s2 :doc/body "short"}])
        (is (= "short" (:doc/body (d/entity (d/db conn) b)))))
      (testing "retracted"
        (d/transact! conn [[:db/retract a :doc/text s1] [:db/retractEntity c]])
        (let [db (d/db conn)]
          (is (empty? (d/datoms db :avet :doc/text s1)))
          (is (= [s2] (map :v (d/datoms db :avet :doc/text))))
          (is (= [[s1 true] [s1 false]]
                 (map (juxt :v :added) (d/datoms (d/history db) :eavt a :doc/text))))
          (is (= [s1] (map :v (d/datoms (d/as-of db (d/basis-t (:db-after r))) :avet :doc/text s1)))))))))

(deftest safe-alterations
  (each-store [conn {:schema {:user/name {:db/valueType :db.type/string}
                              :user/code {:db/valueType :db.type/string}
                              :user/tag {:db/valueType :db.type/keyword}}}]
    (d/transact! conn [{:db/id "a" :user/name "A" :user/code "1" :user/tag :x}
                       {:db/id "b" :user/name "A" :user/code "2" :user/tag :y}])
    (are [tx attr expected]
         (let [r (error-of #(d/transact! conn tx))]
           (and (= :no-error r) (= expected (props (d/db conn) attr (keys expected)))))
      [{:db/id :user/name :db/index true}] :user/name {:db/index true}
      [{:db/ident :user/name :db/doc "The name"}] :user/name {:db/doc "The name" :db/index true}
      [[:db/add :user/tag :db/cardinality :db.cardinality/many]] :user/tag
      {:db/cardinality :db.cardinality/many}
      [{:db/id :user/code :db/unique :db.unique/identity}] :user/code
      {:db/unique :db.unique/identity}
      [{:db/id :user/code :db/unique :db.unique/value}] :user/code
      {:db/unique :db.unique/value}
      [{:db/id :user/code :db/unique :db.unique/identity}] :user/code
      {:db/unique :db.unique/identity})
    (testing "the altered schema is in force"
      (d/transact! conn [[:db/add [:user/code "1"] :user/tag :z]])
      (is (= #{:x :z} (:user/tag (d/entity (d/db conn) [:user/code "1"]))))
      (d/transact! conn [{:user/code "2" :user/name "B"}])
      (is (= 2 (count (d/datoms (d/db conn) :aevt :user/code)))))
    (testing "dropping an index, and uniqueness"
      (d/transact! conn [[:db/retract :user/name :db/index true]
                         [:db/retract :user/code :db/unique :db.unique/identity]])
      (is (= {} (props (d/db conn) :user/name [:db/index])))
      (is (= {} (props (d/db conn) :user/code [:db/unique])))
      (d/transact! conn [{:user/code "1"}])
      (is (= 3 (count (d/datoms (d/db conn) :aevt :user/code)))))
    (testing "many back to one while no entity has several values"
      (d/transact! conn [[:db/retract (:e (first (d/datoms (d/db conn) :avet :user/code "1")))
                          :user/tag :x]])
      (d/transact! conn [{:db/id :user/tag :db/cardinality :db.cardinality/one}])
      (is (= {:db/cardinality :db.cardinality/one} (props (d/db conn) :user/tag [:db/cardinality]))))))

(deftest unsafe-alterations
  (each-store [conn {:schema {:user/name {:db/valueType :db.type/string}
                              :user/tags {:db/valueType :db.type/keyword
                                          :db/cardinality :db.cardinality/many}}}]
    (d/transact! conn [{:db/id "a" :user/name "A" :user/tags [:x :y]}
                       {:db/id "b" :user/name "A"}])
    (let [t (d/basis-t (d/db conn))
          s (d/schema (d/db conn))]
      (are [tx] (= :schema/alter (error-of #(d/transact! conn tx)))
        [{:db/id :user/name :db/valueType :db.type/long}]
        [{:db/ident :user/name :db/valueType :db.type/keyword}]
        [{:db/id :user/name :db/unique :db.unique/identity}]
        [{:db/id :user/name :db/unique :db.unique/value}]
        [{:db/id :user/tags :db/cardinality :db.cardinality/one}])
      (is (= t (d/basis-t (d/db conn))))
      (is (= s (d/schema (d/db conn)))))))

;; A transaction that alters an attribute and writes its data: the data is taken as the
;; schema before the transaction has it (no upsert by a uniqueness it adds, the old
;; cardinality), and the alteration is checked against the state the transaction leaves, as
;; Datomic does (Datomic Local 1.0.291 gave each outcome below). Checked against the state
;; before, a cardinality-one attribute could be left holding two values and a long one a string.
(deftest alterations-are-checked-against-what-the-transaction-leaves
  (each-store [conn {:schema {:k/id {:db/valueType :db.type/long :db/unique :db.unique/identity}
                              :k/name {:db/valueType :db.type/string}
                              :k/tags {:db/valueType :db.type/long
                                       :db/cardinality :db.cardinality/many}
                              :k/more {:db/valueType :db.type/long
                                       :db/cardinality :db.cardinality/many}}}]
    (d/transact! conn [{:k/id 1 :k/name "x" :k/tags #{1 2}}
                       {:k/id 2 :k/name "x" :k/tags #{3} :k/more #{3}}
                       {:db/ident :k/free :db/cardinality :db.cardinality/one}])
    (let [t (d/basis-t (d/db conn))]
      (testing "refused: the data it writes breaks the alteration"
        (are [tx] (= :schema/alter (error-of #(d/transact! conn tx)))
          [[:db/add :k/more :db/cardinality :db.cardinality/one] [:db/add [:k/id 2] :k/more 4]]
          [[:db/add :k/tags :db/cardinality :db.cardinality/one]
           [:db/retract [:k/id 1] :k/tags 2] [:db/add [:k/id 2] :k/tags 4]]
          [[:db/add :k/free :db/valueType :db.type/long] [:db/add [:k/id 1] :k/free "abc"]])
        (is (= :tx/unique (error-of #(d/transact! conn [[:db/add :k/tags :db/unique :db.unique/value]
                                                        [:db/add [:k/id 2] :k/tags 1]]))))
        (is (= t (d/basis-t (d/db conn))) "nothing written")
        (is (= #{[1 1] [1 2] [2 3]}
               (d/q '[:find ?i ?v :where [?e :k/tags ?v] [?e :k/id ?i]] (d/db conn))))
        (is (= #{[2 3]} (d/q '[:find ?i ?v :where [?e :k/more ?v] [?e :k/id ?i]] (d/db conn)))))
      (testing "taken: the data it writes leaves the attribute as the alteration needs"
        (d/transact! conn [[:db/add :k/name :db/unique :db.unique/value]
                           [:db/retract [:k/id 2] :k/name "x"]])
        (d/transact! conn [[:db/add :k/tags :db/cardinality :db.cardinality/one]
                           [:db/retract [:k/id 1] :k/tags 1]])
        (d/transact! conn [[:db/add :k/free :db/valueType :db.type/long] [:db/add [:k/id 1] :k/free 7]])
        (is (= {:k/name {:db/unique :db.unique/value} :k/tags {:db/cardinality :db.cardinality/one}
                :k/free {:db/valueType :db.type/long}}
               {:k/name (props (d/db conn) :k/name [:db/unique])
                :k/tags (props (d/db conn) :k/tags [:db/cardinality])
                :k/free (props (d/db conn) :k/free [:db/valueType])}))
        (is (= #{[1 2 "x" 7] [2 3 nil nil]}
               (set (map (juxt :k/id :k/tags :k/name :k/free)
                         (d/pull-many (d/db conn) '[*] [[:k/id 1] [:k/id 2]])))))))
      (testing "the data is taken as the schema before the transaction: the old cardinality"
        (is (= :tx/conflict
               (error-of #(d/transact! conn [[:db/add :k/tags :db/cardinality :db.cardinality/many]
                                             [:db/add [:k/id 2] :k/tags 5]
                                             [:db/add [:k/id 2] :k/tags 6]])))))
      (testing "and the old uniqueness: a value held cannot be asserted again while it is dropped"
        (is (= :tx/unique
               (error-of #(d/transact! conn [[:db/retract :k/name :db/unique :db.unique/value]
                                             [:db/add [:k/id 2] :k/name "x"]]))))
        (d/transact! conn [[:db/retract :k/name :db/unique :db.unique/value]])
        (d/transact! conn [[:db/add [:k/id 2] :k/name "x"]])
        (is (= 2 (count (d/datoms (d/db conn) :avet :k/name "x")))))))

(deftest system-attributes-cannot-change
  ;; The bootstrap attributes and idents (ids below 1000) define every other
  ;; attribute: no transaction may alter, retract or redefine them.
  (each-store [conn {:schema map-schema}]
    (let [before (d/db conn)
          unchanged #(and (= (d/basis-t before) (d/basis-t (d/db conn)))
                          (= (vec (d/datoms before :eavt)) (vec (d/datoms (d/db conn) :eavt))))]
      (are [tx] (and (= :schema/system (error-of #(d/transact! conn tx))) (unchanged))
        [{:db/ident :db/ident :db/valueType :db.type/ref}]
        [{:db/ident :db/ident :db/valueType :db.type/string}]
        [{:db/ident :db/ident :db/cardinality :db.cardinality/many}]
        [{:db/ident :db/ident :db/unique :db.unique/value}]
        [{:db/ident :db/valueType :db/unique :db.unique/identity}]
        [{:db/ident :db/cardinality :db/isComponent true}]
        [{:db/ident :db/txInstant :db/valueType :db.type/long}]
        [{:db/ident :db/txInstant :db/index false}]
        [{:db/ident :db/tupleAttrs :db/cardinality :db.cardinality/many}]
        [{:db/id :db/doc :db/doc "The doc"}]
        [[:db/retract :db/ident :db/unique :db.unique/identity]]
        [[:db/retract :db/txInstant :db/ident :db/txInstant]]
        [[:db/retract :db/cardinality :db/valueType]]
        [[:db/retractEntity :db/txInstant]]
        [[:db/retractEntity :db.cardinality/many]]
        [[:db/add :db.type/string :db/ident :db.type/text]]
        [[:db/add :db.cardinality/one :db/doc "one"]]
        [{:db/ident :db.type/long :db/valueType :db.type/long}]
        [{:db/id "x" :db/ident :db/ident :db/valueType :db.type/ref}])
      (testing "installing on first use stays out of the :db namespaces"
        (are [tx] (and (= :tx/invalid-attribute (error-of #(d/transact! conn tx))) (unchanged))
          [[:db/add "x" :db/id 5]]
          [[:db/add "x" :db/foo 1]]
          [{:db.type/tuple2 1}]))
      (testing "re-asserting a system attribute as it is changes nothing"
        (let [r (d/transact! conn [{:db/ident :db/doc :db/valueType :db.type/string
                                    :db/cardinality :db.cardinality/one}])]
          (is (= [:db/txInstant] (map :a (:tx-data r))))))
      (testing "the system attributes still work"
        (d/transact! conn [{:user/email "a@x" :db/doc "Ada"}])
        (is (= "Ada" (:db/doc (d/entity (d/db conn) [:user/email "a@x"]))))
        (is (= :user/email (d/q '[:find ?i . :where [?e :db/ident ?i] [?e :db/unique :db.unique/identity]
                                  [(not= ?i :db/ident)]]
                                (d/db conn))))))))

(deftest tuple-definitions
  ;; :db/tupleAttrs, :db/tupleType and :db/tupleTypes are checked when
  ;; installed, and a malformed one never breaks the transaction that uses it.
  (each-store [conn {:schema map-schema}]
    (are [attr] (= :schema/invalid (error-of #(d/transact! conn [attr])))
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleTypes [:db.type/nope :db.type/long]}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleTypes [1 2]}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleTypes [:db.type/long]}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleTypes [:db.type/tuple :db.type/long]}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleTypes (vec (repeat 9 :db.type/long))}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleType :db.type/tuple}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleType :db.type/long
       :db/tupleTypes [:db.type/long :db.type/long]}
      {:db/ident :x/t :db/valueType :db.type/string :db/tupleTypes [:db.type/long :db.type/long]}
      {:db/ident :x/t :db/tupleType :db.type/long}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleAttrs [1 2]}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleAttrs [:user/email]}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleAttrs [:user/email :no/such]}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleAttrs [:user/email :user/tags]}
      {:db/ident :x/t :db/valueType :db.type/tuple :db/tupleAttrs [:user/email :x/t]})
    (testing "used in the transaction that defines it"
      (are [tx] (#{:schema/invalid :tx/value-type} (error-of #(d/transact! conn tx)))
        [{:db/ident :x/t :db/valueType :db.type/tuple :db/tupleTypes [:db.type/nope :db.type/long]}
         {:x/t ["a" 1]}]
        [{:db/ident :x/t :db/valueType :db.type/tuple :db/tupleTypes [1 2]} {:x/t ["a" 1]}]
        [{:db/ident :x/t :db/valueType :db.type/tuple :db/tupleAttrs [1 2]} {:x/t ["a" 1]}]
        [{:db/ident :x/t :db/valueType :db.type/tuple :db/tupleAttrs [:user/email :no/such]}
         {:user/email "a@x"}]))
    (testing "well formed ones"
      (d/transact! conn [{:db/ident :x/pair :db/valueType :db.type/tuple
                          :db/tupleTypes [:db.type/string :db.type/ref]}
                         {:db/ident :x/email+friend :db/valueType :db.type/tuple
                          :db/tupleAttrs [:user/email :user/friend]}])
      (let [r (d/transact! conn [{:db/id "a" :user/email "a@x" :x/pair ["p" 1]}])]
        (is (= ["a@x" nil] (:x/email+friend (d/entity (d/db conn) (get-in r [:tempids "a"])))))))))

(deftest tuple-values-are-checked
  (each-store [conn {:schema typed-schema}]
    (are [v] (= :tx/value-type (error-of #(d/transact! conn [[:db/add "e" :t/tuple v]])))
      ["a" (object-array [1])] ["a" "b"] ["a" 1 2] ["a"] [1 1])
    (are [v] (= :tx/value-type (error-of #(d/transact! conn [[:db/add "e" :t/tuple1 v]])))
      [1 "x"] [1 (long-array 1)] [1.5])))
