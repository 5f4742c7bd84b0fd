(ns datalith.query-limits-test
  "A query's limits: :timeout stops it in every loop that can run long (a
  predicate, a function binding, not, or, a rule body, a join, an aggregate),
  well before it would have finished; :max-rows stops it once any relation it
  makes, the answer or an intermediate one, grows past the budget."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure graph! schema]]
            [datalith.test-util :refer [each-store]]))

(defn slow
  "True, after 50 ms."
  [_]
  (Thread/sleep 50)
  true)

(defn slow-inc
  "x + 1, after 50 ms."
  [x]
  (Thread/sleep 50)
  (inc x))

(defn slow-count
  "An aggregate: the count, after 50 ms."
  [xs]
  (Thread/sleep 50)
  (count xs))

(defn- timed
  "[error-key ms] of calling f."
  [f]
  (let [start (System/nanoTime)
        error (:error (failure f))]
    [error (/ (- (System/nanoTime) start) 1e6)]))

(deftest timeouts-in-every-loop
  ;; 100 rows at 50 ms each take 5 s unbounded; a 200 ms limit must stop them long before
  (each-store [conn {:schema schema}]
    (graph! conn 100)
    (let [db (d/db conn)
          xs (range 100)
          rules '[[(slow-rule ?x) [(datalith.query-limits-test/slow ?x)]]]]
      (are [query args] (let [[error ms] (timed #(d/q {:query query :args args :timeout 200}))]
                          (and (= :query/timeout error) (< ms 2500)))
        '[:find ?x :in [?x ...] :where [(datalith.query-limits-test/slow ?x)]]
        [xs]

        '[:find ?y :in [?x ...] :where [(datalith.query-limits-test/slow-inc ?x) ?y]]
        [xs]

        '[:find ?n :where [?e :node/id ?n] [(datalith.query-limits-test/slow ?n)]]
        [db]

        '[:find ?x :in [?x ...] :where (not [(datalith.query-limits-test/slow ?x)])]
        [xs]

        '[:find ?x :in [?x ...] :where (or-join [?x] [(datalith.query-limits-test/slow ?x)]
                                                 (and [(datalith.query-limits-test/slow-inc ?x) ?y]
                                                      [(pos? ?y)]))]
        [xs]

        '[:find ?x :in [?x ...] % :where (slow-rule ?x)]
        [xs rules]

        '[:find ?x (datalith.query-limits-test/slow-count ?y) :in [[?x ?y]]]
        [(for [x xs] [x x])]))
    (testing "a query that finishes in time is unaffected"
      (is (= #{[1] [2]} (d/q {:query '[:find ?y :in [?x ...] :where [(datalith.query-limits-test/slow-inc ?x) ?y]]
                               :args [[0 1]] :timeout 10000}))))))

(deftest row-budget
  (let [xs (range 1000)]
    (testing "the answer"
      (is (= :query/too-many-rows
             (:error (failure #(d/q {:query '[:find ?x :in [?x ...]] :args [xs] :max-rows 100})))))
      (is (= 1000 (count (d/q {:query '[:find ?x :in [?x ...]] :args [xs] :max-rows 1000})))))
    (testing "an intermediate relation, though the answer is one row"
      (are [query args] (= :query/too-many-rows
                           (:error (failure #(d/q {:query query :args args :max-rows 10000}))))
        ;; a product of a million rows
        '[:find (count ?x) . :in [?x ...] [?y ...] :where [(< ?x ?y)]]
        [xs xs]

        ;; a function binding's rows
        '[:find (count ?y) . :in [?x ...] :where [(range 100) [?y ...]] [(vector ?x ?y) ?z]]
        [(range 200)])
      (is (= 4950 (d/q {:query '[:find (count ?x) . :with ?y :in [?x ...] [?y ...] :where [(< ?x ?y)]]
                        :args [(range 100) (range 100)] :max-rows 10000}))))
    (testing "scans, joins and rule tables"
      (each-store [conn {:schema schema}]
        (graph! conn 300)
        (let [db (d/db conn)
              reach '[[(reach ?a ?b) [?a :node/next ?b]]
                      [(reach ?a ?b) [?a :node/next ?x] (reach ?x ?b)]]]
          (are [query args] (= :query/too-many-rows
                               (:error (failure #(d/q {:query query :args args :max-rows 200}))))
            '[:find ?n :where [?e :node/id ?n]]                                     [db]
            '[:find (count ?a) . :where [?a :node/next ?b] [?b :node/next ?c]]      [db]
            '[:find (count ?b) . :in $ % :where [?a :node/id 0] (reach ?a ?b)]      [db reach])
          (is (= 299 (d/q {:query '[:find (count ?b) . :in $ % :where [?a :node/id 0] (reach ?a ?b)]
                           :args [db reach] :max-rows 1000}))))))
    (testing ":max-rows must be a positive number"
      (are [n] (= :query/invalid-option
                  (:error (failure #(d/q {:query '[:find ?x :in [?x ...]] :args [xs] :max-rows n}))))
        0 -5 "10"))))
