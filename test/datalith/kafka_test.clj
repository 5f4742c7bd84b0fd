(ns datalith.kafka-test
  "The transaction log on Apache Kafka (issue #20), against a real KRaft broker in a child
  JVM (datalith.kafka-broker): nodes connected with `:log {:kafka ...}` write through one
  topic, and every node holds the same datoms, ids and ts: nodes writing at once (also in
  child JVMs), the Java API, listeners, sync to a t, transaction functions, transact-async and
  import!. Faults and restarts are kafka-faults-test's, catching up kafka-catch-up-test's.
  Selector: lein test :kafka."
  (:require [clojure.string]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [datalith.core :as d]
            [datalith.kafka-support :refer [ex-error log-opts node rows same-everywhere schema
                                            start-child with-broker]]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.api Datalith DatalithException)
           (datalith.log KafkaLog Node TxLog)
           (java.io File)))

(set! *warn-on-reflection* true)

(use-fixtures :once with-broker)

(deftest ^:kafka two-nodes-hold-the-same-database
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log) b (node dir-b log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (testing "writes on both nodes, concurrently: each gets its own report"
          (let [writes (for [[conn i] (for [i (range 20) c [a b]] [c i])]
                         (future (d/transact! conn [{:db/id "u" :user/name (str "n" i) :user/n i
                                                     :user/score (float (/ i 2))}])))
                reports (mapv deref (doall writes))]
            (is (= 40 (count (set (map #(get-in % [:tempids "u"]) reports)))))))
        (testing "upserts of one identity from both nodes make one entity"
          (let [ups (doall (for [[conn i] [[a 1] [b 2] [a 3] [b 4]]]
                             (future (d/transact! conn [{:user/email "ada@x" :user/n i}]))))
                ids (set (map #(-> @% :tx-data first :e) ups))]
            (is (= 1 (count ids)))
            (d/sync a)
            (d/sync b)
            (is (= 1 (count (d/q '[:find ?e :where [?e :user/email "ada@x"]] (d/db a)))))
            (is (= (d/q '[:find ?e ?n :where [?e :user/email "ada@x"] [?e :user/n ?n]] (d/db a))
                   (d/q '[:find ?e ?n :where [?e :user/email "ada@x"] [?e :user/n ?n]] (d/db b))))))
        (testing "a failing transaction fails on the node that wrote it, with the embedded error,
                  and writes nothing on either node"
          (let [bad [{:db/id "x" :user/email "ada@x"} {:db/id "y" :user/email "ada@x"}
                     [:db/add "x" :user/n "not a long"]]
                embedded (with-open [m (d/connect :mem {:schema schema})]
                           (ex-error #(d/transact! m bad)))
                before (d/basis-t (d/sync a))]
            (is (some? embedded))
            (is (= embedded (ex-error #(d/transact! b bad))))
            (d/sync a)
            (d/sync b)
            (is (= before (d/basis-t (d/db a)) (d/basis-t (d/db b))))))
        (testing "tx-data holding a function value is refused before the log"
          (is (= :log/unserializable
                 (ex-error #(d/transact! a [[:db.fn/call (fn [_] []) ]])))))
        (testing "sync, then every index, as-of and history identical on both nodes"
          (same-everywhere (d/sync a) (d/sync b))
          (is (= (d/basis-t (d/db a)) (d/basis-t (d/db b))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

(defn- child-result
  "What the child printed (read as EDN), once it exited 0 (at most 5 minutes)."
  [^Process p ^File dir]
  (let [out (future (slurp (.getInputStream p)))]
    (when-not (is (.waitFor p 300 java.util.concurrent.TimeUnit/SECONDS) "the child ends")
      (.destroyForcibly p)
      (.waitFor p))
    (is (zero? (.exitValue p)) (slurp (java.io.File. dir "child.err")))
    (read-string (last (clojure.string/split-lines @out)))))

(deftest ^:kafka nodes-in-their-own-jvms-hold-the-same-database
  (let [dirs (repeatedly 3 tu/temp-dir) log (log-opts) n 10]
    (try
      (with-open [a (node (first dirs) log)]
        (let [t0 (d/basis-t (:db-after (d/transact! a (vec (for [[k v] schema]
                                                              (assoc v :db/ident k))))))
              expected (+ t0 (* 3 n))
              kids (for [[dir name] [[(nth dirs 1) "b"] [(nth dirs 2) "c"]]]
                     [(start-child dir dir (get-in log [:kafka :bootstrap-servers])
                                   (get-in log [:kafka :topic]) name n expected)
                      dir])
              kids (doall kids)]
          (testing "writers on three nodes at once, two of them child JVMs"
            (dotimes [i n]
              (d/transact! a [{:db/id "u" :user/name (str "a" i) :user/n i}
                              {:user/email "shared@x" :user/name (str "a" i)}])))
          (let [results (mapv (fn [[p dir]] (child-result p dir)) kids)
                db (d/sync a)
                mine {:basis-t (d/basis-t db) :eavt (rows db :eavt)
                      :history (rows (d/history db) :eavt)}]
            (testing "every node holds the same datoms, ids, ts and history"
              (is (= expected (:basis-t mine)))
              (is (= mine (first results)))
              (is (= mine (second results))))
            (testing "the shared identity is one entity"
              (is (= 1 (count (d/q '[:find ?e :where [?e :user/email "shared@x"]] db)))))
            (testing "every writer's entities are there, once"
              (is (= (* 3 n) (count (d/q '[:find ?e :where [?e :user/n]] db))))))))
      (finally (run! tu/delete-tree dirs)))))

(deftest ^:kafka the-java-api-opens-a-node
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)
        opts {"kafka.bootstrap-servers" (get-in log [:kafka :bootstrap-servers])
              "kafka.topic" (get-in log [:kafka :topic])}]
    (try
      (with-open [a (Datalith/open (.toPath dir-a) opts)
                  b (Datalith/open (.toPath dir-b) opts)]
        (.transact a "[{:db/ident :user/n :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]")
        (let [t (.basisT (.dbAfter (.transact b "[{:user/n 1}]")))]
          (testing "sync to a t written on the other node"
            (is (<= t (.basisT (.sync a t))))
            (is (= "log/timeout"
                   (try (.sync a (+ t 100) (java.time.Duration/ofMillis 100)) nil
                        (catch DatalithException e (.category e)))))))
        (is (= (d/basis-t (.unwrap (.sync a))) (d/basis-t (.unwrap (.sync b)))))
        (is (= #{[1]} (d/q '[:find ?n :where [_ :user/n ?n]] (.unwrap (.sync a))))))
      (testing "a bad option is refused"
        (is (= "db/invalid-options"
               (try (Datalith/open (.toPath dir-a) {"kafka.topic" "t"}) nil
                    (catch DatalithException e (.category e))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

(deftest ^:kafka a-listener-may-close-the-node
  (let [dir (tu/temp-dir) log (log-opts)]
    (try
      (let [conn (node dir log)]
        (d/listen! conn :closer (fn [_] (d/close conn)))
        (testing "the transaction's report comes back, then the connection is closed"
          (is (map? (d/transact! conn [{:db/ident :user/n}])))
          (is (= :db/closed (ex-error #(d/db conn))))
          (is (= :db/closed (ex-error #(d/transact! conn [{:db/ident :user/m}]))))))
      (finally (tu/delete-tree dir)))))

(defn- late-append-log
  "The real KafkaLog of `log` behind appends that return `ms` after the broker took the record
  (both forms): a slow acknowledgement, which a loaded machine gives at no chosen time."
  ^TxLog [log ms]
  (let [^KafkaLog k (KafkaLog/open (get-in log [:kafka :bootstrap-servers])
                                   (get-in log [:kafka :topic]))]
    (reify TxLog
      (append [_ key value] (let [o (.append k key value)] (Thread/sleep (long ms)) o))
      (appendAsync [_ key value] (let [f (.appendAsync k key value)]
                                   (.join f)
                                   (Thread/sleep (long ms))
                                   f))
      (read [_ from wait] (.read k from wait))
      (wakeup [_] (.wakeup k))
      (endOffset [_] (.endOffset k))
      (close [_] (.close k)))))

(deftest ^:kafka a-listener-that-closes-the-node-before-the-append-returns
  (testing "the append returns late, after the node applied the record and while a listener
  that closed the connection still runs (the record's outcome not delivered yet): the caller
  gets its report, not :db/closed, synchronously and through the future"
    (doseq [[how call] [[:transact! #(d/transact! %1 %2)]
                        [:transact-async #(deref (d/transact-async %1 %2) 60000 ::timed-out)]]]
      (testing (name how)
        (let [dir (tu/temp-dir) log (log-opts)]
          (try
            (with-open [conn (d/connect (str dir))]
              (Node/start conn (late-append-log log 300))
              (d/listen! conn :closer (fn [_] (d/close conn) (Thread/sleep 600)))
              (is (map? (call conn [{:db/ident :user/n}])))
              (is (= :db/closed (ex-error #(d/db conn))))
              (is (= :db/closed (ex-error #(d/transact! conn [{:db/ident :user/m}])))))
            (finally (tu/delete-tree dir))))))))

;; ---------------------------------------------------------------- h-kafka3: features and faults

(deftest ^:kafka sync-waits-for-a-t
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log) b (node dir-b log)]
        (let [t (d/basis-t (:db-after (d/transact! a [{:db/ident :user/n :db/valueType :db.type/long
                                                        :db/cardinality :db.cardinality/one}])))
              t2 (d/basis-t (:db-after (d/transact! a [{:user/n 1}])))]
          (testing "a t written on one node, read on the other: its value includes it"
            (is (<= t2 (d/basis-t (d/sync b t2))))
            (is (= #{[1]} (d/q '[:find ?n :where [_ :user/n ?n]] (d/sync b t2))))
            (is (<= t (d/basis-t (d/sync b t 1000)))))
          (testing "a t no node wrote yet: :log/timeout once the timeout passes"
            (let [e (try (d/sync b (+ t2 1000) 200) nil (catch ExceptionInfo e e))]
              (is (= :log/timeout (:error (ex-data e))))
              (is (= (+ t2 1000) (:t (ex-data e))))))
          (testing "a bad t or timeout"
            (is (= :db/invalid-t (ex-error #(d/sync b "x"))))
            (is (= :db/invalid-t (ex-error #(d/sync b 1 -5)))))
          (testing "a t written later: sync waits for it"
            (let [waiting (future (d/basis-t (d/sync b (inc t2) 30000)))]
              (d/transact! a [{:user/n 2}])
              (is (= (inc t2) @waiting))))))
      (testing "embedded, a t not committed yet is refused at once, as before"
        (with-open [m (d/connect :mem {})]
          (is (= :db/invalid-t (ex-error #(d/sync m 5))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

(deftest ^:kafka transaction-functions-run-on-every-node
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log) b (node dir-b log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (testing "a function named by its symbol runs at apply time, on the value before its
                  record: increments from both nodes at once are serialized, none lost"
          (run! deref (doall (for [c (take 20 (cycle [a b]))]
                               (future (d/transact! c [['datalith.kafka-support/inc-n "c@x"]])))))
          (is (= #{[20]} (d/q '[:find ?n :where [?e :user/email "c@x"] [?e :user/n ?n]]
                              (d/sync a))))
          (same-everywhere (d/sync a) (d/sync b)))
        (testing "a symbol no node can resolve fails on the writer, and writes nothing anywhere"
          (let [before (d/basis-t (d/sync a))]
            (is (= :tx/unknown-fn (ex-error #(d/transact! b [['datalith.kafka-test/no-such-fn]]))))
            (is (= before (d/basis-t (d/sync a)) (d/basis-t (d/sync b)))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

(deftest ^:kafka transact-async-and-import-on-a-node
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log) b (node dir-b log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (testing "transact-async: futures of reports, applied in the order of the calls"
          (let [fs (mapv #(d/transact-async a [{:user/email (str "async" % "@x") :user/n %}])
                         (range 10))
                ts (mapv #(d/basis-t (:db-after (deref % 30000 nil))) fs)]
            (is (every? some? ts))
            (is (= ts (sort ts)))
            (is (= (count (set ts)) 10))
            (is (= 10 (count (d/q '[:find ?e :where [?e :user/n]] (d/sync b)))))))
        (testing "a failing transact-async fails its future with the transaction's error"
          (let [f (d/transact-async b [{:user/email "async0@x" :user/n "not a long"}])]
            (is (= :tx/value-type (ex-error #(deref f))))
            (is (realized? f))))
        (testing "a record larger than Kafka's default 1 MB goes through; one over 16 MB is
                  refused, not written (:log/refused)"
          (let [big (apply str (repeat (* 2 1024 1024) "x"))]
            (is (= big (:user/name (d/entity (:db-after (d/transact! a [{:user/email "big@x"
                                                                         :user/name big}]))
                                             [:user/email "big@x"])))))
          (let [before (d/basis-t (d/sync a))]
            (is (= :log/refused (ex-error #(d/transact! a [{:user/name (apply str (repeat (* 17 1024 1024) "y"))}]))))
            (is (= before (d/basis-t (d/sync a)) (d/basis-t (d/sync b))))))
        (testing "a function value in transact-async: its future says :log/unserializable"
          (is (= :log/unserializable (ex-error #(deref (d/transact-async a [[:db.fn/call (fn [_] [])]]))))))
        (testing "import!: each chunk one transaction through the log, on every node"
          (let [chunks (for [i (range 5)]
                         (vec (for [j (range 100)] {:user/name (str "imp" i "-" j) :user/n j})))
                seen (atom [])
                r (d/import! b chunks {:progress #(swap! seen conj (:chunk %))})]
            (is (= 5 (:transactions r)))
            (is (= [0 1 2 3 4] @seen))
            (is (= (- (:t-last r) (:t-first r)) 4))
            (is (= 500 (count (d/q '[:find ?e :where [?e :user/name ?m]
                                     [(clojure.string/starts-with? ?m "imp")]] (d/sync a)))))))
        (testing "import! with :skip and a :progress that stops it"
          (let [r (d/import! a (for [i (range 6)] [{:user/name (str "stop" i)}])
                             {:skip 2 :progress #(when (= 3 (:chunk %)) :stop)})]
            (is (= {:transactions 2 :skipped 2 :stopped-at 4}
                   (select-keys r [:transactions :skipped :stopped-at])))))
        (testing "a chunk that fails stops the import, with the chunk and what came before"
          (let [e (try (d/import! a [[{:user/name "ok"}] [{:user/n "bad"}] [{:user/name "never"}]])
                       nil (catch ExceptionInfo e e))]
            (is (= :tx/value-type (:error (ex-data e))))
            (is (= 1 (:import/chunk (ex-data e))))
            (is (= 1 (:transactions (:import/report (ex-data e)))))
            (is (empty? (d/q '[:find ?e :where [?e :user/name "never"]] (d/sync b))))))
        (testing "export records are refused on a node"
          (with-open [m (d/connect :mem {:schema {:x/k {:db/valueType :db.type/long}}})]
            (is (= :import/record-t (ex-error #(d/import! a (d/export m)))))))
        (same-everywhere (d/sync a) (d/sync b)))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))
