(ns datalith.bench.load-profile
  "Write-path timing (issue #17): loads a tracker data set through `transact!`
  in the bench's batches, on LMDB (durable) and in memory, and times
  single-datom durable transactions on the loaded LMDB database. One JVM, no
  other systems: the figures to compare before and after a change to the
  write path, and a load to profile with JFR.

    lein with-profile +bench run -m datalith.bench.load-profile [options]
      --scale S       100k, 300k or 1m (default 1m)
      --systems LIST  lmdb,mem (default both)
      --loads N       loads per system, the best reported (default 1)
      --tx N          single-datom transactions timed after the LMDB load (default 2000)
      --dir DIR       the LMDB directory (default target/load-profile; deleted first)
      --keep true     keep the LMDB directory after the run
      --tx-only true  no load: time the single-datom transactions on the LMDB
                      database a run with --keep left in --dir
      --threads N     writer threads of the single-datom transactions (default 1;
                      each commits --tx / N of them, and the figure is all of theirs)
      --commit C      the LMDB store's option \"commit\": wal or lmdb-sync (default:
                      the store's default)
      --write-behind B
                      true or false: the LMDB store's option (default: the store's,
                      true); with write-behind a load also prints how long the
                      commits still in memory took to be written back into LMDB
                      once it ended"
  (:require [clojure.string :as str]
            [datalith.bench.system :refer [delete-tree]]
            [datalith.core :as d]
            [datalith.workload :as w])
  (:import (java.io File)
           (java.lang.management ManagementFactory)))

(set! *warn-on-reflection* true)

(defn- transact-fn [conn]
  (fn [tx-data]
    (let [r (d/transact! conn tx-data)]
      {:t (d/basis-t (:db-after r)) :tempids (:tempids r)})))

(def ^:private commit-opts
  "The connection's :commit option, from --commit (set once by -main)."
  (atom {}))

(defn- connect [system ^File dir]
  (if (= system "lmdb")
    (do (delete-tree dir)
        (d/connect (.getPath dir) (merge {:schema w/schema} @commit-opts)))
    (d/connect :mem {:schema w/schema})))

(defn- cpu-ns
  "CPU time of this thread so far (the machine is shared: wall time alone
  also counts the other processes' turns)."
  ^long []
  (.getCurrentThreadCpuTime (ManagementFactory/getThreadMXBean)))

(defn- user-ns
  "User-mode CPU time of this thread so far: its CPU time less the kernel's work
  for it (the fsyncs and page writes of durable commits)."
  ^long []
  (.getCurrentThreadUserTime (ManagementFactory/getThreadMXBean)))

(defn- allocated
  "Bytes this thread has allocated so far: unlike times, the same from run to
  run however busy the machine is."
  ^long []
  (let [^com.sun.management.ThreadMXBean b (ManagementFactory/getThreadMXBean)]
    (.getThreadAllocatedBytes b (.getId (Thread/currentThread)))))

(defn- load-once
  "Loads `data` into a new connection of `system`; returns [conn wall-seconds
  cpu-seconds allocated-bytes of this thread] (the workload's own making of
  tx-data included)."
  [system dir data batch-size]
  (let [conn (connect system dir)
        cpu (cpu-ns)
        bytes (allocated)
        {:keys [load-ns]} (w/load! data {:transact (transact-fn conn) :batch-size batch-size})]
    (when (let [s (.store ^datalith.conn.Conn conn)]
            (and (instance? datalith.store.LmdbStore s) (.writingBehind ^datalith.store.LmdbStore s)))
      (let [start (System/nanoTime)
            store ^datalith.store.LmdbStore (.store ^datalith.conn.Conn conn)]
        (.writeBehindCatchUp store)
        (printf "  write-behind: %d write-backs; the last commits written back %.2f s after the load%n"
                (.writeBacks store) (/ (- (System/nanoTime) start) 1e9))))
    [conn (/ (double load-ns) 1e9) (/ (double (- (cpu-ns) cpu)) 1e9) (- (allocated) bytes)]))

(defn- single-txs
  "Times `n` single-datom transactions on `conn` (after n/10 untimed); prints
  tx/s, their latency's p50, p99 and p99.9, and this thread's CPU time per
  transaction."
  [conn n]
  (dotimes [i (quot n 10)]
    (d/transact! conn [[:db/add "t" :issue/title (str "warm " i)]]))
  (let [lat (long-array n)
        start (System/nanoTime)
        cpu (cpu-ns)
        user (user-ns)
        bytes (allocated)]
    (dotimes [i n]
      (let [t0 (System/nanoTime)]
        (d/transact! conn [[:db/add "t" :issue/title (str "bench " i)]])
        (aset lat i (- (System/nanoTime) t0))))
    (let [wall (- (System/nanoTime) start)
          _ (java.util.Arrays/sort lat)
          at (fn [q] (/ (aget lat (min (dec n) (long (* q n)))) 1e3))]
      (printf "lmdb single-datom durable tx: %,.0f tx/s, %.0f us CPU (%.0f us user) and %,d bytes allocated each (%d timed); latency p50 %.0f us, p99 %.0f us, p99.9 %.0f us%n"
              (/ n (/ (double wall) 1e9))
              (/ (double (- (cpu-ns) cpu)) 1e3 n) (/ (double (- (user-ns) user)) 1e3 n)
              (quot (- (allocated) bytes) n) n (at 0.5) (at 0.99) (at 0.999)))
    (flush)))

(defn- threaded-txs
  "Times `n` single-datom transactions on `conn` from `threads` threads at once
  (after n/10 untimed); prints tx/s of them all, and the CPU time of the
  committing threads per transaction."
  [conn n threads]
  (let [bean (ManagementFactory/getThreadMXBean)
        run (fn [label k]
              (let [cpu (atom 0)
                    start (System/nanoTime)
                    fs (vec (for [t (range threads)]
                              (future
                                (let [c0 (.getCurrentThreadCpuTime bean)]
                                  (dotimes [i (quot k threads)]
                                    (d/transact! conn [[:db/add "t" :issue/title
                                                        (str label " " t " " i)]]))
                                  (swap! cpu + (- (.getCurrentThreadCpuTime bean) c0))))))]
                (run! deref fs)
                [(- (System/nanoTime) start) @cpu]))]
    (run "warm" (quot n 10))
    (let [[wall cpu] (run "bench" n)
          done (* threads (quot n threads))]
      (printf "lmdb single-datom durable tx, %d threads: %,.0f tx/s, %.0f us CPU of the writer threads each (%d timed)%n"
              threads (/ done (/ (double wall) 1e9)) (/ (double cpu) 1e3 done) done)
      (flush))))

(defn- time-txs [conn n threads]
  (if (= 1 threads) (single-txs conn n) (threaded-txs conn n threads)))

(defn- run-loads
  "Loads the data set of `scale` into each system, `loads` times; after the
  last LMDB load, times `n-tx` single-datom transactions."
  [systems scale loads n-tx threads batch-size dir]
  (let [data (w/generate scale)
        datoms (:datoms data)]
    (println "scale" (name scale) "datoms" datoms "batch-size" batch-size)
    (doseq [system systems]
      (let [runs (vec (for [i (range loads)]
                        (let [[conn secs cpu bytes] (load-once system dir data batch-size)]
                          (printf "%s load %d: %.2f s, %,.0f datoms/s; thread CPU %.2f s, %,d bytes allocated a datom%n"
                                  system i secs (/ datoms secs) cpu (quot bytes datoms))
                          (flush)
                          (when (and (= i (dec loads)) (= system "lmdb") (pos? n-tx))
                            (time-txs conn n-tx threads))
                          (d/close conn)
                          secs)))]
        (printf "%s best load: %,.0f datoms/s%n" system (/ datoms (apply min runs)))
        (flush)))))

(defn -main [& argv]
  (let [opts (merge {"--scale" "1m" "--systems" "lmdb,mem" "--loads" "1" "--tx" "2000"
                     "--batch-size" "1000" "--dir" "target/load-profile"}
                    (apply hash-map argv))
        n-tx (parse-long (opts "--tx"))
        threads (parse-long (opts "--threads" "1"))
        dir (File. ^String (opts "--dir"))]
    (when-let [c (opts "--commit")]
      (swap! commit-opts assoc :commit c))
    (when-let [b (opts "--write-behind")]
      (swap! commit-opts assoc :write-behind (= "true" b)))
    (if (= "true" (opts "--tx-only"))
      (let [conn (d/connect (.getPath dir) @commit-opts)]
        (time-txs conn n-tx threads)
        (d/close conn))
      (run-loads (str/split (opts "--systems") #",") (keyword (opts "--scale"))
                 (parse-long (opts "--loads")) n-tx threads (parse-long (opts "--batch-size"))
                 dir))
    (when-not (= "true" (opts "--keep"))
      (delete-tree dir))
    (shutdown-agents)))
