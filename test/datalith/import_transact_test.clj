(ns datalith.import-transact-test
  "Bulk import (`d/import!`) against transact! (#17): the tx-data transact! accepted
  (tx-property-support's generated transactions), imported as chunks into a fresh database of
  either store, staged or not, gives the database transact! gave but for its txInstants, also
  with the schema in the source; and so do the cases a bulk path would special-case, each run
  both ways."
  (:require [clojure.test :refer [are deftest is testing]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.import-support :refer [instant-free merging transact-chunks! trials]]
            [datalith.naive :as naive]
            [datalith.test-util :as tu]
            [datalith.tx-property-support :as txp]))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------- import against transact! (#17)

(defn- accepted-tx-data!
  "Runs the generated transactions `txs` on `conn` as import-test's generated-history! does;
  returns the tx-data of those transact! accepted, in order."
  [conn schema txs]
  (let [db0 (d/db conn)
        model0 (naive/empty-db schema (d/basis-t db0) (set (map :e (d/datoms db0 :eavt))))]
    (:accepted
     (reduce (fn [{:keys [model] :as acc} ops]
               (let [tx-data (@#'txp/interpret-tx model ops)
                     report (try (d/transact! conn tx-data) (catch clojure.lang.ExceptionInfo _ nil))]
                 (if report
                   {:model (or (:model (naive/transact model tx-data (@#'txp/engine-new-eid report)))
                               model)
                    :accepted (conj (:accepted acc) tx-data)}
                   acc)))
             {:model model0 :accepted []} txs))))

(deftest generated-tx-data-imports-as-transact-wrote-it
  (testing "the tx-data transact! accepted (tempids, upserts, lookup refs, retractions,
            cardinality many, reverse refs, tx ids), imported as chunks into a fresh database
            of the same schema, the first of them transacted there before (the staging lies over
            them, and its upserts and retractions reach them): the same datoms, ids, history and
            log, t by t; staged or not, the staging written after a few datoms (its budget) and
            the rest chunk by chunk"
    (let [result (tc/quick-check
                  trials
                  (prop/for-all [schema txp/gen-schema
                                 txs txp/gen-txs
                                 from (gen/elements tu/stores)
                                 into (gen/elements tu/stores)
                                 staged gen/boolean
                                 budget (gen/elements [nil 1 5 20])
                                 transacted gen/nat
                                 merge? gen/boolean]
                    (let [engine-schema (txp/engine-schema schema)]
                      (tu/with-conn [src from {:schema engine-schema}]
                        (let [tx-data (accepted-tx-data! src schema txs)
                              ;; the first ones transacted into dst: the import stages over them
                              [before imported] (split-at (mod transacted (inc (count tx-data))) tx-data)]
                          (tu/with-conn [dst into {:schema engine-schema}]
                            (doseq [tx before] (d/transact! dst tx))
                            (let [r (merging merge? #(d/import! dst imported (cond-> {:staged staged}
                                                                               budget (assoc :staged-budget budget))))]
                              (and (= (count imported) (:transactions r))
                                   (= (instant-free (d/db src)) (instant-free (d/db dst)))))))))))]
      (is (:pass? result) (pr-str (select-keys result [:seed :shrunk]))))))

;; ---------------------------------------------------------------- the oracle widened for a bulk path (#17, h-bulk)
;; The cases a bulk path would special-case, each a source of chunks run both ways: through
;; transact!, one transaction a chunk, and through import!; the two databases must be equal but
;; for the txInstants. A chunk transact! refuses stops the import there (its chunks before it
;; committed), so both sides keep only the chunks before the first refused one.

(def ^:private bulk-schema-tx
  [{:db/ident :b/id :db/valueType :db.type/long :db/unique :db.unique/identity}
   {:db/ident :b/email :db/valueType :db.type/string :db/unique :db.unique/value}
   {:db/ident :b/n :db/valueType :db.type/long}
   {:db/ident :b/tags :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   {:db/ident :b/ref :db/valueType :db.type/ref}
   {:db/ident :b/refs :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}])

(defn- import-against-transact
  "`chunks` transacted on an empty database of store `from`, and imported into
  one of store `into` (with import! options `opts`): [the chunks transact!
  committed, whether the import stopped where transact! refused (or took them
  all), whether the two databases are equal but for their txInstants]."
  [from into chunks opts]
  (tu/with-conn [src from]
    (let [n (transact-chunks! src chunks)]
      (tu/with-conn [dst into]
        (let [r (try (d/import! dst chunks opts) (catch clojure.lang.ExceptionInfo e e))]
          [n
           (if (< n (count chunks))
             (= n (:import/chunk (ex-data r)) (:transactions (:import/report (ex-data r))))
             (= n (:transactions r)))
           (= (instant-free (d/db src)) (instant-free (d/db dst)))])))))

(deftest the-cases-a-bulk-path-special-cases-import-as-transact-wrote-them
  (are [what committed chunks]
       (every? true? (for [from tu/stores into tu/stores staged [true false]]
                       (is (= [(inc committed) true true]
                              (import-against-transact from into (cons bulk-schema-tx chunks)
                                                       {:staged staged}))
                           (str what " (" from " -> " into ", staged " staged ")"))))
    "an upsert across chunks" 3
    [[{:b/id 1 :b/n 1}] [{:b/id 1 :b/n 2 :b/tags :x}] [{:db/id "u" :b/id 1 :b/tags :y}]]

    "a lookup ref to an entity of an earlier chunk, also as a ref value and in a map" 3
    [[{:b/id 1} {:b/id 2 :b/email "e"}]
     [[:db/add [:b/id 1] :b/n 5] {:db/id [:b/email "e"] :b/ref [:b/id 1]}]
     [{:b/id 3 :b/refs [[:b/id 1] [:b/email "e"]]}]]

    "card-one replacement within a chunk and across chunks" 3
    [[{:db/id "a" :b/id 1 :b/n 1}] [[:db/add [:b/id 1] :b/n 2] [:db/retract [:b/id 1] :b/n 1]]
     [[:db/add [:b/id 1] :b/n 3]]]

    "two values of a card-one attribute in one chunk: refused, the import stops there" 1
    [[{:b/id 1 :b/n 1}] [[:db/add [:b/id 1] :b/n 2] [:db/add [:b/id 1] :b/n 3]] [{:b/id 2}]]

    "redundant datoms, within a chunk and of earlier chunks" 3
    [[{:b/id 1 :b/n 1 :b/tags [:x :x]}] [{:b/id 1 :b/n 1 :b/tags :x}] [[:db/add [:b/id 1] :b/n 1]]]

    "retractions of earlier chunks' datoms, of missing ones, and of entities" 4
    [[{:b/id 1 :b/n 1 :b/tags [:x :y]} {:b/id 2 :b/ref "r"} {:db/id "r" :b/id 3}]
     [[:db/retract [:b/id 1] :b/tags :x] [:db/retract [:b/id 1] :b/n 9]]
     [[:db/retractEntity [:b/id 3]]] [{:b/id 3 :b/n 4}]]

    "a uniqueness violation against an earlier chunk stops the import" 1
    [[{:b/id 1 :b/email "e"}] [{:b/id 2 :b/email "e"}] [{:b/id 3}]]

    "schema in the source: installed, then altered, then used" 4
    [[{:db/ident :c/x :db/valueType :db.type/string}]
     [{:b/id 1 :c/x "v"}]
     [{:db/id :c/x :db/cardinality :db.cardinality/many}]
     [{:b/id 1 :c/x ["w" "v"]}]]

    "a new attribute and its first use in one chunk, then a lookup ref on it" 2
    [[{:db/ident :c/key :db/valueType :db.type/string :db/unique :db.unique/identity}
      {:c/key "k" :b/n 1}]
     [{:db/id [:c/key "k"] :b/n 2} {:b/id 9 :b/ref [:c/key "k"]}]]))

(deftest generated-tx-data-with-its-schema-in-the-source-imports-as-transact-wrote-it
  (testing "as generated-tx-data-imports-as-transact-wrote-it, the schema installed by the
            source's first chunk rather than by the connection"
    (let [result (tc/quick-check
                  trials
                  (prop/for-all [schema txp/gen-schema
                                 txs txp/gen-txs
                                 from (gen/elements tu/stores)
                                 into (gen/elements tu/stores)
                                 staged gen/boolean]
                    (let [schema-tx (vec (for [[a m] (txp/engine-schema schema)]
                                           (assoc m :db/ident a)))]
                      (tu/with-conn [src from]
                        (d/transact! src schema-tx)
                        (let [tx-data (accepted-tx-data! src schema txs)]
                          (tu/with-conn [dst into]
                            (let [r (d/import! dst (cons schema-tx tx-data) {:staged staged})]
                              (and (= (inc (count tx-data)) (:transactions r))
                                   (= (instant-free (d/db src)) (instant-free (d/db dst)))))))))))]
      (is (:pass? result) (pr-str (select-keys result [:seed :shrunk]))))))
