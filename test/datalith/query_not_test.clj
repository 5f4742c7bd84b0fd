(ns datalith.query-not-test
  "Negation: not and not-join, alone, combined, nested, on other sources, and
  as an anti-join over many rows."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure people! schema]]
            [datalith.test-util :refer [each-store]]))

(deftest not-clauses
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query result] (= result (d/q query db))
        '[:find ?n :where [?e :person/name ?n] (not [?e :person/age 30])]
        #{["Bob"] ["Dan"]}

        '[:find ?n :where [?e :person/name ?n] (not [?e :person/age _])]
        #{["Dan"]}

        ;; several clauses: an implicit and
        '[:find ?n :where [?e :person/name ?n] (not [?e :person/age ?a] [(< ?a 28)])]
        #{["Alice"] ["Carol"] ["Dan"]}

        ;; a body variable bound outside joins on it
        '[:find ?n ?a :where [?e :person/name ?n] [?e :person/age ?a] (not [?f :person/age ?a] [(not= ?e ?f)])]
        #{["Bob" 25]}

        ;; two nots
        '[:find ?n :where [?e :person/name ?n] (not [?e :person/age 30]) (not [?e :person/age 25])]
        #{["Dan"]}

        ;; a not that removes nothing, and one that removes everything
        '[:find ?n :where [?e :person/name ?n] (not [?e :person/age 99])]
        #{["Alice"] ["Bob"] ["Carol"] ["Dan"]}

        '[:find ?n :where [?e :person/name ?n] (not [?e :person/name _])]
        #{}

        ;; nested not: people with a friend who has no friends
        '[:find ?n :where [?e :person/name ?n] [?e :person/friend ?f] (not [?f :person/friend _])]
        #{["Bob"] ["Carol"]}

        '[:find ?n :where [?e :person/name ?n] (not [?e :person/friend ?f] (not [?f :person/friend _]))]
        #{["Alice"] ["Dan"]}

        ;; predicates and functions inside not
        '[:find ?n :where [?e :person/name ?n] (not [(clojure.string/starts-with? ?n "C")])]
        #{["Alice"] ["Bob"] ["Dan"]}

        '[:find ?n :where [?e :person/name ?n] (not [(count ?n) ?c] [(= ?c 3)])]
        #{["Alice"] ["Carol"]}

        ;; not with a ref given by ident
        '[:find ?n :where [?e :person/name ?n] (not [?e :person/color :red])]
        #{["Bob"] ["Carol"] ["Dan"]})
      (testing "not on input collections"
        (are [query inputs result] (= result (apply d/q query inputs))
          '[:find ?x :in [?x ...] :where (not [(even? ?x)])]            [[1 2 3 4]]  #{[1] [3]}
          '[:find ?x :in [?x ...] [?y ...] :where (not [(= ?x ?y)])]    [[1 2 3] [2]] #{[1] [3]}
          '[:find ?e :in $ [?e ...] :where (not [?e :person/age _])]   [db [(d/entid db [:person/name "Dan"]) 99999]]
          #{[(d/entid db [:person/name "Dan"])] [99999]})))))

(deftest not-join-clauses
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query result] (= result (d/q query db))
        ;; ?f is local to the not-join
        '[:find ?n :where [?e :person/name ?n] (not-join [?e] [?e :person/friend ?f] [?f :person/name "Alice"])]
        #{["Alice"] ["Dan"]}

        ;; the same ?f outside is another variable
        '[:find ?n ?f :where [?e :person/name ?n] [?e :person/age ?f] (not-join [?e] [?e :person/friend ?f])]
        #{["Alice" 30]}

        ;; joined on two variables
        '[:find ?n ?m :where [?e :person/name ?n] [?o :person/name ?m] [(< ?n ?m)]
          (not-join [?e ?o] [?e :person/friend ?o]) (not-join [?e ?o] [?o :person/friend ?e])]
        #{["Alice" "Dan"] ["Bob" "Dan"] ["Carol" "Dan"]}

        ;; not-join inside not
        '[:find ?n :where [?e :person/name ?n] (not [?e :person/age ?a] (not-join [?a] [?x :person/age ?a] [?x :person/name "Bob"]))]
        #{["Bob"] ["Dan"]})
      (testing "the source of a not applies to its body"
        (let [names [["Alice"] ["Bob"]]]
          (are [query result] (= result (d/q query db names))
            '[:find ?n :in $ $2 :where [?e :person/name ?n] (not [$2 ?n])]          #{["Carol"] ["Dan"]}
            '[:find ?n :in $ $2 :where [?e :person/name ?n] ($2 not [?n])]          #{["Carol"] ["Dan"]}
            '[:find ?n :in $ $2 :where [?e :person/name ?n] ($2 not-join [?n] [?n])] #{["Carol"] ["Dan"]})))
      (testing "a not needs one of its variables bound outside"
        (are [query] (= :query/insufficient-binding (:error (failure #(d/q query db))))
          '[:find ?n :where [?e :person/name ?n] (not [?f :person/age 30])]
          '[:find ?n :where [?e :person/name ?n] (not-join [?x] [?x :person/age 30])])))))

(deftest not-over-many-rows
  (each-store [conn {:schema {:item/id {:db/valueType :db.type/long :db/unique :db.unique/identity}
                              :item/flag {:db/valueType :db.type/boolean}}}]
    (d/transact! conn (for [i (range 5000)] (cond-> {:item/id i} (zero? (mod i 3)) (assoc :item/flag true))))
    (let [db (d/db conn)]
      (is (= 3333 (d/q '[:find (count ?e) . :where [?e :item/id] (not [?e :item/flag true])] db)))
      (is (= 3333 (d/q '[:find (count ?e) . :where [?e :item/id ?i] (not-join [?e] [?e :item/flag ?f] [(true? ?f)])] db)))
      (is (nil? (d/q '[:find (count ?e) . :where [?e :item/flag true] (not [?e :item/id _])] db))
          "an aggregate over no rows has no result"))))
