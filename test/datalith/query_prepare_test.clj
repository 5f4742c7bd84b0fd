(ns datalith.query-prepare-test
  "Prepared queries: d/prepare parses once; the prepared query runs through q,
  qseq and run on any database, its inputs by position or by name; names
  missing, unknown or absent are :query/inputs; the Java API's
  Database.prepare and PreparedQuery.runNamed answer alike."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure]]
            [datalith.test-util :refer [each-store]])
  (:import (datalith.api Database PreparedQuery QueryResult)))

(def schema
  [{:db/ident :p/email :db/valueType :db.type/string :db/unique :db.unique/identity}
   {:db/ident :p/age :db/valueType :db.type/long}])

(defn- people! [conn n]
  (d/transact! conn schema)
  (d/transact! conn (for [i (range n)] {:p/email (str "p" i "@x") :p/age (mod i 7)}))
  (d/db conn))

(deftest prepared-queries-run-on-any-database
  (each-store [conn]
    (let [small (people! conn 10)
          _ (d/transact! conn (for [i (range 10 400)] {:p/email (str "p" i "@x") :p/age (mod i 7)}))
          large (d/db conn)
          by-email (d/prepare '[:find ?a . :in $ ?email :where [?e :p/email ?email] [?e :p/age ?a]])
          ages (d/prepare '[:find [?a ...] :in $ [?email ...] :where [?e :p/email ?email]
                            [?e :p/age ?a] :order-by ?a])]
      (are [db email age] (= age (d/q by-email db email)
                             (d/run by-email [db email])
                             (d/run by-email {:$ db :email email}))
        small "p3@x" 3
        large "p3@x" 3
        large "p200@x" (mod 200 7)
        small "p200@x" nil)
      (is (= [1 2] (d/run ages {:$ large :email ["p9@x" "p8@x"]})))
      (is (= [[1] [2]] (vec (d/qseq (d/prepare '[:find ?a :in $ [?email ...]
                                                  :where [?e :p/email ?email] [?e :p/age ?a]
                                                  :order-by ?a])
                                    large ["p9@x" "p8@x"])))))))

(deftest named-inputs-are-checked
  (each-store [conn]
    (let [db (people! conn 3)
          q (d/prepare '[:find ?e :in $ ?email [[?x ?y]] :where [?e :p/email ?email]])
          by-email (d/prepare '[:find ?e . :in $ ?email :where [?e :p/email ?email]])]
      (are [f error] (= error (:error (failure f)))
        #(d/run by-email {:$ db}) :query/inputs
        #(d/run by-email {:$ db :email "p1@x" :age 3}) :query/inputs
        #(d/run q {:$ db :email "p1@x"}) :query/inputs
        #(d/run by-email "p1@x") :query/inputs
        #(d/prepare '[:find ?e :where]) :parser/query
        #(d/prepare '[:find ?x :in [?x ...] :order-by ?y]) :parser/order-by)
      (is (some? (d/run by-email {:$ db :email "p1@x"}))))))

(deftest java-prepared-queries
  (each-store [conn]
    (let [db (Database/of (people! conn 5))
          ^PreparedQuery p (.prepare db "[:find ?a . :in $ ?email :where [?e :p/email ?email]
                                          [?e :p/age ?a]]")]
      (is (= 4 (.scalar ^QueryResult (.run p db (object-array ["p4@x"])))))
      (is (= 2 (.scalar ^QueryResult (.runNamed p {"$" db "email" "p2@x"}))))
      (is (thrown? datalith.api.DatalithException (.runNamed p {"$" db}))))))

(deftest plans-follow-the-size-class
  ;; a plan is kept per query and size class of each database (the base-4 magnitude of its
  ;; datom count): the same class reuses it though the counts moved, a class up plans again
  (each-store [conn]
    (d/transact! conn [{:db/ident :plan/x :db/valueType :db.type/long}
                       {:db/ident :plan/y :db/valueType :db.type/long}
                       {:db/ident :plan/z :db/valueType :db.type/long}])
    (d/transact! conn (concat (for [_ (range 150)] {:plan/x 1})
                              (for [i (range 20)] {:plan/y i})
                              (for [i (range 400)] {:plan/z i})))
    (let [q (d/prepare '[:find ?e ?v :where [?e :plan/x 1] [?e :plan/y ?v]])
          first-clause #(:clause (first (:clauses (d/explain q %))))]
      (is (= '[?e :plan/y ?v] (first-clause (d/db conn))) ":plan/y has 20 datoms, :plan/x 1 150")
      (d/transact! conn (for [i (range 200)] {:plan/y i}))
      (is (= '[?e :plan/y ?v] (first-clause (d/db conn)))
          "220 :plan/y datoms now, but the database is in the same size class: the plan stays")
      (d/transact! conn (for [i (range 1500)] {:plan/y i}))
      (is (= '[?e :plan/x 1] (first-clause (d/db conn)))
          "a size class up: planned again, :plan/x 1 first"))))
