(ns datalith.query-rules-test
  "Rules: simple, several bodies, recursive over chains and cycles, mutually
  recursive, required variables, constants and _ as arguments, and rules
  called on another source."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure graph! people! schema]]
            [datalith.test-util :refer [each-store]]))

(def reach
  '[[(reach ?a ?b) [?a :node/next ?b]]
    [(reach ?a ?b) [?a :node/next ?x] (reach ?x ?b)]])

(def reach-left
  "reach with the recursive call first"
  '[[(reach ?a ?b) [?a :node/next ?b]]
    [(reach ?a ?b) (reach ?a ?x) [?x :node/next ?b]]])

(def reach-doubly
  "reach as the transitive closure of itself"
  '[[(reach ?a ?b) [?a :node/next ?b]]
    [(reach ?a ?b) (reach ?a ?x) (reach ?x ?b)]])

(deftest simple-rules
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)
          rules '[[(adult ?e) [?e :person/age ?a] [(>= ?a 28)]]
                  [(named ?e ?n) [?e :person/name ?n]]
                  ;; several bodies: a union
                  [(marked ?e) [?e :person/tag _]]
                  [(marked ?e) [?e :person/color :blue]]
                  ;; a rule calling rules
                  [(marked-adult ?n) (named ?e ?n) (adult ?e) (marked ?e)]
                  ;; a rule with not and or in its body
                  [(loner ?e) [?e :person/name] (not [?e :person/friend _]) (not [_ :person/friend ?e])]
                  [(colorful ?e) (or [?e :person/color :red] [?e :person/color :blue])]]]
      (are [query result] (= result (d/q query db rules))
        '[:find ?n :in $ % :where (adult ?e) (named ?e ?n)]          #{["Alice"] ["Carol"]}
        '[:find ?n :in $ % :where (named ?e ?n) (marked ?e)]         #{["Alice"] ["Bob"]}
        '[:find ?n :in $ % :where (marked-adult ?n)]                 #{["Alice"]}
        '[:find ?n :in $ % :where (loner ?e) (named ?e ?n)]          #{["Dan"]}
        '[:find ?n :in $ % :where (colorful ?e) (named ?e ?n)]       #{["Alice"] ["Bob"]}
        ;; a rule inside not and or
        '[:find ?n :in $ % :where (named ?e ?n) (not (adult ?e))]   #{["Bob"] ["Dan"]}
        '[:find ?n :in $ % :where (named ?e ?n) (or (loner ?e) (marked ?e))] #{["Alice"] ["Bob"] ["Dan"]}
        ;; constants and _ as arguments
        '[:find ?e :in $ % :where (named ?e "Carol")]               #{[(d/entid db [:person/name "Carol"])]}
        '[:find ?n :in $ % :where (named _ ?n) [(count ?n) ?c] [(= ?c 3)]] #{["Bob"] ["Dan"]}
        '[:find ?x :in $ % :where (named _ "Nobody") [(ground 1) ?x]] #{})
      (testing "a rule on a value computed by a function"
        (is (= #{[2] [3]}
               (d/q '[:find ?y :in [?x ...] % :where (plus-one ?x ?y)]
                    [1 2] '[[(plus-one ?a ?b) [(inc ?a) ?b]]])))))))

(deftest recursive-rules
  (each-store [conn {:schema schema}]
    ;; a chain 0 -> 1 -> ... -> 9 with a cycle 9 -> 5
    (let [ids (graph! conn 10 [[9 5]])
          db (d/db conn)
          from (fn [rules i] (set (d/q '[:find [?i ...] :in $ % ?s :where (reach ?s ?t) [?t :node/id ?i]]
                                       db rules (ids i))))
          to (fn [rules i] (set (d/q '[:find [?i ...] :in $ % ?t :where (reach ?s ?t) [?s :node/id ?i]]
                                     db rules (ids i))))]
      (doseq [rules [reach reach-left reach-doubly]]
        (testing (str (second (second rules)))
          (are [i result] (= result (from rules i))
            0 #{1 2 3 4 5 6 7 8 9}
            3 #{4 5 6 7 8 9}
            7 #{5 6 7 8 9}
            9 #{5 6 7 8 9})
          (are [i result] (= result (to rules i))
            0 #{}
            2 #{0 1}
            6 #{0 1 2 3 4 5 6 7 8 9})
          (testing "both ends free"
            (is (= 60 (d/q '[:find (count ?t) . :with ?s :in $ % :where (reach ?s ?t)] db rules)))
            (is (= #{[5] [6] [7] [8] [9]}
                   (d/q '[:find ?i :in $ % :where (reach ?s ?s) [?s :node/id ?i]] db rules))))
          (testing "both ends bound"
            (are [a b result] (= result (d/q '[:find ?x . :in $ % ?a ?b :where (reach ?a ?b) [(ground true) ?x]]
                                             db rules (ids a) (ids b)))
              0 9 true
              9 5 true
              9 0 nil
              4 4 nil))
          (testing "constants as arguments"
            (is (= #{[1] [2]} (d/q [:find '?i :in '$ '% :where (list 'reach '?s (ids 3)) '[?s :node/id ?i] '[(> ?i 0)]]
                                   db rules)))))))))

(deftest recursive-rules-with-several-edges
  (each-store [conn {:schema schema}]
    ;; a diamond with a back edge: 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 0; and 4 alone
    (let [ids (:tempids (d/transact! conn (for [i (range 5)] {:db/id (str i) :node/id i})))
          e #(ids (str %))
          _ (d/transact! conn (for [[a b] [[0 1] [0 2] [1 3] [2 3] [3 0]]] [:db/add (e a) :node/next (e b)]))
          db (d/db conn)]
      (doseq [rules [reach reach-left reach-doubly]]
        (is (= #{[0 0] [0 1] [0 2] [0 3] [1 0] [1 1] [1 2] [1 3]
                 [2 0] [2 1] [2 2] [2 3] [3 0] [3 1] [3 2] [3 3]}
               (d/q '[:find ?i ?j :in $ % :where (reach ?a ?b) [?a :node/id ?i] [?b :node/id ?j]] db rules)))
        (is (= #{} (d/q '[:find ?j :in $ % :where [?a :node/id 4] (reach ?a ?b) [?b :node/id ?j]] db rules)))))))

(deftest right-recursion-over-long-chains
  (each-store [conn {:schema schema}]
    (let [ids (graph! conn 1001)
          db (d/db conn)
          node-of (into {} (map (fn [[i e]] [e i]) ids))]
      (testing "each node reaches the rest of a 1,000-hop chain, answered for the node asked only"
        (are [start result] (= result (d/q '[:find (count ?t) . :in $ % ?s :where (reach ?s ?t)]
                                           db reach (ids start)))
          0 1000
          900 100
          1000 nil))
      (testing "several steps and exits, a step that filters, an exit with a constant"
        (let [rules '[[(hop ?a ?b) [?a :node/next ?b] [?b :node/id ?i] [(even? ?i)]]
                      [(hop ?a ?b) [?a :node/id 500] [(ground :end) ?b]]
                      [(hop ?a ?b) [?a :node/next ?c] (hop ?c ?b)]
                      [(hop ?a ?b) [?c :node/next ?a] [?c :node/id 0] (hop ?c ?b)]]
              hops (fn [start] (set (map #(node-of % %)
                                         (d/q '[:find [?b ...] :in $ % ?s :where (hop ?s ?b)]
                                              db rules (ids start)))))]
          (is (= (conj (set (range 402 1001 2)) :end) (hops 400)))
          (is (= (conj (set (range 2 1001 2)) :end) (hops 1)) "node 1 steps back to 0")
          (is (= #{} (hops 1000))))))))

(deftest mutually-recursive-rules
  (each-store [conn {:schema schema}]
    (graph! conn 10 [[9 5]])
    (let [db (d/db conn)
          rules '[[(even ?n) [?n :node/id 0]]
                  [(even ?n) [?m :node/next ?n] (odd ?m)]
                  [(odd ?n) [?m :node/next ?n] (even ?m)]]]
      ;; along 0..9 then 9 -> 5: 5..9 are reached at both parities
      (is (= #{0 2 4 5 6 7 8 9} (set (d/q '[:find [?i ...] :in $ % :where (even ?n) [?n :node/id ?i]] db rules))))
      (is (= #{1 3 5 6 7 8 9} (set (d/q '[:find [?i ...] :in $ % :where (odd ?n) [?n :node/id ?i]] db rules))))
      (is (= #{1 3} (set (d/q '[:find [?i ...] :in $ % :where [?n :node/id ?i] (odd ?n) (not (even ?n))] db rules)))))))

(deftest rules-with-required-variables
  (each-store [conn {:schema schema}]
    (let [ids (graph! conn 5)
          db (d/db conn)
          rules '[[(next-id [?a] ?i) [?a :node/next ?b] [?b :node/id ?i]]
                  [(far [?a] ?b) [?a :node/next ?x] [?x :node/next ?b]]]]
      (is (= #{[3]} (d/q '[:find ?i :in $ % ?a :where (next-id ?a ?i)] db rules (ids 2))))
      (is (= #{[1 2] [2 3]} (d/q '[:find ?j ?i :in $ % :where [?a :node/id ?j] [(< ?j 3)] [(> ?j 0)] (next-id ?a ?i)]
                                 db rules)))
      (testing "the planner binds the required variable first, whatever the clause order"
        (is (= #{[2]} (d/q '[:find ?i :in $ % :where (far ?a ?b) [?b :node/id ?i] [?a :node/id 0]] db rules))))
      (testing "a required variable that nothing binds"
        (is (= :query/insufficient-binding
               (:error (failure (fn [] (d/q '[:find ?i :in $ % :where (next-id ?a ?i)] db rules))))))))))

(deftest rules-on-other-sources
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)
          older (:db-after (d/with db [[:db/add [:person/name "Bob"] :person/age 26]]))
          rules '[[(age-of ?n ?a) [?e :person/name ?n] [?e :person/age ?a]]
                  [(edge ?a ?b) [?a ?b]]
                  [(path ?a ?b) (edge ?a ?b)]
                  [(path ?a ?b) (edge ?a ?x) (path ?x ?b)]]]
      (testing "$ in a rule body is the source the rule is called with"
        (are [query result] (= result (d/q query db older rules))
          '[:find ?a :in $ $2 % :where (age-of "Bob" ?a)]                        #{[25]}
          '[:find ?a :in $ $2 % :where ($2 age-of "Bob" ?a)]                     #{[26]}
          '[:find ?a ?b :in $ $2 % :where (age-of "Bob" ?a) ($2 age-of "Bob" ?b)] #{[25 26]}))
      (testing "a rule over a collection source"
        (is (= #{[:a :b] [:a :c] [:a :d] [:b :c] [:b :d] [:c :d]}
               (d/q '[:find ?x ?y :in $ $edges % :where ($edges path ?x ?y)]
                    db [[:a :b] [:b :c] [:c :d]] rules)))))))

(deftest rule-errors
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query inputs error] (= error (:error (failure #(apply d/q query db inputs))))
        '[:find ?e :where (adult ?e)]                 []                              :query/missing-rules
        '[:find ?e :in $ % :where (adult ?e)]         ['[[(old ?e) [?e :person/age]]]] :query/missing-rules
        '[:find ?e :in $ % :where (adult ?e ?x)]      ['[[(adult ?e) [?e :person/age]]]] :query/missing-rules))))

(defn- permutations [xs]
  (if (<= (count xs) 1)
    [(vec xs)]
    (for [i (range (count xs))
          more (permutations (concat (take i xs) (drop (inc i) xs)))]
      (into [(nth xs i)] more))))

(deftest order-of-definitions-and-clauses
  ;; the body plan made for one set of bound arguments (the recursive call's, ?i bound) was
  ;; reused for another (the query's, nothing bound), running the not before ?i was bound
  (each-store [conn {:schema schema}]
    (let [ids (graph! conn 10)
          db (d/db conn)
          recursive '[[?i :node/next ?p] (r ?p)]
          base '[(not [?i :node/id 9]) [?i :node/id ?n] [(>= ?n 7)]]
          expected (set (for [i (range 9)] [(ids i)]))]
      (doseq [rec (permutations recursive)
              bs (permutations base)
              defs [[rec bs] [bs rec]]]
        (let [rules (vec (for [body defs] (into ['(r ?i)] body)))]
          (is (= expected (d/q '[:find ?i :in $ % :where (r ?i)] db rules)) (pr-str rules))
          (is (= #{[(ids 3)]} (d/q '[:find ?i :in $ % :where [?i :node/id 3] (r ?i)] db rules))
              (pr-str rules)))))))

(deftest arguments-a-rule-body-needs
  ;; a rule whose body filters an argument it cannot bind itself needs it bound by the caller,
  ;; though its head does not declare it required: the call waits for the clause that binds it
  (each-store [conn {:schema schema}]
    (let [ids (people! conn)
          db (d/db conn)
          rules '[[(ends-e ?x ?u) [?u :person/age _] [(clojure.string/ends-with? ?x "e")]]
                  [(via ?x ?u) (ends-e ?x ?u)]
                  [(older ?a ?b) [?a :person/age ?x] [?b :person/age ?y] [(> ?x ?y)]]]]
      (are [query result] (= result (d/q query db rules))
        ;; bound by an or-join written after it
        '[:find ?u :in $ % :where (ends-e ?s ?u) (or-join [?u ?s] [?u :person/name ?s])]
        #{[(ids "Alice")]}

        ;; through another rule, the or-join's branches each binding it
        '[:find ?s :in $ % :where (via ?s ?u) (or-join [?u ?s] [?u :person/name ?s]
                                                         (and [?u :person/tag :x] [?u :person/name ?s]))]
        #{["Alice"]}

        ;; bound by a pattern written after it
        '[:find ?s :in $ % :where (ends-e ?s ?u) [?u :person/name ?s]]
        #{["Alice"]}

        ;; inside a not-join, bound by the join variable
        '[:find ?s :in $ % :where [?u :person/name ?s] (not-join [?s ?u] (ends-e ?s ?u))]
        #{["Bob"] ["Carol"] ["Dan"]}

        ;; a rule binding all its arguments itself runs first as before
        '[:find ?n :in $ % :where (older ?a ?b) [?a :person/name ?n] [?b :person/name "Bob"]]
        #{["Alice"] ["Carol"]})
      (testing "no clause binds it: a binding error, not a call with nil"
        (are [query] (= :query/insufficient-binding
                        (:error (failure #(d/q query db rules))))
          '[:find ?u :in $ % :where (ends-e ?s ?u)]
          '[:find ?u :in $ % :where (via ?s ?u)]
          '[:find ?u :in $ % :where (or-join [?u ?s] (ends-e ?s ?u) [?u :person/name ?s])])))))
