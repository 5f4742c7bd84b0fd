(ns datalith.query-aggregates-test
  "Aggregates in :find: the built-ins, grouping, :with, user aggregates, and
  aggregates over nothing."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure people! schema]]
            [datalith.test-util :refer [each-store]]))

(defn concat-sorted "A user aggregate: the values sorted and joined." [vs] (apply str (sort vs)))

(defn top "A user aggregate with a leading argument: the n largest values." [n vs]
  (vec (take n (sort > vs))))

(defn names-of "A user aggregate taking the database: the names of the entities." [db es]
  (set (map #(d/q '[:find ?n . :in $ ?e :where [?e :person/name ?n]] db %) es)))

(def values
  "[group value] rows; duplicates are kept only with :with ?i"
  [[:a 1 1] [:a 2 2] [:a 2 3] [:b 3 4] [:b 3 5] [:b 5 6] [:c 10 7]])

(defn- agg
  "The aggregate `expr` of ?v over `values`, one [group result] per group, using :with ?i."
  [expr]
  (d/q [:find '?k expr :with '?i :in '[[?k ?v ?i]]] values))

(deftest single-value-aggregates
  (are [expr result] (= result (agg expr))
    '(count ?v)          #{[:a 3] [:b 3] [:c 1]}
    '(count-distinct ?v) #{[:a 2] [:b 2] [:c 1]}
    '(sum ?v)            #{[:a 5] [:b 11] [:c 10]}
    '(min ?v)            #{[:a 1] [:b 3] [:c 10]}
    '(max ?v)            #{[:a 2] [:b 5] [:c 10]}
    '(median ?v)         #{[:a 2] [:b 3] [:c 10]}
    '(distinct ?v)       #{[:a #{1 2}] [:b #{3 5}] [:c #{10}]})
  (testing "avg, variance and stddev (compared numerically)"
    (let [by-group (fn [expr] (into {} (agg expr)))
          near? (fn [x y] (< (Math/abs (- (double x) (double y))) 1e-9))]
      (is (near? 5/3 (:a (by-group '(avg ?v)))))
      (is (near? 11/3 (:b (by-group '(avg ?v)))))
      (is (near? 10 (:c (by-group '(avg ?v)))))
      ;; population variance: mean of squared deviations
      (is (near? 8/9 (:b (by-group '(variance ?v)))))
      (is (near? 0 (:c (by-group '(variance ?v)))))
      (is (near? (Math/sqrt 8/9) (:b (by-group '(stddev ?v)))))
      (is (near? 1.5 (d/q '[:find (avg ?v) . :in [?v ...]] [1 2])))))
  (testing "over a plain collection: one row"
    (are [query result] (= result (d/q query [5 1 3 4 2]))
      '[:find (count ?v) (sum ?v) (min ?v) (max ?v) :in [?v ...]] #{[5 15 1 5]}
      '[:find (median ?v) . :in [?v ...]]                       3
      '[:find [(min ?v) (max ?v)] :in [?v ...]]                 [1 5]
      '[:find [(count ?v) ...] :in [?v ...]]                    [5]))
  (testing "median of an even count with equal middle values"
    (is (= 2 (d/q '[:find (median ?v) . :with ?i :in [[?i ?v]]] [[1 1] [2 2] [3 2] [4 9]]))))
  (testing "min and max use the query order: any comparable type, numbers across classes"
    (are [xs lo hi] (= [lo hi] (d/q '[:find [(min ?v) (max ?v)] :in [?v ...]] xs))
      ["b" "a" "c"]                                   "a" "c"
      [:m :a :z]                                      :a :z
      [1 2.5 3N 1/2]                                  1/2 3N
      [#inst "2020-01-01" #inst "2019-01-01"]         #inst "2019-01-01" #inst "2020-01-01")))

(deftest collection-aggregates
  (are [expr result] (= result (agg expr))
    ;; the n smallest or largest of the group's bag, repeats kept (Datomic Local's answers)
    '(min 2 ?v)  #{[:a [1 2]] [:b [3 3]] [:c [10]]}
    '(max 2 ?v)  #{[:a [2 2]] [:b [5 3]] [:c [10]]}
    '(min 5 ?v)  #{[:a [1 2 2]] [:b [3 3 5]] [:c [10]]}
    '(max 5 ?v)  #{[:a [2 2 1]] [:b [5 3 3]] [:c [10]]})
  (is (= [[0 1 2] [9 8 7]] (d/q '[:find [(min 3 ?v) (max 3 ?v)] :in [?v ...]] (range 10))))
  (testing "rand and sample draw from the values"
    (let [xs (set (range 10))
          [one some-with-repeats sampled all] (d/q '[:find [(rand ?v) (rand 20 ?v) (sample 4 ?v) (sample 50 ?v)]
                                                    :in [?v ...]] (range 10))]
      (is (contains? xs one))
      (is (= 20 (count some-with-repeats)))
      (is (every? xs some-with-repeats))
      (is (= 4 (count sampled) (count (set sampled))))
      (is (every? xs sampled))
      (is (= xs (set all)) "sample returns every value when asked for more than there are")
      (is (= 10 (count all)))))
  (testing "the count of sample may come from an input"
    (is (= 2 (count (d/q '[:find (sample ?n ?v) . :in ?n [?v ...]] 2 [1 2 3]))))))

(deftest grouping
  (are [query result] (= result (d/q query [[:a 1 1] [:a 1 2] [:a 2 3] [:b 1 4] [:b 1 4]]))
    ;; grouped by two variables
    '[:find ?k ?j (sum ?v) :in [[?k ?j ?v]]]                      #{[:a 1 3] [:a 2 3] [:b 1 4]}
    ;; group variables in any position among the aggregates
    '[:find (count ?v) ?k (max ?j) :in [[?k ?j ?v]]]              #{[3 :a 2] [1 :b 1]}
    ;; :with keeps the duplicate [:b 1 4] rows apart only when its variable differs
    '[:find ?k (count ?v) :with ?j :in [[?k ?j ?v]]]              #{[:a 3] [:b 1]}
    ;; return maps on aggregates
    '[:find ?k (count ?v) :keys k n :in [[?k ?j ?v]]]             #{{:k :a :n 3} {:k :b :n 1}}))

(deftest with-and-duplicates
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query result] (= result (d/q query db))
        '[:find (count ?a) . :where [_ :person/age ?a]]                      2
        '[:find (count ?a) . :with ?e :where [?e :person/age ?a]]            3
        '[:find (count-distinct ?a) . :with ?e :where [?e :person/age ?a]]   2
        '[:find (sum ?a) . :with ?e :where [?e :person/age ?a]]              85
        '[:find (count ?e) . :where [?e :person/name]]                       4
        '[:find ?a (count ?e) :where [?e :person/age ?a]]                    #{[30 2] [25 1]}
        ;; friends per person, people without friends are not counted
        '[:find ?n (count ?f) :where [?e :person/name ?n] [?e :person/friend ?f]] #{["Bob" 1] ["Carol" 2]}
        ;; the ages of everyone's friends, with repeats
        '[:find (sum ?a) . :with ?e ?f :where [?e :person/friend ?f] [?f :person/age ?a]] 85))))

(deftest user-aggregates
  (are [query inputs result] (= result (apply d/q query inputs))
    '[:find (datalith.query-aggregates-test/concat-sorted ?v) . :in [?v ...]] [["b" "a" "c"]] "abc"
    '[:find (datalith.query-aggregates-test/top 2 ?v) . :in [?v ...]]         [[1 5 3]]       [5 3]
    '[:find ?k (datalith.query-aggregates-test/top 1 ?v) :in [[?k ?v]]]       [[[:a 1] [:a 2] [:b 3]]] #{[:a [2]] [:b [3]]}
    '[:find (clojure.core/count ?v) . :in [?v ...]]                           [[1 2 3]]       3)
  (testing "an unknown aggregate"
    (is (= :parser/find (:error (failure #(d/q '[:find (no-such-agg ?v) :in [?v ...]] [1])))))
    (is (= :query/unknown-fn (:error (failure #(d/q '[:find (no.such/agg ?v) :in [?v ...]] [1])))))
    (is (= :query/unknown-fn (:error (failure #(d/q '[:find ?k (no.such/agg ?v) :in [[?k ?v]]] [])))))))

(deftest user-aggregates-with-a-source
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (is (= #{[30 #{"Alice" "Carol"}] [25 #{"Bob"}]}
             (d/q '[:find ?a (datalith.query-aggregates-test/names-of $ ?e) :where [?e :person/age ?a]] db))))))

(deftest aggregates-over-nothing
  (testing "Datomic returns no rows, not a row of zeros"
    (are [query result] (= result (d/q query []))
      '[:find (count ?v) :in [?v ...]]          #{}
      '[:find (count ?v) . :in [?v ...]]        nil
      '[:find (sum ?v) (max ?v) :in [?v ...]]   #{}
      '[:find [(count ?v) (sum ?v)] :in [?v ...]] nil
      '[:find [(count ?v) ...] :in [?v ...]]    []
      '[:find ?k (count ?v) :in [[?k ?v]]]      #{}))
  (each-store [conn {:schema schema}]
    (people! conn)
    (is (nil? (d/q '[:find (count ?e) . :where [?e :person/age 99]] (d/db conn))))))

(deftest counts-by-value
  (each-store [conn {:schema {:t/state {:db/valueType :db.type/keyword}
                              :t/label {:db/valueType :db.type/string}}}]
    (let [long-a (apply str "a" (repeat 500 "x")) ; kept as a prefix and a hash in index keys
          long-b (apply str "a" (repeat 500 "x") "b")
          state (fn [i] (cond (< i 2000) :s/open (< i 5000) :s/closed (= i 5000) :s/lone :else :s/late))
          label (fn [i] (case (int (mod i 3)) 0 long-a 1 long-b "short"))
          tx1 (d/transact! conn (for [i (range 6000)]
                                  {:db/id (str i) :t/state (state i) :t/label (label i)}))
          ids (mapv #((:tempids tx1) (str %)) (range 6000))
          before (d/db conn)
          ;; moves 700 entities from open to closed: retractions in the history
          _ (d/transact! conn (for [i (range 700)] [:db/add (ids i) :t/state :s/closed]))
          db (d/db conn)
          q '[:find ?s (count ?e) :where [?e :t/state ?s]]
          naive (fn [db attr]
                  (set (seq (frequencies (map second (d/q [:find '?e '?v :where ['?e attr '?v]] db))))))]
      (testing "runs of one value over many leaf pages, a value with one datom, after retractions"
        (is (= #{[:s/open 1300] [:s/closed 3700] [:s/lone 1] [:s/late 999]} (d/q q db)))
        (is (= (naive db :t/state) (d/q q db))))
      (testing "long values (a prefix and a hash in the key) are counted one datom at a time"
        (is (= #{[long-a 2000] [long-b 2000] ["short" 2000]}
               (d/q '[:find ?l (count ?e) :where [?e :t/label ?l]] db))))
      (testing "as-of, since and history views count what they see"
        (is (= #{[:s/open 2000] [:s/closed 3000] [:s/lone 1] [:s/late 999]} (d/q q before)))
        (is (= #{[:s/open 2000] [:s/closed 3000] [:s/lone 1] [:s/late 999]}
               (d/q q (d/as-of db (d/basis-t before)))))
        (is (= #{[:s/closed 700]} (d/q q (d/since db (d/basis-t before)))))
        (is (= #{[:s/open 2000] [:s/closed 3700] [:s/lone 1] [:s/late 999]}
               (d/q '[:find ?s (count ?e) :where [?e :t/state ?s _ true]] (d/history db)))))
      (testing "the counts agree with grouping the rows themselves"
        (is (= (d/q q db)
               (d/q '[:find ?s (count ?e) :with ?x :where [?e :t/state ?s] [(identity ?e) ?x]] db)))))))

(def ^:private priorities
  "[issue priority] rows: two issues of priority 5, one of 4."
  [[1 5] [2 5] [3 4]])

(deftest aggregates-read-the-bag
  (each-store [conn {:schema schema}]
    (let [db (d/db conn)
          q (fn [query rows] (d/q query db rows))]
      (testing "with :with the bag keeps a value once per row; without, once"
        (are [query result] (= result (q query priorities))
          '[:find (max 2 ?p) (min 2 ?p) :with ?i :in $ [[?i ?p]]]   #{[[5 5] [4 5]]}
          '[:find (max 2 ?p) (min 2 ?p) :in $ [[?i ?p]]]            #{[[5 4] [4 5]]}
          '[:find (max 5 ?p) (min 5 ?p) :with ?i :in $ [[?i ?p]]]   #{[[5 5 4] [4 5 5]]}
          '[:find (count ?p) (count-distinct ?p) :with ?i :in $ [[?i ?p]]] #{[3 2]}
          '[:find (sum ?p) (median ?p) :with ?i :in $ [[?i ?p]]]    #{[14 5]}
          '[:find (distinct ?p) . :with ?i :in $ [[?i ?p]]]          #{4 5}
          '[:find (min ?p) (max ?p) :with ?i :in $ [[?i ?p]]]       #{[4 5]}))
      (testing "sample draws distinct values, rand any value of the bag"
        (let [[sampled drawn one] (q '[:find [(sample 5 ?p) (rand 4 ?p) (rand ?p)] :with ?i :in $ [[?i ?p]]]
                                     priorities)]
          (is (= #{4 5} (set sampled)))
          (is (= 2 (count sampled)))
          (is (= 4 (count drawn)))
          (is (every? #{4 5} drawn))
          (is (#{4 5} one)))))))

(defn- median-of [xs]
  (d/q '[:find (median ?x) . :with ?i :in [[?i ?x]]] (map-indexed vector xs)))

(deftest median-and-the-means
  (testing "median: the middle value of an odd count; (quot (+ a b) 2) of an even count's middle pair"
    (are [xs result] (let [m (median-of xs)] (and (== result m) (= (class result) (class m))))
      [1 2 6]                 2
      [1 2]                   1
      [3 1 2 9]               2
      [1 4 5 9]               4
      [-1 -2]                 -1
      [5 5 4]                 5
      [1.0 2.0 3.0]           2.0
      [1.0 2.0]               1.0
      [5.0 6.5 6.5 8.0]       6.0
      [5.0 6.0 7.0 8.0]       6.0
      [(float 1.0) (float 2.0)] 1.0
      [1.5M 2.5M]             2M
      [1N 3N 2N]              2N
      [1N 2N]                 1N)
    (is (= :b (median-of [:a :c :b])) "an odd count of any ordered values")
    (is (= :query/invalid-aggregate (:error (failure #(median-of [:a :b]))))
        "the mean of an even count's middle pair needs numbers"))
  (testing "avg, variance and stddev are doubles; sum adds as Clojure's +"
    (are [xs mean var sd total]
         (let [[a v d s] (d/q '[:find [(avg ?x) (variance ?x) (stddev ?x) (sum ?x)] :with ?i :in [[?i ?x]]]
                              (map-indexed vector xs))
               near? (fn [x y] (and (double? y) (< (Math/abs (- (double x) y)) 1e-12)))]
           (and (near? mean a) (near? var v) (near? sd d) (= total s) (= (class total) (class s))))
      [1 2]                     1.5 0.25 0.5 3
      [1 2 6]                   3.0 (/ 14.0 3) (Math/sqrt (/ 14.0 3)) 9
      [4]                       4.0 0.0 0.0 4
      [1.0 2.0]                 1.5 0.25 0.5 3.0
      [(float 1.5) (float 2.5)] 2.0 0.25 0.5 4.0
      [1M 2M]                   1.5 0.25 0.5 3M
      [1N 2N 4N]                (/ 7.0 3) (/ 14.0 9) (Math/sqrt (/ 14.0 9)) 7N))
  (testing "a sum that overflows a long is an error, not a wrong answer"
    (is (= :query/invalid-aggregate
           (:error (failure #(d/q '[:find (sum ?x) . :with ?i :in [[?i ?x]]]
                                  [[1 Long/MAX_VALUE] [2 1]])))))))

(deftest pulls-beside-aggregates
  (each-store [conn {:schema schema}]
    (let [{:strs [Alice]} (people! conn)
          db (d/db conn)]
      (testing "a pull groups as its entity does"
        (are [query result] (= result (d/q query db))
          '[:find ?n (pull ?e [:person/name]) (max ?a) :where [?e :person/age ?a] [?e :person/name ?n]]
          #{["Alice" {:person/name "Alice"} 30] ["Bob" {:person/name "Bob"} 25] ["Carol" {:person/name "Carol"} 30]}

          '[:find (pull ?e [:person/name]) (count ?a) :where [?e :person/age ?a]]
          #{[{:person/name "Alice"} 1] [{:person/name "Bob"} 1] [{:person/name "Carol"} 1]}

          '[:find (pull ?e [:person/name]) (count ?f) :where [?e :person/friend ?f]]
          #{[{:person/name "Bob"} 1] [{:person/name "Carol"} 2]}

          '[:find (count ?f) (pull ?e [:person/age]) :with ?x :where [?e :person/friend ?f] [?f :person/age ?x]]
          #{[1 {:person/age 25}] [2 {:person/age 30}]}

          '[:find [(pull ?e [:person/name]) (sum ?a)] :where [?e :person/name "Bob"] [?e :person/age ?a]]
          [{:person/name "Bob"} 25]

          '[:find (pull ?e [:db/id]) (distinct ?t) :keys who tags :where [?e :person/tag ?t]]
          #{{:who {:db/id Alice} :tags #{:x :y}}}))
      (testing "pulls of two entities in one row group by the pair"
        (is (= #{[{:person/name "Carol"} {:person/name "Alice"} 1] [{:person/name "Carol"} {:person/name "Bob"} 1]
                 [{:person/name "Bob"} {:person/name "Alice"} 1]}
               (d/q '[:find (pull ?e [:person/name]) (pull ?f [:person/name]) (count ?f)
                      :where [?e :person/friend ?f]] db)))))))

(def ^:private derivation-rules
  '[[(tagged ?e) [?e :p/tags 1]]
    [(tagged ?e) [?e :p/tags 2]]
    [(tag-of ?e ?t) [?e :p/tags ?t]]
    [(tag-of ?e ?t) [?e :p/tags ?t] [?e :p/links _]]])

(deftest with-counts-each-binding-once-however-derived
  ;; Datomic: the bindings are a set, :with only keeps its variables in that set before the
  ;; aggregate reads it; or, or-join and rules are unions of sets of their variables' bindings.
  ;; So the bag an aggregate reads holds one value per distinct binding of the :find and :with
  ;; variables, however many branches, rule bodies or dropped variables derive it (the query
  ;; property test found a count of 2 for one such binding)
  (each-store [conn {:schema {:p/id {:db/unique :db.unique/identity}
                              :p/tags {:db/cardinality :db.cardinality/many}
                              :p/links {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}}}]
    (let [{:strs [a b c]} (:tempids (d/transact! conn [{:db/id "a" :p/id 0 :p/num 1 :p/tags #{1 2 3}
                                                         :p/links #{"b" "c"}}
                                                        {:db/id "b" :p/id 1 :p/num 1 :p/tags 1}
                                                        {:db/id "c" :p/id 2 :p/num 2 :p/tags #{2 3}}]))
          db (d/db conn)]
      (are [query inputs result] (= result (apply d/q query db inputs))
        ;; a matches both branches: (1 a) (1 b) (2 c)
        '[:find (count ?n) . :with ?e :where [?e :p/num ?n] (or [?e :p/tags 1] [?e :p/tags 2])]
        [] 3
        ;; a branch's own variables (?t ?l) are not the or's
        '[:find (count ?n) . :with ?e :where [?e :p/num ?n] (or-join [?e] [?e :p/tags ?t] [?e :p/links ?l])]
        [] 3
        '[:find (sum ?n) . :with ?e :where [?e :p/num ?n] (or-join [?e] (and [?e :p/tags ?t] [(< ?t 3)]) [?e :p/links _])]
        [] 4
        ;; a rule's bodies: a union of sets too
        '[:find (count ?n) . :with ?e :in $ % :where [?e :p/num ?n] (tagged ?e)]
        [derivation-rules] 3
        '[:find (count ?n) . :with ?e ?t :in $ % :where [?e :p/num ?n] (tag-of ?e ?t)]
        [derivation-rules] 6
        ;; not drops rows, never repeats them; ?t, dropped, repeats nothing
        '[:find (count ?n) . :with ?e :where [?e :p/num ?n] [?e :p/tags ?t] (not [?e :p/links _])]
        [] 2
        '[:find (count ?n) . :with ?e :where [?e :p/num ?n] [?e :p/tags ?t] (not-join [?e] [?e :p/tags 3])]
        [] 1
        ;; several :with variables: one value per distinct (?n ?e ?t)
        '[:find (count ?n) . :with ?e ?t :where [?e :p/num ?n] [?e :p/tags ?t]
          (or-join [?e ?t] [(< ?t 3)] [?e :p/links _])]
        [] 5
        '[:find ?n (count ?e) :with ?t :where [?e :p/num ?n] (or [?e :p/tags ?t] [?e :p/links ?t])]
        [] #{[1 6] [2 2]}
        ;; entities given twice, matched by several datoms each: one binding each
        '[:find (count ?e) . :with ?n :in $ [?e ...] :where [?e :p/tags ?t] [?e :p/num ?n]
          (or [?e :p/num 1] [?e :p/num 2])]
        [[a a b c b]] 3
        '[:find (count ?e) . :with ?n :in $ [?e ...] ?n :where [?e :p/tags ?t]
          (or-join [?e] [?e :p/tags 1] [?e :p/links _])]
        [[a b a b] 7] 2))))
