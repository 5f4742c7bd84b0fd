(ns datalith.valid-time-test
  "Valid time (#19): intervals in tx-data, valid-at views and their composition
  with as-of, through the public API on both stores."
  (:require [clojure.instant :refer [read-instant-date]]
            [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu :refer [each-store]]))

(def schema {:person/city {:db/cardinality :db.cardinality/one}
             :person/name {:db/unique :db.unique/identity}
             :person/tag {:db/cardinality :db.cardinality/many}
             :person/friend {:db/valueType :db.type/ref}})

(defn- inst [s] (read-instant-date s))

(defn- tx!
  "Transacts tx-data dated `at` (its txInstant); returns the report."
  [conn at tx-data]
  (d/transact! conn (conj (vec tx-data) {:db/id "datomic.tx" :db/txInstant (inst at)})))

(defn- valid [from to]
  (cond-> {:db/valid-from (inst from)} to (assoc :db/valid-to (inst to))))

(defn- ada [db]
  (:db/id (d/entity db [:person/name "ada"])))

(defn- city-at [db e at]
  (:person/city (d/entity (d/valid-at db (inst at)) e)))

;; The classic bitemporal history of one address, a case per transaction:
;; t1 a plain fact, t2 a future-dated one, t3 a retroactive correction, t4 the
;; closing of an interval, t5 an overlapping correction, t6 a correction of a
;; correction. Returns [entity [t1 .. t6]].
(defn- address-history [conn]
  (let [r1 (tx! conn "2030-01-10" [{:person/name "ada" :person/city "Oslo"}])
        e (ada (d/db conn))
        rs [(tx! conn "2030-01-20" [[:db/add e :person/city "Rome" (valid "2030-06-01" nil)]])
            (tx! conn "2030-02-01" [[:db/add e :person/city "Bergen" (valid "2030-01-01" "2030-01-15")]])
            (tx! conn "2030-02-10" [[:db/retract e :person/city "Rome" (valid "2030-09-01" nil)]])
            (tx! conn "2030-03-01" [[:db/add e :person/city "Bergen" (valid "2030-01-12" "2030-01-20")]])
            (tx! conn "2030-03-10" [[:db/add e :person/city "Oslo" (valid "2030-01-01" "2030-01-12")]])]]
    [e (mapv #(d/basis-t (:db-after %)) (cons r1 rs))]))

(def valid-points ["2030-01-05" "2030-01-11" "2030-01-16" "2030-03-01" "2030-07-01" "2030-10-01"])

(deftest as-of-by-valid-at-table
  (each-store [conn {:schema schema}]
    (let [[e ts] (address-history conn)
          db (d/db conn)]
      ;; rows: as-of t1..t6; columns: valid-at the points above
      (are [i answers]
           (= answers
              (mapv #(city-at (d/as-of db (ts i)) e %) valid-points)
              ;; the other order of the two views gives the same answers
              (mapv #(:person/city (d/entity (d/as-of (d/valid-at db (inst %)) (ts i)) e))
                    valid-points))
        0 [nil "Oslo" "Oslo" "Oslo" "Oslo" "Oslo"]
        1 [nil "Oslo" "Oslo" "Oslo" "Rome" "Rome"]
        2 ["Bergen" "Bergen" "Oslo" "Oslo" "Rome" "Rome"]
        3 ["Bergen" "Bergen" "Oslo" "Oslo" "Rome" nil]
        4 ["Bergen" "Bergen" "Bergen" "Oslo" "Rome" nil]
        5 ["Oslo" "Oslo" "Bergen" "Oslo" "Rome" nil])
      (testing "the plain value is transaction time: the latest assertion, as before"
        (is (= "Oslo" (:person/city (d/entity db e))))
        (is (= "Bergen" (:person/city (d/entity (d/as-of db (ts 4)) e))))
        (is (= "Rome" (:person/city (d/entity (d/as-of db (ts 1)) e))))
        (is (= "Bergen" (:person/city (d/entity (d/as-of db (ts 3)) e))) "t4's retraction has an interval")))))

(deftest reads-honour-the-view
  (each-store [conn {:schema schema}]
    (let [[e] (address-history conn)
          v (d/valid-at (d/db conn) (inst "2030-01-16"))]
      (is (= #{["Bergen"]} (d/q '[:find ?c :where [_ :person/city ?c]] v)))
      (is (= #{[e]} (d/q '[:find ?e :where [?e :person/city "Bergen"]] v)))
      (is (= #{} (d/q '[:find ?e :where [?e :person/city "Oslo"]] v)))
      (is (= {:person/city "Bergen"} (d/pull v [:person/city] e)))
      (is (= ["Bergen"] (map :v (d/datoms v :eavt e :person/city))))
      (is (= [e] (map :e (d/datoms v :avet :person/city "Bergen"))))
      (is (= [] (map :e (d/datoms v :avet :person/city "Oslo"))))
      (is (= ["Bergen"] (map :v (d/datoms v :aevt :person/city))))
      (testing "a datom keeps the transaction that asserted its value"
        (let [[dt] (d/datoms v :eavt e :person/city)
              txs (d/q '[:find ?tx :where [_ :db.valid/event _ ?tx]] (d/db conn))]
          (is (contains? (set (map first txs)) (:tx dt)))))
      (testing "the name is valid from its transaction on"
        (is (= "ada" (:person/name (d/entity v e))))
        (is (nil? (:person/name (d/entity (d/valid-at (d/db conn) (inst "2030-01-05")) e))))))))

(deftest cardinality-many-and-refs
  (each-store [conn {:schema schema}]
    (tx! conn "2030-01-01" [{:person/name "ada" :person/tag #{"a" "b"}}
                            {:person/name "bob"}])
    (let [db0 (d/db conn)
          e (ada db0)
          bob (:db/id (d/entity db0 [:person/name "bob"]))]
      (tx! conn "2030-01-02" [[:db/add e :person/tag "c" (valid "2030-03-01" "2030-04-01")]
                              [:db/retract e :person/tag "a" (valid "2030-02-01" "2030-05-01")]
                              [:db/add e :person/friend bob (valid "2030-02-01" "2030-03-01")]])
      (let [db (d/db conn)
            tags #(:person/tag (d/entity (d/valid-at db (inst %)) e))]
        (are [at expected] (= expected (tags at))
          "2030-01-15" #{"a" "b"}
          "2030-02-15" #{"b"}
          "2030-03-15" #{"b" "c"}
          "2030-04-15" #{"b"}
          "2030-05-15" #{"a" "b"})
        (testing "a retraction with an interval is not a plain retraction"
          (is (= #{"a" "b" "c"} (:person/tag (d/entity db e)))))
        (testing "refs, through VAET and reverse navigation"
          (is (= #{[e]} (d/q '[:find ?e :in $ ?b :where [?e :person/friend ?b]]
                             (d/valid-at db (inst "2030-02-15")) bob)))
          (is (= [e] (map :e (d/datoms (d/valid-at db (inst "2030-02-15")) :vaet bob))))
          (is (= [] (map :e (d/datoms (d/valid-at db (inst "2030-03-15")) :vaet bob)))))))))

(deftest interval-forms
  (each-store [conn {:schema schema}]
    (tx! conn "2030-01-01" [{:person/name "ada"}])
    (let [e (ada (d/db conn))]
      (testing "an entity map's interval covers its attributes"
        (tx! conn "2030-01-02" [{:db/id e :person/city "Paris" :db/valid-from (inst "2030-02-01")
                                 :db/valid-to (inst "2030-03-01")}])
        (is (= [nil "Paris" nil] (mapv #(city-at (d/db conn) e %)
                                       ["2030-01-15" "2030-02-15" "2030-03-15"]))))
      (testing "a transaction's interval covers its adds and retracts"
        (tx! conn "2030-01-03" [{:db/id "datomic.tx" :db/valid-from (inst "2030-04-01")
                                 :db/valid-to (inst "2030-05-01")}
                                [:db/add e :person/city "Lima"]
                                [:db/add e :person/tag "x"]])
        (is (= ["Lima" #{"x"}]
               ((juxt :person/city :person/tag) (d/entity (d/valid-at (d/db conn) (inst "2030-04-15")) e))))
        (is (= [nil nil]
               ((juxt :person/city :person/tag) (d/entity (d/valid-at (d/db conn) (inst "2030-05-15")) e)))))
      (testing "a fact's own interval wins over the transaction's"
        (tx! conn "2030-01-04" [{:db/id "datomic.tx" :db/valid-from (inst "2030-06-01")}
                                [:db/add e :person/city "Kyiv" (valid "2030-07-01" "2030-08-01")]])
        (is (= [nil "Kyiv" nil] (mapv #(city-at (d/db conn) e %)
                                      ["2030-06-15" "2030-07-15" "2030-08-15"]))))
      (testing "a missing :db/valid-from is the transaction's txInstant"
        (tx! conn "2030-01-05" [[:db/add e :person/tag "y" {:db/valid-to (inst "2030-01-20")}]])
        (is (contains? (:person/tag (d/entity (d/valid-at (d/db conn) (inst "2030-01-10")) e)) "y"))
        (is (not (contains? (:person/tag (d/entity (d/valid-at (d/db conn) (inst "2030-01-04")) e)) "y")))
        (is (not (contains? (:person/tag (d/entity (d/valid-at (d/db conn) (inst "2030-01-25")) e)) "y")))))))

(deftest bad-intervals-write-nothing
  (each-store [conn {:schema schema}]
    (tx! conn "2030-01-01" [{:person/name "ada"}])
    (let [e (ada (d/db conn))
          t (d/basis-t (d/db conn))
          error-of (fn [tx-data]
                     (try (d/transact! conn tx-data) :no-error
                          (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))]
      (are [tx-data error] (= error (error-of tx-data))
        [[:db/add e :person/city "X" (valid "2030-02-01" "2030-01-01")]] :tx/invalid-interval
        [[:db/add e :person/city "X" (valid "2030-02-01" "2030-02-01")]] :tx/invalid-interval
        [[:db/add e :person/city "X" {:db/valid-from "2030-02-01"}]] :tx/invalid-valid-time
        [[:db/add e :person/city "X" {:db/valid-to 12}]] :tx/invalid-valid-time
        [[:db/add e :person/city "X" {:db/valid-from (inst "2030-02-01") :until 1}]] :tx/invalid-interval
        [{:db/id e :person/city "X" :db/valid-from :tomorrow}] :tx/invalid-valid-time
        [{:db/id "datomic.tx" :db/valid-to (inst "2000-01-01")} [:db/add e :person/city "X"]]
        :tx/invalid-interval
        [[:db/add e :person/city "X" {:db/valid-to (inst "2000-01-01")}]] :tx/invalid-interval
        [[:db/retractEntity e] {:db/id "datomic.tx" :db/valid-from (inst "2031-01-01")}
         [:db.fn/retractAttribute e :person/city]]
        :no-error)
      (is (= (inc t) (d/basis-t (d/db conn))) "only the last, valid, transaction wrote")
      (is (thrown-with-msg? clojure.lang.ExceptionInfo #"instant"
                            (d/valid-at (d/db conn) "2030-01-01"))))))

(deftest with-and-history-views
  (each-store [conn {:schema schema}]
    (tx! conn "2030-01-01" [{:person/name "ada" :person/city "Oslo"}])
    (let [db (d/db conn)
          e (ada db)
          after (:db-after (d/with db [[:db/add e :person/city "Rome" (valid "2030-03-01" nil)]]))]
      (is (= ["Oslo" "Rome"] (mapv #(city-at after e %) ["2030-02-01" "2031-01-01"])))
      (is (= ["Oslo" "Oslo"] (mapv #(city-at db e %) ["2030-02-01" "2031-01-01"])))
      (is (= :db/valid-at-view
             (try (d/history (d/valid-at db (inst "2030-01-01")))
                  (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex))))))
      (is (= :db/valid-at-view
             (try (d/valid-at (d/history db) (inst "2030-01-01"))
                  (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))))))

(deftest valid-intervals-bind-in-a-query
  (each-store [conn {:schema (assoc schema :issue/assignee {:db/valueType :db.type/ref}
                                    :issue/key {:db/unique :db.unique/identity})}]
    (tx! conn "2030-01-01" [{:person/name "ada"} {:person/name "bob"} {:person/name "cy"}
                            {:issue/key "X"}])
    (let [db0 (d/db conn)
          id #(:db/id (d/entity db0 %))
          [ada bob cy x] (map id [[:person/name "ada"] [:person/name "bob"] [:person/name "cy"]
                                  [:issue/key "X"]])]
      (tx! conn "2030-01-02" [[:db/add x :issue/assignee ada (valid "2029-12-01" "2030-02-01")]])
      (tx! conn "2030-01-03" [[:db/add x :issue/assignee bob (valid "2030-02-01" "2030-05-01")]])
      (tx! conn "2030-01-04" [[:db/add x :issue/assignee cy (valid "2030-05-01" nil)]])
      (let [db (d/db conn)
            during (fn [start end]
                     (d/q '[:find ?who :in $ ?start ?end
                            :where [?i :issue/key "X"]
                            [(datalith.core/valid-intervals $ ?i :issue/assignee) [[?a ?from ?to]]]
                            [(< ?from ?end)] [(< ?start ?to)]
                            [?a :person/name ?who]]
                          db (inst start) (inst end)))]
        (are [start end who] (= who (set (map first (during start end))))
          "2030-01-01" "2030-04-01" #{"ada" "bob"}
          "2030-02-01" "2030-04-01" #{"bob"}
          "2030-04-01" "2031-01-01" #{"bob" "cy"}
          "2029-01-01" "2029-06-01" #{})
        (is (= [[ada (inst "2029-12-01") (inst "2030-02-01")]
                [bob (inst "2030-02-01") (inst "2030-05-01")]
                [cy (inst "2030-05-01") d/end-of-time]]
               (map #(subvec % 0 3) (d/valid-intervals db x :issue/assignee))))
        (testing "a plain fact's interval runs from its txInstant until its retraction"
          (tx! conn "2030-01-05" [[:db/add ada :person/city "Oslo"]])
          (tx! conn "2030-01-06" [[:db/retract ada :person/city "Oslo"]])
          (is (= [[ada "Oslo" (inst "2030-01-05") (inst "2030-01-06")]]
                 (map #(subvec % 0 4) (d/valid-intervals (d/db conn) :person/city)))))
        (testing "as of an earlier point, only what was known then"
          (is (= [] (d/valid-intervals (d/as-of db (d/basis-t db0)) x :issue/assignee)))
          (is (= [ada] (map first (d/valid-intervals (d/as-of db (inc (d/basis-t db0))) x :issue/assignee)))))))))

(deftest one-transaction-writes-a-history
  (each-store [conn {:schema schema}]
    (tx! conn "2030-01-01" [{:person/name "ada"}])
    (let [e (ada (d/db conn))]
      (tx! conn "2030-01-02" [[:db/add e :person/city "Oslo" (valid "2020-01-01" "2022-01-01")]
                              [:db/add e :person/city "Lima" (valid "2024-01-01" nil)]
                              [:db/add e :person/city "Rome" (valid "2022-01-01" "2024-01-01")]])
      (let [db (d/db conn)]
        (is (= [nil "Oslo" "Rome" "Lima"]
               (mapv #(city-at db e %) ["2019-01-01" "2021-01-01" "2023-01-01" "2031-01-01"])))
        (is (= "Lima" (:person/city (d/entity db e)))
            "the plain value is the one with the latest valid-from")
        (is (= [["Oslo" (inst "2020-01-01") (inst "2022-01-01")]
                ["Rome" (inst "2022-01-01") (inst "2024-01-01")]
                ["Lima" (inst "2024-01-01") d/end-of-time]]
               (map #(subvec % 0 3) (d/valid-intervals db e :person/city))))
        (is (= :tx/conflict
               (try (d/transact! conn [[:db/add e :person/city "A"] [:db/add e :person/city "B"]])
                    (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))
            "plain values still conflict")))))

(deftest export-import-and-verify-carry-valid-time
  (doseq [from tu/stores, into tu/stores]
    (testing (str from " -> " into)
      (tu/with-conn [src from {:schema schema}]
        (let [[e] (address-history src)
              _ (tx! src "2030-04-01" [[:db/add e :person/tag "t" (valid "2030-01-01" "2030-02-01")]
                                       [:db/add e :person/city "Oslo" (valid "2029-01-01" "2029-06-01")]
                                       [:db/add e :person/city "Pisa" (valid "2029-06-01" "2029-09-01")]])
              views (fn [db]
                      (vec (for [t (range 1 (inc (d/basis-t db)))
                                 at (conj valid-points "2029-03-01" "2029-07-01")]
                             (d/pull (d/valid-at (d/as-of db t) (inst at)) '[*] e))))]
          (is (true? (:ok? (d/verify src))))
          (tu/with-conn [dst into]
            (d/import! dst (d/export src))
            (is (= (vec (d/datoms (d/db src) :eavt)) (vec (d/datoms (d/db dst) :eavt))))
            (is (= (views (d/db src)) (views (d/db dst))))))))))

(deftest an-address-history-with-a-correction
  ;; the README's worked example
  (each-store [conn {:schema {:person/name {:db/valueType :db.type/string
                                            :db/unique :db.unique/identity}
                              :person/address {:db/valueType :db.type/string}}}]
    (let [r1 (d/transact! conn [{:db/id "ada" :person/name "Ada"}
                                [:db/add "ada" :person/address "Oslo"
                                 {:db/valid-from #inst "2024-03-01"}]])
          ada (get-in r1 [:tempids "ada"])
          ;; a correction: before Oslo, from 2022, she lived in Bergen
          r2 (d/transact! conn [[:db/add ada :person/address "Bergen"
                                 {:db/valid-from #inst "2022-01-01" :db/valid-to #inst "2024-03-01"}]])
          ;; a correction of the correction: she moved two months later than we thought
          r3 (d/transact! conn [[:db/add ada :person/address "Bergen"
                                 {:db/valid-from #inst "2024-03-01" :db/valid-to #inst "2024-05-01"}]])
          db (d/db conn)
          address (fn [r at] (:person/address (d/pull (d/valid-at (d/as-of db (d/basis-t (:db-after r))) at)
                                                      [:person/address] ada)))]
      (are [at after-1 after-2 after-3] (= [after-1 after-2 after-3] (mapv #(address % at) [r1 r2 r3]))
        #inst "2021-06-01" nil nil nil
        #inst "2023-06-01" nil "Bergen" "Bergen"
        #inst "2024-04-01" "Oslo" "Oslo" "Bergen"
        (java.util.Date.) "Oslo" "Oslo" "Oslo")
      (is (= "Bergen" (:person/address (d/pull db [:person/address] ada)))
          "without valid-at: transaction time, the last thing said")
      (is (= [["Bergen" #inst "2022-01-01" #inst "2024-03-01"]
              ["Bergen" #inst "2024-03-01" #inst "2024-05-01"]
              ["Oslo" #inst "2024-05-01" d/end-of-time]]
             (map #(subvec % 0 3) (d/valid-intervals db ada :person/address)))))))

;; ---------------------------------------------------------------- query-level valid-at (h-valid3)

(deftest query-level-valid-at
  (each-store [conn {:schema schema}]
    (let [[e ts] (address-history conn)
          db (d/db conn)
          city '[:find ?c . :in $ ?e ?when :valid-at ?when :where [?e :person/city ?c]]]
      (testing "the :valid-at section answers as the query on the valid-at view, at every point"
        (are [i] (= (mapv #(city-at (d/as-of db (ts i)) e %) valid-points)
                    (mapv #(d/q city (d/as-of db (ts i)) e (inst %)) valid-points))
          0 1 2 3 4 5))
      (are [query args answer] (= answer (apply d/q query args))
        ;; a literal instant, for $
        '[:find ?c . :in $ ?e :valid-at #inst "2030-01-16" :where [?e :person/city ?c]]
        [db e] "Bergen"
        ;; the map form, one item or a source and its instant
        '{:find [?c .] :in [$ ?e ?t] :valid-at ?t :where [[?e :person/city ?c]]}
        [db e (inst "2030-07-01")] "Rome"
        '{:find [?c .] :in [$ ?e ?t] :valid-at [$ ?t] :where [[?e :person/city ?c]]}
        [db e (inst "2030-01-05")] "Oslo"
        ;; one source of two: $then at an instant, $ plain (transaction time)
        '[:find ?then ?now :in $ $then ?e ?t :valid-at $then ?t
          :where [$then ?e :person/city ?then] [?e :person/city ?now]]
        [db db e (inst "2030-01-16")] #{["Bergen" "Oslo"]}
        ;; two sources, each at its own instant
        '[:find ?a ?b :in $a $b ?e ?t ?u :valid-at $a ?t $b ?u
          :where [$a ?e :person/city ?a] [$b ?e :person/city ?b]]
        [db db e (inst "2030-01-05") (inst "2030-07-01")] #{["Oslo" "Rome"]}
        ;; the instant replaces the one of a valid-at view given as the source
        city [(d/valid-at db (inst "2030-07-01")) e (inst "2030-01-16")] "Bergen")
      (testing "prepared, with named inputs"
        (let [p (d/prepare city)]
          (is (= "Rome" (d/run p {:$ db :e e :when (inst "2030-07-01")})))
          (is (= "Bergen" (d/run p {:$ db :e e :when (inst "2030-01-16")})))))
      (testing "bad :valid-at sections and inputs"
        (are [query args error] (= error (try (apply d/q query args) nil
                                              (catch clojure.lang.ExceptionInfo x (:error (ex-data x)))))
          '[:find ?c :in $ ?e :valid-at ?t :where [?e :person/city ?c]] [db e] :parser/valid-at
          '[:find ?c :in $ ?e :valid-at "2030" :where [?e :person/city ?c]] [db e] :parser/valid-at
          '[:find ?c :in $ ?t :valid-at $x ?t :where [_ :person/city ?c]] [db (inst "2030-01-01")] :parser/valid-at
          '[:find ?c :in $ ?t :valid-at $ ?t $ ?t :where [_ :person/city ?c]] [db (inst "2030-01-01")] :parser/valid-at
          '[:find ?c :in $ ?t :valid-at ?t $ :where [_ :person/city ?c]] [db (inst "2030-01-01")] :parser/valid-at
          '[:find ?c :in $ ?t :valid-at :where [_ :person/city ?c]] [db (inst "2030-01-01")] :parser/valid-at
          '[:find ?c :in $ [?t ...] :valid-at ?t :where [_ :person/city ?c]] [db [(inst "2030-01-01")]] :parser/valid-at
          '[:find ?c :in $ ?t :valid-at ?t :where [_ :person/city ?c]] [db "2030-01-01"] :db/invalid-valid-time
          '[:find ?c :in $ ?t :valid-at ?t :where [_ :person/city ?c]] [[[1 :person/city "x"]] (inst "2030-01-01")] :query/valid-at
          '[:find ?c :in $ ?t :valid-at ?t :where [_ :person/city ?c]] [(d/history db) (inst "2030-01-01")] :db/valid-at-view)))))

;; ---------------------------------------------------------------- any valid time (h-valid3)

(deftest any-valid-time-binds-intervals-in-a-query
  (each-store [conn {:schema (assoc schema :issue/assignee {:db/valueType :db.type/ref}
                                    :issue/key {:db/unique :db.unique/identity})}]
    (tx! conn "2030-01-01" [{:person/name "ada"} {:person/name "bob"} {:person/name "cy"}
                            {:issue/key "X"} {:issue/key "Y"}])
    (let [db0 (d/db conn)
          id #(:db/id (d/entity db0 %))
          [ada bob cy x y] (map id [[:person/name "ada"] [:person/name "bob"] [:person/name "cy"]
                                    [:issue/key "X"] [:issue/key "Y"]])]
      (tx! conn "2030-01-02" [[:db/add x :issue/assignee ada (valid "2029-12-01" "2030-02-01")]
                              [:db/add y :issue/assignee cy (valid "2029-12-01" nil)]])
      (tx! conn "2030-01-03" [[:db/add x :issue/assignee bob (valid "2030-02-01" "2030-05-01")]])
      (tx! conn "2030-01-04" [[:db/add x :issue/assignee cy (valid "2030-05-01" nil)]])
      (let [db (d/db conn)
            one-query '[:find ?who :in $ ?k ?start ?end :valid-at :any-valid-time
                        :where [?i :issue/key ?k] [?i :issue/assignee ?a ?from ?to]
                        [(< ?from ?end)] [(< ?start ?to)] [?a :person/name ?who]]
            two-sources '[:find ?who :in $ $vt ?k ?start ?end :valid-at $vt :any-valid-time
                          :where [?i :issue/key ?k] [$vt ?i :issue/assignee ?a ?from ?to]
                          [(< ?from ?end)] [(< ?start ?to)] [?a :person/name ?who]]
            by-fn '[:find ?who :in $ ?k ?start ?end
                    :where [?i :issue/key ?k]
                    [(datalith.core/valid-intervals $ ?i :issue/assignee) [[?a ?from ?to]]]
                    [(< ?from ?end)] [(< ?start ?to)] [?a :person/name ?who]]]
        (are [k start end who]
             (let [args [k (inst start) (inst end)]]
               (= who
                  (set (map first (apply d/q one-query db args)))
                  (set (map first (apply d/q two-sources db db args)))
                  (set (map first (apply d/q two-sources db (d/any-valid-time db) args)))
                  (set (map first (apply d/q by-fn db args)))))
          "X" "2030-01-01" "2030-04-01" #{"ada" "bob"}
          "X" "2030-02-01" "2030-04-01" #{"bob"}
          "X" "2030-04-01" "2031-01-01" #{"bob" "cy"}
          "X" "2029-01-01" "2029-06-01" #{}
          "Y" "2029-01-01" "2031-01-01" #{"cy"})
        (testing "the versions as tuples [e a v from to], an attribute variable binding idents"
          (is (= #{[x :issue/assignee ada (inst "2029-12-01") (inst "2030-02-01")]
                   [x :issue/assignee bob (inst "2030-02-01") (inst "2030-05-01")]
                   [x :issue/assignee cy (inst "2030-05-01") d/end-of-time]}
                 (d/q '[:find ?e ?a ?v ?from ?to :in $ ?e :valid-at :any-valid-time
                        :where [?e ?a ?v ?from ?to] [(= ?a :issue/assignee)]]
                      db x)
                 (d/q '[:find ?e ?a ?v ?from ?to :in $ ?e
                        :where [?e ?a ?v ?from ?to] [(= ?a :issue/assignee)]]
                      (d/any-valid-time db) x)))
          (is (= #{[:issue/key "X"] [:issue/assignee ada] [:issue/assignee bob] [:issue/assignee cy]}
                 (d/q '[:find ?a ?v :in $ :valid-at :any-valid-time :where [[:issue/key "X"] ?a ?v]]
                      db))
              "a lookup ref as the entity, every attribute (one without a value type too)"))
        (testing "as of an earlier point, what was known then; valid-at views give their base"
          (is (= #{["ada"]} (d/q one-query (d/as-of db (inc (d/basis-t db0))) "X"
                                 (inst "2029-01-01") (inst "2031-01-01"))))
          (is (= #{["ada"] ["bob"] ["cy"]}
                 (d/q one-query (d/valid-at db (inst "2030-03-01")) "X"
                      (inst "2029-01-01") (inst "2031-01-01")))))
        (testing "an :in variable may hold :any-valid-time"
          (is (= #{[ada] [bob] [cy]}
                 (d/q '[:find ?a :in $ ?i ?when :valid-at ?when :where [?i :issue/assignee ?a]]
                      db x :any-valid-time))))
        (testing "errors"
          (are [f error] (= error (try (f) nil (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))
            #(d/any-valid-time (d/history db)) :db/valid-at-view
            #(d/q one-query (d/since db 0) "X" (inst "2029-01-01") (inst "2031-01-01")) :db/valid-at-view
            #(d/q '[:find (pull ?i [*]) :in $ :where [?i :issue/key "X"]] (d/any-valid-time db)) :query/pull-source
            #(d/q '{:find [?v] :in [$] :valid-at :any :where [[_ :issue/key ?v]]} db) :parser/valid-at))))))

;; ---------------------------------------------------------------- instants to t (h-valid3)

(deftest instants-find-their-transaction
  ;; an instant names the last transaction at or before it: found among the
  ;; last txInstant keys below it, whole instants kept together, and by a full
  ;; read when those are past the value's basis
  (each-store [conn {:schema schema}]
    (let [day (* 24 3600 1000)
          base (.getTime (inst "2030-01-01"))
          ;; 150 transactions, three of them to an instant
          ts (vec (for [i (range 150)]
                    (d/basis-t (:db-after (d/transact! conn [{:person/name (str "p" i)}
                                                             {:db/id "datomic.tx"
                                                              :db/txInstant (java.util.Date. (long (+ base (* day (quot i 3)))))}])))))
          early (d/db conn)
          _ (dotimes [i 100]
              (d/transact! conn [{:person/name (str "q" i)}
                                 {:db/id "datomic.tx" :db/txInstant (java.util.Date. (long (+ base (* day 60) i)))}]))
          db (d/db conn)
          at #(java.util.Date. (long (+ base (* day %))))
          t-at (fn [v instant] (d/as-of-t (d/as-of v instant)))]
      (are [v day-n t] (= t (t-at v (at day-n)))
        db 0 (ts 2)
        db 0.5 (ts 2)
        db 17 (ts 53)
        db 49 (ts 149)
        db -1 (dec (ts 0))
        early 49 (ts 149)
        early 70 (ts 149)
        early 60.0001 (ts 149))
      (is (= (d/basis-t db) (t-at db (at 70))))
      (testing "an uncommitted value's transaction (d/with)"
        (let [w (:db-after (d/with db [{:person/name "w"} {:db/id "datomic.tx" :db/txInstant (at 80)}]))]
          (is (= (d/basis-t w) (t-at w (at 81))))
          (is (= (d/basis-t db) (t-at w (at 79))))))
      (testing "valid-at of a plain fact at its transaction's instant"
        (is (= "p53" (:person/name (d/entity (d/valid-at db (at 17)) [:person/name "p53"]))))
        (is (nil? (d/entity (d/valid-at db (at 16)) [:person/name "p53"])))))))

;; ---------------------------------------------------------------- tx-level intervals on cas and retractEntity (h-valid3)

(deftest tx-level-interval-on-cas-and-retract-entity
  (each-store [conn {:schema schema}]
    (tx! conn "2030-01-01" [{:person/name "ada" :person/city "Oslo"} {:person/name "bob" :person/city "Rome"}])
    (let [db0 (d/db conn)
          ada (ada db0)
          bob (:db/id (d/entity db0 [:person/name "bob"]))
          during {:db/id "datomic.tx" :db/valid-from (inst "2030-03-01") :db/valid-to (inst "2030-04-01")}]
      (testing "cas is an assertion: it takes the transaction's interval, as :db/add does"
        (tx! conn "2030-01-02" [[:db/cas ada :person/city "Oslo" "Bergen"] during])
        (let [db (d/db conn)]
          (are [at city] (= city (city-at db ada at))
            "2030-01-01T12:00:00Z" "Oslo"
            "2030-03-15" "Bergen"
            "2030-04-15" "Oslo")
          (is (= "Bergen" (:person/city (d/entity db ada))) "and an ordinary assertion")
          (is (= 1 (count (d/q '[:find ?v :where [_ :db.valid/event ?v]] db))))))
      (testing "retractEntity stays a plain retraction, at its transaction's instant"
        (tx! conn "2030-01-03" [[:db/retractEntity bob] during])
        (let [db (d/db conn)]
          (is (nil? (d/entity db [:person/name "bob"])))
          (is (= "Rome" (city-at db bob "2030-01-02T12:00:00Z")))
          (is (nil? (city-at db bob "2030-03-15")))
          (is (nil? (city-at db bob "2030-05-01")))
          (is (= 1 (count (d/q '[:find ?v :where [_ :db.valid/event ?v]] db))) "no event"))))))

;; ---------------------------------------------------------------- the end of valid time (h-validend)
;; An open-ended interval ends at d/end-of-time, #inst "9999-12-31T23:59:59.999-00:00"
;; (XTDB's end-of-time), which prints and reads back; a :db/valid-to at or after
;; it is open on input, so a handed-out interval goes back in as it came.

(def ^:private eot-ms (.getTime ^java.util.Date d/end-of-time))

(defn- handed-out
  "Every interval db hands out, by the way it hands it out."
  [db e]
  {:valid-intervals (d/valid-intervals db :person/city)
   :valid-intervals-of-e (d/valid-intervals db e :person/tag)
   :any-valid-time (d/q '[:find ?e ?a ?v ?from ?to :valid-at :any-valid-time
                          :where [?e ?a ?v ?from ?to]] db)
   :any-valid-time-source (d/q '[:find ?v ?from ?to :in $ ?e
                                 :where [?e :person/city ?v ?from ?to]]
                               (d/any-valid-time db) e)
   :java (vec (.validIntervals (datalith.api.Database/of db) :person/city))})

(deftest open-intervals-end-at-the-end-of-time
  (is (= "#inst \"9999-12-31T23:59:59.999-00:00\"" (pr-str d/end-of-time)))
  (is (= d/end-of-time (read-string (pr-str d/end-of-time))))
  (is (= (.toInstant ^java.util.Date d/end-of-time) datalith.api.Database/END_OF_TIME))
  (each-store [conn {:schema schema}]
    (let [[e] (address-history conn)]
      (tx! conn "2030-04-01" [[:db/add e :person/tag "t" (valid "2030-01-01" nil)]
                              [:db/add e :person/tag "u" (valid "2030-01-01" "2030-02-01")]
                              [:db/add e :person/city "Oslo" (valid "2030-10-01" nil)]])
      (let [db (d/db conn)]
        (doseq [[how intervals] (handed-out db e)]
          (testing how
            (is (seq intervals))
            (is (= intervals (read-string (pr-str intervals))) "prints and reads back")
            (is (every? #(<= (.getTime ^java.util.Date %) eot-ms)
                        (for [iv intervals, x iv :when (inst? x)] x)))))
        (is (= [["t" (inst "2030-01-01") d/end-of-time] ["u" (inst "2030-01-01") (inst "2030-02-01")]]
               (sort (map #(subvec % 0 3) (d/valid-intervals db e :person/tag)))))
        (is (= [["Oslo" (inst "2030-10-01") d/end-of-time]]
               (filter #(= d/end-of-time (nth % 2)) (map #(subvec % 0 3) (d/valid-intervals db e :person/city)))))
        (is (= #{["Oslo" (inst "2030-10-01") d/end-of-time]}
               (d/q '[:find ?v ?from ?to :in $ ?e ?end :valid-at :any-valid-time
                      :where [?e :person/city ?v ?from ?end] [?e :person/city ?v ?from ?to]]
                    db e d/end-of-time))
            "the end binds as an input")))))

(deftest the-end-of-time-goes-back-in-as-open
  (each-store [conn {:schema schema}]
    (let [[e] (address-history conn)
          _ (tx! conn "2030-04-01" [[:db/add e :person/city "Oslo" (valid "2030-10-01" nil)]])
          db (d/db conn)]
      (are [to] (let [{:keys [tempids db-after]}
                      (d/transact! conn [[:db/add "x" :person/city "X"
                                          (cond-> {:db/valid-from (inst "2030-02-01")}
                                            to (assoc :db/valid-to to))]])
                      x (get tempids "x")]
                  (and (= [["X" (inst "2030-02-01") d/end-of-time]]
                          (map #(subvec % 0 3) (d/valid-intervals db-after x :person/city)))
                       (= [nil] (for [dt (d/datoms db-after :aevt :db.valid/event)
                                      :let [[_ ev-e _ _ _ ev-to] (:v dt)]
                                      :when (= x ev-e)]
                                  ev-to))
                       (= "X" (city-at db-after x "9999-12-31T23:59:59.998Z"))))
        nil
        d/end-of-time
        (java.util.Date. (inc eot-ms))
        (java.util.Date. Long/MAX_VALUE))
      (testing "a handed-out history transacted onto another entity gives the same history"
        (let [history (d/valid-intervals db e :person/city)
              {:keys [tempids db-after]}
              (d/transact! conn (for [[v from to] history]
                                  [:db/add "copy" :person/city v {:db/valid-from from :db/valid-to to}]))]
          (is (some #(= d/end-of-time (nth % 2)) (d/valid-intervals db e :person/city)))
          (is (= (map #(subvec % 0 3) history)
                 (map #(subvec % 0 3) (d/valid-intervals db-after (get tempids "copy") :person/city)))))))))

(deftest instants-at-the-end-of-time
  (each-store [conn {:schema schema}]
    (tx! conn "2030-01-01" [{:person/name "ada"}])
    (tx! conn "2030-01-02" [[:db/add [:person/name "ada"] :person/city "Oslo" (valid "2030-01-01" nil)]])
    (let [e (ada (d/db conn))
          t (d/basis-t (d/db conn))
          error-of (fn [f] (try (f) :no-error
                                (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))]
      (testing "a valid-to before a valid-from at or after the end is refused, and nothing written"
        (are [tx-data] (= :tx/invalid-interval (error-of #(d/transact! conn tx-data)))
          [[:db/add e :person/city "X" {:db/valid-from d/end-of-time :db/valid-to (inst "2031-01-01")}]]
          [[:db/add e :person/city "X" {:db/valid-from (java.util.Date. Long/MAX_VALUE)
                                        :db/valid-to (java.util.Date. (dec eot-ms))}]])
        (is (= t (d/basis-t (d/db conn)))))
      (let [db (d/db conn)]
        (testing "valid-at takes instants before the end"
          (are [at error] (= error (error-of #(d/valid-at db at)))
            d/end-of-time :db/invalid-valid-time
            (java.util.Date. Long/MAX_VALUE) :db/invalid-valid-time
            (java.util.Date. (dec eot-ms)) :no-error)
          (is (= "Oslo" (:person/city (d/entity (d/valid-at db (java.util.Date. (dec eot-ms))) e)))
              "the last instant before the end sees the open interval")
          (is (= :db/invalid-valid-time
                 (error-of #(d/q '[:find ?c . :in $ ?e ?when :valid-at ?when :where [?e :person/city ?c]]
                                 db e d/end-of-time))))
          (is (thrown? datalith.api.DatalithException
                       (.validAt (datalith.api.Database/of db) d/end-of-time)))))
      (testing "an interval from the end of time on holds at no instant: an assertion of transaction time only"
        (are [from] (let [{:keys [tempids db-after]}
                          (d/transact! conn [[:db/add "x" :person/tag "late" {:db/valid-from from}]])
                          x (get tempids "x")]
                      (and (= #{"late"} (:person/tag (d/entity db-after x)))
                           (nil? (:person/tag (d/entity (d/valid-at db-after (java.util.Date. (dec eot-ms))) x)))
                           (= [] (d/valid-intervals db-after x :person/tag))
                           (= [d/end-of-time nil]
                              (for [dt (d/datoms db-after :aevt :db.valid/event)
                                    :let [[_ ev-e _ _ ev-from ev-to] (:v dt)]
                                    :when (= x ev-e)
                                    y [ev-from ev-to]]
                                y))))
          d/end-of-time
          (java.util.Date. (inc eot-ms))
          (java.util.Date. Long/MAX_VALUE)))
      (testing "so is a plain fact dated at the end of time"
        (tx! conn "9999-12-31T23:59:59.999Z" [[:db/add e :person/tag "late"]])
        (is (= [] (d/valid-intervals (d/db conn) e :person/tag)))))))

(deftest export-import-keeps-open-ends
  ;; a legacy event, as a database written before the end of time could hold: an
  ;; open end given as the instant of Long/MAX_VALUE ms, and one starting after the end
  (doseq [from tu/stores, into tu/stores]
    (testing (str from " -> " into)
      (tu/with-conn [src from {:schema schema}]
        (let [[e] (address-history src)
              aid (:db/id (d/entity (d/db src) :person/tag))
              _ (tx! src "2030-04-01" [[:db/add e :person/tag "t" (valid "2030-01-01" nil)]
                                       [:db/add e :person/tag "u" (valid "2030-01-01" "2030-02-01")]])
              ;; each event with the plain assertion the transactor writes beside it
              _ (tx! src "2030-04-02" [[:db/add "datomic.tx" :db.valid/event
                                        [aid e "legacy" true (inst "2030-03-01") (java.util.Date. Long/MAX_VALUE)]]
                                       [:db/add e :person/tag "legacy"]
                                       [:db/add "datomic.tx" :db.valid/event
                                        [aid e "never" true (java.util.Date. (inc eot-ms)) nil]]
                                       [:db/add e :person/tag "never"]])
              db (d/db src)
              intervals (fn [db] [(d/valid-intervals db :person/city) (d/valid-intervals db :person/tag)])
              views (fn [db] (vec (for [t (range 1 (inc (d/basis-t db)))
                                        at (conj valid-points "2029-03-01" "9999-12-31T23:59:59.998Z")]
                                    (d/pull (d/valid-at (d/as-of db t) (inst at)) '[*] e))))
              plain (fn [db] (remove #(= :db.valid/event (:a %)) (d/datoms db :eavt)))
              dir (tu/temp-dir)
              file (java.io.File. dir "export.edn")]
          (testing "a legacy open end reads as the end of time"
            (is (= [["legacy" (inst "2030-03-01") d/end-of-time] ["t" (inst "2030-01-01") d/end-of-time]
                    ["u" (inst "2030-01-01") (inst "2030-02-01")]]
                   (sort (map #(subvec % 0 3) (d/valid-intervals db e :person/tag))))))
          (try
            (d/export src file)
            (is (not (re-find #"292278994" (slurp file))) "every instant in the file reads back")
            (tu/with-conn [dst into]
              (d/import! dst (.getPath file))
              (let [db2 (d/db dst)]
                (is (= (intervals db) (intervals db2)))
                (is (= (views db) (views db2)))
                (is (= (plain db) (plain db2)))))
            (finally (tu/delete-tree dir))))))))
