(ns datalith.kafka-test
  "The transaction log on Apache Kafka (issue #20), against a real KRaft broker in a child
  JVM (datalith.kafka-broker): nodes connected with `:log {:kafka ...}` write through one
  topic, and every node holds the same datoms, ids and ts. Selector: lein test :kafka."
  (:require [clojure.string]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [datalith.core :as d]
            [datalith.kafka-broker :as broker]
            [datalith.test-util :as tu]
            [taoensso.nippy :as nippy])
  (:import (clojure.lang ExceptionInfo)
           (datalith.index Datom)
           (datalith.api Datalith DatalithException)
           (datalith.log KafkaLog Node TxLog)
           (java.io File)
           (java.util Random)))

(set! *warn-on-reflection* true)

(def ^:dynamic *broker* nil)

(def ^:private live
  "The running broker's map (its process changes when a test restarts it)."
  (atom nil))

(use-fixtures :once
  (fn [run]
    (let [b (reset! live (broker/start))]
      (try (binding [*broker* b] (run))
           (finally (broker/delete @live))))))

(def schema
  {:user/email {:db/valueType :db.type/string :db/cardinality :db.cardinality/one
                :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   :user/n {:db/valueType :db.type/long :db/cardinality :db.cardinality/one}
   :user/score {:db/valueType :db.type/float :db/cardinality :db.cardinality/one}
   :user/friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}})

(def ^:private topics (atom 0))

(defn- log-opts
  "The :log option of a new topic (each test its own)."
  []
  {:kafka {:bootstrap-servers (:bootstrap *broker*) :topic (str "t" (swap! topics inc))}})

(defn- node ^datalith.conn.Conn [^File dir log]
  (d/connect (str dir) {:log log}))

(defn- rows
  "Every datom of index `index` in `db` as vectors."
  [db index]
  (mapv (fn [^Datom x] [(.e x) (.aid x) (.v x) (.tx x) (.added x)]) (d/datoms db index)))

(defn- same-everywhere
  "Asserts that every index of every value derived from db-a and db-b holds the same datoms:
  the latest, as-of a few random t, and the history."
  [db-a db-b]
  (is (= (d/basis-t db-a) (d/basis-t db-b)))
  (doseq [index [:eavt :aevt :avet :vaet]]
    (is (= (rows db-a index) (rows db-b index)) (str index)))
  (is (= (rows (d/history db-a) :eavt) (rows (d/history db-b) :eavt)) "history")
  (let [r (Random. 20)]
    (dotimes [_ 5]
      (let [t (inc (.nextInt r (int (d/basis-t db-a))))]
        (is (= (rows (d/as-of db-a t) :eavt) (rows (d/as-of db-b t) :eavt)) (str "as-of " t))))))

(defn- ex-error [f]
  (try (f) nil (catch ExceptionInfo e (:error (ex-data e)))))

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

(deftest ^:kafka an-unreadable-record-stops-the-node
  (let [dir (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir log)]
        (d/transact! a [{:db/ident :user/n :db/valueType :db.type/long
                         :db/cardinality :db.cardinality/one}])
        (with-open [raw (KafkaLog/open (get-in log [:kafka :bootstrap-servers])
                                       (get-in log [:kafka :topic]))]
          (.append raw (.getBytes "someone/1") (byte-array [1 2 3 4])))
        (testing "the node stops at the record rather than skip it: sync and transact! say why"
          (is (= :log/corrupt-record (ex-error #(d/sync a))))
          (is (= :log/corrupt-record (ex-error #(d/transact! a [{:user/n 1}])))))
        (testing "and nothing after the schema was applied"
          (is (= 1 (count (d/q '[:find ?a :where [?a :db/ident :user/n]] (d/db a)))))
          (is (empty? (d/q '[:find ?e :where [?e :user/n]] (d/db a))))))
      (with-open [a (node dir log)]
        (testing "after a restart it stops at the same record"
          (is (= :log/corrupt-record (ex-error #(d/sync a))))))
      (finally (tu/delete-tree dir)))))

(deftest ^:kafka a-restarted-node-catches-up-from-its-offset
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (with-open [b (node dir-b log)]
          (d/transact! b [{:user/email "b@x" :user/n 1}])
          (testing "a failed record, the last one b applied before it closed: b runs it again
                    after the restart, and it fails again (nothing written)"
            (is (= :tx/value-type
                   (ex-error #(d/transact! b [{:user/email "b@x" :user/n "not a long"}])))))
          (d/sync b))
        (dotimes [i 5]
          (d/transact! a [{:user/email (str "a" i "@x") :user/n i}]))
        (with-open [b (node dir-b log)]
          (testing "it applies only what it had not: nothing twice"
            (same-everywhere (d/sync a) (d/sync b))
            (is (= 6 (count (d/q '[:find ?e :where [?e :user/email]] (d/db b))))))
          (testing "and writes on after catching up"
            (d/transact! b [{:user/email "b@x" :user/n 2}])
            (same-everywhere (d/sync a) (d/sync b)))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

(defn- start-child
  "A child JVM running datalith.kafka-child with `args`; its stderr to a file in `dir`."
  ^Process [^File dir & args]
  (let [cmd (concat [(str (System/getProperty "java.home") "/bin/java")
                     "-cp" (System/getProperty "java.class.path")
                     "--add-opens=java.base/java.nio=ALL-UNNAMED"
                     "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
                     "-XX:+UseSerialGC" "-XX:TieredStopAtLevel=1" "-Xmx256m"
                     "clojure.main" "-m" "datalith.kafka-child"]
                    (map str args))]
    (-> (ProcessBuilder. ^java.util.List (vec cmd))
        (.redirectError (java.io.File. dir "child.err"))
        (.start))))

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

(deftest ^:kafka a-node-killed-during-writes-loses-nothing-acknowledged
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (let [p (start-child dir-b dir-b (get-in log [:kafka :bootstrap-servers])
                             (get-in log [:kafka :topic]) "k" "forever" 0)
              lines (line-seq (clojure.java.io/reader (.getInputStream p)))
              acked (into {} (for [l (take 20 lines)
                                   :let [[_ i e] (re-matches #"ack (\d+) (\d+)" l)]]
                               [(parse-long i) (parse-long e)]))]
          (.destroyForcibly p) ; kill -9, in the middle of its writes
          (.waitFor p)
          (is (= 20 (count acked)) (slurp (File. dir-b "child.err")))
          (with-open [b (node dir-b log)]
            (testing "restarted, it catches up: every acknowledged transaction is there, once"
              (let [db (d/sync b)]
                (doseq [[i e] acked]
                  (is (= #{[e]} (d/q '[:find ?e :in $ ?n :where [?e :user/n ?n]] db i)) (str i)))))
            (testing "and it holds what the node that never stopped holds"
              (same-everywhere (d/sync a) (d/sync b))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

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

(defn inc-n
  "A transaction function for the node tests: sets `email`'s :user/n to one more than it is."
  [db email]
  (let [n (ffirst (d/q '[:find ?n :in $ ?m :where [?e :user/email ?m] [?e :user/n ?n]] db email))]
    [{:user/email email :user/n (inc (or n 0))}]))

(deftest ^:kafka transaction-functions-run-on-every-node
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log) b (node dir-b log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (testing "a function named by its symbol runs at apply time, on the value before its
                  record: increments from both nodes at once are serialized, none lost"
          (run! deref (doall (for [c (take 20 (cycle [a b]))]
                               (future (d/transact! c [['datalith.kafka-test/inc-n "c@x"]])))))
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

(deftest ^:kafka a-node-seeded-from-a-backup-continues-from-its-offset
  (let [dir-a (tu/temp-dir) seed (File. (tu/temp-dir) "seed") seed-mem (File. (tu/temp-dir) "seed")
        log (log-opts)]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (dotimes [i 10] (d/transact! a [{:user/email (str "s" i "@x") :user/n i}]))
        (testing "a backup of the running node holds its datoms and its offset, together"
          (let [r (d/backup a seed)]
            (is (= (d/basis-t (d/db a)) (:t r)))))
        (dotimes [i 5] (d/transact! a [{:user/email (str "after" i "@x") :user/n i}]))
        (with-open [c (node seed log)]
          (testing "a node opened on the copy applies only the records after it: it ends identical"
            (same-everywhere (d/sync a) (d/sync c))
            (is (= 15 (count (d/q '[:find ?e :where [?e :user/email]] (d/db c))))))
          (testing "and writes on"
            (d/transact! c [{:user/email "c@x" :user/n 1}])
            (same-everywhere (d/sync a) (d/sync c))))
        (testing "a backup of an in-memory node (rebuilt from its log) keeps its offset too"
          (with-open [m (d/connect :mem {:log log})]
            (d/sync m)
            (d/backup m seed-mem))
          (d/transact! a [{:user/email "after-mem@x" :user/n 1}])
          (with-open [c (node seed-mem log)]
            (same-everywhere (d/sync a) (d/sync c)))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree (.getParentFile seed))
               (tu/delete-tree (.getParentFile seed-mem))))))

(defn- flaky-log
  "The real KafkaLog of `log` behind reads that fail while `fails` is not negative (each failed
  read counts it down), as Kafka's retriable errors come out of KafkaLog (`retriable` true), or
  as any other read error (false): the faults a broker gives rarely and at no chosen time."
  ^TxLog [log fails retriable]
  (let [^KafkaLog k (KafkaLog/open (get-in log [:kafka :bootstrap-servers])
                                   (get-in log [:kafka :topic]))]
    (reify TxLog
      (append [_ key value] (.append k key value))
      (appendAsync [_ key value] (.appendAsync k key value))
      (read [_ from wait]
        (if (<= 0 (long (swap! fails dec)))
          (throw (ex-info "Kafka could not read the log: injected"
                          {:error :log/unavailable :retriable retriable}))
          (.read k from wait)))
      (wakeup [_] (.wakeup k))
      (endOffset [_] (.endOffset k))
      (close [_] (.close k)))))

(deftest ^:kafka transient-read-errors-are-retried
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (testing "a retriable read error: the node pauses, reads again, and misses nothing"
          (let [fails (atom 3)]
            (with-open [b (d/connect (str dir-b))]
              (Node/start b (flaky-log log fails true))
              (dotimes [i 5] (d/transact! a [{:user/email (str "r" i "@x") :user/n i}]))
              (same-everywhere (d/sync a) (d/sync b))
              (is (neg? (long @fails)) "every injected error was met")
              (testing "and the node writes on"
                (is (map? (d/transact! b [{:user/email "b@x" :user/n 9}])))))))
        (testing "any other read error stops the node: sync and transact! say why"
          (with-open [b (d/connect (str dir-b))]
            (Node/start b (flaky-log log (atom 1) false))
            (d/transact! a [{:user/email "a@x" :user/n 1}])
            (is (= :log/unavailable (ex-error #(d/sync b))))
            (is (= :log/unavailable (ex-error #(d/transact! b [{:user/n 1}]))))
            (is (= 1 (count (d/q '[:find ?e :where [?e :user/email "b@x"]] (d/db b))))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

(defn- writer
  "A thread transacting one entity an id of `ids` on `conn` until `stop?`, recording each
  outcome in `outcomes` ({id :ok} or {id error}, the ex-info's :error)."
  [conn ids stop? outcomes]
  (future
    (doseq [i ids :while (not @stop?)]
      (let [r (try (d/transact! conn [{:user/n i}]) :ok
                   (catch ExceptionInfo e (:error (ex-data e))))]
        (swap! outcomes assoc i r)))))

(defn- await-oks
  "Waits (at most `secs`) until `outcomes` holds at least `n` acknowledged ids."
  [outcomes n secs]
  (let [deadline (+ (System/nanoTime) (* secs 1000000000))]
    (while (and (< (count (filter #{:ok} (vals @outcomes))) n) (< (System/nanoTime) deadline))
      (Thread/sleep 100))))

(deftest ^:kafka a-broker-restart-during-writes-applies-nothing-twice
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)
        ;; b gives up on an append after 2 s: its writes during the outage have unknown outcomes
        log-b (assoc-in log [:kafka :timeout-ms] 2000)]
    (try
      (with-open [a (node dir-a log) b (node dir-b log-b)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (let [stop? (atom false) outcomes (atom {}) outcomes-b (atom {})
              writers (doall (for [[conn k out] [[a 1 outcomes] [a 2 outcomes]
                                                 [b 3 outcomes-b] [b 4 outcomes-b]]]
                               (writer conn (range (* k 100000) (* (inc k) 100000)) stop? out)))]
          (await-oks outcomes 10 60)
          (reset! live (broker/stop @live))
          ;; b's writers may both be waiting, in the outage, for records acknowledged before
          ;; it; this one is appended in it for certain, and fails after b's 2 s timeout
          (swap! outcomes-b assoc 50000
                 (try (d/transact! b [{:user/n 50000}]) :ok
                      (catch ExceptionInfo e (:error (ex-data e)))))
          (Thread/sleep 1000)
          (reset! live (broker/restart @live))
          (let [before (count (filter #{:ok} (vals (merge @outcomes @outcomes-b))))]
            (await-oks outcomes (+ before 10) 120))
          (reset! stop? true)
          (run! deref writers)
          (let [all (merge @outcomes @outcomes-b)]
            (testing "each transact! returned a report or said the log failed"
              (is (every? #{:ok :log/unavailable :log/unknown-outcome} (vals all))
                  (pr-str (frequencies (vals all)))))
            (testing "the outage was met: b's append in it failed, its outcome unknown"
              (is (= :log/unknown-outcome (@outcomes-b 50000))))
            (testing "on every node: every acknowledged transaction once, none twice"
              (doseq [conn [a b]]
                (let [counts (frequencies (map first (d/q '[:find ?n ?e :where [?e :user/n ?n]]
                                                          (d/sync conn))))]
                  (is (every? #(<= (long %) 1) (vals counts)) "at most once")
                  (is (every? #(= 1 (counts %)) (for [[i r] all :when (= :ok r)] i))
                      "every acknowledged one exactly once"))))
            (same-everywhere (d/sync a) (d/sync b)))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

;; ---------------------------------------------------------------- catch-up in runs (h-kbench)

(defn- catch-up-writes
  "Writes through `conn` 240 transactions of 20 datoms from 4 threads (more than one group's
  bound on datoms), with failing ones among them: a wrong value type, and a cas on a value an
  earlier record set (true, or stale). Returns how many failed."
  [conn]
  (let [writer (fn [w]
                 (future
                   (count
                    (for [i (range 60)
                          :let [k (str "w" w "-" i)
                                tx (case (rem (long i) 10)
                                     3 [{:user/email k :user/n "not a long"}]
                                     7 [[:db/cas [:user/email (str "w" w "-" (dec i))] :user/n (dec i) i]]
                                     8 [[:db/cas [:user/email (str "w" w "-" (- i 2))] :user/n 0 i]]
                                     (vec (for [j (range 5)]
                                            {:user/email (if (zero? j) k (str k "." j))
                                             :user/name (str "n" j) :user/n i
                                             :user/score (float j)})))]
                          :when (ex-error #(d/transact! conn tx))]
                      i))))]
    (reduce + (map deref (doall (map writer (range 4)))))))

(deftest ^:kafka a-fresh-node-catches-up-in-runs
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (testing "the writes, with records that fail among them"
          ;; per writer: 6 of value type, 6 stale cas (the i-2 record holds i-2, not 0)
          (is (= 48 (catch-up-writes a))))
        (doseq [[store target] [[:lmdb (str dir-b)] [:mem :mem]]]
          (testing (str store ": a node from offset 0 applies the topic in runs (runs of many
                    records, failing records amid them), with the writer's datoms, history and
                    as-of; its own transaction, written while it is behind, comes back once
                    applied")
            (with-open [b (d/connect target {:log log})]
              (let [r (d/transact! b [{:user/email "late@x" :user/n -1}])]
                (is (= (d/basis-t (:db-after r)) (inc (d/basis-t (:db-before r)))))
                (is (= #{[-1]} (d/q '[:find ?n :where [?e :user/email "late@x"] [?e :user/n ?n]]
                                   (:db-after r)))))
              (same-everywhere (d/sync a) (d/sync b))
              (is (= (+ (* 4 5 (- 60 18)) 1)
                     (count (d/q '[:find ?e :where [?e :user/email]] (d/db b)))))))
            (when (= store :lmdb)
              (testing "reopened, it goes on from the offset its last write stored: nothing twice"
                (with-open [b (d/connect target {:log log})]
                  (same-everywhere (d/sync a) (d/sync b)))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

;; ---------------------------------------------------------------- staged catch-up (h-catchup)

(defn- log-rows
  "The transaction log of `db` (d/tx-range) as [t [datom rows]]."
  [db]
  (mapv (fn [{:keys [t data]}]
          [t (mapv (fn [^Datom x] [(.e x) (.aid x) (.v x) (.tx x) (.added x)]) data)])
        (d/tx-range db nil nil)))

(defn- embedded
  "(f db) of the LMDB directory `dir` opened embedded (no log), as the node left it."
  [^File dir f]
  (with-open [c (d/connect (str dir))]
    (f (d/db c))))

(defn- user-count [db]
  (count (d/q '[:find ?e :where [?e :user/n]] db)))

(deftest ^:kafka a-fresh-node-stages-its-catch-up
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (testing "a topic of upserts, cas and failing records (catch-up-writes), tempids
                  across entities and transaction functions"
          (is (= 48 (catch-up-writes a)))
          (dotimes [i 10]
            (d/transact! a [{:db/id "p" :user/name (str "p" i) :user/friend "q"}
                            {:db/id "q" :user/n (* 100 i)}]))
          (dotimes [_ 5]
            (d/transact! a [['datalith.kafka-test/inc-n "fn@x"]]))
          (is (= :tx/value-type (ex-error #(d/transact! a [{:user/email "fn@x" :user/n "x"}])))
              "the topic's last record fails"))
        (with-open [b (node dir-b log)]
          (testing "a fresh node ends with the writer's datoms, history, as-of and log"
            (same-everywhere (d/sync a) (d/sync b))
            (is (= (log-rows (d/db a)) (log-rows (d/db b))))
            (is (= #{[5]} (d/q '[:find ?n :where [?e :user/email "fn@x"] [?e :user/n ?n]]
                               (d/db b))))))
        (testing "what it wrote is in its directory, up to its last committed record"
          (is (= (d/basis-t (d/db a)) (embedded dir-b d/basis-t))))
        (dotimes [i 5]
          (d/transact! a [{:user/email (str "later" i "@x") :user/n i}]))
        (with-open [b (node dir-b log)]
          (testing "restarted, it applies only what came later, from its stored offset"
            (same-everywhere (d/sync a) (d/sync b))
            (is (= (log-rows (d/db a)) (log-rows (d/db b))))
            (is (= 5 (count (d/q '[:find ?e :where [?e :user/email ?m]
                                   [(clojure.string/starts-with? ?m "later")]]
                                 (d/db b))))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

(deftest ^:kafka a-node-killed-in-its-staged-catch-up-starts-it-again
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)
        marker (File. (str dir-a "-paused"))]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        ;; records of 120 datoms: more than a group commit's bound before the pause, so that
        ;; applying them into the store would have committed some
        (dotimes [i 60]
          (d/transact! a (vec (for [j (range 40)]
                                {:user/email (str i "." j "@x") :user/n j :user/name "k"}))))
        (d/transact! a [['datalith.kafka-child/pause-in-child]])
        (dotimes [i 60]
          (d/transact! a [{:db/id "u" :user/n i}]))
        (let [p (start-child dir-b dir-b (get-in log [:kafka :bootstrap-servers])
                             (get-in log [:kafka :topic]) "k" "catch-up" (str marker))]
          (try
            (loop [waited 0]
              (when (and (not (.exists marker)) (.isAlive p) (< waited 120000))
                (Thread/sleep 50)
                (recur (+ waited 50))))
            (is (.exists marker) (slurp (File. dir-b "child.err")))
            (finally
              (.destroyForcibly p) ; kill -9, its applier in the middle of the staged run
              (.waitFor p))))
        (testing "nothing of the staged run reached its directory (nor its offset)"
          (is (zero? (embedded dir-b user-count))))
        (with-open [b (node dir-b log)]
          (testing "restarted, it catches up from its stored offset and ends equal"
            (same-everywhere (d/sync a) (d/sync b))
            (is (= (+ (* 60 40) 60) (user-count (d/db b)))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b) (.delete marker)))))

(deftest ^:kafka a-corrupt-record-ends-a-staged-catch-up
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (dotimes [i 150]
          (d/transact! a [{:db/id "u" :user/n i}]))
        (with-open [raw (KafkaLog/open (get-in log [:kafka :bootstrap-servers])
                                       (get-in log [:kafka :topic]))]
          (.append raw (.getBytes "someone/1") (byte-array [1 2 3 4])))
        (is (= :log/corrupt-record (ex-error #(d/sync a))))
        (with-open [b (node dir-b log)]
          (testing "a fresh node stops at the record with the writer's error"
            (is (= :log/corrupt-record (ex-error #(d/sync b))))
            (is (= :log/corrupt-record (ex-error #(d/transact! b [{:user/n 1}])))))
          (testing "the records before it are applied"
            (same-everywhere (d/db a) (d/db b))
            (is (= 150 (user-count (d/db b))))))
        (testing "and written: its directory holds them"
          (embedded dir-b #(same-everywhere (d/db a) %)))
        (with-open [b (node dir-b log)]
          (testing "restarted, it stops at the same record, having applied nothing twice"
            (is (= :log/corrupt-record (ex-error #(d/sync b))))
            (same-everywhere (d/db a) (d/db b)))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))

;; ---------------------------------------------------------------- the reader thread (h-catchup2)

(defn- raw-writes
  "Appends to `log`'s topic, past the records there, one record a tx-data of `txs`, as a
  node writes them (nippy, under keys no node wrote), and one record `corrupt` when not
  nil, after the first `corrupt-after` of them. Returns the offset of the first one."
  [log txs corrupt corrupt-after]
  (with-open [raw (KafkaLog/open (get-in log [:kafka :bootstrap-servers])
                                 (get-in log [:kafka :topic]))]
    (let [opts {:compressor nil :incl-metadata? false}
          values (map #(nippy/freeze % opts) txs)
          values (if corrupt
                   (concat (take corrupt-after values) [corrupt] (drop corrupt-after values))
                   values)
          offsets (mapv deref (doall (map-indexed #(.appendAsync raw (.getBytes (str "raw/" %1))
                                                                 ^bytes %2)
                                                  values)))]
      (first offsets))))

(defn- gap-log
  "The real KafkaLog of `log` behind reads that leave out the record at offset `missing`."
  ^TxLog [log missing]
  (let [^KafkaLog k (KafkaLog/open (get-in log [:kafka :bootstrap-servers])
                                   (get-in log [:kafka :topic]))]
    (reify TxLog
      (append [_ key value] (.append k key value))
      (appendAsync [_ key value] (.appendAsync k key value))
      (read [_ from wait]
        (vec (remove #(= missing (.offset ^datalith.log.TxLog$Entry %)) (.read k from wait))))
      (wakeup [_] (.wakeup k))
      (endOffset [_] (.endOffset k))
      (close [_] (.close k)))))

(defn- stop-error
  "The ex-info `f` throws."
  [f]
  (try (f) nil (catch ExceptionInfo e e)))

(deftest ^:kafka a-record-that-stops-the-node-mid-catch-up
  (let [dir-a (tu/temp-dir) dirs (atom []) log (log-opts)
        target (fn [store] (if (= store :lmdb) (str (peek (swap! dirs conj (tu/temp-dir)))) :mem))]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        ;; 300 records, an unreadable one, 1,200 more: more than a read brings (Kafka's
        ;; max.poll.records), so that the reader has records past it to read ahead
        (let [first-raw (raw-writes log (concat (for [i (range 300)] [{:user/name (str "before" i) :user/n i}])
                                                (for [i (range 1200)] [{:user/name (str "after" i) :user/n i}]))
                                    (byte-array [1 2 3 4]) 300)
              corrupt (+ first-raw 300)
              after? #(seq (d/q '[:find ?e :where [?e :user/name ?m]
                                  [(clojure.string/starts-with? ?m "after")]] %))]
          (is (= corrupt (:offset (ex-data (stop-error #(d/sync a))))) "the writer stops there too")
          (doseq [store [:lmdb :mem]]
            (testing (str store ": a fresh node stops at the unreadable record, with its error and
                      offset; the records before it are applied, none after it")
              (with-open [b (d/connect (target store))]
                (let [n (Node/start b (KafkaLog/open (get-in log [:kafka :bootstrap-servers])
                                                     (get-in log [:kafka :topic])))
                      e (stop-error #(d/sync b))]
                  (is (= :log/corrupt-record (:error (ex-data e))))
                  (is (= corrupt (:offset (ex-data e))))
                  (is (= corrupt (.nextOffset n)))
                  (is (= :log/corrupt-record (ex-error #(d/transact! b [{:user/n 1}]))))
                  (is (= 300 (user-count (d/db b))))
                  (is (not (after? (d/db b))))
                  (same-everywhere (d/db a) (d/db b))))))
          (testing "lmdb: and its directory holds the records before it, and its offset"
            (embedded (first @dirs) #(same-everywhere (d/db a) %)))
          (doseq [store [:lmdb :mem]]
            (testing (str store ": a record missing from a read (a gap) stops the node at it")
              (with-open [b (d/connect (target store))]
                (let [missing (+ first-raw 100)
                      n (Node/start b (gap-log log missing))
                      e (stop-error #(d/sync b))]
                  (is (= :log/gap (:error (ex-data e))))
                  (is (= [missing (inc missing)] [(:expected (ex-data e)) (:offset (ex-data e))]))
                  (is (= missing (.nextOffset n)))
                  (is (= 100 (user-count (d/db b))))
                  (is (not (after? (d/db b))))))))))
      (finally (tu/delete-tree dir-a) (run! tu/delete-tree @dirs)))))

(def ^:private pause-at
  "nil, or the promises [reached release]: a node applying `pause-here` delivers reached
  and waits for release."
  (atom nil))

(defn pause-here
  "A transaction function that adds nothing; while `pause-at` is set, it pauses the
  applier of the node applying it until released."
  [_db]
  (when-let [[reached release] @pause-at]
    (deliver reached true)
    (deref release))
  [])

(defn- node-threads
  "The live threads of log nodes (appliers and readers)."
  []
  (set (filter (fn [^Thread t] (and (.isAlive t) (#{"datalith-log-applier" "datalith-log-reader"}
                                                  (.getName t))))
               (keys (Thread/getAllStackTraces)))))

(deftest ^:kafka closing-a-node-in-its-catch-up
  (let [dir-a (tu/temp-dir) dir-b (tu/temp-dir) log (log-opts)]
    (try
      (with-open [a (node dir-a log)]
        (d/transact! a (vec (for [[k v] schema] (assoc v :db/ident k))))
        (raw-writes log (for [i (range 300)] [{:user/name (str "before" i) :user/n i}]) nil 0)
        (d/transact! a [['datalith.kafka-test/pause-here]])
        ;; more than a read brings: the reader is ahead of the paused applier, its queue full
        (raw-writes log (for [i (range 3000)] [{:user/name (str "after" i) :user/n i}]) nil 0)
        (let [db-a (d/sync a)]
          (doseq [[store target] [[:lmdb (str dir-b)] [:mem :mem]]]
            (testing (str store ": closed while its applier is in the middle of a catch-up run,
                      a fresh node stops its reader and applier, and keeps a prefix of the log")
              (let [reached (promise) release (promise) before (node-threads)
                    mine #(remove before (node-threads))]
                (reset! pause-at [reached release])
                (try
                  (let [b (d/connect target {:log log})]
                    (is (deref reached 60000 false) "the applier reached the paused record")
                    (let [closing (future (d/close b) :closed)]
                      (is (tu/await-true #(not-any? (fn [^Thread t] (= "datalith-log-reader" (.getName t)))
                                                 (mine)))
                          "the reader stopped first, its applier still paused")
                      (is (= ["datalith-log-applier"] (map (fn [^Thread t] (.getName t)) (mine)))
                          "its applier waits in the record")
                      (deliver release true)
                      (is (= :closed (deref closing 60000 :hung)))
                      (is (empty? (mine)) "the node's threads ended")))
                  (finally (reset! pause-at nil) (deliver release true)))
                (when (= store :lmdb)
                  (testing "its directory holds the records up to its stored offset, no more"
                    (let [t (embedded dir-b d/basis-t)]
                      (is (< t (d/basis-t db-a)) "not all of them")
                      (embedded dir-b #(is (= (rows (d/as-of db-a t) :eavt) (rows (d/as-of % t) :eavt))))))
                  (testing "reopened, it catches up the rest, nothing twice"
                    (with-open [b (node dir-b log)]
                      (same-everywhere (d/sync a) (d/sync b))
                      (is (= 3300 (user-count (d/db b))))))))))))
      (finally (tu/delete-tree dir-a) (tu/delete-tree dir-b)))))
