(ns datalith.bench.q2-profile
  "Q2 timing (issue #17): keeps a loaded tracker database on LMDB in a directory
  (loaded once, reused by later runs) and in memory, and times Q2 over many
  assignees: p50 wall time, this thread's CPU time and allocation per query, and
  d/explain's plan. Each try costs seconds once the LMDB directory exists.

    lein with-profile +bench run -m datalith.bench.q2-profile [options]
      --scale S        100k, 300k or 1m (default 1m)
      --systems LIST   lmdb,lmdb-plain,mem (default lmdb,mem; lmdb-plain is LMDB with
                       \"page-reader\" \"lmdb\"; mem loads the data set in this JVM)
      --dir DIR        the LMDB directory (default target/q2-profile-SCALE; loaded when
                       it holds no database)
      --rounds N       rounds over the emails (default 200); every round times each email once
      --emails N       distinct assignees queried (default 20, as the bench's :q2-ref)
      --batches N      timed batches per system, each of --rounds rounds (default 3)
      --explain true   print d/explain of one Q2 per system

  Run it under JFR with JVM_OPTS or `:jvm-opts`, e.g.
    JVM_OPTS=-XX:StartFlightRecording=filename=target/q2.jfr,settings=profile lein ..."
  (:require [clojure.pprint :as pp]
            [clojure.string :as str]
            [datalith.core :as d]
            [datalith.workload :as w])
  (:import (java.io File)
           (java.lang.management ManagementFactory)))

(set! *warn-on-reflection* true)

(defn- cpu-ns ^long [] (.getCurrentThreadCpuTime (ManagementFactory/getThreadMXBean)))

(defn- allocated ^long []
  (let [^com.sun.management.ThreadMXBean b (ManagementFactory/getThreadMXBean)]
    (.getThreadAllocatedBytes b (.getId (Thread/currentThread)))))

(defn- transact-fn [conn]
  (fn [tx-data]
    (let [r (d/transact! conn tx-data)]
      {:t (d/basis-t (:db-after r)) :tempids (:tempids r)})))

(defn- loaded?
  "Whether `dir` holds a database a previous run loaded completely."
  [^File dir]
  (.exists (File. dir "q2-profile-loaded")))

(defn- open-lmdb
  "The connection to the database in `dir`, loaded from `data` first when it holds none."
  [^File dir data opts]
  (if (loaded? dir)
    (d/connect (.getPath dir) opts)
    (do (when (.exists dir)
          (doseq [^File f (reverse (file-seq dir))] (.delete f)))
        (let [conn (d/connect (.getPath dir) (assoc opts :schema w/schema))
              t0 (System/nanoTime)]
          (w/load! @data {:transact (transact-fn conn)})
          (println (format "loaded %s in %.1f s" dir (/ (- (System/nanoTime) t0) 1e9)))
          (spit (File. dir "q2-profile-loaded") "")
          conn))))

(defn- percentile [sorted p]
  (nth sorted (min (dec (count sorted)) (long (* p (count sorted))))))

(defn- time-q2
  "Times Q2 for every email, `rounds` times (one untimed round first); returns the
  figures per query in microseconds and bytes, and the total rows."
  [db emails rounds]
  (doseq [e emails] (d/q w/q2 db e))
  (let [walls (long-array (* rounds (count emails)))
        cpu0 (cpu-ns)
        bytes0 (allocated)
        rows (volatile! 0)]
    (dotimes [r rounds]
      (dotimes [k (count emails)]
        (let [e (nth emails k)
              t0 (System/nanoTime)
              res (d/q w/q2 db e)]
          (aset walls (+ (* r (count emails)) k) (- (System/nanoTime) t0))
          (vswap! rows + (count res)))))
    (let [n (alength walls)
          sorted (vec (sort walls))]
      {:n n
       :rows-per-query (/ (double @rows) n)
       :p50-us (/ (percentile sorted 0.5) 1e3)
       :p90-us (/ (percentile sorted 0.9) 1e3)
       :cpu-us (/ (double (- (cpu-ns) cpu0)) n 1e3)
       :alloc-bytes (quot (- (allocated) bytes0) n)})))

(defn- parse-args [args]
  (reduce (fn [m [k v]] (assoc m (keyword (subs k 2)) v)) {} (partition 2 args)))

(defn -main [& args]
  (let [{:keys [scale systems dir rounds emails explain batches]
         :or {scale "1m" systems "lmdb,mem" rounds "200" emails "20" batches "3"}} (parse-args args)
        scale-k (keyword scale)
        data (delay (w/generate scale-k))
        n-users (long (:users (w/scales scale-k)))
        emails (mapv #(w/email (mod (* 7919 (long %)) n-users)) (range (Long/parseLong emails)))
        dir (File. (str (or dir (str "target/q2-profile-" scale))))]
    (println "uptime:" (str/trim (slurp (.getInputStream (.exec (Runtime/getRuntime) "uptime")))))
    (doseq [system (str/split systems #",")]
      (let [conn (case system
                   "lmdb" (open-lmdb dir data {})
                   "lmdb-plain" (open-lmdb dir data {:page-reader :lmdb})
                   "mem" (let [c (d/connect :mem {:schema w/schema})]
                           (w/load! @data {:transact (transact-fn c)})
                           c))
            db (d/db conn)]
        (when (= explain "true")
          (pp/pprint (d/explain w/q2 db (first emails))))
        (dotimes [_ (Long/parseLong batches)]
          (println system (time-q2 db emails (Long/parseLong rounds))))
        (when (not= system "mem") (d/close conn))))
    (shutdown-agents)))
