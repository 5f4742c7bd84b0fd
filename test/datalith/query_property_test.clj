(ns datalith.query-property-test
  "Random schemas, data and well-formed queries: on both stores, `d/q` on the
  current database and on an earlier `as-of` one must answer what the naive
  evaluator (datalith.naive-query) answers over the same datoms.
  DATALITH_TRIALS=n raises the trial count.

  The generators, and the check on each view of the database, are
  datalith.query-property-support's. Shrunk failures are kept as plain tests
  at the end of the file. Ordered, sliced and windowed answers are
  query-order-property-test's."
  (:require [clojure.test :refer [deftest is]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.naive-query :as nq]
            [datalith.query-property-support :refer [both-answers check-views engine-schema
                                                     gen-data gen-query-spec gen-schema
                                                     interpret-query outcome trials]]
            [datalith.test-util :as tu]))

;; ---------------------------------------------------------------- the property

(defn- check-view
  "nil when the engine and the naive evaluator agree on `spec` over `db`
  (naive model `model`), else a description of the difference."
  [label db model eids spec]
  (let [{:keys [query inputs expected actual]} (both-answers nq/answer db model eids spec)]
    (when-not (or (= :too-much-work expected)
                  (and (:kind expected) (nq/agrees? expected actual)))
      {:view label :query query :inputs inputs :expected (or (:tuples expected) expected)
       :actual actual})))

(defn run-case
  "Loads `data` into a fresh `store`, then checks `spec` on the current
  database, as of an earlier t, since it and filtered. nil when all agree."
  [store schema data spec]
  (tu/with-conn [conn store {:schema (engine-schema schema) :sync false}]
    (check-views check-view conn schema data spec (interpret-query schema spec))))

(defspec queries-agree-with-the-naive-evaluator trials
  (prop/for-all [schema gen-schema
                 data gen-data
                 spec gen-query-spec]
    (outcome (some (fn [store] (some-> (run-case store schema data spec) (assoc :store store)))
                   tu/checked-stores))))

;; ---------------------------------------------------------------- regressions
;; Shrunk failures of the property, kept as plain tests.

(def ^:private regression-schema (engine-schema {:name-type :string :tag-type :long}))

(deftest avg-is-a-double
  ;; Datomic's avg answers a double, also for longs and whole averages
  (tu/each-store [conn {:schema regression-schema}]
    (d/transact! conn [{:p/id 0 :p/num 1} {:p/id 1 :p/num 2}])
    (let [db (d/db conn)]
      (is (= 1.5 (d/q '[:find (avg ?n) . :where [_ :p/num ?n]] db)))
      (is (= 0.0 (d/q '[:find (avg ?v0) . :in $ ?v0 :where [(< -1 ?v0)]] db 0))))))

(deftest function-binding-unifies-an-output-bound-by-a-pattern-run-first
  ;; the planner ran [?z :p/next _] before [(identity ?x) ?z]; ?z was bound
  ;; twice, in two relations, and never unified
  (tu/each-store [conn {:schema regression-schema}]
    (let [{:strs [b]} (:tempids (d/transact! conn [{:db/id "a" :p/id 0 :p/next "a"}
                                                     {:db/id "b" :p/id 1 :p/num 0
                                                      :p/links #{"a" "b"}}]))
          db (d/db conn)]
      (is (= #{} (d/q '[:find ?x :where [?x :p/num _]
                        (or-join [?x] (and [_ :p/links ?x] [(identity ?x) ?z] [?z :p/next _]))]
                      db)))
      (is (= #{[b]} (d/q '[:find ?x :where [?x :p/num _]
                           (not-join [?x] [_ :p/links ?x] [(identity ?x) ?z] [?z :p/next _])]
                         db))))))

(deftest a-filter-never-sees-values-an-earlier-written-clause-removes
  ;; the planner ran the smaller [?x :p/name ?w] first and then [(odd? ?w)]
  ;; at once, on a string; Datomic runs clauses as written, where odd? only
  ;; ever sees the entity ids of :p/next
  (tu/each-store [conn {:schema regression-schema}]
    (d/transact! conn (into [{:db/id "c" :p/id 100 :p/name "a0" :p/next "c"}]
                            (for [i (range 10)] {:p/id i :p/next "c"})))
    (is (= #{} (d/q '[:find ?x :where [?x :p/next ?w] [(odd? ?w)] [?x :p/name ?w]]
                    (d/db conn))))))
