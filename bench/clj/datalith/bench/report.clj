(ns datalith.bench.report
  "bench/out/: results.csv (every row kept, a run replacing the rows of its
  scale), report.md (tables per scale with ratios datalith/other) and
  latency-<scale>.png (p50 per operation and system, log scale)."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str])
  (:import (java.io File)
           (java.util List)
           (org.knowm.xchart BitmapEncoder BitmapEncoder$BitmapFormat CategoryChart
                             CategoryChartBuilder)
           (org.knowm.xchart.style CategoryStyler Styler$LegendPosition)))

(set! *warn-on-reflection* true)

(def columns [:system :scale :datoms :op :p50_ms :p95_ms :p99_ms :ops_per_s])

(def system-order ["datalith-lmdb" "datalith-through" "datalith-mem" "datomic-mem" "datomic-disk" "sqlite"
                   "datalith-lmdb-256m"])

(def scale-order ["100k" "300k" "1m"])

(defn- order-of [v x] (let [i (.indexOf ^List v x)] (if (neg? i) 1000 i)))

(defn op-order
  "Report order of the operations."
  [op]
  (let [fixed ["load" "load-warm" "q1-point" "q1-param" "q2-ref" "q3-aggregate" "q4-predicate" "pull-star"
               "pull-nested" "in-bindings" "as-of-q2" "valid-at-q2" "since" "top20-open-recent" "tx-single"
               "tx-single-nosync" "import-cold" "import-non-empty-cold" "import" "import-non-empty"
               "export"]
        i (order-of fixed op)]
    (if (< i 1000)
      [i 0 0]
      (let [[_ kind threads] (re-find #"^read-(\w+)-(\d+)t$" op)]
        [100 (if (= kind "point") 0 1) (parse-long (or threads "0"))]))))

(defn- throughput-op? [op]
  (or (#{"load" "load-warm" "import-cold" "import-non-empty-cold" "import" "import-non-empty" "export"} op)
      (str/starts-with? op "read-")))

;; ---------------------------------------------------------------- csv

(defn read-csv
  "The rows of results.csv (maps with `columns` keys), or [] when it is missing."
  [^File f]
  (if-not (.exists f)
    []
    (let [[header & lines] (str/split-lines (slurp f))]
      (when-not (= header (str/join "," (map name columns)))
        (throw (ex-info (str f " has an unexpected header: " header) {})))
      (for [line lines :when (not (str/blank? line))
            :let [[system scale datoms op p50 p95 p99 ops] (str/split line #",")]]
        {:system system :scale scale :datoms (parse-long datoms) :op op
         :p50_ms (parse-double p50) :p95_ms (parse-double p95) :p99_ms (parse-double p99)
         :ops_per_s (parse-double ops)}))))

(defn- sort-rows [rows]
  (sort-by (juxt #(order-of scale-order (:scale %)) #(op-order (:op %))
                 #(order-of system-order (:system %)))
           rows))

(defn write-csv!
  "Writes rows to f, sorted by scale, operation and system."
  [^File f rows]
  (io/make-parents f)
  (spit f (str/join "\n"
                    (cons (str/join "," (map name columns))
                          (for [r (sort-rows rows)]
                            (str/join "," [(:system r) (:scale r) (:datoms r) (:op r)
                                           (format "%.4f" (double (:p50_ms r)))
                                           (format "%.4f" (double (:p95_ms r)))
                                           (format "%.4f" (double (:p99_ms r)))
                                           (format "%.1f" (double (:ops_per_s r)))]))))
                    :append false)
  (spit f "\n" :append true))

;; ---------------------------------------------------------------- markdown

(defn- fmt-ms [x]
  (let [x (double x)]
    (cond (< x 0.1) (format "%.3f" x) (< x 10) (format "%.2f" x) (< x 1000) (format "%.1f" x)
          :else (format "%,.0f" x))))

(defn- fmt-rate [x] (format "%,.0f" (double x)))

(defn- table [header rows]
  (str/join "\n" (concat [(str "| " (str/join " | " header) " |")
                          (str "|" (str/join "|" (repeat (count header) "---")) "|")]
                         (for [r rows] (str "| " (str/join " | " r) " |")))))

(defn- ratio
  "time of a / time of b for row maps a and b: p50 for latencies, inverse
  throughput for throughput ops."
  [op a b]
  (when (and a b)
    (if (throughput-op? op)
      (/ (double (:ops_per_s b)) (double (:ops_per_s a)))
      (/ (double (:p50_ms a)) (double (:p50_ms b))))))

(def ^:private query-ops
  ["q1-point" "q1-param" "q2-ref" "q3-aggregate" "q4-predicate" "pull-star" "pull-nested" "in-bindings"
   "as-of-q2" "since" "top20-open-recent"])

(defn- goals-section
  "The issue's goals for datalith on LMDB (set for 1m, warm), met or missed."
  [rows]
  (let [at (into {} (for [r rows] [[(:system r) (:op r)] r]))
        ours #(at ["datalith-lmdb" %])
        p50 #(some-> (ours %) :p50_ms double)
        fmt #(if % (str (fmt-ms %) " ms") "-")
        mark #(cond (nil? %) "?" % "met" :else "**missed**")
        slower (for [op query-ops
                     other ["datomic-mem" "datomic-disk"]
                     :let [a (ours op) b (at [other op])]
                     :when (and a b (>= (double (:p50_ms a)) (double (:p50_ms b))))]
                 (str op " vs " other))
        compared (some #(at [% "q1-point"]) ["datomic-mem" "datomic-disk"])
        scaling (fn [kind]
                  (let [one (ours (str "read-" kind "-1t")) two (ours (str "read-" kind "-2t"))]
                    (when (and one two) (/ (double (:ops_per_s two)) (double (:ops_per_s one))))))
        small (keep #(at ["datalith-lmdb-256m" %]) query-ops)
        rate #(some-> (ours %) :ops_per_s double)
        load-rate (or (rate "load-warm") (rate "load")) ; warm, as the other goals, when timed
        goal-row (fn [goal target measured met] [goal target measured (mark met)])
        rate-row (fn [goal op target]
                   (goal-row goal (str ">= " (fmt-rate target) " datoms/s")
                             (if (rate op) (str (fmt-rate (rate op)) " datoms/s") "-")
                             (some-> (rate op) (>= target))))]
    (str "### Goals (datalith on LMDB, warm; set for 1m)\n\n"
         (table ["goal" "target" "measured" ""]
                (remove nil?
                 [(goal-row "Q1 median" "< 0.05 ms" (fmt (p50 "q1-point"))
                           (some-> (p50 "q1-point") (< 0.05)))
                 (goal-row "Q3 median" "< 15 ms" (fmt (p50 "q3-aggregate"))
                           (some-> (p50 "q3-aggregate") (< 15)))
                 (goal-row "Q4 median" "< 25 ms" (fmt (p50 "q4-predicate"))
                           (some-> (p50 "q4-predicate") (< 25)))
                 (goal-row "top 20 open, most recent" "<= 1 ms" (fmt (p50 "top20-open-recent"))
                           (some-> (p50 "top20-open-recent") (<= 1)))
                 (goal-row "load, durable, batched" ">= 300,000 datoms/s"
                           (if load-rate (str (fmt-rate load-rate) " datoms/s") "-")
                           (some-> load-rate (>= 300000)))
                 (rate-row "import into an empty database" "import" 1000000)
                 (rate-row "import into a non-empty one" "import-non-empty" 500000)
                 (goal-row "every query faster than Datomic Local" "all of Q1-Q4, pulls, bindings, as-of, since"
                           (cond (not compared) "-"
                                 (seq slower) (str "slower: " (str/join ", " slower))
                                 :else "faster on all")
                           (when compared (empty? slower)))
                 (goal-row "2 reader threads vs 1" ">= 1.8x"
                           (if (scaling "point")
                             (str "point " (format "%.2fx" (scaling "point"))
                                  (some->> (scaling "mix") (format ", mix %.2fx")))
                             "-")
                           (some-> (scaling "point") (>= 1.8)))
                 (goal-row "queried with -Xmx256m" "all reads run"
                           (if (seq small)
                             (str (count small) " of " (count query-ops) " reads ran (datalith-lmdb-256m)")
                             "-")
                           (when (seq small) (= (count small) (count query-ops))))]))
         "\n\n")))

(defn- scale-section [scale rows meta]
  (let [systems (sort-by #(order-of system-order %) (distinct (map :system rows)))
        ops (sort-by op-order (distinct (map :op rows)))
        at (into {} (for [r rows] [[(:system r) (:op r)] r]))
        cell (fn [f s op] (if-let [r (at [s op])] (f r) "-"))
        ours (filter #{"datalith-lmdb" "datalith-through" "datalith-mem"} systems)
        others (remove #(str/starts-with? % "datalith") systems)
        pairs (for [a ours b others] [a b])]
    (str "## " scale " (" (format "%,d" (long (:datoms (first rows)))) " datoms)\n\n"
         (when meta
           (str "Command: `" (:command meta) "`  \n"
                "Machine: " (:machine meta) "  \n"
                "Date: " (:date meta) "\n\n"
                (when (seq (:mismatches meta))
                  (str "**Results that differed from the expected ones (their timings were not kept):**\n\n"
                       (str/join "\n" (map #(str "- " %) (:mismatches meta))) "\n\n"))))
         (when (= scale "1m") (goals-section rows))
         "### Latency: p50 ms (p99 ms)\n\n"
         (table (cons "op" systems)
                (for [op ops :when (not (throughput-op? op))]
                  (cons op (for [s systems]
                             (cell #(str (fmt-ms (:p50_ms %)) " (" (fmt-ms (:p99_ms %)) ")") s op)))))
         "\n\n### Throughput (load, import, export: datoms/s; tx-single: tx/s; read-KIND-Nt: reads/s with N threads)\n\n"
         (table (cons "op" systems)
                (for [op ops :when (or (throughput-op? op) (str/starts-with? op "tx-"))]
                  (cons op (for [s systems] (cell #(fmt-rate (:ops_per_s %)) s op)))))
         (when (seq pairs)
           (str "\n\n### Ratios datalith / other (time per operation; below 1: datalith is faster)\n\n"
                (table (cons "op" (for [[a b] pairs] (str a " / " b)))
                       (for [op ops]
                         (cons op (for [[a b] pairs]
                                    (if-let [x (ratio op (at [a op]) (at [b op]))]
                                      (format "%.2f" x)
                                      "-")))))))
         "\n")))

(defn write-report!
  "Writes report.md from all rows; meta: {scale {:command :machine :date}}."
  [^File f rows meta]
  (let [by-scale (group-by :scale rows)]
    (spit f (str "# datalith benchmark results\n\n"
                 "Made by `lein bench` (bench/README.md). Latencies are percentiles over "
                 "repetitions after a warm-up; results of every system were checked equal "
                 "before timings were kept.\n\n"
                 (str/join "\n" (for [scale (sort-by #(order-of scale-order %) (keys by-scale))]
                                  (scale-section scale (by-scale scale) (meta scale))))))))

(defn read-meta [^File f] (if (.exists f) (edn/read-string (slurp f)) {}))

;; ---------------------------------------------------------------- chart

(defn write-chart!
  "latency-<scale>.png: p50 ms of each latency operation per system, log scale."
  [^File dir scale rows]
  (let [systems (sort-by #(order-of system-order %) (distinct (map :system rows)))
        ops (vec (sort-by op-order (distinct (keep #(when-not (= "load" (:op %)) (:op %)) rows))))
        op? (set ops)
        at (into {} (for [r rows] [[(:system r) (:op r)] r]))
        builder (doto (CategoryChartBuilder.)
                  (.width 1600) (.height 800)
                  (.title (str "datalith benchmark, " scale ": p50 latency per operation (log scale)"))
                  (.xAxisTitle "operation")
                  (.yAxisTitle "ms"))
        chart (.build builder)]
    (doto ^CategoryStyler (.getStyler chart)
      (.setYAxisLogarithmic true)
      (.setLegendPosition Styler$LegendPosition/InsideNE)
      (.setXAxisLabelRotation 45)
      (.setAvailableSpaceFill 0.8)
      ;; bars start at the axis minimum: a power of ten below the smallest value
      (.setYAxisMin (Math/pow 10 (Math/floor (Math/log10 (/ (reduce min 1.0 (keep #(when (op? (:op %)) (:p50_ms %)) rows)) 2))))))
    (doseq [s systems]
      (.addSeries chart ^String s ^List ops
                  ^List (mapv #(some-> (at [s %]) :p50_ms double) ops)))
    (BitmapEncoder/saveBitmap chart (.getPath (io/file dir (str "latency-" scale)))
                              BitmapEncoder$BitmapFormat/PNG)))
