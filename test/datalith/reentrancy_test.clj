(ns datalith.reentrancy-test
  "What a transaction function (or anything on the thread running a
  transaction) may do with its connection, and what other threads see
  meanwhile: transact! and close from inside are refused and fail the
  transaction, leaving the connection whole; with, db and other connections
  work; other threads' transact! and close wait."
  (:require [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.conn Conn)))

(set! *warn-on-reflection* true)

(def schema {:k {:db/unique :db.unique/identity} :n {:db/valueType :db.type/long}})

;; ---- transaction functions (each gets the connection as its argument)

(defn transact-inside [_db conn] (d/transact! conn [{:k "inner"}]) [{:k "outer"}])

(defn close-inside [_db conn] (d/close conn) [{:k "outer"}])

(defn transact-inside-later
  "transact! from code the transaction function calls, not the function itself."
  [_db conn]
  (mapv (fn [k] (d/transact! conn [{:k k}]) {:k "outer"}) ["inner"]))

(defn with-inside [db _conn]
  (let [{:keys [db-after]} (d/with db [{:k "speculative"}])]
    [{:k "outer" :n (count (d/q '[:find ?e :where [?e :k]] db-after))}]))

(defn db-inside [_db conn] [{:k "outer" :n (d/basis-t (d/db conn))}])

(defn other-conn-inside [_db other] (d/transact! other [{:k "elsewhere"}]) [{:k "outer"}])

(defn throwing [_db _conn] (throw (ex-info "refused" {:why :test})))

(defn blocking
  "Delivers `started`, then waits (at most 10 s) for `release`."
  [_db started release]
  (deliver started true)
  (deref release 10000 nil)
  [{:k "slow"}])

(defn- ks [conn] (set (d/q '[:find [?v ...] :where [_ :k ?v]] (d/db conn))))

(defn- error-of [f]
  (try (f) nil (catch ExceptionInfo e (:error (ex-data e)))))

;; ---- refused from inside

(deftest refused-from-inside-a-transaction
  (doseq [[f error] [[`transact-inside :tx/reentrant]
                     [`transact-inside-later :tx/reentrant]
                     [`close-inside :db/close-in-tx]
                     [`throwing :tx/fn-failed]]]
    (testing f
      (tu/each-store [conn {:schema schema}]
        (let [t (d/basis-t (d/db conn))]
          (is (= error (error-of #(d/transact! conn [(list f conn)]))))
          (is (= t (d/basis-t (d/db conn))) "nothing is written")
          (is (= #{} (ks conn)))
          (is (= [] (remove #(<= (:t %) t) (d/tx-range conn nil nil))) "the log has nothing new")
          (testing "the connection works on"
            (is (not (.isClosed ^Conn conn)))
            (d/transact! conn [{:k "after"}])
            (is (= #{"after"} (ks conn)))
            (is (= (inc t) (d/basis-t (d/db conn))))))))))

(deftest close-refused-inside-leaves-the-directory-closable
  (let [dir (tu/temp-dir)
        path (.getPath dir)]
    (try
      (let [conn (d/connect path {:schema schema})]
        (is (= :db/close-in-tx (error-of #(d/transact! conn [(list `close-inside conn)]))))
        (d/transact! conn [{:k "after"}])
        (d/close conn)
        (is (.isClosed ^Conn conn)))
      (with-open [conn (d/connect path)]
        (is (= #{"after"} (ks conn)) "closed whole: the directory opens again"))
      (finally (tu/delete-tree dir)))))

;; ---- allowed from inside

(deftest allowed-from-inside-a-transaction
  (tu/each-store [conn {:schema schema}]
    (testing "with: a speculative value, nothing written"
      (d/transact! conn [(list `with-inside conn)])
      (is (= 1 (:n (d/entity (d/db conn) [:k "outer"]))))
      (is (= #{"outer"} (ks conn))))
    (testing "db: the value before the transaction"
      (let [t (d/basis-t (d/db conn))]
        (d/transact! conn [(list `db-inside conn)])
        (is (= t (:n (d/entity (d/db conn) [:k "outer"]))))))
    (testing "transact! on another connection"
      (with-open [other (d/connect :mem {:schema schema})]
        (d/transact! conn [(list `other-conn-inside other)])
        (is (= #{"elsewhere"} (ks other)))))))

;; ---- other threads meanwhile

(deftest other-threads-wait-for-a-running-transaction
  (tu/each-store [conn {:schema schema}]
    (let [started (promise)
          release (promise)
          slow (future (d/transact! conn [(list `blocking started release)]))
          _ (is (deref started 10000 false))
          other (future (d/transact! conn [{:k "other"}]))]
      (Thread/sleep 100)
      (is (not (realized? other)) "another thread's transact! waits")
      (is (= #{} (ks conn)) "d/db does not wait, and sees nothing of the running transaction")
      (deliver release true)
      (let [a (deref slow 10000 nil)
            b (deref other 10000 nil)]
        (is (= (inc (d/basis-t (:db-after a))) (d/basis-t (:db-after b))))
        (is (= #{"slow" "other"} (ks conn)))))))

(deftest close-waits-for-a-running-transaction
  (doseq [store tu/stores]
    (testing (str "store " store)
      (let [dir (tu/temp-dir)
            target (if (= store :mem) :mem (.getPath dir))]
        (try
          (let [conn (d/connect target {:schema schema})
                started (promise)
                release (promise)
                slow (future (d/transact! conn [(list `blocking started release)]))
                _ (is (deref started 10000 false))
                closing (future (d/close conn) :closed)]
            (Thread/sleep 100)
            (is (not (realized? closing)) "close waits")
            (deliver release true)
            (is (some #{"slow"} (map :v (:tx-data (deref slow 10000 nil))))
                "the running transaction commits")
            (is (= :closed (deref closing 10000 :timeout)))
            (is (= :db/closed (error-of #(d/db conn))))
            (is (= :db/closed (error-of #(d/transact! conn [{:k "late"}])))))
          (when (= store :lmdb)
            (with-open [conn (d/connect target)]
              (is (= #{"slow"} (ks conn)) "what was acknowledged before the close is kept")))
          (finally (tu/delete-tree dir)))))))
