(ns datalith.bench.datalith
  "datalith, on LMDB (durable) or in memory."
  (:require [datalith.bench.queries :as queries]
            [datalith.bench.system :as system]
            [datalith.core :as d]
            [datalith.workload :as workload])
  (:import (java.io File)
           (java.util Map)))

(set! *warn-on-reflection* true)

(defn- transact-fn [conn]
  (fn [tx-data]
    (let [r (d/transact! conn tx-data)]
      {:t (d/basis-t (:db-after r)) :tempids (:tempids r)})))

(defn- eid [^Map ids tempid] (.get ids tempid))

(defn- connect-new
  "A connection to a new database with the workload's schema: on LMDB in `dir`
  (emptied first) with `conn-opts` when `lmdb?`, else in memory."
  [lmdb? ^File dir conn-opts]
  (if lmdb?
    (do (system/delete-tree dir)
        (d/connect (.getPath dir) (assoc conn-opts :schema workload/schema)))
    (d/connect :mem {:schema workload/schema})))

(deftype Datalith [kind ^File dir state conn-opts]
  system/BenchSystem
  (system-name [_] (str "datalith-" (name kind)))

  (load-data! [_ data opts]
    (let [conn (connect-new (some? dir) dir conn-opts)
          result (workload/load! data (assoc opts :transact (transact-fn conn)))]
      (swap! state assoc :conn conn :ids (:ids result))
      result))

  (prepare! [_ {:keys [as-of-t since-t]}]
    (let [db (d/db (:conn @state))]
      (swap! state assoc :db db :as-of (d/as-of db as-of-t) :since (d/since db since-t)
             :valid-instant (java.util.Date.))))

  (session [_] nil)
  (end-session [_ _])

  (run-op [_ _ op arg]
    (let [{:keys [db ids]} @state]
      (case op
        :q1-point (d/q (:query arg) db)
        :q1-param (d/q queries/q1-param db arg)
        :q2-ref (d/q queries/q2 db arg)
        :q3-aggregate (d/q queries/q3 db)
        :q4-predicate (d/q queries/q4 db)
        :pull-star (d/pull db queries/pull-star (eid ids arg))
        :pull-nested (d/pull db queries/pull-nested (eid ids arg))
        :in-bindings (d/q queries/in-bindings db arg)
        :as-of-q2 (d/q queries/q2 (:as-of @state) arg)
        :valid-at-q2 (d/q queries/q2 (d/valid-at db (:valid-instant @state)) arg)
        :since (d/q queries/since (:since @state))
        :top20-open-recent (d/q queries/top20-open-recent db))))

  (transact-one! [_ n]
    (d/transact! (:conn @state) [[:db/add "t" :issue/title (str "bench " n)]]))

  (writer [_] nil)
  (end-writer [_ _])
  (transact-in! [s _ n] (system/transact-one! s n))

  (relax-sync! [_]
    (if dir
      (do (d/close (:conn @state))
          (swap! state assoc :conn (d/connect (.getPath dir) {:sync false}))
          true)
      false))

  (close! [_]
    (some-> (:conn @state) d/close)
    (swap! state dissoc :conn)
    (when dir (system/delete-tree dir))))

(defn lmdb
  "datalith on LMDB in `dir`, as `d/connect` opens it (write-behind, since stop 38: commits
  durable in the write-ahead log, written into LMDB many at a time by a thread of the
  store); deleted before loading and on close!."
  [^File dir]
  (->Datalith :lmdb dir (atom {}) {}))

(defn through
  "datalith on LMDB in `dir` without write-behind (each commit put into LMDB's trees, as
  before stop 38); deleted before loading and on close!."
  [^File dir]
  (->Datalith :through dir (atom {}) {:write-behind false}))

(defn mem
  "datalith in memory."
  []
  (->Datalith :mem nil (atom {}) {}))

(defn release!
  "Closes the connection of `s` but keeps its files (for another process to read)."
  [^Datalith s]
  (let [state (.-state s)]
    (some-> (:conn @state) d/close)
    (swap! state dissoc :conn)))

(defn lmdb-existing
  "datalith on the LMDB database already in `dir` (kept on release!), whose
  tempids map is `ids`."
  [^File dir ids]
  (->Datalith :lmdb dir (atom {:conn (d/connect (.getPath dir)) :ids ids}) {}))

(defn bulk?
  "Whether `s` is a datalith system (which has the import and export ops)."
  [s]
  (instance? Datalith s))

(defn- timed-rate
  "{:p50-ms .. :ops-per-s items/s} of one run of f, which returns the item count."
  [f]
  (let [start (System/nanoTime)
        n (f)
        ms (/ (- (System/nanoTime) start) 1e6)]
    {:p50-ms ms :p95-ms ms :p99-ms ms :ops-per-s (/ n (/ ms 1000))}))

(defn- fresh-conn
  "A connection to a new database of `s`'s kind, in `dir` on LMDB."
  [^Datalith s ^File dir]
  (connect-new (some? (.-dir s)) dir (.-conn-opts s)))

(defn- import-pair
  "Imports `source` into a fresh database of `s`'s kind in `dir` (made before the
  clock starts, deleted after), then again into that database, which then holds
  the first: [empty-stats non-empty-stats]."
  [^Datalith s source ^File dir]
  (let [c (fresh-conn s dir)]
    (try [(timed-rate #(:datoms (d/import! c source)))
          (timed-rate #(:datoms (d/import! c source)))]
         (finally (d/close c) (system/delete-tree dir)))))

(def ^:private warm-runs
  "The warm-up of an op timed once a run (an import pair, a load): at least the
  first of these many runs, at most the second, until a run is no longer 5% faster
  than the fastest before it (the JIT's compilations of an import's code go on for
  a few imports of 1M datoms: 0.33, 0.54, 0.79 and 1.06M datoms/s in the first
  four of one JVM)."
  [2 8])

(def ^:private timed-runs
  "The runs timed after the warm-up; their median is the figure." 3)

(defn- median-stats
  "One stats map of several runs' (each {:p50-ms ..}): the median run's time as
  p50 and its rate, the slowest's as p95 and p99."
  [runs]
  (let [ms (sort (map :p50-ms runs))
        mid (nth ms (quot (count ms) 2))
        worst (last ms)
        {:keys [p50-ms ops-per-s]} (first (filter #(= mid (:p50-ms %)) runs))]
    {:p50-ms p50-ms :p95-ms worst :p99-ms worst :ops-per-s ops-per-s}))

(defn- steady
  "The steady figures of `run` (no arguments; returns a vector of stats maps, the
  first of which says whether it got faster): runs it until the first is steady
  ([[warm-runs]]), then [[timed-runs]] times more; a vector of the timed runs'
  median-stats, position by position."
  [run]
  (let [[at-least at-most] warm-runs]
    (loop [i 0 best Double/MAX_VALUE]
      (let [ms (:p50-ms (first (run)))]
        (when (and (< (inc i) at-most) (or (< (inc i) at-least) (< ms (* 0.95 best))))
          (recur (inc i) (min best ms)))))
    (let [runs (vec (repeatedly timed-runs run))]
      (mapv (fn [k] (median-stats (map #(nth % k) runs))) (range (count (first runs)))))))

(defn- load-once
  "Loads `data` through transact! in batches of `batch-size` issues into a fresh
  database of `s`'s kind in `dir` (made before the clock starts, deleted after):
  [stats], as the `load` op times it."
  [^Datalith s data batch-size ^File dir]
  (let [c (fresh-conn s dir)]
    (try (let [ms (/ (:load-ns (workload/load! data {:batch-size batch-size
                                                      :transact (transact-fn c)}))
                     1e6)]
           [{:p50-ms ms :p95-ms ms :p99-ms ms :ops-per-s (/ (:datoms data) (/ ms 1000))}])
         (finally (d/close c) (system/delete-tree dir)))))

(defn bulk-ops
  "The ops `import` (the workload's tx-data, `batch-size` issues a chunk, through
  d/import! into a fresh database of the same kind: datoms/s), `import-non-empty`
  (the same tx-data again, into that database, which then holds the first import:
  datoms/s) and `export` (the loaded database's history through d/export to a file
  in `scratch`: datoms/s): {op stats}. The two imports run twice, each pair into a
  database of its own: the first pair, `import-cold` and `import-non-empty-cold`,
  meets the importer's code cold (what a JVM that imports once, as the CLI's
  `import` does, gets); then `import` and `import-non-empty`, the steady figures
  after the importer's warm-up, as the other ops' are taken ([[steady]]: pairs
  until the import is no longer faster, then the median of three more). And
  `load-warm`: the `load` op's load through transact! again, into fresh databases
  of the same kind, steady likewise (`load` is the JVM's first). Export runs once."
  [^Datalith s data batch-size ^File scratch]
  (let [conn (:conn @(.-state s))
        export-file (File. scratch "export.edn")]
    (.mkdirs scratch)
    (try
      (let [source (doall (workload/import-tx-data data batch-size))
            [cold cold-non-empty] (import-pair s source (File. scratch "import-cold"))
            [warm warm-non-empty] (steady #(import-pair s source (File. scratch "import")))
            [load-warm] (steady #(load-once s data batch-size (File. scratch "load")))]
        {"load-warm" load-warm
         "import-cold" cold
         "import-non-empty-cold" cold-non-empty
         "import" warm
         "import-non-empty" warm-non-empty
         "export" (timed-rate #(:datoms (d/export conn export-file)))})
      (finally (system/delete-tree scratch)))))
