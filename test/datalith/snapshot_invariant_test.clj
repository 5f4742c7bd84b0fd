(ns datalith.snapshot-invariant-test
  "A database value never changes. One writer and 16 readers share a
  connection for a fixed time; the writer moves money between accounts (so
  the sum of the balances never changes) and adds a memo of 4-16 KB to each
  transaction (so that an LMDB map opened at 256 KiB grows several times
  under the readers). The writer records, for each basis t, how many datoms
  of each counted attribute the database holds, worked out from its own
  transactions' tx-data. Every reader, over and over: takes `d/db`, and reads
  several times over that same value, and over `as-of` views of earlier ts,
  the sum of the balances (through datoms and through a query), the counts
  of datoms (which must be the writer's record for that t), the balances
  themselves (the same each time) and a memo's text; a partial transaction
  would break the sum, a changing value the repeated reads.

  Run on platform threads in this JVM, on both stores; and on virtual threads
  in a child JVM on the Java 25 JDK at /usr/lib/jvm/temurin-25-jdk-amd64
  (skipped, with a note, when it is absent), LMDB and memory.

  Each variant writes for 2 seconds (and at least 1.5 MiB of memos, so that the
  map grows however slow the machine); -Ddatalith.snapshot.seconds=N, or the
  DATALITH_SNAPSHOT_SECONDS environment variable, runs longer. Each variant
  prints what it checked."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu])
  (:import (java.io File)
           (java.util.concurrent ConcurrentHashMap ExecutorService Executors Future TimeUnit)
           (java.util.concurrent.atomic AtomicBoolean AtomicLong)))

(def accounts 32)
(def total (* accounts 1000))
(def readers 16)
(def initial-map-size (* 256 1024))
(def min-memo-bytes (* 3 512 1024))
(def counted [:acct/balance :memo/n :db/txInstant])

(def schema
  {:acct/id {:db/valueType :db.type/long :db/unique :db.unique/identity}
   :acct/balance {:db/valueType :db.type/long}
   :memo/n {:db/valueType :db.type/long :db/unique :db.unique/identity}
   :memo/text {:db/valueType :db.type/string}})

(defn seconds
  "How long each variant writes."
  []
  (or (some-> (or (System/getProperty "datalith.snapshot.seconds")
                  (System/getenv "DATALITH_SNAPSHOT_SECONDS"))
              parse-double)
      2.0))

(defn- memo-text
  "The text of memo n: 4-16 KB (LMDB overflow pages), its content a function of n."
  [n]
  (let [unit (str n ":")]
    (apply str (repeat (quot (+ 4096 (* 4001 (mod n 4))) (count unit)) unit))))

(defn- counts-of
  "{attr number-of-datoms} of `db`, read from its index."
  [db]
  (into {} (for [a counted] [a (count (d/datoms db :aevt a))])))

(defn- fail! [^ConcurrentHashMap failures what data]
  (.putIfAbsent failures what (assoc data :what what)))

;; ---------------------------------------------------------------- the writer

(defn- write!
  "Transfers and memos until `stop-at` (ms) has passed and `min-memo-bytes`
  are written; records the counts of each t in `counts`."
  [conn ^ConcurrentHashMap counts ^AtomicLong txs ^AtomicLong memo-bytes stop-at]
  (let [rnd (java.util.Random. 42)]
    (d/transact! conn (for [i (range accounts)] {:acct/id i :acct/balance 1000}))
    (let [db (d/db conn)]
      (.put counts (d/basis-t db) (counts-of db))
      (loop [n 0 have (counts-of db)]
        (when (or (< (System/currentTimeMillis) stop-at) (< (.get memo-bytes) min-memo-bytes))
          (let [db (d/db conn)
                i (.nextInt rnd accounts)
                j (mod (+ i 1 (.nextInt rnd (dec accounts))) accounts)
                balance #(:acct/balance (d/pull db [:acct/balance] [:acct/id %]))
                amount (.nextInt rnd 100)
                text (memo-text n)
                report (d/transact! conn [[:db/add [:acct/id i] :acct/balance (- (balance i) amount)]
                                          [:db/add [:acct/id j] :acct/balance (+ (balance j) amount)]
                                          {:memo/n n :memo/text text}])
                have (reduce (fn [m datom]
                               (if (contains? m (:a datom))
                                 (update m (:a datom) (if (:added datom) inc dec))
                                 m))
                             have (:tx-data report))]
            (.put counts (d/basis-t (:db-after report)) have)
            (.incrementAndGet txs)
            (.addAndGet memo-bytes (count text))
            (recur (inc n) have)))))))

;; ---------------------------------------------------------------- the readers

(defn- expected-counts
  "The writer's record for t; it may lag the commit a moment."
  [^ConcurrentHashMap counts t]
  (let [deadline (+ (System/currentTimeMillis) 10000)]
    (loop []
      (or (.get counts t)
          (when (< (System/currentTimeMillis) deadline)
            (Thread/sleep 1)
            (recur))))))

(defn- observe
  "What a reader reads of one database value."
  [db]
  (let [balances (mapv :v (d/datoms db :aevt :acct/balance))]
    {:balances balances
     :sum (reduce + balances)
     :query-sum (d/q '[:find (sum ?b) . :with ?a :where [?a :acct/balance ?b]] db)
     :counts (counts-of db)}))

(defn- check-value
  "Reads `db` (basis `t`, or as-of `t`) `times` times; returns a failure or nil."
  [db t expected times]
  (let [first-read (observe db)]
    (or (when (not= total (:sum first-read) (:query-sum first-read))
          {:t t :sums [(:sum first-read) (:query-sum first-read)]})
        (when (not= expected (:counts first-read))
          {:t t :expected expected :counts (:counts first-read)})
        (let [memos (get-in first-read [:counts :memo/n])]
          (when (pos? memos)
            (let [n (rand-int memos)
                  text (:memo/text (d/pull db [:memo/text] [:memo/n n]))]
              (when (not= text (memo-text n))
                {:t t :memo n :length (count text)}))))
        (some (fn [_]
                (Thread/yield)
                (let [again (observe db)]
                  (when (not= first-read again)
                    {:t t :first (dissoc first-read :balances) :again (dissoc again :balances)
                     :balances-equal (= (:balances first-read) (:balances again))})))
              (range (dec times))))))

(defn- read!
  "Checks snapshots until `stop` is set; counts them in `checked`."
  [conn ^ConcurrentHashMap counts ^AtomicBoolean stop ^AtomicLong checked
   ^AtomicLong as-of-checked failures]
  (while (not (.get stop))
    (let [db (d/db conn)
          t (d/basis-t db)
          expected (expected-counts counts t)]
      (if-let [f (if expected
                   (check-value db t expected 3)
                   {:t t :no-record true})]
        (do (fail! failures :snapshot f) (.set stop true))
        (do (.incrementAndGet checked)
            (let [ts (filterv #(<= % t) (keys counts))
                  t0 (rand-nth ts)]
              (if-let [f (check-value (d/as-of db t0) t0 (.get counts t0) 2)]
                (do (fail! failures :as-of f) (.set stop true))
                (.incrementAndGet as-of-checked))))))))

;; ---------------------------------------------------------------- one variant

(defn- virtual-executor
  "An executor of virtual threads (Java 21+), found by reflection so that this
  file loads on Java 17."
  ^ExecutorService []
  (clojure.lang.Reflector/invokeStaticMethod "java.util.concurrent.Executors"
                                             "newVirtualThreadPerTaskExecutor" (object-array 0)))

(defn run-variant
  "Runs the writer and the readers on `store` (:lmdb or :mem) with `threads`
  (:platform or :virtual) for `secs` seconds; returns what was checked."
  [store threads secs]
  (let [dir (when (= :lmdb store) (tu/temp-dir))
        conn (if dir
               (d/connect (.getPath ^File dir) {:schema schema :map-size initial-map-size})
               (d/connect :mem {:schema schema}))
        counts (ConcurrentHashMap.)
        failures (ConcurrentHashMap.)
        stop (AtomicBoolean. false)
        txs (AtomicLong.) memo-bytes (AtomicLong.) checked (AtomicLong.) as-of-checked (AtomicLong.)
        ^ExecutorService pool (if (= :virtual threads)
                                (virtual-executor)
                                (Executors/newFixedThreadPool (inc readers)))
        start (System/currentTimeMillis)]
    (try
      (let [writer (.submit pool ^Callable
                            (fn []
                              (try (write! conn counts txs memo-bytes (+ start (long (* 1000 secs))))
                                   (catch Throwable t (fail! failures :writer {:error (str t)}))
                                   (finally (.set stop true)))))
            ;; the readers start once the writer has recorded its first t
            _ (while (and (.isEmpty counts) (not (.get stop))) (Thread/sleep 1))
            reads (doall (for [_ (range readers)]
                           (.submit pool ^Callable
                                    (fn []
                                      (try (read! conn counts stop checked as-of-checked failures)
                                           (catch Throwable t
                                             (fail! failures :reader {:error (str t)})
                                             (.set stop true)))))))]
        (doseq [^Future f (cons writer reads)] (.get f))
        {:store store :threads threads
         :seconds (/ (- (System/currentTimeMillis) start) 1000.0)
         :transactions (.get txs) :memo-bytes (.get memo-bytes)
         :snapshots-checked (.get checked) :as-of-views-checked (.get as-of-checked)
         :initial-map-size (when dir initial-map-size)
         :data-file-size (when dir (.length (io/file dir "data.mdb")))
         :failures (vec (vals failures))})
      (finally
        (.shutdown pool)
        (.awaitTermination pool 60 TimeUnit/SECONDS)
        (d/close conn)
        (when dir (tu/delete-tree dir))))))

(defn- check-result [r]
  (println "snapshot invariant:" (pr-str (dissoc r :failures)))
  (is (= [] (:failures r)) (pr-str r))
  (is (pos? (:snapshots-checked r)))
  (is (pos? (:as-of-views-checked r)))
  (when (= :lmdb (:store r))
    (testing "the map grew at least three times (its file outgrew 8x the initial map)"
      (is (> (:data-file-size r) (* 8 (:initial-map-size r)))))))

(deftest snapshots-never-change-on-platform-threads
  (doseq [store tu/stores]
    (testing (str "store " store)
      (check-result (run-variant store :platform (seconds))))))

;; ---------------------------------------------------------------- virtual threads, in a Java 25 child

(def java-25 "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java")

(defn -main
  "The child JVM's entry: `store threads seconds`; prints the result as EDN on
  its last line and exits 0."
  [store threads secs]
  (let [r (run-variant (keyword store) (keyword threads) (parse-double secs))]
    (println (pr-str r))
    (flush)
    (shutdown-agents)
    (System/exit 0)))

(defn- run-child
  "Runs one variant in a child JVM on `java`; its result."
  [java store secs]
  (let [^java.util.List command [java
                                  "--add-opens=java.base/java.nio=ALL-UNNAMED"
                                  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
                                  "-cp" (System/getProperty "java.class.path")
                                  "clojure.main" "-m" "datalith.snapshot-invariant-test"
                                  (name store) "virtual" (str secs)]
        pb (ProcessBuilder. command)
        _ (.redirectErrorStream pb true)
        p (.start pb)
        out (slurp (.getInputStream p))
        code (.waitFor p)]
    (is (zero? code) out)
    (or (some-> (last (remove str/blank? (str/split-lines out))) edn/read-string)
        {:failures [{:no-output out}]})))

(deftest snapshots-never-change-on-virtual-threads
  (if-not (.exists (io/file java-25))
    (println "snapshot invariant: no JDK at" java-25 "- the virtual-thread variant is skipped")
    (doseq [store tu/stores]
      (testing (str "store " store " on virtual threads, Java 25")
        (check-result (run-child java-25 store (seconds)))))))
