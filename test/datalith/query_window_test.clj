(ns datalith.query-window-test
  "Window functions in :find, (fn ?x :over {:partition-by [...] :order-by [...]}):
  running sums, counts, min, max and avg (peers together), rank, dense-rank,
  row-number, lag and lead, over the answer's rows, on both stores; the rows a
  window reads in a variable of its own; windows ordered by :order-by; bad
  windows are :parser/find errors."
  (:require [clojure.spec.alpha :as s]
            [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.specs :as ds]
            [datalith.query-fixtures :refer [failure]]
            [datalith.test-util :refer [each-store]]))

(def schema
  [{:db/ident :s/g :db/valueType :db.type/keyword :db/cardinality :db.cardinality/one}
   {:db/ident :s/t :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
   {:db/ident :s/x :db/valueType :db.type/long :db/cardinality :db.cardinality/one}])

(def sales
  ;; group, time, amount
  [[:a 1 10] [:a 2 5] [:a 2 7] [:a 4 1] [:b 1 3] [:b 5 4]])

(defn- sales! [conn]
  (d/transact! conn schema)
  (d/transact! conn (for [[g t x] sales] {:s/g g :s/t t :s/x x}))
  (d/db conn))

(defn- column
  "The window column of `query` (its last :find element), by [g t x], rows ordered."
  [db window]
  (let [q (vec (concat '[:find ?g ?t ?x] [window]
                       '[:where [?e :s/g ?g] [?e :s/t ?t] [?e :s/x ?x] :order-by ?g ?t ?x]))]
    (mapv last (d/q q db))))

(deftest window-functions
  ;; rows ordered by g t x: [:a 1 10] [:a 2 5] [:a 2 7] [:a 4 1] [:b 1 3] [:b 5 4]
  (each-store [conn]
    (let [db (sales! conn)]
      (are [window values] (= values (column db window))
        '(sum ?x :over {:partition-by [?g] :order-by [?t]})      [10 22 22 23 3 7]
        '(sum ?x :over {:partition-by [?g]})                     [23 23 23 23 7 7]
        '(sum ?x :over {:order-by [?t]})                         [13 25 25 26 13 30]
        '(count ?x :over {:partition-by [?g] :order-by [?t]})    [1 3 3 4 1 2]
        '(min ?x :over {:partition-by [?g] :order-by [?t]})      [10 5 5 1 3 3]
        '(max ?x :over {:partition-by [?g] :order-by [[?t :desc]]}) [10 7 7 1 4 4]
        '(avg ?x :over {:partition-by [?g]})                     [5.75 5.75 5.75 5.75 3.5 3.5]
        '(rank :over {:partition-by [?g] :order-by [?t]})        [1 2 2 4 1 2]
        '(rank :over {:order-by [[?t :desc]]})                   [5 3 3 2 5 1]
        '(dense-rank :over {:partition-by [?g] :order-by [?t]})  [1 2 2 3 1 2]
        '(row-number :over {:partition-by [?g] :order-by [?t]})  [1 2 3 4 1 2]
        '(row-number :over {:order-by [[?x :desc]]})             [1 3 2 6 5 4]
        '(lag ?x :over {:partition-by [?g] :order-by [?t]})      [nil 10 5 7 nil 3]
        '(lag ?x 2 :over {:partition-by [?g] :order-by [?t]})    [nil nil 10 5 nil nil]
        '(lead ?x :over {:partition-by [?g] :order-by [?t]})     [5 7 1 nil 4 nil]
        '(lead ?t :over {:order-by [?x]})                        [nil 2 1 1 5 2]))))

(deftest windows-over-the-answers-rows
  (each-store [conn]
    (let [db (sales! conn)]
      (testing "a window's own variable: the rows differ in it, the answer is a set of its tuples"
        (is (= #{[:a 23] [:b 7]}
               (d/q '[:find ?g (sum ?x :over {:partition-by [?g]})
                      :where [?e :s/g ?g] [?e :s/x ?x]] db))))
      (testing ":with keeps a row per entity"
        (is (= [[:a 23] [:a 23] [:a 23] [:a 23] [:b 7] [:b 7]]
               (d/q '[:find ?g (sum ?x :over {:partition-by [?g]}) :with ?e
                      :where [?e :s/g ?g] [?e :s/x ?x] :order-by ?g] db))))
      (testing "the answer ordered and cut by a window column"
        (is (= [[:a 10 1] [:b 4 1]]
               (d/q '{:find [?g ?x (row-number :over {:partition-by [?g] :order-by [[?x :desc]]})]
                      :where [[?e :s/g ?g] [?e :s/x ?x]]
                      :order-by [(row-number :over {:partition-by [?g] :order-by [[?x :desc]]}) ?g]
                      :limit 2}
                    db))))
      (testing "collection and relation inputs"
        (is (= [[1 1] [2 3] [3 6]]
               (d/q '[:find ?n (sum ?n :over {:order-by [?n]}) :in [?n ...] :order-by ?n]
                    [3 1 2])))))))

(deftest bad-windows-are-parser-errors
  (are [query error] (= error (:error (failure #(d/q query [[1 2]]))))
    '[:find (rank :over {}) :in [[?a ?b]]] :parser/find
    '[:find (rank ?a :over {:order-by [?a]}) :in [[?a ?b]]] :parser/find
    '[:find (sum :over {:order-by [?a]}) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a ?b :over {:order-by [?a]}) :in [[?a ?b]]] :parser/find
    '[:find (lag ?a 0 :over {:order-by [?a]}) :in [[?a ?b]]] :parser/find
    '[:find (lag ?a -1 :over {:order-by [?a]}) :in [[?a ?b]]] :parser/find
    '[:find (median ?a :over {:order-by [?a]}) :in [[?a ?b]]] :parser/find
    '[:find (my.ns/f ?a :over {:order-by [?a]}) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a :over [:order-by ?a]) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a :over {:order-by [?a] :frame 1}) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a :over {:order-by [[?a :up]]}) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a :over {:order-by [?a ?a]}) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a :over {:partition-by ?b}) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a :over {:partition-by [?b ?b]}) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a :over) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a :over {:partition-by [?b]} 1) :in [[?a ?b]]] :parser/find
    '[:find ?a (count ?b) (rank :over {:order-by [?a]}) :in [[?a ?b]]] :parser/find
    '[:find (sum ?a :over {:partition-by [?c]}) :in [[?a ?b]]] :query/unbound-var)
  (is (= :query/invalid-window
         (:error (failure #(d/q '[:find ?a (sum ?a :over {:order-by [?a]}) :in [?a ...]]
                                [:k]))))))

(deftest windows-conform-to-the-query-spec
  (are [q] (s/valid? ::ds/query q)
    '[:find ?a (sum ?a :over {:order-by [?a]}) :in [?a ...]]
    '[:find ?a (lag ?a 2 :over {:partition-by [?a] :order-by [[?a :desc]]}) :in [?a ...]]
    '[:find ?a (rank :over {:order-by [?a :desc]}) :in [?a ...] :order-by [[?a :desc]] :limit 3]
    '{:find [?a (row-number :over {:partition-by [?a]})] :in [[?a ...]] :offset 2})
  (is (not (s/valid? ::ds/query '[:find (median ?a :over {:order-by [?a]}) :in [?a ...]])))
  (is (not (s/valid? ::ds/query '[:find ?a :in [?a ...] :limit -1]))))

;; h-prep: windows sort row indexes comparing columns of longs as longs, other columns (a value
;; not a Long anywhere in them) in the query order of values

(deftest windows-order-longs-and-mixed-columns-alike
  (each-store [conn]
    (let [db (sales! conn)
          ranked (fn [window rows]
                   (d/q (vec (concat '[:find ?g ?x] [window]
                                     '[:in $ [[?g ?x]] :order-by ?g ?x]))
                        db rows))]
      (testing "longs at the ends of their range, descending and ascending"
        (is (= [[1 Long/MIN_VALUE 3] [1 -1 2] [1 Long/MAX_VALUE 1] [2 0 1]]
               (ranked '(rank :over {:partition-by [?g] :order-by [[?x :desc]]})
                       [[1 Long/MIN_VALUE] [1 Long/MAX_VALUE] [1 -1] [2 0]])))
        (is (= [[1 Long/MIN_VALUE 1] [1 -1 2] [1 Long/MAX_VALUE 3] [2 0 1]]
               (ranked '(row-number :over {:partition-by [?g] :order-by [?x]})
                       [[1 Long/MIN_VALUE] [1 Long/MAX_VALUE] [1 -1] [2 0]]))))
      (testing "numbers of several types in one column order by value, as comparisons do"
        (is (= [[1 1 1] [1 1.5 2] [1 2N 3] [1 5/2 4] [1 3 5]]
               (ranked '(rank :over {:partition-by [?g] :order-by [?x]})
                       [[1 3] [1 5/2] [1 1] [1 2N] [1 1.5]]))))
      (testing "partitions of keywords and strings, a long order within each"
        (is (= [[:a 1 1] [:a 9 2] ["a" 4 1] ["a" 5 2]]
               (ranked '(row-number :over {:partition-by [?g] :order-by [?x]})
                       [["a" 5] [:a 9] ["a" 4] [:a 1]]))))
      (testing "running sums over a column of longs and doubles"
        (is (= [[1 1 1] [1 2.5 3.5] [1 3 6.5] [2 4 4]]
               (ranked '(sum ?x :over {:partition-by [?g] :order-by [?x]})
                       [[1 3] [2 4] [1 2.5] [1 1]])))))))

(deftest windows-order-integers-of-any-width-by-value
  (each-store [conn]
    (let [db (sales! conn)]
      (is (= [[1 -3 1] [1 2 2] [1 5 3] [1 7 4] [1 40 5]]
             (d/q '[:find ?g ?x (rank :over {:partition-by [?g] :order-by [?x]})
                    :in $ [[?g ?x]] :order-by ?g ?x]
                  db [[(int 1) (int 40)] [1 5] [(short 1) (short 2)] [(byte 1) (byte 7)]
                      [1 (int -3)]]))))))
