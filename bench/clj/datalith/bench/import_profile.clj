(ns datalith.bench.import-profile
  "Bulk import timing (issue #17): imports the tracker workload's tx-data
  (`workload/import-tx-data`, what `lein bench`'s import op loads) with
  `d/import!` into an empty LMDB directory, then the same tx-data again into
  that (now non-empty) database, and once into an in-memory database (the
  transactor's cost without LMDB). The tx-data is made before the clock starts.
  Prints datoms/s (wall), this thread's and the whole process's CPU seconds
  (two cores: an import whose process CPU is near twice its wall time is bound
  by work, not by waiting) and allocated bytes; the
  figures to compare before and after a change, and an import to profile with JFR.

    lein with-profile +bench run -m datalith.bench.import-profile [options]
      --scale S       100k, 300k or 1m (default 1m)
      --systems LIST  lmdb,mem (default both)
      --runs N        runs of each, all printed (default 1)
      --batch-size N  issues a chunk (default 1000)
      --dir DIR       the LMDB directory (default target/import-profile; deleted first)
      --progress true pass a progress function (which makes every chunk its own commit)
      --staged MODE   import!'s :staged: true, false or auto (default auto: the import
                      into the empty LMDB database is staged, the second is not)
      --non-empty false  skip the second import into LMDB (to profile the first alone)
      --load-first true  first load the tracker through transact! into another LMDB
                      directory, as `lein bench` does before its import (the transactor's
                      code then compiled for transact!, the heap holding that database)
      --threads true  after each import, the CPU each of the process's threads spent in
                      it, by name, from /proc/self/task (the JIT's compiler threads and the
                      collector's too, which a Java profiler does not sample)
      --replace-all true  also time Store.replaceAll alone: the in-memory import's
                      store written into an empty LMDB directory (what a staged import's
                      final write costs; the staging itself costs about the mem import)"
  (:require [clojure.string :as str]
            [datalith.bench.system :refer [delete-tree]]
            [datalith.core :as d]
            [datalith.workload :as w])
  (:import (datalith.conn Conn)
           (datalith.store LmdbStore ReadTxn Store)
           (java.io File)
           (java.lang.management ManagementFactory)))

(set! *warn-on-reflection* true)

(defn- cpu-ns ^long []
  (.getCurrentThreadCpuTime (ManagementFactory/getThreadMXBean)))

(defn- process-cpu-ns
  "CPU time of the whole process so far (every thread: the import's helpers, the
  tree writers, the collector), or 0 where the JVM does not say."
  ^long []
  (let [b (ManagementFactory/getOperatingSystemMXBean)]
    (if (instance? com.sun.management.OperatingSystemMXBean b)
      (.getProcessCpuTime ^com.sun.management.OperatingSystemMXBean b)
      0)))

(defn- allocated ^long []
  (let [^com.sun.management.ThreadMXBean b (ManagementFactory/getThreadMXBean)]
    (.getThreadAllocatedBytes b (.getId (Thread/currentThread)))))

(defn- written
  "Bytes this process has written (write and pwrite calls, /proc/self/io's wchar), or 0."
  ^long []
  (let [f (File. "/proc/self/io")]
    (if (.exists f)
      (or (some->> (String. (java.nio.file.Files/readAllBytes (.toPath f))) (re-find #"wchar: (\d+)") second parse-long) 0)
      0)))

(defn- threads-cpu
  "CPU seconds so far of each of the process's threads (native ones too), summed by
  name with digits dropped (\"C2 CompilerThre0\" and \"...1\" are one), from
  /proc/self/task; empty where there is no /proc."
  []
  (let [tick 100.0
        tasks (.listFiles (File. "/proc/self/task"))]
    (reduce (fn [m ^File t]
              (try
                (let [stat (String. (java.nio.file.Files/readAllBytes (.toPath (File. t "stat"))))
                      nm (str/replace (subs stat (inc (str/index-of stat "(")) (str/last-index-of stat ")"))
                                      #"[0-9]+" "")
                      fields (str/split (subs stat (+ 2 (str/last-index-of stat ")"))) #" ")
                      cpu (/ (+ (parse-long (nth fields 11)) (parse-long (nth fields 12))) tick)]
                  (update m nm (fnil + 0.0) cpu))
                (catch java.io.IOException _ m)))
            {} tasks)))

(defn- print-threads-cpu [before after]
  (doseq [[nm s] (->> after (map (fn [[k v]] [k (- v (get before k 0.0))])) (filter #(>= (second %) 0.02))
                      (sort-by (comp - second)))]
    (printf "    %-24s %5.2f s%n" nm s)))

(defn- timed-import
  "Imports `chunks` into `conn`; prints and returns the figures."
  [label conn chunks opts]
  (let [tcpu (when (:threads opts) (threads-cpu))
        opts (dissoc opts :threads)
        start (System/nanoTime)
        cpu (cpu-ns)
        all-cpu (process-cpu-ns)
        bytes (allocated)
        wchar (written)
        r (d/import! conn chunks opts)
        secs (/ (double (- (System/nanoTime) start)) 1e9)
        cpu-s (/ (double (- (cpu-ns) cpu)) 1e9)
        all-cpu-s (/ (double (- (process-cpu-ns) all-cpu)) 1e9)]
    (printf "%-16s %,9d datoms in %5.2f s: %,10.0f datoms/s wall, %5.2f s CPU (this thread), %5.2f s CPU (the process), %,d bytes allocated, %,d bytes written%n"
            label (:datoms r) secs (/ (:datoms r) secs) cpu-s all-cpu-s (- (allocated) bytes)
            (- (written) wchar))
    (when tcpu (print-threads-cpu tcpu (threads-cpu)))
    (flush)
    r))

(defn- timed-replace-all
  "Writes the entries of `source`'s store into a new LMDB store in `dir` with
  replaceAll, inside a sync pause as an import's; prints the figures."
  [^Conn source ^File dir]
  (delete-tree dir)
  (let [^Store store (LmdbStore/open (.toPath dir) {})]
    (try
      (let [start (System/nanoTime)
            cpu (cpu-ns)
            bytes (allocated)]
        (with-open [_ (.pauseSync store)
                    ^ReadTxn rt (.beginRead (.store source))]
          (.replaceAll store rt))
        (printf "%-16s in %5.2f s, %5.2f s CPU (this thread), %,d bytes allocated%n" "replaceAll"
                (/ (double (- (System/nanoTime) start)) 1e9)
                (/ (double (- (cpu-ns) cpu)) 1e9) (- (allocated) bytes))
        (flush))
      (finally (.close store) (delete-tree dir)))))

(defn -main [& args]
  (let [opts (merge {"--scale" "1m" "--systems" "lmdb,mem" "--runs" "1" "--batch-size" "1000"
                     "--dir" "target/import-profile"}
                    (apply hash-map args))
        data (w/generate (keyword (opts "--scale")))
        chunks (doall (w/import-tx-data data (parse-long (opts "--batch-size"))))
        dir (File. ^String (opts "--dir"))
        systems (set (str/split (opts "--systems") #","))
        iopts (cond-> (if (= "true" (opts "--progress")) {:progress (fn [_])} {})
                (#{"true" "false"} (opts "--staged")) (assoc :staged (= "true" (opts "--staged")))
                (= "true" (opts "--threads")) (assoc :threads true))]
    (printf "%s: %,d datoms, %d chunks%n" (opts "--scale") (:datoms data) (count chunks))
    (when (= "true" (opts "--load-first"))
      (let [ldir (File. (str (opts "--dir") "-loaded"))]
        (delete-tree ldir)
        (let [conn (d/connect (.getPath ldir) {:schema w/schema})]
          (try
            (let [r (w/load! data {:transact #(let [r (d/transact! conn %)]
                                                {:t (d/basis-t (:db-after r)) :tempids (:tempids r)})
                                   :batch-size (parse-long (opts "--batch-size"))})]
              (printf "loaded through transact! in %.2f s%n" (/ (:load-ns r) 1e9)))
            (finally (d/close conn))))
        (delete-tree ldir)))
    (dotimes [_ (parse-long (opts "--runs"))]
      (when (systems "lmdb")
        (delete-tree dir)
        (let [conn (d/connect (.getPath dir) {:schema w/schema})]
          (try
            (timed-import "lmdb empty" conn chunks iopts)
            (when-not (= "false" (opts "--non-empty"))
              (timed-import "lmdb non-empty" conn chunks iopts))
            (finally (d/close conn))))
        (delete-tree dir))
      (when (systems "mem")
        (let [conn (d/connect :mem {:schema w/schema})]
          (try (timed-import "mem empty" conn chunks (dissoc iopts :staged))
               (when (= "true" (opts "--replace-all"))
                 (timed-replace-all conn dir))
               (finally (d/close conn))))))
    (shutdown-agents)))
