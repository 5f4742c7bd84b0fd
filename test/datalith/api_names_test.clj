(ns datalith.api-names-test
  "The names Datomic and DataScript users type (issue #16): the tx forms
  :db.fn/retractAttribute and :db.fn/call, entity-db, squuid, tempid,
  db-stats, sync, transact-async, listeners and report queues, rseek-datoms,
  index-pull, qseq, function and pattern inputs of queries, nested q, filter,
  strict mode; each through datalith.core on both stores."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu :refer [each-store]]))

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/age {:db/valueType :db.type/long :db/index true}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}})

(def people
  [{:db/id "a" :user/email "a@x" :user/name "Ada" :user/age 36 :user/tags #{:x :y}
    :user/friend ["b"]}
   {:db/id "b" :user/email "b@x" :user/name "Bob" :user/age 41 :user/friend ["a" "c"]}
   {:db/id "c" :user/email "c@x" :user/name "Cy" :user/age 29}])

(defn- error-of
  "The :error key of the ex-info `f` throws, or :no-error."
  [f]
  (try (f) :no-error
       (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))

(defn- facts
  "The [a v] pairs entity `e` has in `db` (refs as ids)."
  [db e]
  (set (map (juxt :a :v) (d/datoms db :eavt e))))

;; ---------------------------------------------------------------- tx forms

(deftest retract-attribute
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [a (d/entid (d/db conn) [:user/email "a@x"])
          r (d/transact! conn [[:db.fn/retractAttribute a :user/tags]
                               [:db.fn/retractAttribute [:user/email "a@x"] :user/name]])]
      (testing "every value of the attribute is retracted, the rest kept"
        (is (= #{[:user/email "a@x"] [:user/age 36] [:user/friend (d/entid (d/db conn) [:user/email "b@x"])]}
               (facts (d/db conn) a)))
        (is (= #{[:user/tags :x] [:user/tags :y] [:user/name "Ada"]}
               (set (for [[_ at v _ added] (:tx-data r) :when (and (not added) (not= at :db/txInstant))]
                      [at v])))))
      (testing "an attribute the entity lacks retracts nothing"
        (is (= #{:db/txInstant}
               (set (map :a (:tx-data (d/transact! conn [[:db.fn/retractAttribute a :user/tags]]))))))))
    (are [tx err] (= err (error-of #(d/transact! conn tx)))
      [[:db.fn/retractAttribute [:user/email "a@x"]]] :tx/invalid-op
      [[:db.fn/retractAttribute [:user/email "a@x"] :user/name "Ada"]] :tx/invalid-op
      [[:db.fn/retractAttribute [:user/email "a@x"] "name"]] :tx/invalid-attribute)))

(defn- rename [db email new-name]
  [[:db/add [:user/email email] :user/name (str new-name " (was " (:user/name (d/entity db [:user/email email])) ")")]])

(deftest fn-call
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (testing "[:db.fn/call f & args] calls (f db-before & args) and transacts what it returns"
      (d/transact! conn [[:db.fn/call rename "a@x" "Ada L."]])
      (is (= "Ada L. (was Ada)" (:user/name (d/entity (d/db conn) [:user/email "a@x"])))))
    (testing "an anonymous function, returning another call, with tempids"
      (let [r (d/transact! conn [[:db.fn/call (fn [_db n] [[:db.fn/call (fn [_ m] [{:db/id "n" :user/name m}]) n]])
                                  "Dee"]])]
        (is (= "Dee" (:user/name (d/entity (d/db conn) (get-in r [:tempids "n"])))))))
    (testing "bad calls fail the transaction, writing nothing"
      (let [t (d/basis-t (d/db conn))]
        (are [tx err] (= err (error-of #(d/transact! conn tx)))
          [[:db.fn/call]] :tx/invalid-op
          [[:db.fn/call :user/name 1]] :tx/invalid-op
          [[:db.fn/call 'datalith.api-names-test/rename "a@x" "x"]] :tx/invalid-op
          [[:db.fn/call {:a 1}]] :tx/invalid-op
          [[:db.fn/call (fn [_] (throw (RuntimeException. "no")))]] :tx/fn-failed
          [[:db.fn/call (fn [_] 42)]] :tx/fn-result
          [[:db.fn/call (fn [_ _] [])]] :tx/fn-failed)
        (is (= t (d/basis-t (d/db conn))))))
    (testing "with runs it too"
      (is (= "W" (:user/name (d/entity (:db-after (d/with (d/db conn) [[:db.fn/call (fn [_] [[:db/add [:user/email "c@x"] :user/name "W"]])]]))
                                       [:user/email "c@x"])))))))

;; ---------------------------------------------------------------- small names

(deftest entity-db-of-an-entity
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [db (d/db conn)
          old (d/as-of db 1)]
      (is (identical? db (d/entity-db (d/entity db [:user/email "a@x"]))))
      (is (identical? old (d/entity-db (d/entity old 0))))
      (is (= :db/invalid-entity (error-of #(d/entity-db {:db/id 1})))))))

(deftest squuids
  (let [before (* 1000 (quot (System/currentTimeMillis) 1000))
        us (repeatedly 50 d/squuid)
        after (System/currentTimeMillis)]
    (is (= 50 (count (set us))) "random below the time")
    (is (every? #(<= before (d/squuid-time-millis %) after) us))
    (is (= 4 (.version ^java.util.UUID (first us))) "its low bits stay a random (version 4) UUID")
    (is (= :db/invalid-uuid (error-of #(d/squuid-time-millis "x"))))))

(deftest tempid-names-entities
  (each-store [conn {:schema schema}]
    (let [t1 (d/tempid :db.part/user)
          t2 (d/tempid :db.part/user)
          r (d/transact! conn [{:db/id t1 :user/name "A" :user/friend [t2]}
                               {:db/id t2 :user/name "B"}
                               [:db/add (d/tempid :db.part/user -7) :user/name "C"]
                               [:db/add (d/tempid :db.part/user -7) :user/age 3]
                               [:db/add (d/tempid :db.part/tx) :user/name "the tx"]])
          ids (:tempids r)
          db (d/db conn)]
      (testing "each call is a new entity; the report maps the tempid to its id"
        (is (not= t1 t2))
        (is (= "A" (:user/name (d/entity db (get ids t1)))))
        (is (= #{"B"} (set (map :user/name (:user/friend (d/entity db (get ids t1))))))))
      (testing "the same n, the same entity"
        (is (= {:user/name "C" :user/age 3} (d/pull db [:user/name :user/age] (get ids -7)))))
      (testing ":db.part/tx names the transaction"
        (is (= "the tx" (:user/name (d/entity db (:db/current-tx ids))))))
      (are [f err] (= err (error-of f))
        #(d/tempid "user") :db/invalid-partition
        #(d/tempid nil -1) :db/invalid-partition
        #(d/tempid :db.part/user 1) :db/invalid-tempid
        #(d/tempid :db.part/user "a") :db/invalid-tempid))))

(deftest db-stats-counts
  (each-store [conn {:schema schema}]
    (let [before (d/db-stats (d/db conn))
          _ (d/transact! conn people)
          stats (d/db-stats (d/db conn))
          per-attr (fn [db] (frequencies (map :a (d/datoms db :eavt))))]
      (testing "the datoms of each attribute, as datoms reads them"
        (is (= (per-attr (d/db conn)) (update-vals (:attrs stats) :count)))
        (is (= (count (d/datoms (d/db conn) :eavt)) (:datoms stats)))
        (is (= {:count 3} (get-in stats [:attrs :user/email])))
        (is (= {:count 2} (get-in stats [:attrs :user/tags]))))
      (testing "views count what they see"
        (let [t (d/basis-t (d/db conn))]
          (d/transact! conn [[:db/retract [:user/email "a@x"] :user/tags :x]])
          (are [db] (= (per-attr db) (update-vals (:attrs (d/db-stats db)) :count))
            (d/as-of (d/db conn) t)
            (d/history (d/db conn))
            (d/since (d/db conn) t)
            (:db-after (d/with (d/db conn) [{:user/name "W"}]))))
        (is (= (:datoms before) (:datoms (d/db-stats (d/as-of (d/db conn) 1))))
            "as of the schema's transaction")))))

(deftest sync-gives-the-latest
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [t (d/basis-t (d/db conn))]
      (is (= t (d/basis-t (d/sync conn))))
      (is (= t (d/basis-t (d/sync conn t))))
      (is (= t (d/basis-t (d/sync conn 0))))
      (are [f err] (= err (error-of f))
        #(d/sync conn (inc t)) :db/invalid-t
        #(d/sync conn "1") :db/invalid-t
        #(d/sync (d/db conn)) :db/invalid-conn))))

(deftest transact-async-in-order
  (each-store [conn {:schema schema}]
    (testing "a future of the report, transactions in the order of the calls"
      (let [fs (mapv #(d/transact-async conn [{:user/email "n@x" :user/age %}]) (range 20))
            reports (mapv deref fs)]
        (is (= (range 20) (map #(:user/age (d/entity (:db-after %) [:user/email "n@x"])) reports)))
        (is (apply < (map (comp d/basis-t :db-after) reports)))
        (is (= 19 (:user/age (d/entity (d/db conn) [:user/email "n@x"]))))
        (is (realized? (first fs)))))
    (testing "its deref throws the transaction's ex-info; later ones still run"
      (let [bad (d/transact-async conn [[:db/add "x" :user/age "old"]])
            good (d/transact-async conn [{:user/email "n@x" :user/age 99}])]
        (is (= :tx/value-type (error-of #(deref bad))))
        (is (= :tx/value-type (error-of #(deref bad 10000 :timeout))))
        (is (= 99 (:user/age (d/entity (:db-after @good) [:user/email "n@x"]))))))
    (is (= :db/invalid-conn (error-of #(d/transact-async (d/db conn) []))))
    (is (= :tx/invalid-data (error-of #(d/transact-async conn 1)))))
  (testing "a closed connection refuses at the call"
    (let [conn (d/connect)]
      (d/close conn)
      (is (= :db/closed (error-of #(d/transact-async conn [])))))))

;; ---------------------------------------------------------------- listeners and the report queue

(deftest listeners
  (each-store [conn {:schema schema}]
    (let [seen (atom [])
          k (d/listen! conn (fn [r] (swap! seen conj [:anon (d/basis-t (:db-after r))])))]
      (is (= :a (d/listen! conn :a (fn [r] (swap! seen conj [:a (d/basis-t (:db-after r)) (count (:tx-data r))])))))
      (testing "every listener gets each report after the commit, before transact! returns"
        (let [r (d/transact! conn [{:user/name "A"}])
              t (d/basis-t (:db-after r))]
          (is (= [[:anon t] [:a t 2]] @seen))))
      (testing "a listener's exception fails neither the transaction nor the other listeners"
        (reset! seen [])
        (d/listen! conn :a (fn [_] (throw (RuntimeException. "listener failed"))))
        (let [handler (Thread/getDefaultUncaughtExceptionHandler)
              caught (atom [])]
          (.setUncaughtExceptionHandler (Thread/currentThread)
                                        (reify Thread$UncaughtExceptionHandler
                                          (uncaughtException [_ _ e] (swap! caught conj (ex-message e)))))
          (try (let [r (d/transact! conn [{:user/name "B"}])]
                 (is (= "B" (d/q '[:find ?n . :where [_ :user/name ?n] [(= ?n "B")]] (:db-after r))))
                 (is (= [[:anon (d/basis-t (:db-after r))]] @seen))
                 (is (= ["listener failed"] @caught)))
               (finally (.setUncaughtExceptionHandler (Thread/currentThread) handler)))))
      (testing "unlisten! stops it; a failed transaction reports nothing"
        (reset! seen [])
        (d/unlisten! conn :a)
        (d/unlisten! conn k)
        (d/transact! conn [{:user/name "C"}])
        (d/listen! conn :a #(swap! seen conj %))
        (error-of #(d/transact! conn [[:db/add "x" :user/age "old"]]))
        (is (= [] @seen)))
      (testing "a listener may transact: its report follows, in order"
        (reset! seen [])
        (d/listen! conn :a (fn [r]
                             (swap! seen conj (d/basis-t (:db-after r)))
                             (when (< (count @seen) 3) (d/transact! conn [{:user/name "again"}]))))
        (let [t (d/basis-t (:db-after (d/transact! conn [{:user/name "D"}])))]
          (is (= [t (+ t 1) (+ t 2)] @seen)))
        (d/unlisten! conn :a))
      (are [f err] (= err (error-of f))
        #(d/listen! conn :k 42) :db/invalid-listener
        #(d/listen! (d/db conn) :k identity) :db/invalid-conn
        #(d/unlisten! nil :k) :db/invalid-conn))))

(deftest listeners-across-threads
  (each-store [conn {:schema schema}]
    (let [seen (atom [])]
      (d/listen! conn :t (fn [r] (swap! seen conj (d/basis-t (:db-after r)))))
      (let [t0 (d/basis-t (d/db conn))
            threads (for [i (range 4)]
                      (future (dotimes [j 25] (d/transact! conn [{:user/name (str i "-" j)}]))))]
        (run! deref (doall threads))
        (is (= (range (inc t0) (+ t0 101)) @seen) "each report once, in commit order")))))

(deftest report-queue
  (each-store [conn {:schema schema}]
    (let [q (d/tx-report-queue conn)]
      (is (instance? java.util.concurrent.BlockingQueue q))
      (is (identical? q (d/tx-report-queue conn)) "the same queue on every call")
      (let [t0 (d/basis-t (d/db conn))
            threads (doall (for [i (range 4)]
                             (future (dotimes [j 25] (d/transact! conn [{:user/name (str i "-" j)}])))))]
        (run! deref threads)
        @(d/transact-async conn [{:user/name "async"}])
        (let [reports (repeatedly 101 #(.poll q))]
          (is (= (range (inc t0) (+ t0 102)) (map (comp d/basis-t :db-after) reports))
              "every report, in commit order, none dropped")
          (is (every? #(= (d/basis-t (:db-before %)) (dec (d/basis-t (:db-after %)))) reports))
          (is (nil? (.poll q)))))
      (testing "removed, it is filled no more; the next call makes a new one"
        (d/remove-tx-report-queue conn)
        (d/transact! conn [{:user/name "X"}])
        (is (nil? (.poll q)))
        (let [q2 (d/tx-report-queue conn)]
          (is (not (identical? q q2)))
          (d/transact! conn [{:user/name "Y"}])
          (is (= 1 (count q2)))))
      (is (= :db/invalid-conn (error-of #(d/tx-report-queue (d/db conn)))))
      (is (= :db/invalid-conn (error-of #(d/remove-tx-report-queue 1)))))))
