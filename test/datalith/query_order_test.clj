(ns datalith.query-order-test
  "Ordered and sliced answers: :order-by (vector and map forms) sorts an
  answer by :find columns in the one order of query values and makes a
  relation a vector; :offset and :limit cut it; bad forms are :parser/*
  errors; the ordered walk over an index (the top k of a long or instant
  attribute, either way, ties and ranges included) answers as the full sort."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure]]
            [datalith.test-util :refer [each-store]])
  (:import (datalith.api Database QueryResult)
           (java.util Date List)))

(def schema
  [{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
   {:db/ident :i/status :db/valueType :db.type/keyword :db/cardinality :db.cardinality/one}
   {:db/ident :i/created :db/valueType :db.type/instant :db/cardinality :db.cardinality/one}
   {:db/ident :i/votes :db/valueType :db.type/long :db/cardinality :db.cardinality/one}])

(def people
  [["Ada" 36] ["Bob" 29] ["Cy" 36] ["Di" 41] ["Ed" 29] ["Flo" 52]])

(defn- people! [conn]
  (d/transact! conn schema)
  (d/transact! conn (for [[n a] people] {:p/name n :p/age a}))
  (d/db conn))

(deftest order-by-sorts-by-find-columns
  (each-store [conn]
    (let [db (people! conn)]
      (are [query answer] (= answer (d/q query db))
        '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :order-by ?a ?n]
        [["Bob" 29] ["Ed" 29] ["Ada" 36] ["Cy" 36] ["Di" 41] ["Flo" 52]]

        '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :order-by [[?a :desc] ?n]]
        [["Flo" 52] ["Di" 41] ["Ada" 36] ["Cy" 36] ["Bob" 29] ["Ed" 29]]

        '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :order-by [?a :desc] [?n :desc]]
        [["Flo" 52] ["Di" 41] ["Cy" 36] ["Ada" 36] ["Ed" 29] ["Bob" 29]]

        '{:find [?n ?a] :where [[?e :p/name ?n] [?e :p/age ?a]] :order-by [[?a :desc] ?n]
          :limit 3}
        [["Flo" 52] ["Di" 41] ["Ada" 36]]

        '{:find [?n ?a] :where [[?e :p/name ?n] [?e :p/age ?a]] :order-by [?a :desc]
          :offset 1 :limit 2}
        [["Di" 41] ["Ada" 36]]

        ;; ties on every key are ordered by the columns, so pages never overlap
        '[:find ?a ?n :where [?e :p/name ?n] [?e :p/age ?a] :order-by ?a :offset 2 :limit 2]
        [[36 "Ada"] [36 "Cy"]]

        '[:find [?n ...] :where [_ :p/name ?n] :order-by [?n :desc] :limit 2]
        ["Flo" "Ed"]

        '[:find ?n . :where [?e :p/name ?n] [?e :p/age ?a] :order-by [?n :desc]]
        "Flo"

        '[:find [?n ?a] :where [?e :p/name ?n] [?e :p/age ?a] :order-by ?a :offset 1]
        ["Ed" 29]

        '[:find ?n . :where [_ :p/name ?n] :order-by ?n :offset 10]
        nil

        '[:find ?a (count ?e) :where [?e :p/age ?a] :order-by [(count ?e) :desc] ?a]
        [[29 2] [36 2] [41 1] [52 1]]

        '[:find ?n ?a :keys name age :where [?e :p/name ?n] [?e :p/age ?a]
          :order-by [?a :desc] :limit 2]
        [{:name "Flo" :age 52} {:name "Di" :age 41}]

        '[:find (pull ?e [:p/name]) ?a :where [?e :p/age ?a] :order-by [?a :desc] :limit 2]
        [[{:p/name "Flo"} 52] [{:p/name "Di"} 41]]

        '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :order-by ?a :limit 0]
        [])
      (is (vector? (d/q '[:find ?n :where [_ :p/name ?n] :order-by ?n] db)))
      (testing "qseq answers in the same order"
        (is (= [["Flo"] ["Ed"]]
               (d/qseq '[:find ?n :where [_ :p/name ?n] :order-by [?n :desc] :limit 2] db)))))))

(deftest limit-and-offset-without-order
  (each-store [conn]
    (let [db (people! conn)
          all (d/q '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]] db)]
      (are [query n] (let [r (d/q query db)]
                       (and (set? r) (= n (count r)) (every? all r)))
        '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :limit 4] 4
        '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :limit 40] 6
        '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :offset 4] 2
        '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :offset 4 :limit 1] 1
        '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :offset 9] 0)
      (testing "one pattern: the scan stops at the limit; every row found is distinct"
        (are [query n] (= n (count (d/q query db)))
          '[:find ?e ?n :where [?e :p/name ?n] :limit 3] 3
          '[:find ?e ?n :where [?e :p/name ?n] :offset 5 :limit 3] 1
          '[:find ?n :where [_ :p/name ?n] :limit 5] 5))
      (testing "a bag (:with) is cut the same way"
        (is (= 3 (count (d/q '[:find ?a :with ?e :where [?e :p/age ?a] :limit 3] db))))))))

(deftest order-of-values-across-types
  ;; Compare's order (Datomic's): nil, numbers, vectors, then other classes by name:
  ;; keyword < symbol < boolean < string < instant
  (let [d (Date. 0)]
    (is (= [1.5 2 3N [1] :a :b 'sym false true "a" "b" d]
           (d/q '[:find [?x ...] :in [?x ...] :order-by ?x]
                ["b" :b 3N true 'sym d 2 "a" :a false 1.5 [1]])))
    (is (= [d "b" "a" true false 'sym :b :a [1] 3N 2 1.5]
           (d/q '[:find [?x ...] :in [?x ...] :order-by [?x :desc]]
                ["b" :b 3N true 'sym d 2 "a" :a false 1.5 [1]])))))

(deftest bad-slices-are-parser-errors
  (are [query error] (= error (:error (failure #(d/q query []))))
    '[:find ?x :in [?x ...] :order-by ?y] :parser/order-by
    '[:find ?x :in [?x ...] :order-by [?x :up]] :parser/order-by
    '[:find ?x :in [?x ...] :order-by [?x :asc :desc]] :parser/order-by
    '[:find ?x :in [?x ...] :order-by ?x ?x] :parser/order-by
    '[:find ?x :in [?x ...] :order-by []] :parser/order-by
    '[:find ?x :in [?x ...] :order-by (count ?x)] :parser/order-by
    '[:find (pull ?x [*]) :in $ [?x ...] :order-by ?x] :parser/order-by
    '{:find [?x] :in [[?x ...]] :order-by ?x} :parser/query
    '[:find ?x :in [?x ...] :limit -1] :parser/limit
    '[:find ?x :in [?x ...] :limit 1.5] :parser/limit
    '[:find ?x :in [?x ...] :limit] :parser/limit
    '[:find ?x :in [?x ...] :limit 1 2] :parser/limit
    '{:find [?x] :in [[?x ...]] :limit "3"} :parser/limit
    '[:find ?x :in [?x ...] :offset -2] :parser/offset
    '[:find ?x :in [?x ...] :order-by ?x :order-by ?x] :parser/query))

(defn- issues!
  "n issues: status :open for two in three, created at i div 3 ms (ties of three
  apart from the chunk edges), votes i mod 50."
  [conn n]
  (d/transact! conn schema)
  (doseq [part (partition-all 1000 (range n))]
    (d/transact! conn (for [i part]
                        {:p/name (str "i" i)
                         :i/status (if (zero? (mod i 3)) :closed :open)
                         :i/created (Date. (long (quot i 3)))
                         :i/votes (mod i 50)})))
  (d/db conn))

(deftest ordered-walk-answers-as-the-full-sort
  ;; 3000 issues: the walk over :i/created or :i/votes (chunks of 256 and more) must give the
  ;; first k of the full answer sorted, whatever the direction, the ties, the range, the offset
  (each-store [conn]
    (let [db (issues! conn 3000)
          full (fn [q] (d/q (-> q (dissoc :limit) (dissoc :offset)) db))]
      (doseq [q ['{:find [?n ?t] :where [[?e :i/status :open] [?e :i/created ?t] [?e :p/name ?n]]
                   :order-by [[?t :desc]] :limit 20}
                 '{:find [?n ?t] :where [[?e :i/status :open] [?e :i/created ?t] [?e :p/name ?n]]
                   :order-by [?t] :limit 20}
                 '{:find [?t ?n] :where [[?e :i/created ?t] [?e :i/status :open] [?e :p/name ?n]]
                   :order-by [[?t :desc] [?n :desc]] :offset 300 :limit 7}
                 '{:find [?v ?n] :where [[?e :i/votes ?v] [?e :p/name ?n] [(< ?v 40)] [(>= ?v 3)]]
                   :order-by [[?v :desc] ?n] :limit 500}
                 '{:find [?v ?n] :where [[?e :i/votes ?v] [?e :p/name ?n] [(> ?v 45)]]
                   :order-by [?v ?n] :offset 10 :limit 30}
                 '{:find [?e ?t] :where [[?e :i/created ?t] [?e :i/status :closed]]
                   :order-by [[?t :desc]] :limit 1000}
                 '{:find [?t] :where [[?e :i/created ?t] [?e :i/status :open]]
                   :order-by [[?t :desc]] :limit 5}]]
        (testing (pr-str q)
          (let [expected (vec (take (:limit q) (drop (or (:offset q) 0) (full q))))]
            (is (= (count expected) (min (:limit q) (max 0 (- (count (full q)) (or (:offset q) 0))))))
            (is (= expected (d/q q db)))))))))

(deftest java-api-orders-rows
  (each-store [conn]
    (let [db (Database/of (people! conn))
          ^QueryResult r (.query db "[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]
                                      :order-by [[?a :desc] ?n] :limit 3]" (object-array 0))]
      (is (instance? List (.rows r)))
      (is (= [["Flo" 52] ["Di" 41] ["Ada" 36]] (vec (.rows r))))
      (is (= [["Flo" 52]] (vec (.rows (.query db "{:find [?n ?a] :where [[?e :p/name ?n]
                                                    [?e :p/age ?a]] :order-by [[?a :desc]]
                                                    :limit 1}" (object-array 0)))))))))

;; h-prep: a query map's :offset and :limit (Datomic's arg-map keys) cut the answer the query
;; gives, after its own :offset and :limit

(deftest query-map-offset-and-limit
  (each-store [conn]
    (d/transact! conn schema)
    (d/transact! conn (for [i (range 10)] {:p/age i}))
    (let [db (d/db conn)
          ages '[:find ?a :where [_ :p/age ?a] :order-by ?a]
          paged '[:find ?a :where [_ :p/age ?a] :order-by ?a :offset 1 :limit 5]
          rows #(mapv first %)]
      (testing "on an ordered query, through q and qseq"
        (are [query opts expected] (= expected
                                      (rows (d/q (merge {:query query :args [db]} opts)))
                                      (rows (d/qseq (merge {:query query :args [db]} opts))))
          ages {:limit 3} [0 1 2]
          ages {:offset 2 :limit 3} [2 3 4]
          ages {:offset 8} [8 9]
          ages {:limit -1} (vec (range 10))
          ages {:limit -1 :offset 9} [9]
          ages {:limit 0} []
          ages {:offset 20} []
          paged {} [1 2 3 4 5]
          paged {:offset 2 :limit 2} [3 4]
          paged {:offset 4 :limit 10} [5]
          paged {:limit 10} [1 2 3 4 5]
          paged {:offset 7} []))
      (testing "on an unordered relation: that many of its rows"
        (let [four (d/q {:query '[:find ?a :where [_ :p/age ?a]] :args [db] :limit 4})]
          (is (= 4 (count four)))
          (is (every? #(<= 0 (first %) 9) four)))
        (is (= 10 (count (d/q {:query '[:find ?a :where [_ :p/age ?a]] :args [db] :offset 0})))))
      (testing "bad values are :query/invalid-option"
        (are [opts] (= :query/invalid-option
                       (:error (failure #(d/q (merge {:query ages :args [db]} opts)))))
          {:limit -2}
          {:limit "3"}
          {:limit 1.5}
          {:offset -1}
          {:offset 2.0}
          {:offset :two})))))
