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

(deftest ident-is-the-inverse-of-entid
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [db (d/db conn)]
      (testing "attributes and enum entities, by id or by ident"
        (is (= :user/email (d/ident db (d/entid db :user/email))))
        (is (= :user/email (d/ident db :user/email)))
        (is (= :db.type/string (d/ident db (:db/id (:db/valueType (d/pull db [{:db/valueType [:db/id]}]
                                                                          :user/email))))))
        (is (= :db.cardinality/many (d/ident db (d/entid db :db.cardinality/many))))
        (is (= :db.type/uri (d/ident db (d/entid db :db.type/uri)))))
      (testing "an entity without an ident, and one that does not exist"
        (is (nil? (d/ident db [:user/email "a@x"])))
        (is (nil? (d/ident db [:user/email "nobody@x"])))
        (is (nil? (d/ident db :no/such))))
      (testing "an ident given to an entity later is its ident from then on"
        (let [a (d/entid db [:user/email "a@x"])]
          (d/transact! conn [[:db/add a :db/ident :people/ada]])
          (is (= :people/ada (d/ident (d/db conn) a)))
          (is (nil? (d/ident db a))))))
    (is (= :db/invalid-entity (error-of #(d/ident (d/db conn) "not an entity"))))))

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
      (testing "resolve-tempid, Datomic's way and DataScript's"
        (is (= (get ids t1) (d/resolve-tempid (:db-after r) ids t1) (d/resolve-tempid ids t1)))
        (is (= (get ids -7) (d/resolve-tempid db ids (int -7))))
        (is (nil? (d/resolve-tempid db ids "nobody"))))
      (are [f err] (= err (error-of f))
        #(d/resolve-tempid db [] t1) :db/invalid-tempids
        #(d/resolve-tempid ids ids t1) :db/invalid-db
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
        #(d/listen! conn :k [1 2]) :db/invalid-listener ; an IFn that looks a key up
        #(d/listen! conn :k :tx-data) :db/invalid-listener
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

;; ---------------------------------------------------------------- rseek-datoms, index-pull, qseq

(defn- many-people
  "n people with ages 0..n-1 (a few long names, which the AVET key holds by hash)."
  [n]
  (for [i (range n)]
    {:user/email (str "p" i "@x") :user/age (mod (* i 7) n)
     :user/name (if (zero? (mod i 50)) (apply str "long-" i (repeat 300 "n")) (str "p" i))
     :user/tags #{:x (keyword (str "t" (mod i 3)))}}))

(deftest rseek-datoms-is-seek-datoms-backwards
  (each-store [conn {:schema schema}]
    (d/transact! conn (vec (many-people 1500)))
    (d/transact! conn [[:db/retract [:user/email "p3@x"] :user/age 21]])
    (let [db (d/db conn)
          views [db (d/history db) (d/as-of db 2)
                 (:db-after (d/with db [{:user/email "w@x" :user/age 7 :user/name "W"}]))]]
      (doseq [v views
              [index & cs] [[:eavt] [:aevt] [:avet] [:vaet]
                            [:eavt (d/entid db [:user/email "p700@x"])]
                            [:eavt (d/entid db [:user/email "p700@x"]) :user/tags]
                            [:aevt :user/age] [:avet :user/age] [:avet :user/age 700]
                            [:avet :user/age 20000] [:avet :user/name "p99"] [:aevt :user/email]]]
        (testing (pr-str index cs)
          (let [all (vec (d/datoms v index))
                ;; the datoms before seek-datoms's start, and those matching cs
                matching (set (apply d/datoms v index cs))
                past (drop-while #(contains? matching %) (apply d/seek-datoms v index cs))
                upto (subvec all 0 (- (count all) (count past)))
                r (apply d/rseek-datoms v index cs)]
            (is (= (count upto) (count r)))
            (is (= (rseq upto) (seq r)))))))
    (is (= () (d/rseek-datoms (d/db conn) :avet :no/attr)))
    (are [f err] (= err (error-of f))
      #(d/rseek-datoms (d/db conn) :xyz) :db/invalid-index
      #(d/rseek-datoms conn :eavt) :db/invalid-db)))

(deftest index-pull-walks-and-pulls
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [db (d/db conn)]
      (are [arg out] (= out (d/index-pull db arg))
        {:index :avet :selector [:user/name] :start [:user/age]}
        [{:user/name "Cy"} {:user/name "Ada"} {:user/name "Bob"}]
        {:index :avet :selector [:user/name :user/age] :start [:user/age 36]}
        [{:user/name "Ada" :user/age 36} {:user/name "Bob" :user/age 41}]
        {:index :avet :selector [:user/name] :start [:user/age 36] :reverse true}
        [{:user/name "Ada"} {:user/name "Cy"}]
        {:index :avet :selector [:user/name] :start [:user/age] :reverse true}
        [{:user/name "Bob"} {:user/name "Ada"} {:user/name "Cy"}]
        {:index :aevt :selector [:user/email] :start [:user/friend]}
        [{:user/email "b@x"} {:user/email "a@x"} {:user/email "c@x"}]
        {:index :avet :selector [:user/name] :start [:no/attr]}
        [])
      (is (seq? (d/index-pull db {:index :avet :selector [:user/name] :start [:user/age]})))
      (are [arg err] (= err (error-of #(doall (d/index-pull db arg))))
        {:index :eavt :selector [:user/name] :start [:user/age]} :db/invalid-index
        {:index :avet :selector [:user/name] :start []} :db/invalid-components
        {:index :avet :selector [:user/name] :start "a"} :db/invalid-components
        {:index :aevt :selector [:user/name] :start [:user/age]} :db/invalid-attribute
        {:index :avet :selector :bad :start [:user/age]} :pull/pattern
        [:index :avet] :db/invalid-options))))

(def pulls (atom 0))

(defn counting-xform [x] (swap! pulls inc) x)

(deftest qseq-pulls-lazily
  (each-store [conn {:schema schema}]
    (d/transact! conn (vec (many-people 200)))
    (let [db (d/db conn)
          query '[:find ?a (pull ?e [[:user/name :xform datalith.api-names-test/counting-xform]])
                  :where [?e :user/age ?a]]]
      (testing "the same answer as q"
        (reset! pulls 0)
        (let [s (d/qseq query db)]
          (is (seq? s))
          (is (< @pulls 200) "nothing pulled before it is read (but a first chunk)")
          (first s)
          (is (<= @pulls 32) "reading the first row pulls a chunk, not everything")
          (is (= 200 (count s)))
          (is (= 200 @pulls))
          (is (= (d/q query db) (set s)))))
      (doseq [[q & ins] ['[[:find ?e . :where [?e :user/age 3]]]
                         '[[:find [?a ...] :where [_ :user/age ?a]]]
                         '[[:find (pull ?e [:user/name]) ?a :where [?e :user/age ?a]]]
                         '[[:find ?a ?n :keys age name :where [?e :user/age ?a] [?e :user/name ?n]]]
                         '[[:find (pull ?e ?p) :in $ ?p :where [?e :user/age 4]] [:user/email]]
                         '[[:find [?e ?a] :where [?e :user/age ?a] [(= ?a 5)]]]]]
        (is (= (apply d/q q db ins)
               (let [r (apply d/qseq q db ins)]
                 (if (seq? r) (into (empty (apply d/q q db ins)) r) r)))
            (pr-str q)))
      (is (= (d/q '[:find [(pull ?e [:user/age]) ...] :where [?e :user/age ?a] [(< ?a 10)]] db)
             (vec (d/qseq '[:find [(pull ?e [:user/age]) ...] :where [?e :user/age ?a] [(< ?a 10)]] db))))
      (is (= (d/q {:query '[:find ?e :where [?e :user/age 3]] :args [db]})
             (set (d/qseq {:query '[:find ?e :where [?e :user/age 3]] :args [db]}))))
      (are [f err] (= err (error-of f))
        #(d/qseq '[:find ?x :where [?e :user/age]] db) (error-of #(d/q '[:find ?x :where [?e :user/age]] db))
        #(d/qseq {:query '[:find ?e :where [?e :user/age]] :args 1}) :query/args
        #(d/qseq '[:find (pull ?e [:user/name]) :in $ ?x :where [?e :user/age ?x]] db 1 2) :query/inputs))))

;; ---------------------------------------------------------------- query inputs: functions, patterns; nested q

(deftest function-values-through-in
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [db (d/db conn)]
      (are [q in out] (= out (let [r (d/q q db in)] (if (vector? r) (sort r) r)))
        '[:find ?n ?y :in $ ?f :where [?e :user/age ?a] [?e :user/name ?n] [(?f ?a) ?y]]
        #(* 2 %) #{["Ada" 72] ["Bob" 82] ["Cy" 58]}
        '[:find ?n :in $ ?f :where [?e :user/age ?a] [?e :user/name ?n] [(?f ?a)]]
        odd? #{["Bob"] ["Cy"]}
        '[:find ?n :in $ ?f :where [?e :user/age ?a] [?e :user/name ?n] [(?f ?a 40)]]
        > #{["Bob"]}
        '[:find [?t ...] :in $ ?f :where [?e :user/tags ?tag] [(?f ?tag) [?t ...]]]
        (fn [t] [(name t) "tag"]) ["tag" "x" "y"]
        '[:find ?n :in $ ?f :where [?e :user/name ?n] (not [(?f ?n)])]
        #(= "Ada" %) #{["Bob"] ["Cy"]})
      (testing "one function per row, from a collection binding"
        (is (= #{[36 37] [36 35]}
               (d/q '[:find ?a ?y :in $ [?f ...] :where [?e :user/name "Ada"] [?e :user/age ?a] [(?f ?a) ?y]]
                    db [inc dec]))))
      (are [in err] (= err (error-of #(d/q '[:find ?y :in $ ?f :where [_ :user/age ?a] [(?f ?a) ?y]] db in)))
        42 :query/unknown-fn
        :user/name :query/unknown-fn
        nil :query/unknown-fn
        (fn [_] (throw (RuntimeException. "f"))) :query/fn-failed)
      (is (= :query/unbound-var
             (error-of #(d/q '[:find ?y :where [_ :user/age ?a] [(?f ?a) ?y]] db)))))))

(deftest pull-pattern-inputs
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [db (d/db conn)]
      (are [q in] (= #{[{:user/name "Ada"}]} (d/q q db in))
        '[:find (pull ?e ?p) :in $ ?p :where [?e :user/email "a@x"]] [:user/name]
        '[:find (pull ?e pattern) :in $ pattern :where [?e :user/email "a@x"]] [:user/name])
      (is (= [{:user/email "b@x" :user/friend [{:user/name "Ada"} {:user/name "Cy"}]}]
             (d/q '[:find [(pull ?e ?p) ...] :in $ ?p :where [?e :user/email "b@x"]]
                  db [:user/email {:user/friend [:user/name]}])))
      (is (= :pull/pattern
             (error-of #(d/q '[:find (pull ?e ?p) :in $ ?p :where [?e :user/email "a@x"]] db 42))))
      (is (= :parser/find
             (error-of #(d/q '[:find (pull ?e ?p) :in $ [?p ...] :where [?e :user/email "a@x"]] db [[:user/name]])))
          "only a scalar input holds a pattern"))))

(deftest nested-queries
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [db (d/db conn)
          inner '[:find ?e ?a :where [?e :user/age ?a]]]
      (are [q] (= #{["Ada"] ["Bob"]} (d/q q db inner))
        '[:find ?n :in $ ?inner
          :where [(datalith.core/q ?inner $) [[?e ?a]]] [(> ?a 30)] [?e :user/name ?n]]
        '[:find ?n :in $ ?inner
          :where [(q ?inner $) [[?e ?a]]] [(> ?a 30)] [?e :user/name ?n]])
      (testing "the inner query gets its own inputs, and its answer binds like any value"
        (is (= #{[41]}
               (d/q '[:find ?max :in $ ?inner
                      :where [(q ?inner $ 40) ?max]]
                    db '[:find (max ?a) . :in $ ?min :where [_ :user/age ?a] [(>= ?a ?min)]]))))
      (is (= :query/invalid-call (error-of #(d/q '[:find ?r :where [(q) ?r]] db))))
      (is (= :parser/query (error-of #(d/q '[:find ?r :in $ ?q :where [(q ?q $) ?r]] db 42)))))))

;; ---------------------------------------------------------------- filter

(deftest filtered-views
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [db (d/db conn)
          bob (d/entid db [:user/email "b@x"])
          ada (d/entid db [:user/email "a@x"])
          not-age (fn [_ d] (not= :user/age (:a d)))
          f (d/filter db not-age)]
      (testing "every read path sees only accepted datoms"
        (is (d/filtered? f))
        (is (not (d/filtered? db)))
        (is (= (remove #(= :user/age (:a %)) (d/datoms db :eavt)) (d/datoms f :eavt)))
        (are [index] (= (remove #(= :user/age (:a %)) (d/datoms db index)) (d/datoms f index))
          :eavt :aevt :avet :vaet)
        (is (= () (d/datoms f :avet :user/age)))
        (is (= () (d/index-range f :user/age 0 100)))
        (is (not-any? #(= :user/age (:a %)) (d/seek-datoms f :avet :user/age)))
        (is (= (remove #(= :user/age (:a %)) (d/rseek-datoms db :aevt)) (d/rseek-datoms f :aevt)))
        (is (= #{} (d/q '[:find ?a :where [_ :user/age ?a]] f)))
        (is (= 0 (or (d/q '[:find (count ?e) . :where [?e :user/age]] f) 0)))
        (is (= #{["Ada"] ["Bob"] ["Cy"]} (d/q '[:find ?n :where [?e :user/name ?n]] f)))
        (is (= {:user/name "Ada"} (d/pull f [:user/name :user/age] ada)))
        (is (nil? (:user/age (d/entity f ada))))
        (is (= "Ada" (:user/name (d/entity f ada))))
        (is (= (count (d/datoms f :eavt)) (:datoms (d/db-stats f))))
        (is (nil? (get-in (d/db-stats f) [:attrs :user/age]))))
      (testing "a filter on entities hides them from lookups, refs and reverse refs"
        (let [g (d/filter db (fn [_ d] (and (not= bob (:e d)) (not= bob (:v d)))))]
          (is (nil? (d/entid g [:user/email "b@x"])))
          (is (= #{["Ada"] ["Cy"]} (d/q '[:find ?n :where [?e :user/name ?n]] g)))
          (is (= {:user/name "Ada"} (d/pull g [:user/name {:user/friend [:user/name]}] ada)))
          (is (nil? (:user/_friend (d/entity g ada))))
          (is (= #{} (d/q '[:find ?e :where [?e :user/friend ?f] [?f :user/name "Ada"]] g)))))
      (testing "filters compose, with each other and with as-of, since and history"
        (d/transact! conn [{:user/email "a@x" :user/age 37}])
        (let [now (d/db conn)
              t (d/basis-t db)
              only-ada (fn [_ d] (= ada (:e d)))
              h (-> now (d/filter only-ada) (d/filter not-age))]
          (is (= #{[:user/email "a@x"] [:user/name "Ada"] [:user/tags :x] [:user/tags :y] [:user/friend bob]}
                 (set (map (juxt :a :v) (d/datoms h :eavt)))))
          (is (= [[36 true] [36 false] [37 true]]
                 (map (juxt :v :added) (d/datoms (d/filter (d/history now) only-ada) :eavt ada :user/age))))
          (is (= [36] (map :v (d/datoms (d/as-of (d/filter now only-ada) t) :eavt ada :user/age))))
          (is (= [36] (map :v (d/datoms (d/filter (d/as-of now t) only-ada) :eavt ada :user/age))))
          (is (= [37] (map :v (d/datoms (d/since (d/filter now only-ada) t) :aevt :user/age))))
          (is (= (d/as-of-t (d/as-of (d/filter now only-ada) t)) t))
          (is (d/filtered? (d/history (d/filter now only-ada))))))
      (testing "the predicate gets the value it was applied to, and each datom"
        (let [seen (atom #{})]
          (dorun (d/datoms (d/filter db (fn [x d] (swap! seen conj [(identical? x db) (instance? datalith.index.Datom d)]) true)) :eavt))
          (is (= #{[true true]} @seen))))
      (are [f err] (= err (error-of f))
        #(d/filter db 42) :db/invalid-filter
        #(d/filter db :user/age) :db/invalid-filter
        #(d/filter conn not-age) :db/invalid-db
        #(doall (d/datoms (d/filter db (fn [_ _] (throw (RuntimeException. "no")))) :eavt)) :db/filter-failed
        #(d/q '[:find ?e :where [?e :user/name]] (d/filter db (fn [_ _] (/ 1 0)))) :db/filter-failed
        #(d/with (d/filter db not-age) [{:user/name "x"}]) :db/filtered))))

;; ---------------------------------------------------------------- strict mode, schema keys

(deftest strict-connections-refuse-unknown-attributes
  (each-store [conn {:schema schema :strict? true}]
    (d/transact! conn people)
    (let [db (d/db conn)
          t (d/basis-t db)]
      (are [f err] (= err (error-of f))
        #(d/q '[:find ?e :where [?e :user/emial "a@x"]] db) :query/unknown-attribute
        #(d/q '[:find ?e :where [?e :user/name] (not [?e :user/agee 3])] db) :query/unknown-attribute
        #(d/q '[:find ?e :where [?e :user/name] [(get-else $ ?e :user/nme "-") ?n]] db) :query/invalid-call
        #(d/pull db [:user/name :user/emial] [:user/email "a@x"]) :pull/unknown-attribute
        #(d/pull db [{:user/freind [:user/name]}] [:user/email "a@x"]) :pull/unknown-attribute
        #(d/pull db [:user/_freind] [:user/email "a@x"]) :pull/unknown-attribute
        #(d/q '[:find (pull ?e [:user/nme]) :where [?e :user/email]] db) :pull/unknown-attribute
        #(d/transact! conn [{:user/email "d@x" :user/nmae "D"}]) :tx/unknown-attribute
        #(d/transact! conn [[:db/add "x" :user/nmae "D"]]) :tx/unknown-attribute
        #(d/with db [[:db/add "x" :user/nmae "D"]]) :tx/unknown-attribute)
      (is (= t (d/basis-t (d/db conn))))
      (testing "installed attributes work as ever, and new ones can be installed"
        (is (= #{["Ada"]} (d/q '[:find ?n :where [?e :user/email "a@x"] [?e :user/name ?n]] db)))
        (is (= {:user/name "Ada"} (d/pull db [:user/name] [:user/email "a@x"])))
        (d/transact! conn [{:db/ident :user/nick :db/valueType :db.type/string
                            :db/cardinality :db.cardinality/one}
                           {:user/email "a@x" :user/nick "A"}])
        (is (= "A" (:user/nick (d/entity (d/db conn) [:user/email "a@x"])))))
      (testing "a variable attribute still matches what there is"
        (is (= #{[(d/entid db :user/email)]} (d/q '[:find ?a :where [?e ?a "a@x"]] db))))))
  (testing "the default is lenient"
    (each-store [conn {:schema schema}]
      (is (= #{} (d/q '[:find ?e :where [?e :user/emial "a@x"]] (d/db conn))))
      (is (nil? (d/pull (d/db conn) [:user/emial] 0)))
      (d/transact! conn [{:user/nmae "D"}])
      (is (contains? (d/schema (d/db conn)) :user/nmae))))
  (is (= :db/invalid-options (error-of #(d/connect :mem {:strict? "yes"})))))

(deftest unknown-db-keys-are-refused
  (each-store [conn {}]
    (are [m supported-by-datomic?]
         (let [e (try (d/transact! conn [m]) nil (catch clojure.lang.ExceptionInfo e e))]
           (and (= :tx/invalid-attribute (:error (ex-data e)))
                (contains? (set (:supported (ex-data e))) :db/valueType)
                (= supported-by-datomic? (boolean (re-find #"not supported by datalith" (ex-message e))))))
      {:db/ident :a/b :db/valueType :db.type/string :db/fulltext true} true
      {:db/ident :a/b :db/valueType :db.type/string :db/fn 'x/y} true
      {:db/ident :a/b :db/valueType :db.type/string :db.install/_attribute :db.part/db} true
      {:db/ident :a/b :db/valueType :db.type/string :db/fancy true} false
      {:db/ident :a/b :db/valueType :db.type/string :db.foo/bar 1} false)
    (is (= {} (select-keys (d/schema (d/db conn)) [:a/b])) "nothing installed")
    (is (= :tx/invalid-attribute
           (error-of #(d/connect :mem {:schema {:a/b {:db/valueType :db.type/string :db/fulltext true}}}))))))

;; ---------------------------------------------------------------- REPL

(deftest printing-connections-and-datoms
  (let [dir (tu/temp-dir)]
    (try
      (let [conn (d/connect (.getPath dir) {:schema schema})
            t (d/basis-t (d/db conn))]
        (is (= (str "#datalith/conn {:dir " (pr-str (str (.toRealPath (.toPath dir) (make-array java.nio.file.LinkOption 0))))
                    ", :basis-t " t ", :open? true}")
               (pr-str conn)))
        (d/close conn)
        (is (re-find #":open\? false}$" (pr-str conn))))
      (finally (tu/delete-tree dir))))
  (with-open [conn (d/connect)]
    (is (= "#datalith/conn {:dir :mem, :basis-t 0, :open? true}" (pr-str conn)))
    (d/transact! conn [{:user/name "A"}])
    (is (= "#datalith/conn {:dir :mem, :basis-t 1, :open? true}" (pr-str conn)))
    (let [d (first (d/datoms (d/db conn) :aevt :user/name))]
      (testing "a datom is a collection of its five parts"
        (is (= [(:e d) :user/name "A" (:tx d) true] (vec d) (into [] d) (seq d)))
        (let [[e a v] d] (is (= [(:e d) :user/name "A"] [e a v])))
        (is (= d (read-string (pr-str d))) "and reads back")))))
