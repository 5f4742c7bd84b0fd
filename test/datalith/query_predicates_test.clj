(ns datalith.query-predicates-test
  "Predicates and function bindings: comparisons (ranges, mixed types),
  arithmetic, strings and regexes, binding forms, the database functions
  (get-else, get-some, missing?) and ground/tuple/untuple, user functions."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure people! schema]]
            [datalith.test-util :refer [each-store]]))

(defn shout "A user function for queries." [s] (str (.toUpperCase ^String s) "!"))

(defn digits "A user function returning a collection." [n] (map #(- (int %) 48) (str n)))

(defn- filtered
  "The inputs of `xs` for which predicate clause `pred` (on ?x) holds."
  [pred xs]
  (set (d/q [:find '[?x ...] :in '[?x ...] :where pred] xs)))

(deftest comparisons
  (are [pred xs kept] (= kept (filtered pred xs))
    '[(= ?x 2)]          [1 2 3]          #{2}
    '[(== ?x 2)]         [1 2.0 3]        #{2.0}
    '[(not= ?x 2)]       [1 2 3]          #{1 3}
    '[(!= ?x 2)]         [1 2 3]          #{1 3}
    '[(< ?x 2)]          [1 2 3]          #{1}
    '[(> ?x 2)]          [1 2 3]          #{3}
    '[(<= ?x 2)]         [1 2 3]          #{1 2}
    '[(>= ?x 2)]         [1 2 3]          #{2 3}
    '[(< 1 ?x)]          [1 2 3]          #{2 3}
    ;; more than two arguments
    '[(< 1 ?x 3)]        [1 2 3]          #{2}
    '[(<= 1 ?x 2)]       [0 1 2 3]        #{1 2}
    '[(= ?x 1 1)]        [1 2]            #{1}
    ;; numbers compare numerically whatever their class
    '[(< ?x 2)]          [1.5 3/2 1N 2.0 2M 2.5 3N] #{1.5 3/2 1N}
    '[(> ?x 1.5)]        [1 2 3/2 5N]     #{2 5N}
    ;; strings, keywords and instants by their own order
    '[(< ?x "b")]        ["a" "b" "c" "B"] #{"a" "B"}
    '[(>= ?x :m)]        [:a :m :z]       #{:m :z}
    '[(< ?x #inst "2020-01-01")] [#inst "2019-06-01" #inst "2021-01-01"] #{#inst "2019-06-01"}
    '[(-differ? ?x 2)]   [1 2 3]          #{1 3})
  (testing "comparing values of different types never throws and is a total order"
    (let [vals [1 2.5 "a" :k 'sym true #inst "2020-01-01" (java.util.UUID. 0 1) [1 2]]]
      (doseq [a vals b vals]
        (let [lt (d/q '[:find ?r . :in ?a ?b :where [(< ?a ?b)] [(ground true) ?r]] a b)
              gt (d/q '[:find ?r . :in ?a ?b :where [(> ?a ?b)] [(ground true) ?r]] a b)
              same (= a b)]
          (is (= 1 (count (filter identity [lt gt same])))
              (str "exactly one of <, >, = holds for " (pr-str a) " and " (pr-str b))))))))

(deftest ranges-after-patterns
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query result] (= result (d/q query db))
        '[:find ?n :where [?e :person/age ?a] [(< ?a 28)] [?e :person/name ?n]]         #{["Bob"]}
        '[:find ?n :where [?e :person/name ?n] [?e :person/age ?a] [(<= 25 ?a)] [(< ?a 30)]] #{["Bob"]}
        '[:find ?n :where [?e :person/age ?a] [(>= ?a 30)] [?e :person/name ?n]]        #{["Alice"] ["Carol"]}
        '[:find ?n :where [?e :person/age ?a] [(> ?a 30)] [?e :person/name ?n]]         #{}
        '[:find ?n :where [?e :person/age ?a] [(< 26 ?a)] [?e :person/name ?n]]         #{["Alice"] ["Carol"]}
        ;; bounds of other numeric types and of another type
        '[:find ?n :where [?e :person/age ?a] [(< ?a 25.5)] [?e :person/name ?n]]       #{["Bob"]}
        '[:find ?n :where [?e :person/age ?a] [(> ?a 29.5)] [(< ?a 30.5)] [?e :person/name ?n]] #{["Alice"] ["Carol"]}
        '[:find ?n :where [?e :person/score ?s] [(< ?s 2)] [?e :person/name ?n]]        #{["Alice"]}
        '[:find ?n :where [?e :person/name ?n] [(< ?n "Bz")]]                            #{["Alice"] ["Bob"]})
      (testing "a comparison the pattern's range holds every value to is not run again; a stricter one is"
        (are [query result] (= result (d/q query db))
          '[:find ?n :where [?e :person/age ?a] [(>= ?a 30)] [(> ?a 30)] [?e :person/name ?n]]   #{}
          '[:find ?n :where [?e :person/age ?a] [(> ?a 30)] [(>= ?a 30)] [?e :person/name ?n]]   #{}
          '[:find ?n :where [?e :person/age ?a] [(> ?a 29)] [(>= ?a 30)] [?e :person/name ?n]]   #{["Alice"] ["Carol"]}
          '[:find ?n :where [?e :person/age ?a] [(<= ?a 30)] [(< ?a 30)] [?e :person/name ?n]]   #{["Bob"]}
          '[:find ?n :where [?e :person/age ?a] [(< ?a 30)] [(<= 30 ?a)] [?e :person/name ?n]]   #{}
          '[:find ?n :where [?e :person/age ?a] [(< ?a 30.5)] [(< ?a 31)] [?e :person/name ?n]]  #{["Alice"] ["Bob"] ["Carol"]})
        (is (= [:in-range :filter]
               (->> (d/explain '[:find ?n :where [?e :person/age ?a] [(>= ?a 30)] [(> ?a 30)]
                                 [?e :person/name ?n]] db)
                    :clauses (keep #(#{:in-range :filter} (:method %)))))))
      (testing "a bound from an input"
        (is (= #{["Bob"]}
             (d/q '[:find ?n :in $ ?max :where [?e :person/age ?a] [(< ?a ?max)] [?e :person/name ?n]]
                  db 30)))))))

(deftest arithmetic-and-strings
  (are [query inputs result] (= result (apply d/q query inputs))
    '[:find ?y . :in ?x :where [(+ ?x 1 2) ?y]]           [1]        4
    '[:find ?y . :in ?x :where [(- ?x 3) ?y]]             [1]        -2
    '[:find ?y . :in ?x :where [(- ?x) ?y]]               [1]        -1
    '[:find ?y . :in ?x :where [(* ?x 2.5) ?y]]           [2]        5.0
    '[:find ?y . :in ?x :where [(/ ?x 4) ?y]]             [2]        1/2
    '[:find ?y . :in ?x :where [(quot ?x 4) ?y]]          [9]        2
    '[:find ?y . :in ?x :where [(rem ?x 4) ?y]]           [-9]       -1
    '[:find ?y . :in ?x :where [(mod ?x 4) ?y]]           [-9]       3
    '[:find ?y . :in ?x :where [(inc ?x) ?z] [(dec ?z) ?y]] [7]      7
    '[:find [?lo ?hi] :in ?a ?b :where [(min ?a ?b) ?lo] [(max ?a ?b) ?hi]] [3 1.5] [1.5 3]
    '[:find ?c . :in ?a ?b :where [(compare ?a ?b) ?c]]   ["a" "b"]  -1
    '[:find ?y . :in ?x :where [(str ?x "-" 1 :k) ?y]]    ["a"]      "a-1:k"
    '[:find ?y . :in ?x :where [(subs ?x 1 3) ?y]]        ["abcdef"] "bc"
    '[:find ?y . :in ?x :where [(subs ?x 4) ?y]]          ["abcdef"] "ef"
    '[:find ?y . :in ?x :where [(count ?x) ?y]]           ["hello"]  5
    '[:find ?k . :in ?s :where [(keyword "a" ?s) ?k]]     ["b"]      :a/b
    '[:find [?n ?ns] :in ?k :where [(name ?k) ?n] [(namespace ?k) ?ns]] [:a/b] ["b" "a"]
    '[:find ?y . :in ?x :where [(re-find #"\d+" ?x) ?y]]  ["ab12c"]  "12"
    '[:find ?y . :in ?x :where [(re-matches #"(\w)-(\d)" ?x) [_ _ ?y]]] ["a-1"] "1"
    '[:find ?y . :in ?x ?p :where [(re-pattern ?p) ?re] [(re-find ?re ?x) ?y]] ["xyz" "y."] "yz"
    '[:find [?d ...] :in ?x :where [(re-seq #"\d" ?x) [?d ...]]] ["a1b2"] ["1" "2"]
    '[:find ?y . :in ?x :where [(clojure.string/upper-case ?x) ?y]] ["abc"] "ABC"
    '[:find ?y . :in ?x :where [(clojure.string/join "," ?x) ?y]] [[1 2]] "1,2")
  (are [pred xs kept] (= kept (filtered pred xs))
    '[(re-find #"^a.c" ?x)]                       ["abc" "xabc" "axc"] #{"abc" "axc"}
    '[(re-matches #"a+" ?x)]                      ["aaa" "aab"]        #{"aaa"}
    '[(clojure.string/starts-with? ?x "ab")]      ["abc" "xab"]        #{"abc"}
    '[(clojure.string/ends-with? ?x "ab")]        ["abc" "xab"]        #{"xab"}
    '[(clojure.string/includes? ?x "b")]          ["abc" "xyz"]        #{"abc"}
    '[(clojure.string/blank? ?x)]                 ["" " " "a"]         #{"" " "}
    '[(contains? #{1 3} ?x)]                      [1 2 3]              #{1 3}
    '[(even? ?x)]                                 [1 2 3 4]            #{2 4}
    '[(odd? ?x)]                                  [1 2 3 4]            #{1 3}
    '[(pos? ?x)]                                  [-1 0 1]             #{1}
    '[(neg? ?x)]                                  [-1 0 1]             #{-1}
    '[(zero? ?x)]                                 [-1 0 1]             #{0}
    '[(some? ?x)]                                 [1 nil]              #{1}
    '[(nil? ?x)]                                  [1 nil]              #{nil})
  (testing "collection functions"
    (is (= [[1 2] '(1 2) #{1 2} {:a 1} 1 true]
           (d/q '[:find [?v ?l ?s ?m ?g ?c] :in ?a ?b
                  :where [(vector ?a ?b) ?v] [(list ?a ?b) ?l] [(set ?v) ?s]
                  [(hash-map :a ?a) ?m] [(get ?m :a) ?g] [(contains? ?m :a) ?c]]
                1 2))))
  (testing "random functions stay in their range"
    (is (every? #(< -1 % 5) (d/q '[:find [?r ...] :in [?x ...] :where [(rand-int 5) ?r]] (range 50))))
    (is (every? #(< % 1.0) (d/q '[:find [?r ...] :in [?x ...] :where [(rand) ?r]] (range 50))))))

(deftest binding-forms
  (are [query inputs result] (= result (apply d/q query inputs))
    ;; scalar
    '[:find ?y :in [?x ...] :where [(inc ?x) ?y]]                 [[1 2]]            #{[2] [3]}
    ;; an already bound output variable filters
    '[:find ?x :in [?x ...] :where [(identity ?x) ?x]]            [[1 2]]            #{[1] [2]}
    '[:find ?x ?y :in [?x ...] [?y ...] :where [(inc ?x) ?y]]     [[1 2] [2 5]]      #{[1 2]}
    ;; a nil result binds nothing
    '[:find ?y :in [?x ...] :where [(identity ?x) ?y]]            [[1 nil]]          #{[1]}
    ;; tuple, with _
    '[:find ?a ?b :in ?t :where [(identity ?t) [?a ?b]]]          [[1 2]]            #{[1 2]}
    '[:find ?b :in ?t :where [(identity ?t) [_ ?b]]]              [[1 2 3]]          #{[2]}
    ;; collection
    '[:find ?a :in ?t :where [(identity ?t) [?a ...]]]            [[1 2 3]]          #{[1] [2] [3]}
    '[:find ?e ?y :in [[?e ?x]] :where [(identity ?x) [?y ...]]]  [[[1 [1 2]] [2 []]]] #{[1 1] [1 2]}
    ;; relation, with _
    '[:find ?a ?b :in ?t :where [(identity ?t) [[?a ?b]]]]        [[[1 2] [3 4]]]    #{[1 2] [3 4]}
    '[:find ?a ?c :in ?t :where [(identity ?t) [[?a _ ?c]]]]      [[[1 2 3] [4 5 6]]] #{[1 3] [4 6]}
    ;; a fully qualified user function
    '[:find ?y :in ?x :where [(datalith.query-predicates-test/shout ?x) ?y]] ["hi"] #{["HI!"]}
    '[:find ?d :in ?x :where [(datalith.query-predicates-test/digits ?x) [?d ...]]] [305] #{[3] [0] [5]}
    '[:find ?y :in ?x :where [(clojure.core/inc ?x) ?y]]          [1]                #{[2]}))

(deftest built-in-query-functions
  (each-store [conn {:schema schema}]
    (let [{:strs [Alice Bob] :keys [red blue]} (people! conn)
          db (d/db conn)
          age (d/entid db :person/age)
          color (d/entid db :person/color)]
      (are [query result] (= result (d/q query db))
        '[:find ?n ?a :where [?e :person/name ?n] [(get-else $ ?e :person/age -1) ?a]]
        #{["Alice" 30] ["Bob" 25] ["Carol" 30] ["Dan" -1]}

        '[:find ?n ?c :where [?e :person/name ?n] [(get-else $ ?e :person/color :none) ?c]]
        #{["Alice" red] ["Bob" blue] ["Carol" :none] ["Dan" :none]}

        ;; get-some: [attribute-id value] of the first attribute the entity has
        '[:find ?n ?a ?v :where [?e :person/name ?n] [(get-some $ ?e :person/color :person/age) [?a ?v]]]
        #{["Alice" color red] ["Bob" color blue] ["Carol" age 30]}

        '[:find ?n ?a :where [?e :person/name ?n] [(get-some $ ?e :person/age) [_ ?a]]]
        #{["Alice" 30] ["Bob" 25] ["Carol" 30]}

        '[:find ?n :where [?e :person/name ?n] [(missing? $ ?e :person/age)]]
        #{["Dan"]}

        '[:find ?n :where [?e :person/name ?n] (not [(missing? $ ?e :person/friend)])]
        #{["Bob"] ["Carol"]}

        '[:find ?x :where [(ground 5) ?x]]                     #{[5]}
        '[:find ?x :where [(ground [1 2]) [?x ...]]]           #{[1] [2]}
        '[:find ?x ?y :where [(ground [[1 2] [3 4]]) [[?x ?y]]]] #{[1 2] [3 4]}
        '[:find ?n :where [(ground "Bob") ?n] [?e :person/name ?n]] #{["Bob"]}
        '[:find ?t :where [?e :person/name "Bob"] [?e :person/age ?a] [(tuple ?e ?a) ?t]] #{[[Bob 25]]}
        '[:find ?a :where [(ground [1 2]) ?t] [(untuple ?t) [_ ?a]]] #{[2]}
        '[:find ?x :where [?e :person/name "Alice"] [(identity ?e) ?x]] #{[Alice]})
      (testing "get-else and get-some with an entity given by lookup ref or ident"
        (is (= 25 (d/q '[:find ?a . :where [(get-else $ [:person/name "Bob"] :person/age 0) ?a]] db)))
        (is (= 0 (d/q '[:find ?a . :where [(get-else $ [:person/name "Dan"] :person/age 0) ?a]] db))))
      (testing "get-else refuses a cardinality-many attribute and a nil default"
        (are [query] (= :query/invalid-call (:error (failure #(d/q query db))))
          '[:find ?t :where [?e :person/name "Alice"] [(get-else $ ?e :person/tag :none) ?t]]
          '[:find ?t :where [?e :person/name "Dan"] [(get-else $ ?e :person/age nil) ?t]])))))

(deftest unknown-functions
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query] (= :query/unknown-fn (:error (failure #(d/q query db))))
        '[:find ?n :where [?e :person/name ?n] [(no-such-fn ?n)]]
        '[:find ?y :where [?e :person/name ?n] [(no-such-fn ?n) ?y]]
        '[:find ?y :where [?e :person/name ?n] [(no.such.ns/f ?n) ?y]]
        '[:find ?y :where [?e :person/name ?n] [(clojure.core/no-such-var ?n) ?y]]
        ;; even when no row ever reaches the function
        '[:find ?e :where [?e :person/name "Nobody"] [(no-such-fn ?e)]]
        '[:find ?e :where [?e :person/name "Nobody"] (not [(no-such-fn ?e)])]
        '[:find ?e :where [?e :person/name "Nobody"] (or [(no-such-fn ?e)] [?e :person/age 1])]))))

(def ^:private datomic-order
  "Values of every kind, in the order Datomic Local 1.0.291 gives them: nil, numbers (by value,
  whatever their class), lists and vectors, maps, sets, byte arrays, then the other classes by
  name: keywords, symbols, booleans, characters, strings, URIs, instants, UUIDs."
  [nil -1 0.5M 1 1.5 2N [0] [1 2] '(1 3) [1 3 0] {:a 1} #{1} (byte-array [1]) :a :b/c 'a 'ns/b
   false true \c "" "a" (java.net.URI. "http://x") #inst "2020-01-01" #uuid "00000000-0000-0000-0000-000000000001"])

(deftest comparisons-across-types
  (testing "< and > order values of different types as Datomic does"
    (doseq [[i a] (map-indexed vector datomic-order)
            [j b] (map-indexed vector datomic-order)]
      (let [lt (d/q '[:find ?r . :in ?a ?b :where [(< ?a ?b)] [(ground true) ?r]] a b)
            ge (d/q '[:find ?r . :in ?a ?b :where [(>= ?a ?b)] [(ground true) ?r]] a b)]
        (is (= (< i j) (boolean lt)) (str (pr-str a) " < " (pr-str b)))
        (is (= (>= i j) (boolean ge)) (str (pr-str a) " >= " (pr-str b))))))
  (are [pred xs kept] (= kept (filtered pred xs))
    ;; numbers come before keywords, strings, ...
    '[(< ?x 2.5)]         [:a 1 "x" 3 true]  #{1}
    '[(> ?x 2.5)]         [:a 1 "x" 3 true]  #{:a "x" 3 true}
    '[(< ?x :m)]          [:a :z 5 "s" 'y]   #{:a 5}
    '[(<= "b" ?x)]        [:a "a" "b" "c" #inst "2020-01-01"] #{"b" "c" #inst "2020-01-01"})
  (testing "min and max, and their n forms, use the same order"
    (is (= [1 [1 [1 2]] ["s" :a] "s"] (d/q '[:find [(min ?x) (min 2 ?x) (max 2 ?x) (max ?x)] :in [?x ...]]
                                             [:a "s" 1 [1 2]])))
    (is (= [[:a "s"] ["s" :a]] (d/q '[:find [(min 2 ?x) (max 2 ?x)] :in [?x ...]] [:a "s"]))))
  (each-store [conn {:schema {:v/long {:db/valueType :db.type/long}
                              :v/kw {:db/valueType :db.type/keyword}
                              :v/any {}}}]
    (let [any-values [0 2 2.5 3 -1.5 "s" :k true 'sym [1 2]]
          _ (d/transact! conn (concat (for [[i v] (map-indexed vector any-values)]
                                         {:db/id (str i) :v/any v})
                                       [{:v/long 1} {:v/long 5} {:v/kw :a} {:v/kw :z}]))
          db (d/db conn)
          any (fn [pred] (set (d/q [:find '[?v ...] :where '[?e :v/any ?v] pred] db)))]
      (testing "a comparison with an attribute of no declared type sees every value (no index range)"
        (are [pred kept] (= kept (any pred))
          '[(< ?v 3)]        #{0 2 2.5 -1.5}
          '[(> ?v 1)]        #{2 2.5 3 "s" :k true 'sym [1 2]}
          '[(>= ?v 2)]       #{2 2.5 3 "s" :k true 'sym [1 2]}
          '[(< 1 ?v 3)]      #{2 2.5}
          '[(< ?v :z)]       #{0 2 2.5 3 -1.5 :k [1 2]}
          '[(> ?v "a")]      #{"s"}
          '[(<= ?v true)]    #{0 2 2.5 3 -1.5 :k true 'sym [1 2]}))
      (testing "comparisons of a typed attribute with a value of another type"
        (are [query result] (= result (d/q query db))
          '[:find [?v ...] :where [_ :v/long ?v] [(< ?v :k)]]      [1 5]
          '[:find [?v ...] :where [_ :v/long ?v] [(> ?v "s")]]     []
          '[:find [?v ...] :where [_ :v/long ?v] [(< ?v 2.5)]]     [1]
          '[:find [?v ...] :where [_ :v/kw ?v] [(< ?v 2.5)]]       []
          '[:find [?v ...] :where [_ :v/kw ?v] [(> ?v 2.5)]]       [:a :z]
          '[:find [?v ...] :where [_ :v/kw ?v] [(< ?v "s")]]       [:a :z]
          '[:find [?v ...] :where [_ :v/kw ?v] [(< :b ?v "s")]]    [:z])))))

(deftest function-results-destructure-as-inputs-do
  (are [query inputs result] (= result (apply d/q query inputs))
    '[:find ?x ?z :in ?in :where [(identity ?in) [[?x _ ?z] ...]]]   [[[1 2 3] [4 5 6]]]   #{[1 3] [4 6]}
    '[:find ?x ?z :in ?in :where [(identity ?in) [[?x _ ?z]]]]       [[[1 2 3] [4 5 6]]]   #{[1 3] [4 6]}
    '[:find ?k ?v :in ?in :where [(identity ?in) [[?k ?v] ...]]]     [{:a 1 :b 2}]         #{[:a 1] [:b 2]}
    '[:find ?a ?b :in ?in :where [(identity ?in) [?a [?b ...]]]]     [[1 [2 3]]]           #{[1 2] [1 3]}
    '[:find ?a ?b ?c :in ?in :where [(identity ?in) [?a [?b ?c]]]]   [[1 [2 3]]]           #{[1 2 3]}
    '[:find ?a ?b :in ?in :where [(identity ?in) [[?a [[?b]]]]]]     [[[1 [[2] [3]]] [4 []]]] #{[1 2] [1 3]}
    '[:find ?a :in ?in :where [(identity ?in) [?a [_ ...]]]]         [[1 []]]              #{[1]}
    ;; elements may be nil, as Datomic keeps them; a nil result binds nothing
    '[:find ?a :in ?in :where [(identity ?in) [?a ...]]]             [[1 nil]]             #{[1] [nil]}
    '[:find ?a :in ?in :where [(identity ?in) [?a ...]]]             [nil]                 #{}
    ;; an output already bound unifies, in nested positions too
    '[:find ?a :in ?in [?a ...] :where [(identity ?in) [[?a ?b]]]]   [[[1 2] [3 4]] [1 5]] #{[1]}
    '[:find ?a :in ?in :where [(identity ?in) [[?a [?a2 ...]]]] [(= ?a ?a2)]] [[[1 [1 2]] [3 [4]]]] #{[1]})
  (testing "a result that does not fit is :query/binding"
    (are [query inputs] (= :query/binding (:error (failure #(apply d/q query inputs))))
      '[:find ?a :in ?in :where [(identity ?in) [?a [?b ?c]]]]   [[1 [2]]]
      '[:find ?a :in ?in :where [(identity ?in) [[?a ?b] ...]]]  [[1 2]]
      '[:find ?a :in ?in :where [(identity ?in) [?a ...]]]       [5])))

(deftest index-ranges-take-in-every-equal-value
  ;; the index keeps apart values the comparisons hold equal (-0.0 and 0.0, 1.0M and 1.00M);
  ;; a range scan must still meet every value the comparison accepts
  (each-store [conn {:schema {:v/d {:db/valueType :db.type/double}
                              :v/f {:db/valueType :db.type/float}
                              :v/m {:db/valueType :db.type/bigdec}}}]
    (d/transact! conn [{:v/d -0.0 :v/f (float -0.0) :v/m 1.0M}
                       {:v/d 0.0 :v/f (float 0.0) :v/m 1.00M}
                       {:v/d 1.0 :v/f (float 1.0) :v/m 2M}
                       {:v/d -1.0 :v/f (float -1.0) :v/m 0.5M}])
    (let [db (d/db conn)
          kept (fn [attr pred] (count (d/q [:find '?e :where ['?e attr '?v] pred] db)))]
      (are [attr pred n] (= n (kept attr pred))
        :v/d '[(>= ?v 0.0)]   3
        :v/d '[(>= ?v -0.0)]  3
        :v/d '[(<= ?v -0.0)]  3
        :v/d '[(<= ?v 0.0)]   3
        :v/d '[(> ?v -0.0)]   1
        :v/d '[(< ?v 0.0)]    1
        :v/f '[(>= ?v 0.0)]   3
        :v/f '[(<= ?v -0.0)]  3
        :v/m '[(>= ?v 1.00M)] 3
        :v/m '[(>= ?v 1.0M)]  3
        :v/m '[(<= ?v 1.0M)]  3
        :v/m '[(<= ?v 1.00M)] 3
        :v/m '[(< ?v 1M)]     1))))
