(ns datalith.kafka-catch-up-test
  "A node of the transaction log on Apache Kafka (see datalith.kafka-test) catching up with its
  topic, against a real KRaft broker in a child JVM: in runs of many records (h-kbench);
  staged, and written at its end (h-catchup), also when killed in it or ended by a corrupt
  record; its reader thread ahead of its applier (h-catchup2), and a record that stops the node
  or a close in the middle of a catch-up. Selector: lein test :kafka."
  (:require [clojure.string]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [datalith.core :as d]
            [datalith.kafka-support :refer [ex-error log-opts node rows same-everywhere schema
                                            start-child with-broker]]
            [datalith.test-util :as tu]
            [taoensso.nippy :as nippy])
  (:import (clojure.lang ExceptionInfo)
           (datalith.index Datom)
           (datalith.log KafkaLog Node TxLog)
           (java.io File)))

(set! *warn-on-reflection* true)

(use-fixtures :once with-broker)

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
            (d/transact! a [['datalith.kafka-support/inc-n "fn@x"]]))
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
        (d/transact! a [['datalith.kafka-catch-up-test/pause-here]])
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
