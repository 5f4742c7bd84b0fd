(ns datalith.entity-spec-test
  "Attribute predicates (:db.attr/preds) and entity specs (:db/ensure with :db.entity/attrs and
  :db.entity/preds), as Datomic's, on both stores: what they refuse, that a refused transaction
  writes nothing, that :db/ensure is stored nowhere, and that both survive a reopen and an
  export and import."
  (:require [clojure.java.io :as io]
            [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu :refer [each-store]]))

(set! *warn-on-reflection* true)

(defn short-name? [s] (< (count s) 6))
(defn no-spaces? [s] (not (re-find #" " s)))
(defn refuses-loudly [_] (throw (ex-info "no thanks" {:why :loud})))
(defn returns-nil [_] nil)
(defn positive-balance? [db e] (pos? (or (:acct/balance (d/entity db e)) 0)))
(defn two-names? [db e] (= 2 (count (:acct/aliases (d/entity db e)))))

(def ^:private schema
  [{:db/ident :acct/email :db/valueType :db.type/string :db/unique :db.unique/identity}
   {:db/ident :acct/name :db/valueType :db.type/string
    :db.attr/preds `short-name?}
   {:db/ident :acct/aliases :db/valueType :db.type/string :db/cardinality :db.cardinality/many
    :db.attr/preds [`short-name? `no-spaces?]}
   {:db/ident :acct/balance :db/valueType :db.type/long}
   {:db/ident :acct/note :db/valueType :db.type/string}
   {:db/ident :acct/guard :db.entity/attrs [:acct/name :acct/balance]
    :db.entity/preds `positive-balance?}])

(defn- error [f]
  (try (f) nil
       (catch clojure.lang.ExceptionInfo e (dissoc (ex-data e) :form))))

(defn- unchanged?
  "Whether the transaction `f` makes is refused with `key` and leaves the database as it was."
  [conn key f]
  (let [before (d/basis-t (d/db conn))
        err (error f)]
    (and (= key (:error err)) (= before (d/basis-t (d/db conn))))))

(deftest attribute-predicates
  (each-store [conn]
    (d/transact! conn schema)
    (testing "d/schema shows them"
      (is (= #{`short-name?} (:db.attr/preds (:acct/name (d/schema (d/db conn))))))
      (is (= #{`short-name? `no-spaces?} (:db.attr/preds (:acct/aliases (d/schema (d/db conn)))))))
    (testing "each asserted value is called with each pred"
      (d/transact! conn [{:acct/email "a@x" :acct/name "Ada" :acct/aliases #{"A" "Lady"}}])
      (is (= "Ada" (:acct/name (d/entity (d/db conn) [:acct/email "a@x"]))))
      (is (unchanged? conn :tx/attr-pred #(d/transact! conn [{:acct/email "b@x" :acct/name "Bartholomew"}])))
      (is (= {:error :tx/attr-pred :entity (d/entid (d/db conn) [:acct/email "a@x"])
              :attribute :acct/aliases :value "A L" :pred `no-spaces? :pred-return false}
             (error #(d/transact! conn [[:db/add [:acct/email "a@x"] :acct/aliases "A L"]]))))
      (is (nil? (d/entid (d/db conn) [:acct/email "b@x"]))))
    (testing "a value the entity already has is called too, as Datomic does (and a cas's)"
      (d/transact! conn [[:db/retract :acct/name :db.attr/preds `short-name?]])
      (d/transact! conn [{:acct/email "l@x" :acct/name "Ladyada"}])
      (d/transact! conn [{:db/id :acct/name :db.attr/preds `short-name?}])
      (is (unchanged? conn :tx/attr-pred #(d/transact! conn [{:acct/email "l@x" :acct/name "Ladyada"}])))
      (is (unchanged? conn :tx/attr-pred #(d/transact! conn [[:db/cas [:acct/email "l@x"] :acct/name "Ladyada" "Ladyada"]]))))
    (testing "a retraction calls none"
      (d/transact! conn [[:db/retract [:acct/email "a@x"] :acct/name "Ada"]])
      (is (nil? (:acct/name (d/entity (d/db conn) [:acct/email "a@x"])))))
    (testing "added to an attribute that has values, and retracted"
      (d/transact! conn [{:acct/email "c@x" :acct/note "a long note indeed"}])
      (d/transact! conn [{:db/id :acct/note :db.attr/preds `short-name?}])
      (is (unchanged? conn :tx/attr-pred #(d/transact! conn [{:acct/email "c@x" :acct/note "another long one"}])))
      (is (= "a long note indeed" (:acct/note (d/entity (d/db conn) [:acct/email "c@x"]))) "values held are kept")
      (d/transact! conn [[:db/retract :acct/note :db.attr/preds `short-name?]])
      (is (nil? (:db.attr/preds (:acct/note (d/schema (d/db conn))))))
      (d/transact! conn [{:acct/email "c@x" :acct/note "another long one"}]))
    (testing "a pred that throws, returns nil or cannot be found refuses the value"
      (d/transact! conn [{:db/ident :acct/loud :db/valueType :db.type/string :db.attr/preds `refuses-loudly}
                         {:db/ident :acct/quiet :db/valueType :db.type/string :db.attr/preds `returns-nil}
                         {:db/ident :acct/lost :db/valueType :db.type/string :db.attr/preds 'no.such.ns/pred}])
      (let [e (error #(d/transact! conn [{:acct/email "d@x" :acct/loud "x"}]))]
        (is (= [:tx/attr-pred `refuses-loudly {:why :loud}] ((juxt :error :pred :data) e))))
      (is (= [:tx/attr-pred nil] ((juxt :error :pred-return) (error #(d/transact! conn [{:acct/email "d@x" :acct/quiet "x"}])))))
      (is (unchanged? conn :tx/attr-pred #(d/transact! conn [{:acct/email "d@x" :acct/lost "x"}]))))
    (testing "d/with calls them too"
      (is (= :tx/attr-pred (:error (error #(d/with (d/db conn) [{:acct/email "e@x" :acct/name "Bartholomew"}]))))))
    (testing "system attributes take none; a pred must be a symbol"
      (is (unchanged? conn :schema/system #(d/transact! conn [{:db/id :db/doc :db.attr/preds `short-name?}])))
      (is (unchanged? conn :tx/value-type #(d/transact! conn [{:db/id :acct/name :db.attr/preds "short-name?"}]))))))

(deftest entity-specs
  (each-store [conn]
    (d/transact! conn schema)
    (testing "the entity is checked as the transaction leaves it: attributes first, then preds"
      (let [e (error #(d/transact! conn [{:acct/email "a@x" :acct/name "Ada" :db/ensure :acct/guard}]))]
        (is (= {:error :tx/entity-attrs :spec :acct/guard :missing [:acct/balance]} (dissoc e :entity)))
        (is (<= 1000 (:entity e))))
      (is (unchanged? conn :tx/entity-pred
                      #(d/transact! conn [{:acct/email "a@x" :acct/name "Ada" :acct/balance -5 :db/ensure :acct/guard}])))
      (is (nil? (d/entid (d/db conn) [:acct/email "a@x"])))
      (let [r (d/transact! conn [{:db/id "a" :acct/email "a@x" :acct/name "Ada" :acct/balance 5 :db/ensure :acct/guard}])]
        (is (= 5 (:acct/balance (d/entity (d/db conn) (get-in r [:tempids "a"])))))
        (is (not-any? #(= :db/ensure (:a %)) (:tx-data r)))))
    (testing ":db/ensure is stored nowhere, and retracting it does nothing"
      (is (empty? (d/datoms (d/history (d/db conn)) :aevt :db/ensure)))
      (let [t (d/basis-t (d/db conn))]
        (d/transact! conn [[:db/retract [:acct/email "a@x"] :db/ensure :acct/guard]])
        (is (= (inc t) (d/basis-t (d/db conn))))))
    (testing "a later transaction that ensures an existing entity sees its own changes"
      (is (unchanged? conn :tx/entity-pred
                      #(d/transact! conn [[:db/add [:acct/email "a@x"] :acct/balance -1]
                                          [:db/add [:acct/email "a@x"] :db/ensure :acct/guard]])))
      (is (= 5 (:acct/balance (d/entity (d/db conn) [:acct/email "a@x"]))))
      (d/transact! conn [[:db/add [:acct/email "a@x"] :acct/balance 7]
                         [:db/add [:acct/email "a@x"] :db/ensure :acct/guard]])
      (is (= 7 (:acct/balance (d/entity (d/db conn) [:acct/email "a@x"])))))
    (testing "a spec made in the same transaction, several specs, and an unknown one"
      (is (= :tx/entity-pred
             (:error (error #(d/transact! conn [{:db/ident :acct/two :db.entity/preds `two-names?}
                                                 {:acct/email "b@x" :acct/aliases ["B"]
                                                  :db/ensure :acct/two}])))))
      (d/transact! conn [{:db/ident :acct/two :db.entity/preds `two-names?}])
      (d/transact! conn [{:acct/email "b@x" :acct/aliases ["B" "Bo"] :acct/name "Bob" :acct/balance 1
                          :db/ensure [:acct/two :acct/guard]}])
      (is (unchanged? conn :tx/entity-attrs #(d/transact! conn [{:acct/email "c@x" :acct/aliases ["C" "Cy"]
                                                                 :db/ensure [:acct/two :acct/guard]}])))
      (is (unchanged? conn :tx/unknown-ident #(d/transact! conn [[:db/add [:acct/email "b@x"] :db/ensure :no/spec]]))))
    (testing "an entity pred that cannot be found, and d/with"
      (d/transact! conn [{:db/ident :acct/lost :db.entity/preds 'no.such.ns/pred}])
      (is (unchanged? conn :tx/entity-pred #(d/transact! conn [[:db/add [:acct/email "b@x"] :db/ensure :acct/lost]])))
      (is (= :tx/entity-attrs (:error (error #(d/with (d/db conn) [{:acct/email "d@x" :db/ensure :acct/guard}]))))))))

(deftest preds-and-specs-survive-a-reopen-and-an-export
  (let [dir (tu/temp-dir)
        file (io/file dir "export.edn")]
    (try
      (with-open [conn (d/connect (.getPath (io/file dir "db")))]
        (d/transact! conn schema)
        (d/transact! conn [{:acct/email "a@x" :acct/name "Ada" :acct/balance 5 :db/ensure :acct/guard}])
        (d/export conn file))
      (let [checks (fn [conn]
                     (is (= #{`short-name?} (:db.attr/preds (:acct/name (d/schema (d/db conn))))))
                     (are [tx err] (= err (:error (error #(d/transact! conn tx))))
                       [{:acct/email "b@x" :acct/name "Bartholomew"}] :tx/attr-pred
                       [{:acct/email "b@x" :acct/name "Bob" :db/ensure :acct/guard}] :tx/entity-attrs)
                     (is (= 5 (:acct/balance (d/entity (d/db conn) [:acct/email "a@x"])))))]
        (testing "reopened, given its attributes again: a no-op"
          (with-open [conn (d/connect (.getPath (io/file dir "db"))
                                      {:schema (filterv :db/valueType schema)})]
            (is (= 2 (d/basis-t (d/db conn))))
            (checks conn)))
        (doseq [store tu/stores]
          (testing (str "imported into " store)
            (tu/with-conn [conn store]
              (d/import! conn (.getPath file))
              (checks conn)))))
      (finally (tu/delete-tree dir)))))

(deftest specs-hold-in-group-commits
  ;; transactions from many threads share commits; each is checked against the database its
  ;; own group leaves before it, and a refused one fails alone
  (each-store [conn]
    (d/transact! conn schema)
    (let [balance (fn [i] (- (mod i 7) 3))
          outcomes (->> (range 240)
                        (mapv (fn [i]
                                (future
                                  (try (d/transact! conn [{:acct/email (str "u" (mod i 40) "@x")
                                                           :acct/name "U" :acct/balance (balance i)
                                                           :db/ensure :acct/guard}])
                                       :ok
                                       (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))))
                        (map deref)
                        frequencies)
          db (d/db conn)]
      (is (= {:ok (count (filter (comp pos? balance) (range 240)))
              :tx/entity-pred (count (remove (comp pos? balance) (range 240)))}
             outcomes))
      (is (empty? (d/q '[:find ?e :where [?e :acct/balance ?b] [(<= ?b 0)]] db)))
      (is (= 40 (count (d/datoms db :aevt :acct/email)))))))
