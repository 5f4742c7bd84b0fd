(ns datalith.bench.main
  "`lein bench`: the issue-tracker benchmark, every system side by side in one
  JVM and one run. See bench/README.md.

    lein bench --scale 100k --systems datalith-lmdb,datalith-mem,datomic,sqlite --reps 200"
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [datalith.bench.datalith :as datalith]
            [datalith.bench.datomic :as datomic]
            [datalith.bench.harness :as harness]
            [datalith.bench.ops :as ops]
            [datalith.bench.report :as report]
            [datalith.bench.sqlite :as sqlite]
            [datalith.bench.system :as system]
            [datalith.progress :as progress]
            [datalith.workload :as w])
  (:import (java.io File)
           (java.time Instant)
           (java.util Map Random)))

(set! *warn-on-reflection* true)

(def ^:private usage
  "lein bench [options]
  --scale S[,S]      100k, 300k or 1m (default 100k)
  --systems LIST     datalith-lmdb,datalith-through,datalith-mem,datomic-mem,datomic-disk,sqlite
                     (datalith-through: LMDB without write-behind; not in the default)
                     (datomic = both Datomic Local systems; default: all)
  --reps N           timed repetitions per read (default 200)
  --warmup-ms N      untimed warm-up per read and system (default 1000)
  --warmup-calls N   and at least N untimed calls, within --max-warmup-ms (default 300)
  --max-warmup-ms N  (default 20000)
  --steady-windows N then warm up on until N windows in a row are no longer 5% faster
                     than the best before (within --max-warmup-ms; default 3, 0: off)
  --steady-window-ms N  (default 1000)
  --max-ms N         a read stops after N ms of timed repetitions (at least 10; default 20000)
  --batch-size N     issues per load transaction (default 1000)
  --threads LIST     concurrent readers (default 1,2,4,8)
  --read-ms N        timed phase of each concurrent-readers run (default 3000)
  --tx-reps N        single-datom transactions timed (default 200)
  --tx-threads LIST  concurrent writer threads of tx-single-Nt (default 1,2,4,8)
  --small-heap BOOL  also query the LMDB database from a -Xmx256m JVM (default true)
  --out DIR          output directory (default bench/out)")

(def ^:private defaults
  {:scales ["100k"] :systems ["datalith-lmdb" "datalith-mem" "datomic-mem" "datomic-disk" "sqlite"]
   :reps 200 :warmup-ms 1000 :warmup-calls 300 :max-warmup-ms 20000 :max-ms 20000
   :steady-windows 3 :steady-window-ms 1000
   :batch-size 1000 :threads [1 2 4 8]
   :read-ms 3000 :tx-reps 200 :tx-threads [1 2 4 8] :small-heap true :out "bench/out"})

(def ^:private setters
  {"--scale" #(assoc %1 :scales (vec (harness/split-list %2)))
   "--systems" #(assoc %1 :systems (vec (distinct (mapcat (fn [s] (if (= s "datomic")
                                                                     ["datomic-mem" "datomic-disk"]
                                                                     [s]))
                                                           (harness/split-list %2)))))
   "--reps" #(assoc %1 :reps (parse-long %2))
   "--warmup-ms" #(assoc %1 :warmup-ms (parse-long %2))
   "--warmup-calls" #(assoc %1 :warmup-calls (parse-long %2))
   "--max-warmup-ms" #(assoc %1 :max-warmup-ms (parse-long %2))
   "--steady-windows" #(assoc %1 :steady-windows (parse-long %2))
   "--steady-window-ms" #(assoc %1 :steady-window-ms (parse-long %2))
   "--max-ms" #(assoc %1 :max-ms (parse-long %2))
   "--batch-size" #(assoc %1 :batch-size (parse-long %2))
   "--threads" #(assoc %1 :threads (mapv parse-long (harness/split-list %2)))
   "--read-ms" #(assoc %1 :read-ms (parse-long %2))
   "--tx-reps" #(assoc %1 :tx-reps (parse-long %2))
   "--tx-threads" #(assoc %1 :tx-threads (mapv parse-long (harness/split-list %2)))
   "--small-heap" #(assoc %1 :small-heap (parse-boolean %2))
   "--out" #(assoc %1 :out %2)})

(defn- parse-args [argv] (harness/parse-args defaults setters usage argv))

(defn- make-system [sys-name ^File data-dir]
  (case sys-name
    "datalith-lmdb" (datalith/lmdb (io/file data-dir "datalith-lmdb"))
    "datalith-through" (datalith/through (io/file data-dir "datalith-through"))
    "datalith-mem" (datalith/mem)
    "datomic-mem" (datomic/mem)
    "datomic-disk" (datomic/disk (io/file data-dir "datomic-disk"))
    "sqlite" (sqlite/sqlite (io/file data-dir "sqlite"))
    (throw (ex-info (str "Unknown system " sys-name "\n" usage) {}))))

;; ---------------------------------------------------------------- one scale

(defn- log [& xs] (binding [*out* *err*] (apply println xs) (flush)))

(defn- settled!
  "Waits up to max-ms for this JVM to go quiet before timing `what`; logs a wait of over a second."
  [max-ms what]
  (let [ms (harness/settle! max-ms)]
    (when (> ms 1000)
      (log (format "  (waited %.1f s for the JVM to go quiet before %s)" (/ ms 1000.0) what)))))

(defn- show-diff [expected got]
  (if (and (set? expected) (set? got))
    (str "expected " (count expected) " rows, got " (count got)
         "; missing e.g. " (pr-str (take 3 (remove got expected)))
         "; unexpected e.g. " (pr-str (take 3 (remove expected got))))
    (str "expected " (pr-str expected) "\n    got " (pr-str got))))

(defn- check
  "nil when system s answers op like the expectation on up to 8 of its args,
  else a message."
  [s ^Map rev expect op args]
  (some (fn [arg]
          (let [want (expect op arg)
                got (ops/normalise rev op (system/run-op s nil op arg))]
            (when (not= want got)
              (str (system/system-name s) " " (name op) " on " (pr-str (if (map? arg) (:email arg) arg))
                   ": " (show-diff want got)))))
        (take 8 args)))

(defn- readers-op
  "{:open :op :close} of concurrent readers of `kind` (:point or :mix) on s."
  [s kind args]
  (let [q1 (:q1-param args)
        mix-ops [:q1-param :q2-ref :pull-star :pull-nested]]
    {:open #(system/session s)
     :close #(system/end-session s %)
     :op (case kind
           :point (fn [session ^Random rnd]
                    (system/run-op s session :q1-param (q1 (.nextInt rnd (count q1)))))
           :mix (fn [session ^Random rnd]
                  (let [op (mix-ops (.nextInt rnd (count mix-ops)))
                        as (args op)]
                    (system/run-op s session op (as (.nextInt rnd (count as)))))))}))

(defn- writers-op
  "{:open :op :close} of concurrent single-datom transactions on s, numbered from `n`."
  [s ^java.util.concurrent.atomic.AtomicLong n]
  {:open #(system/writer s)
   :close #(system/end-writer s %)
   :op (fn [w _] (system/transact-in! s w (.incrementAndGet n)))})

(defn- copy-tree! [^File from ^File to]
  (doseq [^File f (file-seq from) :when (.isFile f)]
    (let [target (io/file to (str (.relativize (.toPath from) (.toPath f))))]
      (io/make-parents target)
      (io/copy f target))))

(defn- snapshot-classpath!
  "This JVM's classpath with its source directories (not compiled classes or
  jars) copied under dir, so that a child JVM started later loads the same
  Clojure sources even if someone edits them meanwhile."
  [^File dir]
  (system/delete-tree dir)
  (str/join File/pathSeparator
            (map-indexed (fn [i entry]
                           (let [f (io/file entry)]
                             (if (and (.isDirectory f) (not (str/ends-with? entry "classes")))
                               (let [copy (io/file dir (str i))]
                                 (copy-tree! f copy)
                                 (.getPath copy))
                               entry)))
                         (str/split (System/getProperty "java.class.path")
                                    (re-pattern File/pathSeparator)))))

(defn- small-heap-run!
  "Queries the LMDB database in dir from a child JVM with -Xmx256m; its rows."
  [^File dir points args ^Map ids opts scale datoms ^File out classpath]
  (let [pull-ids (into {} (for [op [:pull-star :pull-nested] t (args op)] [t (.get ids t)]))
        plan {:dir (.getAbsolutePath dir) :points points :args args :ids pull-ids
              :reps (:reps opts) :warmup-ms (:warmup-ms opts) :warmup-calls (:warmup-calls opts)
              :max-warmup-ms (:max-warmup-ms opts) :max-ms (:max-ms opts)
              :steady-windows (:steady-windows opts) :steady-window-ms (:steady-window-ms opts)}
        plan-file (io/file out (str "small-heap-plan-" scale ".edn"))
        _ (spit plan-file (pr-str plan))
        java (str (io/file (System/getProperty "java.home") "bin" "java"))
        cmd [java "-Xmx256m" "--add-opens=java.base/java.nio=ALL-UNNAMED"
             "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
             "-cp" classpath
             "clojure.main" "-m" "datalith.bench.small-heap" (.getPath plan-file)]
        pb (doto (ProcessBuilder. ^java.util.List cmd)
             (.redirectError java.lang.ProcessBuilder$Redirect/INHERIT))
        p (.start pb)
        stdout (slurp (.getInputStream p))
        exit (.waitFor p)]
    (.delete plan-file)
    (if (zero? exit)
      (let [{:keys [results]} (edn/read-string (last (str/split-lines stdout)))]
        (for [[op st] results]
          {:system "datalith-lmdb-256m" :scale scale :datoms datoms :op (name op)
           :p50_ms (:p50-ms st) :p95_ms (:p95-ms st) :p99_ms (:p99-ms st)
           :ops_per_s (:ops-per-s st)}))
      (do (log "small-heap run failed, exit" exit) []))))

(defn- run-scale!
  "Runs everything at one scale; returns {:rows [...] :mismatches [...]}."
  [opts scale]
  (let [scale-k (keyword scale)
        _ (log "=== scale" scale ": generating the data set (seed" w/seed ")")
        data (w/generate scale-k)
        datoms (:datoms data)
        out (io/file (:out opts))
        data-dir (io/file out "data" scale)
        pts (ops/points data (:batch-size opts))
        args (ops/args data)
        expect (ops/expected data pts)
        systems (mapv #(make-system % data-dir) (:systems opts))
        revs (atom {})
        loads (atom {})
        rows (atom [])
        mismatches (atom [])
        row! (fn [s op st]
               (let [r {:system (system/system-name s) :scale scale :datoms datoms :op op
                        :p50_ms (:p50-ms st) :p95_ms (:p95-ms st) :p99_ms (:p99-ms st)
                        :ops_per_s (:ops-per-s st)}]
                 (log (format "  %-14s %-18s p50 %10.4f ms  p99 %10.4f ms  %,12.1f ops/s  (n=%s)"
                              (:system r) op (double (:p50_ms r)) (double (:p99_ms r))
                              (double (:ops_per_s r)) (:n st "-")))
                 (swap! rows conj r)))]
    (log (format "%,d datoms: %d users, %d labels, %,d issues; batches of %d issues"
                 datoms (count (:users data)) (count (:labels data)) (count (:issues data))
                 (:batch-size opts)))
    (try
      (doseq [s systems]
        (System/gc)
        (let [sname (system/system-name s)
              res (system/load-data! s data {:batch-size (:batch-size opts)
                                              :progress (progress/bar (format "%-14s" sname))})
              ms (/ (:load-ns res) 1e6)]
          (row! s "load" {:p50-ms ms :p95-ms ms :p99-ms ms :ops-per-s (/ datoms (/ ms 1000))})
          (swap! loads assoc sname res)
          (swap! revs assoc sname (ops/reverse-ids (:ids res)))
          (system/prepare! s (ops/system-points pts res))))
      (System/gc)
      (settled! 120000 "the reads")
      (doseq [op system/read-ops
              s systems
              :let [sname (system/system-name s)]]
        (if-let [problem (check s (@revs sname) expect op (args op))]
          (do (log "  MISMATCH" problem)
              (swap! mismatches conj problem))
          (do (settled! 5000 (str sname " " (name op)))
              (row! s (name op)
                    (harness/measure #(system/run-op s nil op %) (args op) opts)))))
      ;; valid-at-q2 (#19): Q2 on a valid-at view made in the call; datalith only
      (doseq [s systems :when (datalith/bulk? s)
              :let [sname (system/system-name s)]]
        (if-let [problem (check s (@revs sname) expect :valid-at-q2 (args :valid-at-q2))]
          (do (log "  MISMATCH" problem)
              (swap! mismatches conj problem))
          (do (settled! 5000 (str sname " valid-at-q2"))
              (row! s "valid-at-q2"
                    (harness/measure #(system/run-op s nil :valid-at-q2 %) (args :valid-at-q2)
                                     opts)))))
      (doseq [kind [:point :mix]
              threads (:threads opts)
              s systems]
        (settled! 5000 (str (system/system-name s) " readers"))
        (row! s (str "read-" (name kind) "-" threads "t")
              (harness/measure-threads (readers-op s kind args) threads
                                       {:warmup-ms (quot (long (:read-ms opts)) 3)
                                        :duration-ms (:read-ms opts)})))
      (doseq [s systems]
        (let [n (atom 0)
              ;; writes keep their short warm-up: their time is the disk's, not the JIT's
              tx-opts (-> opts (assoc :reps (:tx-reps opts) :warmup-ms 200)
                          (dissoc :steady-windows))]
          (row! s "tx-single" (harness/measure (fn [_] (system/transact-one! s (swap! n inc)))
                                               [nil] tx-opts))
          (doseq [threads (:tx-threads opts)]
            (settled! 5000 (str (system/system-name s) " writers"))
            (row! s (str "tx-single-" threads "t")
                  (harness/measure-threads (writers-op s (java.util.concurrent.atomic.AtomicLong.
                                                          (swap! n + 1000000)))
                                           threads
                                           {:warmup-ms (quot (long (:read-ms opts)) 3)
                                            :duration-ms (:read-ms opts)})))
          (when (system/relax-sync! s)
            (row! s "tx-single-nosync"
                  (harness/measure (fn [_] (system/transact-one! s (swap! n inc))) [nil] tx-opts)))))
      (doseq [s systems :when (datalith/bulk? s)]
        (System/gc)
        (doseq [[op st] (datalith/bulk-ops s data (:batch-size opts)
                                           (io/file data-dir (str (system/system-name s) "-bulk")))]
          (row! s op st)))
      (when-let [lmdb (and (:small-heap opts)
                           (some #(when (= "datalith-lmdb" (system/system-name %)) %) systems))]
        (log "--- datalith-lmdb queried from a JVM with -Xmx256m")
        (datalith/release! lmdb)
        (doseq [r (let [res (@loads "datalith-lmdb")]
                    (small-heap-run! (io/file data-dir "datalith-lmdb") (ops/system-points pts res)
                                     args (:ids res) opts scale datoms out (:classpath opts)))]
          (log (format "  %-18s %-18s p50 %10.4f ms" (:system r) (:op r) (double (:p50_ms r))))
          (swap! rows conj r)))
      {:rows @rows :mismatches @mismatches}
      (finally
        (doseq [s systems]
          (try (system/close! s)
               (catch Exception e (log "closing" (system/system-name s) "failed:" (ex-message e)))))
        (system/delete-tree data-dir)))))

(defn -main [& argv]
  (let [parsed (parse-args argv)
        out (io/file (:out parsed))
        opts (assoc parsed :classpath (snapshot-classpath! (io/file out "data" "classpath")))
        csv (io/file out "results.csv")
        meta-file (io/file out "runs.edn")]
    (.mkdirs out)
    (doseq [scale (:scales opts)]
      (when-not (w/scales (keyword scale))
        (throw (ex-info (str "Unknown scale " scale "\n" usage) {})))
      (let [{:keys [rows mismatches]} (run-scale! opts scale)
            kept (remove #(= scale (:scale %)) (report/read-csv csv))
            all (concat kept rows)
            meta (assoc (report/read-meta meta-file) scale
                        {:command (str "lein bench " (str/join " " argv))
                         :machine (harness/machine)
                         :date (str (Instant/now))
                         :mismatches mismatches})]
        (report/write-csv! csv all)
        (spit meta-file (pr-str meta))
        (report/write-report! (io/file out "report.md") all meta)
        (report/write-chart! out scale rows)
        (log (str "wrote " csv ", " (io/file out "report.md") " and "
                  (io/file out (str "latency-" scale ".png"))))
        (when (seq mismatches)
          (log (count mismatches) "mismatch(es): their timings were not kept"))))
    (system/delete-tree (io/file out "data"))
    (shutdown-agents)
    (System/exit 0)))
