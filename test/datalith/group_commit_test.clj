(ns datalith.group-commit-test
  "Group commit (issue #17): transactions given to one connection at once, from many
  threads or pipelined with transact-async, commit in groups sharing one store write (one
  sync), each with its own t, report and failure. Groups are formed without timing: a
  transaction whose function waits holds the writer while the others queue."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.lmdb-file :as lmdb-file]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (java.util.concurrent CountDownLatch TimeUnit)))

(set! *warn-on-reflection* true)

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/age {:db/valueType :db.type/long}
   :user/friend {:db/valueType :db.type/ref}})

(defn- error-of [f]
  (try (f) :no-error (catch ExceptionInfo e (:error (ex-data e)))))

(defmacro ^:private each-store-dir
  "Runs body per store with `conn` a fresh connection and `dir` its directory (nil: :mem).
  LMDB without write-behind, so that each store write is one LMDB commit, which the tests
  count (with write-behind one is one record in the log, and many go into LMDB at once)."
  [[conn dir] & body]
  `(doseq [store# tu/stores]
     (testing (str "store " store#)
       (let [~dir (when (tu/durable? store#) (tu/temp-dir))
             ~conn (d/connect (if ~dir (.getPath ~(with-meta dir {:tag 'java.io.File})) :mem)
                              {:schema schema :write-behind false})]
         (try ~@body
              (finally (d/close ~conn) (some-> ~dir tu/delete-tree)))))))

(defn- lmdb-commits
  "The txnid of the last LMDB commit in `dir` (one a store write), or nil for :mem."
  [dir]
  (some-> dir lmdb-file/last-meta :txnid))

(defn- holding-writer
  "Starts a transaction whose function waits; returns [its future, release-fn] once it runs,
  so that what is given to the connection meanwhile queues for the next group."
  [conn]
  (let [started (CountDownLatch. 1)
        release (CountDownLatch. 1)
        hold (fn [_db] (.countDown started) (.await release 20 TimeUnit/SECONDS) [])
        f (future (d/transact! conn [[:db.fn/call hold]]))]
    (is (.await started 20 TimeUnit/SECONDS))
    [f #(.countDown release)]))

(defn- user [db email] (d/pull db [:user/name :user/age] [:user/email email]))

;; ---------------------------------------------------------------- one group, one write

(deftest queued-transactions-commit-as-one-group
  (each-store-dir [conn dir]
    (let [[held release] (holding-writer conn)
          before (lmdb-commits dir)
          fs (mapv #(d/transact-async conn [{:user/email (str % "@x") :user/age %}]) (range 50))]
      (release)
      (let [reports (mapv #(deref % 20000 nil) fs)
            t0 (d/basis-t (:db-after @held))]
        (is (= (range (inc t0) (+ t0 51)) (map (comp d/basis-t :db-after) reports))
            "each its own t, in the order given")
        (is (= (map (comp d/basis-t :db-after) (cons @held reports))
               (map (comp inc d/basis-t :db-before) (cons @held reports)))
            "each report's db-before is the value after the one before it")
        (is (every? (fn [[i r]] (= {:user/age i} (select-keys (user (:db-after r) (str i "@x"))
                                                                [:user/age])))
                    (map-indexed vector reports)))
        (is (nil? (user (:db-before (first reports)) "0@x")))
        (is (= 50 (count (d/q '[:find ?e :where [?e :user/email]] (d/db conn)))))
        (when dir
          (is (= (+ before 2) (lmdb-commits dir))
              "one store write for the held transaction, one for the 50 queued behind it"))))))

(deftest a-failing-transaction-fails-alone-in-its-group
  (each-store-dir [conn dir]
    (d/transact! conn [{:user/email "a@x" :user/age 1}])
    (let [[held release] (holding-writer conn)
          before (lmdb-commits dir)
          good-1 (d/transact-async conn [{:user/email "a@x" :user/age 2}])
          bad-type (d/transact-async conn [{:user/email "a@x" :user/age "two"}])
          good-2 (d/transact-async conn [[:db/add [:user/email "a@x"] :user/age 3]
                                         {:user/email "b@x" :user/friend [:user/email "a@x"]}])
          bad-fn (d/transact-async conn [[:db.fn/call (fn [_] (throw (ex-info "no" {})))]])
          bad-cas (d/transact-async conn [[:db/cas [:user/email "a@x"] :user/age 2 9]])
          good-3 (d/transact-async conn [[:db.fn/call (fn [db] [{:user/email "c@x"
                                                                 :user/age (:user/age (user db "a@x"))}])]])]
      (release)
      @held
      (are [f err] (= err (error-of #(deref f)))
        bad-type :tx/value-type
        bad-fn :tx/fn-failed
        bad-cas :tx/cas-failed)
      (let [[r1 r2 r3] (map deref [good-1 good-2 good-3])
            t (d/basis-t (:db-after r1))]
        (is (= [t (inc t) (+ t 2)] (map (comp d/basis-t :db-after) [r1 r2 r3]))
            "the failed ones take no t")
        (is (= 2 (:user/age (user (:db-after r1) "a@x"))))
        (is (= 3 (:user/age (user (:db-after r2) "a@x"))) "built on the one before, not the failed")
        (is (= 3 (:user/age (user (d/db conn) "c@x"))) "a function reads the group's earlier ones")
        (is (= (d/basis-t (:db-after r3)) (d/basis-t (d/db conn))))
        (is (= (set (map :t (d/tx-range conn (inc (d/basis-t (:db-after @held))) nil)))
               #{t (inc t) (+ t 2)})
            "the log holds the three, nothing of the failed ones"))
      (when dir
        (is (= (+ before 2) (lmdb-commits dir)))))))

;; ---------------------------------------------------------------- many threads

(deftest concurrent-writers-upsert-one-entity
  (tu/each-store [conn {:schema schema}]
    (let [threads 8
          per-thread 25
          go (CountDownLatch. 1)
          workers (doall (for [th (range threads)]
                           (future
                             (.await go)
                             (vec (for [i (range per-thread)]
                                    (d/transact! conn [{:db/id "u" :user/email "same@x"
                                                        :user/age (+ (* 100 th) i)}
                                                       {:db/id "n" :user/name (str th "-" i)
                                                        :user/friend "u"}]))))))
          _ (.countDown go)
          reports (mapcat deref workers)
          db (d/db conn)
          e (d/q '[:find ?e . :where [?e :user/email "same@x"]] db)]
      (is (= 1 (count (d/q '[:find ?e :where [?e :user/email]] db))) "exactly one entity")
      (is (every? #(= e (get-in % [:tempids "u"])) reports) "every upsert resolved to it")
      (is (= (* threads per-thread) (count (set (map #(get-in % [:tempids "n"]) reports))))
          "each new entity its own id")
      (is (= (* threads per-thread)
             (count (d/q '[:find ?n :in $ ?e :where [?x :user/friend ?e] [?x :user/name ?n]] db e))))
      (is (= (sort (map (comp d/basis-t :db-after) reports))
             (range (- (d/basis-t db) (dec (* threads per-thread))) (inc (d/basis-t db))))
          "each its own t, none skipped")
      (is (= (:user/age (user db "same@x"))
             (:user/age (user (:db-after (apply max-key (comp d/basis-t :db-after) reports))
                              "same@x")))
          "the last commit's value stands")
      (is (:ok? (d/verify conn))))))

(deftest sync-and-async-writers-together
  (tu/each-store [conn {:schema schema}]
    (let [seen (atom [])
          _ (d/listen! conn :order #(swap! seen conj (d/basis-t (:db-after %))))
          t0 (d/basis-t (d/db conn))
          syncs (doall (for [th (range 4)]
                         (future (dotimes [i 20] (d/transact! conn [{:user/name (str th "-" i)}])))))
          asyncs (vec (for [i (range 80)] (d/transact-async conn [{:user/name (str "a" i)}])))]
      (run! deref syncs)
      (let [reports (mapv deref asyncs)]
        (is (apply < (map (comp d/basis-t :db-after) reports)) "async ones in the order given")
        (is (= (range (inc t0) (+ t0 161)) @seen) "listeners see every report once, in order")
        (is (= 160 (count (d/q '[:find ?e :where [?e :user/name]] (d/db conn)))))))))

(deftest a-listener-on-an-async-leader-may-transact
  (tu/each-store [conn {:schema schema}]
    (let [started (promise)
          release (promise)
          names #(set (d/q '[:find [?n ...] :where [_ :user/name ?n]] (d/db conn)))
          _ (d/listen! conn :l (fn [r]
                                 (when (some #(= "trigger" (:v %)) (:tx-data r))
                                   (d/transact! conn [{:user/name "from-listener"}]))))
          trigger (d/transact-async conn [[:db.fn/call (fn [_]
                                                         (deliver started true)
                                                         (deref release 20000 nil)
                                                         [{:user/name "trigger"}])]])
          _ (is (deref started 20000 false))
          queued (d/transact-async conn [{:user/name "queued"}])]
      (deliver release true)
      (is (not= :timeout (deref trigger 20000 :timeout))
          "the listener's transact! runs while an async one waits ahead of it")
      (is (not= :timeout (deref queued 20000 :timeout)))
      (is (= #{"trigger" "queued" "from-listener"} (names))))))

;; ---------------------------------------------------------------- instants (h-tx)

(deftest instants-never-go-back-within-and-across-groups
  (each-store-dir [conn dir]
    (let [later (java.util.Date. (+ (System/currentTimeMillis) 3600000))
          between (java.util.Date. (+ (System/currentTimeMillis) 1800000))
          instant-of (fn [r] (:db/txInstant (d/entity (:db-after r)
                                                      (get-in r [:tempids :db/current-tx]))))
          [held release] (holding-writer conn)
          fs [(d/transact-async conn [{:db/id "datomic.tx" :db/txInstant later}])
              (d/transact-async conn [[:db/add "datomic.tx" :db/txInstant between]])
              (d/transact-async conn [{:user/email "a@x"}])
              (d/transact-async conn [[:db/add "datomic.tx" :db/txInstant later]])]]
      (release)
      @held
      (is (= later (instant-of @(fs 0))) "a given instant")
      (is (= :tx/past-instant (error-of #(deref (fs 1))))
          "older than the one staged before it in the group")
      (is (= later (instant-of @(fs 2))) "a clock behind the group's last instant gives it again")
      (is (= later (instant-of @(fs 3))) "an instant equal to the previous one")
      (testing "in the next group, and after reopening"
        (is (= :tx/past-instant
               (error-of #(d/transact! conn [[:db/add "datomic.tx" :db/txInstant between]]))))
        (is (= later (instant-of (d/transact! conn []))))
        (when dir
          (d/close conn)
          (let [c2 (d/connect (.getPath ^java.io.File dir))]
            (try
              (is (= :tx/past-instant
                     (error-of #(d/transact! c2 [[:db/add "datomic.tx" :db/txInstant between]]))))
              (is (= later (instant-of (d/transact! c2 []))))
              (finally (d/close c2)))))))))
