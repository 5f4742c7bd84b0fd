(ns datalith.read-printed-test
  "Printed datoms read back: `#datalith/datom [e a v tx added]` reads (through
  resources/data_readers.clj with `read-string`, through datalith.readers/readers
  with clojure.edn) as a datom equal to the one printed, for every value type
  that Clojure prints readably. Database values and entities print but do not
  read back: they are views of a store."
  (:require [clojure.edn :as edn]
            [clojure.test :refer [deftest is are testing]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.readers :as readers]
            [datalith.test-util :refer [each-store with-conn]])
  (:import (clojure.lang ExceptionInfo TaggedLiteral)
           (datalith.index Datom)))

(def schema
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
   :t/tuple {:db/valueType :db.type/tuple :db/tupleTypes [:db.type/string :db.type/long]}
   :t/many {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}})

(defn- round-trips
  "[read-string edn] reads of `x` printed."
  [x]
  (let [s (pr-str x)]
    [(read-string s) (edn/read-string {:readers readers/readers} s)]))

(defn- reads-back? [^Datom datom]
  (every? #(and (instance? Datom %) (= datom %) (= (hash datom) (hash %))
                (= (pr-str datom) (pr-str %)))
          (round-trips datom)))

(deftest datoms-read-back
  (each-store [conn {:schema schema}]
    (let [r (d/transact! conn [{:db/id "e" :t/string "héllo \"quoted\" \\ \n" :t/long -7
                                :t/double 2.5 :t/float (float 1.5) :t/boolean false
                                :t/keyword :a/b :t/symbol 'x/y :t/ref "f"
                                :t/instant #inst "2021-02-03T04:05:06.007Z"
                                :t/uuid #uuid "6f1c1d6e-0b7a-4b8e-9c55-1a2b3c4d5e6f"
                                :t/bigint 123456789012345678901234567890N
                                :t/bigdec 3.14159265358979323846M :t/tuple ["a" 1]
                                :t/many #{:p :q}
                                :free/edn {:k [1 "two" #{:three}] 'sym '(4 5)}}
                               {:db/id "f" :t/string "target"}])
          e (get-in r [:tempids "e"])
          db (d/db conn)]
      (testing "every value type in a transaction's datoms"
        (is (< 15 (count (:tx-data r))))
        (doseq [datom (:tx-data r)]
          (is (reads-back? datom) (pr-str datom))))
      (testing "datoms from the indexes, history ones (added false) too"
        (d/transact! conn [[:db/retract e :t/long -7]])
        (let [hist (d/datoms (d/history (d/db conn)) :eavt e :t/long)]
          (is (= #{true false} (set (map :added hist))))
          (doseq [datom (concat (d/datoms db :eavt e) hist)]
            (is (reads-back? datom) (pr-str datom)))))
      (testing "in collections, and in a transaction report's :tx-data"
        (let [ds (vec (d/datoms db :aevt :t/many))]
          (is (= ds (read-string (pr-str ds))))
          (is (= (set ds) (edn/read-string {:readers readers/readers} (pr-str (set ds)))))
          (is (= (:tx-data r) (read-string (pr-str (:tx-data r))))))))))

(deftest equal-datoms-print-alike
  (each-store [conn {:schema schema}]
    (let [{:keys [tempids tx-data]} (d/transact! conn [{:db/id "e" :t/string "x"}])
          e (tempids "e")
          [d1] (d/datoms (d/db conn) :eavt e :t/string)
          [d2] (d/datoms (d/db conn) :aevt :t/string e)]
      (is (= d1 d2 (first (filter #(= :t/string (:a %)) tx-data))))
      (is (= (hash d1) (hash d2)))
      (is (= (pr-str d1) (pr-str d2)))
      (are [other] (not= d1 (read-string other))
        (str "#datalith/datom [" (inc e) " :t/string \"x\" " (:tx d1) " true]")
        (str "#datalith/datom [" e " :t/long \"x\" " (:tx d1) " true]")
        (str "#datalith/datom [" e " :t/string \"y\" " (:tx d1) " true]")
        (str "#datalith/datom [" e " :t/string \"x\" " (inc (:tx d1)) " true]")
        (str "#datalith/datom [" e " :t/string \"x\" " (:tx d1) " false]")))))

(deftest what-a-printed-datom-must-be
  (are [text] (= :db/invalid-datom
                 (:error (ex-data (try (read-string text) nil (catch Exception ex ex)))))
    "#datalith/datom [1 :a/b 1 2]"
    "#datalith/datom [1 :a/b 1 2 true 6]"
    "#datalith/datom (1 :a/b 1 2 true)"
    "#datalith/datom {:e 1}"
    "#datalith/datom [-1 :a/b 1 2 true]"
    "#datalith/datom [1.5 :a/b 1 2 true]"
    "#datalith/datom [1 \"a/b\" 1 2 true]"
    "#datalith/datom [1 :a/b nil 2 true]"
    "#datalith/datom [1 :a/b 1 nil true]"
    "#datalith/datom [1 :a/b 1 2 \"true\"]"
    "#datalith/datom [1 :a/b 1 99999999999999999999 true]")
  (is (= {:error :db/invalid-datom :form [1 :a/b 1 2]}
         (ex-data (try (readers/read-datom [1 :a/b 1 2]) nil (catch ExceptionInfo ex ex)))))
  (is (= Datom/UNKNOWN_AID (.aid ^Datom (read-string "#datalith/datom [1 :a/b 1 2 true]")))))

(defn- read-failure
  "The message of what reading `s` with `read` throws, or nil."
  [read s]
  (try (read s) nil (catch RuntimeException ex (ex-message ex))))

(deftest databases-and-entities-do-not-read-back
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [{:db/id "e" :t/string "x"}]) [:tempids "e"])
          db (d/db conn)]
      (are [x tag] (let [s (pr-str x)
                         t (binding [*default-data-reader-fn* tagged-literal] (read-string s))]
                     (and (re-find #"No reader function for tag" (read-failure read-string s))
                          (re-find #"No reader function for tag"
                                   (read-failure #(edn/read-string {:readers readers/readers} %) s))
                          (instance? TaggedLiteral t)
                          (= tag (:tag t))))
        db 'datalith/db
        (d/as-of db 1) 'datalith/db
        (d/entity db e) 'datalith/entity))))

(deftest any-edn-value-reads-back
  (with-conn [conn :mem {}]
    (let [result (tc/quick-check
                  100
                  (prop/for-all [v (gen/such-that some? gen/any-printable-equatable 100)]
                    (let [r (try (d/transact! conn [{:db/id "e" :free/v v}])
                                 (catch ExceptionInfo _ nil))]
                      (or (nil? r) ; a value datalith refuses
                          (every? reads-back? (:tx-data r))))))]
      (is (:result result) (pr-str (:shrunk result))))))

(deftest export-tags-read-back
  ;; the tags export writes for values EDN has no literal for; a bad one is a clear ex-info
  (let [read (fn [s] (edn/read-string {:readers readers/readers} s))]
    (is (= (java.net.URI. "http://a.example/b?c=1#d") (read "#datalith/uri \"http://a.example/b?c=1#d\"")))
    (is (= (float 1.5) (read "#datalith/float \"1.5\"")))
    (is (= [1 2 3] (vec (read "#datalith/bytes \"AQID\""))))
    (are [s err] (= err (try (read s) (catch ExceptionInfo e (:error (ex-data e)))))
      "#datalith/uri \"a b\"" :db/invalid-uri
      "#datalith/uri 1" :db/invalid-uri
      "#datalith/float \"x\"" :db/invalid-float
      "#datalith/bytes \"*\"" :db/invalid-bytes)))
