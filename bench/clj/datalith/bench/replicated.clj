(ns datalith.bench.replicated
  "The replicated mode (issue #20): nodes of one database writing through a real Kafka
  broker (one KRaft node in a child JVM, datalith.kafka-broker), the nodes in this JVM,
  each on its own LMDB directory. See bench/README.md.

    lein with-profile +bench run -m datalith.bench.replicated [options]
      --scale S     100k, 300k or 1m (default 100k)
      --tx N        single-datom transactions of each write phase (default 1000)
      --reps N      timed repetitions of each read (default 200)
      --out DIR     output directory (default bench/out)

  Phases, in order: node A loads the tracker through transact! (the bench's batches);
  node B, fresh, catches up from offset 0 (catch-up-load); one writer on A (tx-1w: tx/s,
  latency of transact!; B's replication lag, from the record's append time, the broker's,
  to its report on B); 4 writers, 2 on A and 2 on B (tx-4w-2n); node C, fresh, catches
  up the whole topic (catch-up-all: the load's records and the small ones); Q1 and Q2 on
  node B, and on C's directory opened embedded (no log) once C closed."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [datalith.bench.harness :as harness]
            [datalith.bench.ops :as ops]
            [datalith.bench.queries :as queries]
            [datalith.bench.system :refer [delete-tree]]
            [datalith.core :as d]
            [datalith.kafka-broker :as broker]
            [datalith.workload :as w])
  (:import (datalith.index Datom)
           (java.io File)
           (java.lang.management ManagementFactory)
           (java.util Date)
           (java.util.concurrent ConcurrentLinkedQueue)))

(set! *warn-on-reflection* true)

(def ^:private usage
  "lein with-profile +bench run -m datalith.bench.replicated [--scale 100k|300k|1m] [--tx N] [--reps N] [--out DIR]")

(def ^:private defaults {:scale "100k" :tx 1000 :reps 200 :out "bench/out"})

(def ^:private setters
  {"--scale" #(assoc %1 :scale %2)
   "--tx" #(assoc %1 :tx (parse-long %2))
   "--reps" #(assoc %1 :reps (parse-long %2))
   "--out" #(assoc %1 :out %2)})

(defn- log [& xs] (binding [*out* *err*] (apply println xs) (flush)))

(def ^:private node-threads
  "The names of a node's threads: its applier, and its reader (reads and decodes the log
  ahead of the applier)."
  #{"datalith-log-applier" "datalith-log-reader"})

(defn- node-cpu-ns
  "CPU time so far of the node threads named `thread-name` started since `before` (a set
  of thread ids)."
  ^long [before thread-name]
  (let [mx (ManagementFactory/getThreadMXBean)]
    (reduce + 0 (for [^Thread t (keys (Thread/getAllStackTraces))
                      :when (and (= thread-name (.getName t))
                                 (not (contains? before (.getId t))))]
                  (max 0 (.getThreadCpuTime mx (.getId t)))))))

(defn- node-thread-ids []
  (set (for [^Thread t (keys (Thread/getAllStackTraces))
             :when (contains? node-threads (.getName t))]
         (.getId t))))

(defn catch-up
  "Connects a fresh node in `dir` and waits until it applied the whole topic: [conn row]
  (wall time after the connect, and the CPU time of the node's applier and reader threads)."
  [^File dir log-opts datoms op]
  (delete-tree dir)
  (let [before (node-thread-ids)
        t0 (System/nanoTime)
        conn (d/connect (.getPath dir) {:log log-opts})
        t1 (System/nanoTime)
        _ (d/sync conn)
        s (/ (- (System/nanoTime) t1) 1e9)
        cpu (/ (node-cpu-ns before "datalith-log-applier") 1e9)
        reader-cpu (/ (node-cpu-ns before "datalith-log-reader") 1e9)]
    (log (format "  %s: connect %.2f s, then %,d datoms in %.2f s (applier CPU %.2f s, reader CPU %.2f s)"
                 op (/ (- t1 t0) 1e9) datoms s cpu reader-cpu))
    [conn {:op op :datoms datoms :connect-s (/ (- t1 t0) 1e9) :seconds s
           :datoms-per-s (/ datoms s) :applier-cpu-s cpu :reader-cpu-s reader-cpu
           :datoms-per-cpu-s (/ datoms (+ cpu reader-cpu))}]))

(defn- tx-instant
  "The :db/txInstant of the transaction of `tx-data` (the datom of the transaction entity)."
  ^Date [tx-data]
  (some (fn [^Datom x] (when (and (= (.e x) (.tx x)) (instance? Date (.v x))) (.v x))) tx-data))

(defn- write-phase
  "Runs `n` single-datom transactions split among `writers` ([conn ...], a thread each,
  numbered from `from`): {:tx-per-s .. :p50-ms .. :p99-ms ..} of transact!."
  [writers n from]
  (let [per (quot n (count writers))
        t0 (System/nanoTime)
        runs (doall (map-indexed
                     (fn [k conn]
                       (future
                         (let [times (long-array per)]
                           (dotimes [i per]
                             (let [s (System/nanoTime)]
                               (d/transact! conn [[:db/add "t" :issue/title
                                                   (str "bench " (+ from (* k per) i))]])
                               (aset times i (- (System/nanoTime) s))))
                           times)))
                     writers))
        all (long-array (mapcat seq (map deref runs)))
        elapsed (- (System/nanoTime) t0)
        st (harness/stats all (alength all) elapsed)]
    {:tx (alength all) :tx-per-s (:ops-per-s st) :p50-ms (:p50-ms st) :p99-ms (:p99-ms st)}))

(defn- lag-stats
  "p50/p99 (ms) of the lags collected in `q`."
  [^ConcurrentLinkedQueue q]
  (let [xs (long-array (vec q))
        st (harness/stats xs (alength xs) 1)]
    {:lag-n (alength xs) :lag-p50-ms (:p50-ms st) :lag-p99-ms (:p99-ms st)}))

(defn- listen-lag!
  "Registers on `conn` a listener putting each report's lag (now less its transaction's
  instant, the record's append time at the broker) in ns into a new queue; returns it."
  [conn]
  (let [q (ConcurrentLinkedQueue.)]
    (d/listen! conn ::lag (fn [{:keys [tx-data]}]
                            (when-let [at (tx-instant tx-data)]
                              (.add q (* 1000000 (- (System/currentTimeMillis) (.getTime at)))))))
    q))

(defn- reads
  "Q1 and Q2 on `db`: {op stats}."
  [db args reps]
  (let [opts {:warmup-ms 1000 :warmup-calls 300 :max-warmup-ms 10000 :reps reps :max-ms 20000}]
    {"q1" (harness/measure #(d/q queries/q1-param db %) (:q1-param args) opts)
     "q2" (harness/measure #(d/q queries/q2 db %) (:q2-ref args) opts)}))

(defn- transact-fn [conn]
  (fn [tx-data]
    (let [r (d/transact! conn tx-data)]
      {:t (d/basis-t (:db-after r)) :tempids (:tempids r)})))

(defn- run-all
  "Every phase at one scale; the rows."
  [{:keys [scale tx reps out]}]
  (let [data (w/generate (keyword scale))
        datoms (:datoms data)
        dir (io/file out "replicated" scale)
        [^File da ^File db ^File dc] (map #(io/file dir %) ["a" "b" "c"])
        _ (log "=== replicated, scale" scale ": starting the broker")
        b (broker/start)
        log-opts {:kafka {:bootstrap-servers (:bootstrap b) :topic "tracker"}}
        rows (atom [])
        row! (fn [r] (swap! rows conj (assoc r :scale scale)) r)]
    (try
      (delete-tree da)
      (with-open [a (d/connect (.getPath da) {:log log-opts :schema w/schema})]
        (let [t0 (System/nanoTime)
              _ (w/load! data {:transact (transact-fn a)})
              s (/ (- (System/nanoTime) t0) 1e9)
              topic-datoms (count (d/datoms (d/history (d/db a)) :eavt))]
          (log (format "  load on A: %,d datoms in %.2f s" datoms s))
          (row! {:op "load-through-log" :datoms datoms :seconds s :datoms-per-s (/ datoms s)})
          (let [[node-b r] (catch-up db log-opts topic-datoms "catch-up-load")]
            (row! r)
            (with-open [node-b ^datalith.conn.Conn node-b]
              (let [lag (listen-lag! node-b)
                    w1 (write-phase [a] tx 0)]
                (d/sync node-b)
                (row! (merge {:op "tx-1w"} w1 (lag-stats lag)))
                (log "  tx-1w:" w1 (lag-stats lag)))
              (let [w4 (write-phase [a a node-b node-b] tx tx)]
                (row! (merge {:op "tx-4w-2n"} w4))
                (log "  tx-4w-2n:" w4))
              (d/sync node-b)
              (let [all (count (d/datoms (d/history (d/db a)) :eavt))
                    [node-c r] (catch-up dc log-opts all "catch-up-all")]
                (row! r)
                (d/close node-c))
              (let [args (ops/args data)
                    ;; node, embedded, then both again: the second pair is reported (the
                    ;; first warms the query paths for both alike)
                    [on-node embedded] (with-open [e (d/connect (.getPath dc))]
                                         (last (repeatedly 2 #(vector (reads (d/db node-b) args reps)
                                                                      (reads (d/db e) args reps)))))]
                (doseq [[where rs] [["node" on-node] ["embedded" embedded]]
                        [op st] rs]
                  (row! {:op (str op "-" where) :p50-ms (:p50-ms st) :p99-ms (:p99-ms st)
                         :ops-per-s (:ops-per-s st)})))))))
      (finally
        (broker/delete b)
        (delete-tree dir)))
    @rows))

(defn- table [rows]
  (str/join "\n"
            (cons "| op | datoms/s or tx/s | p50 ms | p99 ms | lag p50 ms | lag p99 ms |"
                  (cons "|---|---|---|---|---|---|"
                        (for [{:keys [op datoms-per-s tx-per-s ops-per-s p50-ms p99-ms lag-p50-ms lag-p99-ms]} rows]
                          (str "| " op " | " (format "%,.0f" (double (or datoms-per-s tx-per-s ops-per-s 0)))
                               " | " (some->> p50-ms (format "%.3f")) " | " (some->> p99-ms (format "%.3f"))
                               " | " (some->> lag-p50-ms (format "%.1f")) " | " (some->> lag-p99-ms (format "%.1f"))
                               " |"))))))

(defn -main [& argv]
  (let [opts (harness/parse-args defaults setters usage argv)
        rows (run-all opts)
        out (io/file (:out opts) (str "replicated-" (:scale opts) ".edn"))]
    (io/make-parents out)
    (spit out (pr-str {:machine (harness/machine) :rows rows}))
    (println (harness/machine))
    (println (table rows))
    (log "wrote" (str out))
    (shutdown-agents)))
