(ns datalith.query-or-test
  "Disjunction: or, or-join (with required variables), and inside or, not
  inside or, or inside not, sources, and unions over many rows."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure people! schema]]
            [datalith.test-util :refer [each-store]]))

(deftest or-clauses
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query result] (= result (d/q query db))
        '[:find ?n :where [?e :person/name ?n] (or [?e :person/age 25] [?e :person/tag :x])]
        #{["Alice"] ["Bob"]}

        ;; a branch matching nothing
        '[:find ?n :where [?e :person/name ?n] (or [?e :person/age 99] [?e :person/age 25])]
        #{["Bob"]}

        ;; an entity matching both branches counts once
        '[:find (count ?e) . :where [?e :person/name] (or [?e :person/age 30] [?e :person/friend _])]
        3

        ;; or before anything binds its variables
        '[:find ?n :where (or [?e :person/color :red] [?e :person/color :blue]) [?e :person/name ?n]]
        #{["Alice"] ["Bob"]}

        ;; and inside or
        '[:find ?n :where [?e :person/name ?n]
          (or (and [?e :person/age 30] [?e :person/friend _]) [?e :person/color :blue])]
        #{["Bob"] ["Carol"]}

        ;; not inside or
        '[:find ?n :where [?e :person/name ?n]
          (or [?e :person/age 25] (and [?e :person/age 30] (not [?e :person/friend _])))]
        #{["Alice"] ["Bob"]}

        ;; or inside not
        '[:find ?n :where [?e :person/name ?n] (not (or [?e :person/age 25] [?e :person/age 30]))]
        #{["Dan"]}

        ;; or inside or
        '[:find ?n :where [?e :person/name ?n]
          (or (or [?e :person/age 25] [?e :person/tag :y]) [?e :person/name "Dan"])]
        #{["Alice"] ["Bob"] ["Dan"]}

        ;; predicate-only branches
        '[:find ?n :where [?e :person/name ?n]
          (or [(clojure.string/starts-with? ?n "A")] [(clojure.string/ends-with? ?n "n")])]
        #{["Alice"] ["Dan"]}

        ;; branches binding a variable with a function
        '[:find ?n ?k :where [?e :person/name ?n] [?e :person/age ?a]
          (or (and [(< ?a 28)] [(ground :young) ?k]) (and [(>= ?a 28)] [(ground :old) ?k]))]
        #{["Alice" :old] ["Bob" :young] ["Carol" :old]})
      (testing "every branch of an or uses the same variables"
        (is (= :query/insufficient-binding
               (:error (failure #(d/q '[:find ?e :where [?e :person/name]
                                        (or [?e :person/age ?a] [?e :person/name "Dan"])] db)))))))))

(deftest or-join-clauses
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query result] (= result (d/q query db))
        ;; ?f is local to each branch
        '[:find ?n :where [?e :person/name ?n]
          (or-join [?e] (and [?e :person/friend ?f] [?f :person/name "Bob"]) [?e :person/tag :y])]
        #{["Alice"] ["Carol"]}

        ;; or-join binding its variable when nothing outside does
        '[:find ?n :where (or-join [?e] [?e :person/age 25] [?e :person/color :red]) [?e :person/name ?n]]
        #{["Alice"] ["Bob"]}

        ;; and inside or-join, with a local variable
        '[:find ?n :where [?e :person/name ?n]
          (or-join [?e] (and [?e :person/age ?a] [(> ?a 28)] [?e :person/friend _]) [?e :person/color :blue])]
        #{["Bob"] ["Carol"]}

        ;; two join variables
        '[:find ?n ?v :where [?e :person/name ?n]
          (or-join [?e ?v] [?e :person/age ?v] [?e :person/tag ?v])]
        #{["Alice" 30] ["Alice" :x] ["Alice" :y] ["Bob" 25] ["Carol" 30]})
      (testing "required variables, bound from :in"
        (are [x result] (= result (d/q '[:find ?n :in $ ?x
                                         :where (or-join [[?x] ?e] [?e :person/age ?x] [?e :person/name ?x])
                                         [?e :person/name ?n]]
                                       db x))
          25      #{["Bob"]}
          "Carol" #{["Carol"]}
          30      #{["Alice"] ["Carol"]}
          99      #{}))
      (testing "required variables, bound by a later clause: the planner runs that clause first"
        (is (= #{["Bob"]}
               (d/q '[:find ?n :where (or-join [[?a] ?e] [?e :person/age ?a] [?e :person/score ?a])
                      [?x :person/name "Bob"] [?x :person/age ?a] [?e :person/name ?n]] db))))
      (testing "a required variable that nothing binds"
        (is (= :query/insufficient-binding
               (:error (failure #(d/q '[:find ?e :where [?e :person/name]
                                        (or-join [[?x] ?e] [?e :person/age ?x])] db)))))))))

(deftest or-sources
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (is (= #{["Alice" 1] ["Bob" 2]}
             (d/q '[:find ?n ?x :in $ $2 :where [?e :person/name ?n] ($2 or [?n ?x] [?x ?n])]
                  db [["Alice" 1] [2 "Bob"]])))
      (is (= #{["Alice"] ["Bob"]}
             (d/q '[:find ?n :in $ $2 :where [?e :person/name ?n] (or-join [?n ?e] [$2 ?n] [?e :person/age 25])]
                  db [["Alice"]]))))))

(deftest or-over-many-rows
  (each-store [conn {:schema {:item/id {:db/valueType :db.type/long :db/unique :db.unique/identity}
                              :item/a {:db/valueType :db.type/boolean}
                              :item/b {:db/valueType :db.type/boolean}}}]
    (d/transact! conn (for [i (range 6000)]
                        (cond-> {:item/id i}
                          (zero? (mod i 2)) (assoc :item/a true)
                          (zero? (mod i 3)) (assoc :item/b true))))
    (let [db (d/db conn)]
      (is (= 4000 (d/q '[:find (count ?e) . :where [?e :item/id] (or [?e :item/a true] [?e :item/b true])] db)))
      (is (= 1000 (d/q '[:find (count ?e) . :where (or-join [?e] (and [?e :item/a true] [?e :item/b true]))] db))))))
