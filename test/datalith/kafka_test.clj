(ns datalith.kafka-test
  "The transaction log on Apache Kafka (issue #20), against a real KRaft broker in a child
  JVM (datalith.kafka-broker): nodes connected with `:log {:kafka ...}` write through one
  topic, and every node holds the same datoms, ids and ts. Selector: lein test :kafka."
  (:require [clojure.string]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [datalith.core :as d]
            [datalith.kafka-broker :as broker]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.index Datom)
           (datalith.api Datalith DatalithException)
           (datalith.log KafkaLog)
           (java.io File)
           (java.util Random)))

(set! *warn-on-reflection* true)

(def ^:dynamic *broker* nil)

(use-fixtures :once
  (fn [run]
    (let [b (broker/start)]
      (try (binding [*broker* b] (run))
           (finally (broker/delete b))))))

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
        (.transact b "[{:user/n 1}]")
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
