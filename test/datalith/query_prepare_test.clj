(ns datalith.query-prepare-test
  "Prepared queries: d/prepare parses once; the prepared query runs through q,
  qseq and run on any database, its inputs by position or by name; names
  missing, unknown or absent are :query/inputs; the Java API's
  Database.prepare and PreparedQuery.runNamed answer alike."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure]]
            [datalith.test-util :refer [each-store]])
  (:import (datalith.api Database Datalith PreparedQuery QueryResult)))

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

;; h-prep: the Java API's PreparedQuery holds its plan (datalith.query.Prepared), reused while
;; the rules form (the same object) and each database's size class stay

(defn- java-run [^PreparedQuery pq db & inputs]
  (.value ^QueryResult (.run pq (Database/of db) (object-array inputs))))

(deftest java-prepared-query-across-size-classes
  (each-store [conn]
    (let [small (people! conn 10)
          _ (d/transact! conn (for [i (range 10 2000)] {:p/email (str "p" i "@x") :p/age (mod i 7)}))
          large (d/db conn)
          pq (Datalith/prepare "[:find ?a . :in $ ?email :where [?e :p/email ?email] [?e :p/age ?a]]")
          ages (Datalith/prepare "[:find (count ?e) . :in $ ?a :where [?e :p/age ?a] [?e :p/email _]]")]
      (testing "the held plan of one size class is not the other's: each answer is the string query's"
        (are [db email] (= (d/q '[:find ?a . :in $ ?email :where [?e :p/email ?email] [?e :p/age ?a]]
                                db email)
                           (java-run pq db email))
          small "p3@x"
          large "p3@x"
          large "p1500@x"
          small "p1500@x"
          small "p4@x"
          large "p1999@x"))
      (are [db a n] (= n (java-run ages db a))
        small 3 1
        large 3 (count (filter #(= 3 (mod % 7)) (range 2000)))
        small 0 2
        large 6 (count (filter #(= 6 (mod % 7)) (range 2000)))))))

(deftest java-prepared-query-plans-per-rules-form
  ;; the plan depends on the rules: with `free` the call binds ?m itself and, costed below a
  ;; scan of 6,000 emails, runs first; `needs-m` must have ?m bound, so the scan runs first. A
  ;; plan held for one rules form is not used for another.
  (each-store [conn]
    (let [db (people! conn 6000)
          q '[:find (count ?m) . :in $ % :where (r ?m ?a) [_ :p/email ?m] [(< ?a 2)]]
          pq (Datalith/prepare (pr-str q))
          free '[[(r ?m ?a) [?e :p/email ?m] [?e :p/age ?a]]]
          needs-m '[[(r [?m] ?a) [?e :p/email ?m] [?e :p/age ?a]]]
          expected (count (filter #(< (mod % 7) 2) (range 6000)))]
      (is (= :rule (:method (first (:clauses (d/explain q db free)))))
          "with `free`, the rule call runs first")
      (are [rules] (= expected (java-run pq db rules))
        free
        needs-m
        free
        (vec needs-m)
        needs-m))))

(deftest java-prepared-query-resolves-functions-until-they-resolve
  (each-store [conn]
    (let [db (people! conn 5)
          fname (symbol (str (ns-name *ns*)) "prepared-later-fn")
          pq (Datalith/prepare (str "[:find ?e . :in $ ?email :where [?e :p/email ?email]"
                                    " [(" fname " ?email)]]"))]
      (ns-unmap *ns* 'prepared-later-fn)
      (is (= "query/unknown-fn" (try (java-run pq db "p1@x") nil
                                     (catch datalith.api.DatalithException e (.category e)))))
      (intern *ns* 'prepared-later-fn (fn [email] (= email "p1@x")))
      (try
        (is (some? (java-run pq db "p1@x")))
        (is (nil? (java-run pq db "p2@x")))
        (finally (ns-unmap *ns* 'prepared-later-fn))))))

(deftest clojure-prepared-query-holds-its-plan
  ;; d/prepare gives the Java API's prepared query (datalith.query.Prepared): its plan is held
  ;; across runs, and each answer is still the string query's, across size classes, rules forms,
  ;; q, qseq, run and a query map's :offset/:limit
  (each-store [conn]
    (let [small (people! conn 10)
          _ (d/transact! conn (for [i (range 10 2000)] {:p/email (str "p" i "@x") :p/age (mod i 7)}))
          large (d/db conn)
          form '[:find ?a . :in $ ?email :where [?e :p/email ?email] [?e :p/age ?a]]
          by-email (d/prepare form)
          rules-form '[:find (count ?m) . :in $ % :where (r ?m ?a) [_ :p/email ?m] [(< ?a 2)]]
          by-rules (d/prepare rules-form)
          free '[[(r ?m ?a) [?e :p/email ?m] [?e :p/age ?a]]]
          needs-m '[[(r [?m] ?a) [?e :p/email ?m] [?e :p/age ?a]]]
          ages (d/prepare '[:find ?a :in $ :where [_ :p/age ?a] :order-by ?a])]
      (is (instance? datalith.query.Prepared by-email) "the Java API's prepared query")
      (is (identical? by-email (d/prepare by-email)) "preparing a prepared query gives it back")
      (are [db email] (= (d/q form db email) (d/q by-email db email)
                         (d/run by-email [db email]) (d/run by-email {:$ db :email email}))
        small "p3@x"
        large "p3@x"
        large "p1500@x"
        small "p1500@x"
        large "p1999@x")
      (are [db rules] (= (d/q rules-form db rules) (d/q by-rules db rules))
        large free
        large needs-m
        small free
        large (vec needs-m))
      (is (= (range 7) (map first (d/qseq ages large))))
      (is (= [[2] [3]] (d/q {:query ages :args [large] :offset 2 :limit 2}))
          ":offset and :limit apply to a prepared query")
      (is (= (range 7) (map first (d/q ages large))) "and do not stay with it"))))
