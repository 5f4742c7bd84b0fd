(ns datalith.query-basic-test
  "Queries: find specs, return maps, query forms, pattern positions, sources,
  :in bindings, :with, the tx and added positions, and time-filtered dbs."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [people! schema]]
            [datalith.test-util :refer [each-store]]))

(deftest find-specs
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query result] (= result (d/q query db))
        '[:find ?n ?a :where [?e :person/name ?n] [?e :person/age ?a]]
        #{["Alice" 30] ["Bob" 25] ["Carol" 30]}

        '[:find ?a :where [_ :person/age ?a]]
        #{[30] [25]}

        '[:find ?n . :where [?e :person/name ?n] [?e :person/age 25]]
        "Bob"

        '[:find ?n . :where [?e :person/name ?n] [?e :person/age 99]]
        nil

        '[:find [?a ...] :where [_ :person/age ?a]]
        [30 25]

        '[:find [?n ?a] :where [?e :person/name ?n] [?e :person/age 25] [?e :person/age ?a]]
        ["Bob" 25]

        '[:find [?n ?a] :where [?e :person/name ?n] [?e :person/age 99] [?e :person/age ?a]]
        nil

        '[:find ?n :where [?e :person/name ?n] [?e :person/age 99]]
        #{})
      (testing "a collection holds each distinct value once, in any order"
        (is (= [25 30] (sort (d/q '[:find [?a ...] :where [_ :person/age ?a]] db)))))
      (testing "results are Clojure sets of vectors"
        (let [r (d/q '[:find ?n :where [_ :person/name ?n]] db)]
          (is (set? r))
          (is (every? vector? r))))
      (testing "a relation equals the java.util.Set of java.util.Lists a Java caller builds, both ways"
        (let [r (d/q '[:find ?n ?a :where [?e :person/name ?n] [?e :person/age ?a]] db)
              java (java.util.Set/of (java.util.List/of "Alice" 30) (java.util.List/of "Bob" 25)
                                     (java.util.List/of "Carol" 30))]
          (is (.equals ^Object r java))
          (is (.equals java r))
          (is (.contains ^java.util.Set r (java.util.List/of "Bob" 25)))
          (is (not (.contains ^java.util.Set r (java.util.List/of "Bob" 26))))
          (is (not (.equals ^Object r (java.util.Set/of (java.util.List/of "Alice" 30))))))))))

(deftest return-maps
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query result] (= result (d/q query db))
        '[:find ?n ?a :keys name age :where [?e :person/name ?n] [?e :person/age ?a]]
        #{{:name "Alice" :age 30} {:name "Bob" :age 25} {:name "Carol" :age 30}}

        '[:find ?n ?a :strs name age :where [?e :person/name ?n] [?e :person/age 25] [?e :person/age ?a]]
        #{{"name" "Bob" "age" 25}}

        '[:find ?n ?a :syms name age :where [?e :person/name ?n] [?e :person/age 25] [?e :person/age ?a]]
        #{{'name "Bob" 'age 25}}

        '{:find [?n ?a] :keys [name age] :where [[?e :person/name ?n] [?e :person/age 25] [?e :person/age ?a]]}
        #{{:name "Bob" :age 25}}

        ;; a tuple find spec returns a single map
        '[:find [?n ?a] :keys name age :where [?e :person/name ?n] [?e :person/age 25] [?e :person/age ?a]]
        {:name "Bob" :age 25}))))

(deftest query-forms
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)
          expected #{["Alice"] ["Carol"]}]
      (are [query] (= expected (d/q query db 30))
        '[:find ?n :in $ ?a :where [?e :person/age ?a] [?e :person/name ?n]]
        '{:find [?n] :in [$ ?a] :where [[?e :person/age ?a] [?e :person/name ?n]]}
        "[:find ?n :in $ ?a :where [?e :person/age ?a] [?e :person/name ?n]]"
        "{:find [?n] :in [$ ?a] :where [[?e :person/age ?a] [?e :person/name ?n]]}")
      (testing "the {:query .. :args ..} form of q"
        (are [query] (= expected (d/q {:query query :args [db 30]}))
          '[:find ?n :in $ ?a :where [?e :person/age ?a] [?e :person/name ?n]]
          '{:find [?n] :in [$ ?a] :where [[?e :person/age ?a] [?e :person/name ?n]]}
          "[:find ?n :in $ ?a :where [?e :person/age ?a] [?e :person/name ?n]]"))
      (testing "without :in the query takes one database"
        (is (= #{["Dan"]} (d/q '[:find ?n :where [?e :person/name ?n] [(missing? $ ?e :person/age)]] db)))))))

(deftest pattern-positions
  (each-store [conn {:schema schema}]
    (let [{:strs [Alice Bob Carol Dan] :keys [red]} (people! conn)
          db (d/db conn)
          tx (d/q '[:find ?tx . :where [_ :person/name "Alice" ?tx]] db)
          age (d/entid db :person/age)]
      (is (= tx (d/q '[:find ?tx . :where [_ :person/name "Dan" ?tx]] db)))
      (are [query result] (= result (d/q query db))
        ;; a constant in each position
        '[:find ?e :where [?e :person/name "Bob"]]                     #{[Bob]}
        [:find '?a :where [Bob '?a 25]]                                #{[age]}
        [:find '?v :where [Bob :person/age '?v]]                       #{[25]}
        [:find '?e :where ['?e :person/name "Carol" tx]]               #{[Carol]}
        [:find '?e :where ['?e :person/name "Carol" tx true]]          #{[Carol]}
        [:find '?e :where ['?e :person/name "Carol" tx false]]         #{}
        '[:find ?e :where [?e :person/name "Nobody"]]                  #{}
        ;; an attribute given by id
        [:find '?v :where [Bob age '?v]]                               #{[25]}
        ;; _ and a short pattern
        '[:find ?e :where [?e :person/age _]]                          #{[Alice] [Bob] [Carol]}
        '[:find ?e :where [?e :person/friend]]                         #{[Bob] [Carol]}
        '[:find ?x :where [_ :person/tag ?x]]                          #{[:x] [:y]}
        ;; lookup refs and idents in entity position
        '[:find ?a :where [[:person/name "Bob"] :person/age ?a]]       #{[25]}
        '[:find ?a :where [[:person/name "Nobody"] :person/age ?a]]    #{}
        '[:find ?v :where [:red :db/ident ?v]]                         #{[:red]}
        ;; a lookup ref and an ident as the value of a ref attribute
        '[:find ?e :where [?e :person/friend [:person/name "Bob"]]]    #{[Carol]}
        '[:find ?n :where [?e :person/color :red] [?e :person/name ?n]] #{["Alice"]}
        '[:find ?n :where [?e :person/color :green] [?e :person/name ?n]] #{}
        ;; ref values come back as entity ids
        '[:find ?c :where [?e :person/name "Alice"] [?e :person/color ?c]] #{[red]}
        ;; a value of the wrong type matches nothing
        '[:find ?e :where [?e :person/age "30"]]                       #{}
        ;; unknown attribute
        '[:find ?e :where [?e :person/nope _]]                         #{}
        ;; a variable repeated inside a pattern
        '[:find ?e :where [?e :person/friend ?e]]                      #{})
      (testing "[?e ?a ?v] with ?a bound to attribute ids"
        (is (= #{[Alice 30] [Bob 25] [Carol 30]}
               (d/q '[:find ?e ?v :in $ ?a :where [?e ?a ?v]] db age)))
        (is (= #{[Bob age 25] [Bob (d/entid db :person/name) "Bob"]}
               (d/q '[:find ?e ?a ?v :in $ [?a ...] :where [?e ?a ?v] [?e :person/name "Bob"]]
                    db [age (d/entid db :person/name)]))))
      (testing "attribute ids resolve to idents through :db/ident"
        (is (= #{[:person/name "Dan"]}
               (d/q '[:find ?ident ?v :where [[:person/name "Dan"] ?a ?v] [?a :db/ident ?ident]] db))))
      (testing "idents and lookup refs given as inputs"
        (are [query input result] (= result (d/q query db input))
          '[:find ?n :in $ ?e :where [?e :person/name ?n]]       [:person/name "Bob"] #{["Bob"]}
          '[:find ?n :in $ ?e :where [?e :person/name ?n]]       Bob                  #{["Bob"]}
          '[:find ?n :in $ ?c :where [?e :person/color ?c] [?e :person/name ?n]] :red #{["Alice"]}
          '[:find ?n :in $ [?c ...] :where [?e :person/name ?n] [?e :person/color ?c]]
          [:red :blue :green] #{["Alice"] ["Bob"]}
          '[:find ?n :in $ ?f :where [?e :person/friend ?f] [?e :person/name ?n]]
          [:person/name "Alice"] #{["Bob"] ["Carol"]}))
      (is (some? Dan)))))

(deftest sources
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)
          ;; a second database: everyone a year older, and Erin
          db2 (:db-after (d/with db [[:db/add [:person/name "Alice"] :person/age 31]
                                     [:db/add [:person/name "Bob"] :person/age 26]
                                     {:person/name "Erin" :person/age 40}]))]
      (are [query inputs result] (= result (apply d/q query inputs))
        '[:find ?n ?a1 ?a2 :in $ $2
          :where [?e :person/name ?n] [?e :person/age ?a1] [$2 ?e2 :person/name ?n] [$2 ?e2 :person/age ?a2]]
        [db db2] #{["Alice" 30 31] ["Bob" 25 26] ["Carol" 30 30]}

        '[:find ?n :in $old $new :where [$new ?e :person/name ?n] (not [$old ?e :person/name ?n])]
        [db db2] #{["Erin"]}

        ;; a plain collection of tuples is a source
        '[:find ?n ?nick :in $ $nicks :where [?e :person/name ?n] [$nicks ?n ?nick]]
        [db [["Alice" "Al"] ["Bob" "Bobby"] ["Zed" "Z"]]] #{["Alice" "Al"] ["Bob" "Bobby"]}

        '[:find ?x ?y :in $ :where [?x :likes ?y]]
        [[[1 :likes 2] [3 :likes 4] [5 :hates 6]]] #{[1 2] [3 4]}

        '[:find ?x :in $ :where [?x _ ?x]]
        [[[1 :a 1] [2 :a 3]]] #{[1]}

        ;; tuples shorter than the pattern do not match
        '[:find ?x ?z :in $ :where [?x :a ?y ?z]]
        [[[1 :a 2] [3 :a 4 5]]] #{[3 5]}

        '[:find ?n :in $data $ :where [$data ?n _] [?e :person/name ?n]]
        [[["Carol" 1] ["Nobody" 2]] db] #{["Carol"]}))))

(deftest in-bindings
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query inputs result] (= result (apply d/q query db inputs))
        '[:find ?n :in $ ?a :where [?e :person/age ?a] [?e :person/name ?n]]
        [25] #{["Bob"]}

        '[:find ?n :in $ [?n ?a] :where [?e :person/name ?n] [?e :person/age ?a]]
        [["Alice" 30]] #{["Alice"]}

        '[:find ?n :in $ [?n ?a] :where [?e :person/name ?n] [?e :person/age ?a]]
        [["Alice" 31]] #{}

        '[:find ?n :in $ [?n _] :where [?e :person/name ?n]]
        [["Alice" :ignored]] #{["Alice"]}

        '[:find ?a :in $ [?n ...] :where [?e :person/name ?n] [?e :person/age ?a]]
        [["Bob" "Carol" "Nobody"]] #{[25] [30]}

        '[:find ?a :in $ [?n ...] :where [?e :person/name ?n] [?e :person/age ?a]]
        [[]] #{}

        '[:find ?n ?a :in $ [[?n ?a]] :where [?e :person/name ?n] [?e :person/age ?a]]
        [[["Alice" 30] ["Bob" 30] ["Carol" 30]]] #{["Alice" 30] ["Carol" 30]}

        '[:find ?n :in $ [[?n _]] :where [?e :person/name ?n]]
        [[["Dan" 1] ["Zed" 2]]] #{["Dan"]}

        '[:find ?n :in $ _ ?a :where [?e :person/age ?a] [?e :person/name ?n]]
        [:anything 25] #{["Bob"]})
      (testing "inputs without a database"
        (are [query inputs result] (= result (apply d/q query inputs))
          '[:find ?x :in ?x]                       [5]                 #{[5]}
          '[:find ?x :in [?x ...]]                 [[1 2 2 3]]         #{[1] [2] [3]}
          '[:find ?x ?y :in [[?x ?y]]]             [[[1 2] [3 4]]]     #{[1 2] [3 4]}
          '[:find ?x ?y :in [?x ...] [?y ...]]     [[1 2] [:a]]        #{[1 :a] [2 :a]}
          '[:find ?y :in ?x :where [(inc ?x) ?y]]  [1]                 #{[2]})))))

(deftest with-clause
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (testing "without :with, equal ages of different people count once"
        (is (= 55 (d/q '[:find (sum ?a) . :where [?e :person/age ?a]] db))))
      (testing ":with ?e keeps one age per person"
        (is (= 85 (d/q '[:find (sum ?a) . :with ?e :where [?e :person/age ?a]] db)))
        (is (= #{[30 2] [25 1]}
               (d/q '[:find ?a (count ?a) :with ?e :where [?e :person/age ?a]] db))))
      (testing ":with on inputs"
        (are [query result] (= result (d/q query [[:a 10] [:b 10] [:c 5]]))
          '[:find (sum ?v) . :in [[?k ?v]]]           15
          '[:find (sum ?v) . :with ?k :in [[?k ?v]]]  25
          '[:find (sum ?v) . :in [[_ ?v]]]            15
          '[:find (count ?v) . :in [[_ ?v]]]          2)))))

(deftest tx-and-added-positions
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [tx1 (d/t->tx (d/basis-t (d/db conn)))
          r (d/transact! conn [[:db/add [:person/name "Alice"] :person/age 31]
                               [:db/retract [:person/name "Dan"] :person/name "Dan"]])
          tx2 (d/t->tx (d/basis-t (:db-after r)))
          db (d/db conn)
          hist (d/history db)]
      (are [query source result] (= result (d/q query source))
        '[:find ?a ?tx :where [[:person/name "Alice"] :person/age ?a ?tx]]
        db #{[31 tx2]}

        '[:find ?a ?tx ?added :where [?e :person/age ?a ?tx ?added] [?e :person/name "Alice"]]
        hist #{[30 tx1 true] [30 tx2 false] [31 tx2 true]}

        '[:find ?a :where [?e :person/age ?a _ false]]
        hist #{[30]}

        '[:find ?n :where [_ :person/name ?n _ false]]
        hist #{["Dan"]}

        ;; the tx position as a constant
        [:find '?a :where ['?e :person/age '?a tx2]]
        db #{[31]}

        [:find '?n :where ['?e :person/name '?n tx1] ['?e :person/age 25]]
        db #{["Bob"]}

        ;; transactions are entities
        '[:find ?inst :where [_ :person/age 31 ?tx] [?tx :db/txInstant ?inst]]
        db #{[(:v (first (d/datoms db :eavt tx2 :db/txInstant)))]})
      (testing "the tx of a datom, joined to an input"
        (is (= #{["Alice"]}
               (d/q '[:find ?n :in $ ?tx :where [?e :person/age _ ?tx] [?e :person/name ?n]] db tx2)))))))

(deftest time-filtered-dbs
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [t1 (d/basis-t (d/db conn))
          _ (d/transact! conn [[:db/add [:person/name "Alice"] :person/age 31]
                               {:person/name "Erin" :person/age 40}])
          db (d/db conn)
          ages '[:find ?n ?a :where [?e :person/name ?n] [?e :person/age ?a]]]
      (is (= #{["Alice" 31] ["Bob" 25] ["Carol" 30] ["Erin" 40]} (d/q ages db)))
      (is (= #{["Alice" 30] ["Bob" 25] ["Carol" 30]} (d/q ages (d/as-of db t1))))
      (testing "since: only what was asserted after t1"
        (is (= #{[31] [40]} (d/q '[:find ?a :where [_ :person/age ?a]] (d/since db t1))))
        (is (= #{["Erin" 40]} (d/q ages (d/since db t1)))))
      (testing "an as-of db and the current one as two sources"
        (is (= #{["Alice" 30 31]}
               (d/q '[:find ?n ?old ?new :in $then $now
                      :where [$then ?e :person/age ?old] [$now ?e :person/age ?new]
                      [(not= ?old ?new)] [$now ?e :person/name ?n]]
                    (d/as-of db t1) db)))))))

(deftest values-equal-as-clojure-sees-them
  (each-store [conn {:schema schema}]
    (let [ids (people! conn)
          db (d/db conn)]
      (testing "integers of any width join, group and name entities as the long they equal"
        (is (= #{[1 :b] [1 :c] [1 :d]}
               (d/q '[:find ?x ?z :in $a $b :where [$a ?x ?y] [$b ?y ?z]]
                    [[1 (int 2)]] [[2 :b] [(short 2) :c] [2N :d]])))
        (is (= #{[1 3]} (d/q '[:find ?k (count ?v) :in [[?k ?v]]] [[1 :a] [(int 1) :b] [1N :c]])))
        ;; a join hashes one column of integers as longs; other values on either side match
        ;; only their equals
        (is (= #{[1 :b] [1 :c]}
               (d/q '[:find ?x ?z :in $a $b :where [$a ?x ?y] [$b ?y ?z]]
                    [[1 2] [3 "2"] [4 2.0]] [[2 :b] [(int 2) :c]])))
        (is (= #{[1 :b] [3 :s]}
               (d/q '[:find ?x ?z :in $a $b :where [$a ?x ?y] [$b ?y ?z]]
                    [[1 2] [3 "2"]] [[2 :b] ["2" :s] [2.5 :t]])))
        (is (= #{[1 :min] [3 :two]}
               (d/q '[:find ?x ?z :in $a $b :where [$a ?x ?y] [$b ?y ?z]]
                    [[1 Long/MIN_VALUE] [3 2] [4 5]] [[Long/MIN_VALUE :min] [2 :two]])))
        (is (= #{[1 :min]}
               (d/q '[:find ?x ?z :in $a $b :where [$a ?x ?y] [$b ?y ?z]]
                    [[1 Long/MIN_VALUE] [3 7] [4 5]] [[Long/MIN_VALUE :min] [2 :two]])))
        (is (= #{["Alice"] ["Bob"]}
               (d/q '[:find ?n :in $ [?e ...] :where [?e :person/name ?n]]
                    db [(int (ids "Alice")) (biginteger (ids "Bob"))]))))
      (testing "rows repeat when a pattern leaves a position out, and count once"
        (is (= 1 (d/q '[:find (count ?e) . :where [?e :person/tag _]] db)))
        (is (= #{[(ids "Alice")]} (d/q '[:find ?e :where [?e :person/tag]] db))))
      (testing "a history repeats entity, attribute and value across transactions"
        (d/transact! conn [[:db/retract (ids "Bob") :person/age 25]])
        (d/transact! conn [[:db/add (ids "Bob") :person/age 25]])
        (is (= 1 (d/q '[:find (count ?a) . :in $ ?e :where [?e :person/age ?a]]
                      (d/history (d/db conn)) (ids "Bob"))))
        (is (= 2 (d/q '[:find (count ?a) . :with ?tx :in $ ?e :where [?e :person/age ?a ?tx true]]
                      (d/history (d/db conn)) (ids "Bob"))))))))

(deftest results-are-clojure-sets
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [r (d/q '[:find ?n :where [_ :person/name ?n]] (d/db conn))
          expected #{["Alice"] ["Bob"] ["Carol"] ["Dan"]}]
      (is (set? r))
      (is (instance? java.util.Set r))
      (is (= expected r))
      (is (= r expected))
      (is (.equals r expected))
      (is (.equals (java.util.HashSet. ^java.util.Collection expected) r))
      (is (= (hash expected) (hash r)))
      (is (= (.hashCode expected) (.hashCode r)))
      (is (= 4 (count r)))
      (is (= (sort expected) (sort r)))
      (is (contains? r ["Bob"]))
      (is (not (contains? r ["Zed"])))
      (is (= ["Bob"] (r ["Bob"]) (get r ["Bob"])))
      (is (= :none (r ["Zed"] :none)))
      (is (= (conj expected ["Zed"]) (conj r ["Zed"])))
      (is (= (disj expected ["Bob"]) (disj r ["Bob"])))
      (is (= (into expected [["Y"] ["Z"]]) (into r [["Y"] ["Z"]])))
      (is (= #{} (empty r)))
      (is (= {:k 1} (meta (with-meta r {:k 1}))))
      (is (= 1 ({expected 1} r)) "usable as a map key equal to the same set")
      (is (= (count (pr-str expected)) (count (pr-str r))))
      (is (nil? (seq (d/q '[:find ?e :where [?e :person/name "Nobody"]] (d/db conn))))))))

(def ^:private monsters [["Medusa" 1] ["Cyclops" 1] ["Chimera" 1]])

(deftest with-makes-a-bag
  (each-store [conn {:schema schema}]
    (let [{:strs [Alice Bob]} (people! conn)
          db (d/db conn)
          bag (fn [query & inputs]
                (let [r (apply d/q query db inputs)]
                  (if (sequential? r) (frequencies r) [:not-a-bag r])))]
      (testing ":with keeps the rows its variables tell apart: a vector, repeats kept"
        (is (= [[1] [1] [1]] (d/q '[:find ?heads :with ?monster :in $ [[?monster ?heads]]] db monsters)))
        (are [query inputs result] (= result (apply bag query inputs))
          '[:find ?heads :with ?monster :in $ [[?monster ?heads]]]  [monsters]  {[1] 3}
          ;; equal input rows are one row before :with counts
          '[:find ?heads :with ?monster :in $ [[?monster ?heads]]]  [(conj monsters ["Medusa" 1])] {[1] 3}
          '[:find ?a :with ?e :where [?e :person/age ?a]]          []          {[30] 2 [25] 1}
          '[:find ?a :with ?e ?n :where [?e :person/age ?a] [?e :person/name ?n]] [] {[30] 2 [25] 1}
          '[:find ?a ?a :with ?e :where [?e :person/age ?a]]       []          {[30 30] 2 [25 25] 1}
          '[:find [?a ...] :with ?e :where [?e :person/age ?a]]    []          {30 2 25 1}
          '[:find ?a :keys age :with ?e :where [?e :person/age ?a]] []         {{:age 30} 2 {:age 25} 1}
          '[:find (pull ?f [:person/name]) :with ?e :where [?e :person/friend ?f]] []
          {[{:person/name "Alice"}] 2 [{:person/name "Bob"}] 1}
          '[:find ?f :with ?e :where [?e :person/friend ?f]]      []          {[Alice] 2 [Bob] 1}))
      (testing "without :with the answer is a set"
        (is (= #{[1]} (d/q '[:find ?heads :in $ [[?monster ?heads]]] db monsters)))
        (is (= #{[30] [25]} (d/q '[:find ?a :where [?e :person/age ?a]] db)))
        (is (= [30 25] (d/q '[:find [?a ...] :where [?e :person/age ?a]] db))))
      (testing "scalar and tuple finds take one row of the bag"
        (is (#{30 25} (d/q '[:find ?a . :with ?e :where [?e :person/age ?a]] db)))
        (is (#{[30 "Alice"] [25 "Bob"] [30 "Carol"]}
             (d/q '[:find [?a ?n] :with ?e :where [?e :person/age ?a] [?e :person/name ?n]] db))))
      (testing "with aggregates the groups are a set"
        (is (= #{[30 2] [25 1]} (d/q '[:find ?a (count ?e) :with ?n :where [?e :person/age ?a] [?e :person/name ?n]] db))))
      (testing "an empty bag"
        (is (= [] (d/q '[:find ?a :with ?e :where [?e :person/age 99] [?e :person/age ?a]] db)))))))

(deftest queries-without-where-clauses
  (each-store [conn {:schema schema}]
    (let [db (d/db conn)]
      (are [query inputs result] (= result (apply d/q query db inputs))
        '[:find ?x :in $ [?x ...] :where]                 [[1 2]]        #{[1] [2]}
        '[:find ?x :in $ [?x ...]]                        [[1 2]]        #{[1] [2]}
        '{:find [?x] :in [$ [?x ...]] :where []}          [[1 2]]        #{[1] [2]}
        '{:find [?x] :in [$ [?x ...]]}                    [[1 2]]        #{[1] [2]}
        '[:find ?x ?y :in $ [?x ...] [?y ...] :where]     [[1 2] [:a]]   #{[1 :a] [2 :a]}
        '[:find (sum ?x) . :in $ [?x ...] :where]         [[1 2 3]]      6
        '[:find ?y :with ?x :in $ [[?x ?y]] :where]       [[[1 :a] [2 :a]]] [[:a] [:a]])
      (is (= :parser/query (:error (try (d/q '[:find ?x :in $ :where] db) (catch clojure.lang.ExceptionInfo e (ex-data e)))))
          "without clauses, :in must bind the :find variables"))))

(def ^:private symbol-schema
  [{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
   {:db/ident :sym :db/valueType :db.type/symbol}
   {:db/ident :syms :db/valueType :db.type/symbol :db/cardinality :db.cardinality/many}
   {:db/ident :any}])

(deftest symbols-are-constants-in-data-patterns
  (each-store [conn {:schema symbol-schema}]
    (let [{:strs [S T U]} (:tempids (d/transact! conn [{:db/id "S" :name "S" :sym 'b :syms ['x 'ns/y]}
                                                        {:db/id "T" :name "T" :sym 'ns/b :any 'b}
                                                        {:db/id "U" :name "U" :sym 'c}]))
          db (d/db conn)]
      (are [query result] (= result (d/q query db))
        '[:find ?e :where [?e :sym b]]                                #{[S]}
        '[:find ?e :where [?e :sym ns/b]]                             #{[T]}
        '[:find ?e :where [?e :syms ns/y]]                            #{[S]}
        '[:find ?e :where [?e :any b]]                                #{[T]}
        '[:find ?e :where [?e :sym nope]]                             #{}
        '[:find ?n :where [?e :name ?n] (not [?e :sym b])]           #{["T"] ["U"]}
        '[:find ?n :where [?e :name ?n] (or [?e :sym b] [?e :sym c])] #{["S"] ["U"]}
        ;; in a call a symbol constant is quoted
        '[:find ?e :where [?e :sym ?s] [(= ?s 'b)]]                   #{[S]}
        '[:find ?n . :where [?e :sym ?s] [(= ?s 'c)] [?e :name ?n]]   "U"
        '[:find ?s :where [(ground 'b) ?s]]                           #{['b]}
        '[:find ?s :where [(vector 'b 'c) [?s ...]]]                  #{['b] ['c]})
      (testing "in a rule's data patterns"
        (is (= #{[S]} (d/q '[:find ?e :in $ % :where (has-b ?e)] db '[[(has-b ?e) [?e :sym b]]]))))
      (testing "but not as a function's or a rule's argument, as Datomic"
        (are [query inputs] (= :parser/where (:error (try (apply d/q query db inputs) nil
                                                          (catch clojure.lang.ExceptionInfo e (ex-data e)))))
          '[:find ?e :where [?e :sym ?s] [(= ?s b)]]                   []
          '[:find ?e :in $ % :where (r ?e b)]                          ['[[(r ?e ?s) [?e :sym ?s]]]])))))

(deftest nested-in-bindings
  (each-store [conn {:schema schema}]
    (let [{:strs [Alice Bob Carol]} (people! conn)
          db (d/db conn)]
      (are [query inputs result] (= result (apply d/q query db inputs))
        ;; a map is the collection of its entries
        '[:find ?k ?v :in $ [[?k ?v] ...]]           [{:a 1 :b 2}]                    #{[:a 1] [:b 2]}
        '[:find ?k ?v :in $ [[?k ?v]]]               [{:a 1 :b 2}]                    #{[:a 1] [:b 2]}
        '[:find ?k ?v :in $ [[?k ?v] ...]]           [(java.util.HashMap. {:a 1})]    #{[:a 1]}
        '[:find ?v :in $ [[_ ?v] ...]]               [{:a 1 :b 2}]                    #{[1] [2]}
        ;; tuples of collections and relations
        '[:find ?n ?a :in $ [?n [?a ...]] :where [?e :person/name ?n] [?e :person/age ?a]]
        [["Alice" [25 30]]]                                                           #{["Alice" 30]}
        '[:find ?n :in $ [[?n [?a ...]] ...] :where [?e :person/name ?n] [?e :person/age ?a]]
        [[["Alice" [30]] ["Bob" [30 31]] ["Carol" []]]]                               #{["Alice"]}
        '[:find ?a ?b ?c :in $ [?a [?b ?c]]]         [[1 [2 3]]]                      #{[1 2 3]}
        '[:find ?a ?b :in $ [[?a [[?b _]]]]]         [[[1 [[2 :x] [3 :y]]] [4 []]]]   #{[1 2] [1 3]}
        '[:find ?x :in $ [[?x _ _] ...]]             [[[1 2 3] [4 5 6]]]              #{[1] [4]}
        ;; a binding without variables accepts any value
        '[:find ?a :in $ ?a [_ ...]]                 [1 []]                           #{[1]}
        '[:find ?a :in $ [?a [_ ...]]]               [[1 []]]                         #{[1]}
        ;; nil is an empty collection
        '[:find ?a :in $ [?a ...]]                   [nil]                            #{}
        '[:find ?e :in $ [[?n ?e]] :where [?e :person/name ?n]]
        [[["Bob" Bob] ["Bob" Alice] ["Carol" Carol]]]                                 #{[Bob] [Carol]})
      (testing "values that do not fit"
        (are [query inputs] (= :query/binding (:error (try (apply d/q query db inputs) nil
                                                          (catch clojure.lang.ExceptionInfo e (ex-data e)))))
          '[:find ?a :in $ [?a [?b ?c]]]          [[1 [2]]]
          '[:find ?a :in $ [?a [?b ...]]]         [[1 2]]
          '[:find ?a :in $ [[?a [?b]]]]           [[[1 2]]]
          '[:find ?a :in $ [?a ?b]]               [nil]
          '[:find ?a :in $ [?a ...]]              ["abc"])))))
