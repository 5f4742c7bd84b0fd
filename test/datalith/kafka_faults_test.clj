(ns datalith.kafka-faults-test
  "Nodes of the transaction log on Apache Kafka (see datalith.kafka-test) through faults and
  restarts, against a real KRaft broker in a child JVM: an unreadable record stops a node; a
  restarted node catches up from its offset, applying nothing twice; a node killed during
  writes loses nothing acknowledged; a node seeded from a backup continues from its offset;
  transient read errors are retried; a broker restart during writes applies nothing twice.
  Selector: lein test :kafka."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [datalith.core :as d]
            [datalith.kafka-broker :as broker]
            [datalith.kafka-support :refer [ex-error live log-opts node same-everywhere schema
                                            start-child with-broker]]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.log KafkaLog Node TxLog)
           (java.io File)))

(set! *warn-on-reflection* true)

(use-fixtures :once with-broker)

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

;; ---------------------------------------------------------------- h-kafka3: features and faults

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
