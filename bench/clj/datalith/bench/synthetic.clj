(ns datalith.bench.synthetic
  "`lein bench-synthetic`: the query engine's goals on synthetic data, from the
  query-engine issue: a 100-hop recursive chain under 20 ms, and `not`, `or`
  and a grouped `:with` sum over 10K entities each under 20 ms; and the
  planner's cases of the planner issue on a small issue tracker (blanks
  repeated, a function binding the join variable of a later pattern, a group
  of clauses joined to the rest only by a not-join). See bench/README.md.

    lein bench-synthetic --reps 100 --systems datalith-mem,datalith-lmdb --out bench/out

  Every answer is checked against the one computed from the generated data in
  plain Clojure before anything is timed; a mismatch stops the run (exit 1)."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [datalith.bench.harness :as harness]
            [datalith.bench.system :as system]
            [datalith.core :as d])
  (:import (datalith.conn Conn)
           (java.io File)
           (java.lang.management ManagementFactory)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)
           (java.time Instant)
           (java.util Random)))

(set! *warn-on-reflection* true)

(def ^:private usage
  "lein bench-synthetic [options]
  --systems LIST   datalith-mem,datalith-lmdb (default: both)
  --reps N         timed repetitions per query (default 100)
  --warmup-ms N    untimed calls of each query per system first (default 1000)
  --max-ms N       a query stops after N ms of timed repetitions (at least 10; default 20000)
  --ops REGEX      only the ops whose name REGEX finds (e.g. 'sort|rank|running'; default: all)
  --out DIR        output directory for synthetic.md and synthetic.csv (default bench/out)")

(def ^:private defaults
  {:systems ["datalith-mem" "datalith-lmdb"] :reps 100 :warmup-ms 1000 :max-ms 20000
   :out "bench/out"})

(def seed "Of the 10K-entity data." 42)

(def chain-length "Nodes 0..chain-length, :node/next i -> i+1." 1000)

(def n-items 10000)

(def n-groups 100)

(def kinds [:a :b :c :d :e])

(def tracker
  "The planner cases' issue tracker: users, labels, issues, the first
  `:labelled` of them with labels."
  {:users 300 :labels 10 :issues 3000 :labelled 1000})

(def states [:state/open :state/in-progress :state/closed :state/wontfix])

(def ^:private setters
  {"--systems" #(assoc %1 :systems (vec (distinct (harness/split-list %2))))
   "--reps" #(assoc %1 :reps (parse-long %2))
   "--warmup-ms" #(assoc %1 :warmup-ms (parse-long %2))
   "--max-ms" #(assoc %1 :max-ms (parse-long %2))
   "--out" #(assoc %1 :out %2)
   "--ops" #(assoc %1 :ops (re-pattern %2))})

(defn- parse-args [argv] (harness/parse-args defaults setters usage argv))

(defn- log [& xs] (binding [*out* *err*] (apply println xs) (flush)))

;; ---------------------------------------------------------------- data

(def schema
  {:node/id {:db/valueType :db.type/long :db/cardinality :db.cardinality/one
             :db/unique :db.unique/identity}
   :node/next {:db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
   :item/id {:db/valueType :db.type/long :db/cardinality :db.cardinality/one
             :db/unique :db.unique/identity}
   :item/group {:db/valueType :db.type/long :db/cardinality :db.cardinality/one}
   :item/amount {:db/valueType :db.type/long :db/cardinality :db.cardinality/one}
   :item/flag {:db/valueType :db.type/boolean :db/cardinality :db.cardinality/one}
   :item/kind {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/one}
   :user/email {:db/valueType :db.type/string :db/cardinality :db.cardinality/one
                :db/unique :db.unique/identity}
   :label/name {:db/valueType :db.type/string :db/cardinality :db.cardinality/one
                :db/unique :db.unique/identity}
   :issue/title {:db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   :issue/priority {:db/valueType :db.type/long :db/cardinality :db.cardinality/one}
   :issue/state {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/one}
   :issue/assignee {:db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
   :issue/labels {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}})

(defn generate
  "{:edges [[from to] ...] :items [{:id :group :amount :flag :kind} ...]
  :issues [{:priority :state :assignee :labels} ...]}: the chain 0 -> 1 ->
  ... -> chain-length, and n-items items drawn with java.util.Random(seed):
  group uniform in 0..99, amount in 0..999, kind uniform among `kinds`, flag
  true for about half, false for about a tenth and absent for the rest; then,
  drawn with java.util.Random(seed + 1), the tracker's issues: priority 1-5, a state, an assignee (a user index) on
  nine in ten, and 1-3 distinct labels (label indexes) on the first
  `:labelled`."
  []
  (let [rnd (Random. seed)
        ;; the tracker's own stream: the items stay as they were before it
        trnd (Random. (inc seed))]
    {:edges (vec (for [i (range chain-length)] [i (inc i)]))
     :issues (vec (for [i (range (:issues tracker))]
                    (cond-> {:priority (inc (.nextInt trnd 5))
                             :state (states (.nextInt trnd (count states)))}
                      (pos? (.nextInt trnd 10)) (assoc :assignee (.nextInt trnd (:users tracker)))
                      (< i (:labelled tracker))
                      (assoc :labels (set (repeatedly (inc (.nextInt trnd 3))
                                                      #(.nextInt trnd (:labels tracker))))))))
     :items (vec (for [i (range n-items)]
                   (let [group (.nextInt rnd n-groups)
                         amount (.nextInt rnd 1000)
                         kind (kinds (.nextInt rnd (count kinds)))
                         r (.nextInt rnd 10)
                         flag (cond (< r 5) true (< r 6) false :else nil)]
                     (cond-> {:id i :group group :amount amount :kind kind}
                       (some? flag) (assoc :flag flag)))))}))

(defn- datom-count [{:keys [edges items issues]}]
  (+ (inc chain-length) (count edges)
     (reduce + (map #(dec (count %)) items)) (count items)
     (:users tracker) (:labels tracker)
     (reduce + (for [{:keys [assignee labels]} issues]
                 (+ 3 (if assignee 1 0) (count labels))))))

(defn- load!
  "Loads `data` into conn: the nodes, then their edges (by entity id), then
  the items in transactions of 1,000, then the tracker (users and labels, then
  the issues)."
  [conn {:keys [edges items issues]}]
  (let [ids (:tempids (d/transact! conn (for [i (range (inc chain-length))]
                                          {:db/id (str "n" i) :node/id i})))
        eid (fn [i] (get ids (str "n" i)))]
    (d/transact! conn (for [[a b] edges] [:db/add (eid a) :node/next (eid b)]))
    (doseq [batch (partition-all 1000 items)]
      (d/transact! conn (for [{:keys [id group amount kind flag]} batch]
                          (cond-> {:item/id id :item/group group :item/amount amount
                                   :item/kind kind}
                            (some? flag) (assoc :item/flag flag))))))
  (let [ids (:tempids (d/transact! conn (concat
                                          (for [u (range (:users tracker))]
                                            {:db/id (str "u" u) :user/email (str "user" u "@example.com")})
                                          (for [l (range (:labels tracker))]
                                            {:db/id (str "l" l) :label/name (str "label-" l)}))))]
    (doseq [batch (partition-all 1000 (map-indexed vector issues))]
      (d/transact! conn (for [[i {:keys [priority state assignee labels]}] batch]
                          (cond-> {:issue/title (str "issue " i) :issue/priority priority
                                   :issue/state state}
                            assignee (assoc :issue/assignee (ids (str "u" assignee)))
                            (seq labels) (assoc :issue/labels (mapv #(ids (str "l" %)) labels))))))))

;; ---------------------------------------------------------------- expectations

(defn- reach-count
  "How many nodes the edges reach from node s (one hop or more)."
  [edges s]
  (let [succ (reduce (fn [m [a b]] (update m a (fnil conj []) b)) {} edges)]
    (loop [seen #{} todo (succ s)]
      (if-let [[x & more] (seq todo)]
        (if (seen x)
          (recur seen more)
          (recur (conj seen x) (concat more (succ x))))
        (count seen)))))

;; ---------------------------------------------------------------- operations

(def reach-right
  '[[(reach ?a ?b) [?a :node/next ?b]]
    [(reach ?a ?b) [?a :node/next ?x] (reach ?x ?b)]])

(def reach-left
  '[[(reach ?a ?b) [?a :node/next ?b]]
    [(reach ?a ?b) (reach ?a ?x) [?x :node/next ?b]]])

(def reach-query
  '[:find (count ?b) . :in $ % ?s :where [?a :node/id ?s] (reach ?a ?b)])

(def goal-ms 20)

(def n-rows
  "Rows of the 100K-row window operations, given as a relation input [[?i ?g ?amt]]."
  100000)

(defn rows
  "The window operations' 100K rows [i group amount], drawn with java.util.Random(seed + 2)."
  []
  (let [rnd (Random. (+ seed 2))]
    (vec (for [i (range n-rows)] [i (.nextInt rnd 1000) (.nextInt rnd 1000)]))))

(defn- running-sums
  "The sum over `rows` ([_ group amount]) of each row's running sum of amounts in its group,
  ascending, peers (equal amounts) together: what (sum ?amt :over ...) adds up to."
  [rows]
  (reduce + (for [[_ group] (group-by second rows)
                  :let [amounts (sort (map #(nth % 2) group))]
                  a amounts]
              (reduce + (filter #(<= % a) amounts)))))

(defn- rank-sum
  "The sum of each row's rank in its group by amount, descending."
  [rows]
  (reduce + (for [[_ group] (group-by second rows)
                  :let [amounts (map #(nth % 2) group)]
                  a amounts]
              (inc (count (filter #(> % a) amounts))))))

(defn- window-ops
  "The window operations and their plain sort, over `rows` ([i group amount]) read by
  `where` (nil: the rows are the relation input)."
  [size rows where]
  (let [q (fn [find & more]
            (vec (concat [:find] find (if where [:where] '[:in $ [[?e ?g ?amt]]]) where more)))
        inputs (if where [] [rows])
        sorted-amounts (mapv #(nth % 2) (sort-by (juxt second #(nth % 2)) rows))]
    [{:op (str "sort-" size) :what (str "the " size " rows ordered by group and amount")
      :goal-ms nil :query (q '[?e ?g ?amt] :order-by '[?g ?amt]) :inputs inputs
      :normalise #(mapv last %) :expected sorted-amounts}
     {:op (str "running-sum-" size)
      :what (str "each of the " size " rows with its group's running sum of amounts")
      :goal-ms nil :inputs inputs
      :query (q '[?e ?g ?amt (sum ?amt :over {:partition-by [?g] :order-by [?amt]})])
      :normalise #(reduce + (map last %)) :expected (running-sums rows)}
     {:op (str "rank-" size) :what (str "each of the " size " rows with its rank in its group")
      :goal-ms nil :inputs inputs
      :query (q '[?e ?g ?amt (rank :over {:partition-by [?g] :order-by [[?amt :desc]]})])
      :normalise #(reduce + (map last %)) :expected (rank-sum rows)}]))

(defn operations
  "The timed queries: [{:op :what :goal-ms (nil: informative) :query :inputs
  (after the db) :expected (from the data) :normalise (of the raw answer)}]."
  [{:keys [edges items issues]}]
  (let [chain (fn [op what rules from goal]
                {:op op :what what :goal-ms goal :query reach-query :inputs [rules from]
                 :expected (reach-count edges from)})
        with-sum (set (for [[g is] (group-by :group items)] [g (reduce + (map :amount is))]))]
    (concat
     [(chain "chain-100-right" "right-recursive reach, 100 hops from node 900" reach-right
            (- chain-length 100) goal-ms)
     (chain "chain-100-left" "left-recursive reach, 100 hops from node 900" reach-left
            (- chain-length 100) goal-ms)
     (chain "chain-1000-right" "right-recursive reach, 1000 hops from node 0" reach-right 0 nil)
     (chain "chain-1000-left" "left-recursive reach, 1000 hops from node 0" reach-left 0 nil)
     {:op "not" :what "count of the 10K items without :item/flag true" :goal-ms goal-ms
      :query '[:find (count ?e) . :where [?e :item/id] (not [?e :item/flag true])]
      :expected (count (remove #(true? (:flag %)) items))}
     {:op "not-join" :what "count of the items that are not (kind :a and flagged)" :goal-ms goal-ms
      :query '[:find (count ?e) . :where [?e :item/id]
               (not-join [?e] [?e :item/kind :a] [?e :item/flag true])]
      :expected (count (remove #(and (= :a (:kind %)) (true? (:flag %))) items))}
     {:op "or" :what "count of the items of kind :a or :b" :goal-ms goal-ms
      :query '[:find (count ?e) . :where (or [?e :item/kind :a] [?e :item/kind :b])]
      :expected (count (filter #(#{:a :b} (:kind %)) items))}
     {:op "with-sum" :what "sum of :item/amount per group (100 groups) :with ?e" :goal-ms goal-ms
      :query '[:find ?g (sum ?amt) :with ?e :where [?e :item/group ?g] [?e :item/amount ?amt]]
      :normalise #(set (map vec %))
      :expected with-sum}
     {:op "blanks-repeated" :what "labels of the 1,000 labelled issues, the pattern on blanks thrice"
      :goal-ms goal-ms
      :query '[:find ?l :where [_ :issue/labels ?l] [_ :issue/labels ?l] [_ :issue/labels ?l]]
      :normalise count
      :expected (count (into #{} (mapcat :labels) issues))}
     {:op "fn-binds-join" :what "assignees, bound by get-else, then joined by a pattern"
      :goal-ms goal-ms
      :query '[:find ?u :where [?i :issue/title ?t] [(get-else $ ?i :issue/assignee -1) ?u]
               [?j :issue/assignee ?u]]
      :normalise count
      :expected (count (into #{} (keep :assignee) issues))}
     {:op "fn-binds-join-get-some" :what "the same with get-some" :goal-ms goal-ms
      :query '[:find ?u :where [?i :issue/title ?t] [(get-some $ ?i :issue/assignee) [_ ?u]]
               [?j :issue/assignee ?u]]
      :normalise count
      :expected (count (into #{} (keep :assignee) issues))}
     {:op "disconnected-groups"
      :what "issues of priority 4, beside open issues met only through a not-join"
      :goal-ms goal-ms
      :query '[:find (count-distinct ?i3) . :in $ ?n ?k
               :where [?i3 :issue/priority ?n] [?i4 :issue/state ?k]
               (not-join [?k ?n] [(identity ?k) ?x] [(< ?n 5)])]
      :inputs [4 :state/open]
      :expected nil}]
     (window-ops "10k" (mapv (juxt :id :group :amount) items)
                 '[[?e :item/group ?g] [?e :item/amount ?amt]])
     (window-ops "100k" (rows) nil))))

;; ---------------------------------------------------------------- systems

(defn- temp-dir ^File []
  (.toFile (Files/createTempDirectory "datalith-synthetic" (make-array FileAttribute 0))))

(defn- open-system
  "{:name :conn :dir} of a fresh, empty database."
  [sys-name]
  (case sys-name
    "datalith-mem" {:name sys-name :conn (d/connect :mem {:schema schema})}
    "datalith-lmdb" (let [dir (temp-dir)]
                      {:name sys-name :dir dir
                       :conn (d/connect (.getPath dir) {:schema schema})})
    (throw (ex-info (str "Unknown system " sys-name "\n" usage) {}))))

(defn- close-system [{:keys [^Conn conn dir]}]
  (try (some-> conn .close)
       (finally (some-> dir system/delete-tree))))

(defn- run-op [db {:keys [query inputs]}]
  (apply d/q query db inputs))

(defn- check!
  "Throws unless `db` answers every operation as the data says."
  [sys-name db ops]
  (doseq [{:keys [op expected normalise] :as o} ops
          :let [got ((or normalise identity) (run-op db o))]]
    (when (not= expected got)
      (throw (ex-info (str "MISMATCH: " sys-name " " op ": expected " (pr-str expected)
                           ", got " (pr-str got))
                      {:system sys-name :op op})))))

;; ---------------------------------------------------------------- report

(def ^:private csv-columns
  [:system :op :p50_ms :p95_ms :p99_ms :ops_per_s :n :goal_ms :met])

(defn- met
  "The verdict on a goal: the median, as the issue-tracker benchmark's goals are read."
  [{:keys [goal-ms p50-ms]}]
  (cond (nil? goal-ms) "-" (<= (double p50-ms) (double goal-ms)) "met" :else "missed"))

(defn- fmt-ms [x]
  (let [x (double x)]
    (cond (< x 0.1) (format "%.3f" x) (< x 10) (format "%.2f" x) (< x 1000) (format "%.1f" x)
          :else (format "%,.0f" x))))

(defn- table
  "The markdown table of result rows."
  [rows]
  (str/join "\n"
            (concat ["| op | system | p50 ms | p99 ms | goal | p50 within goal |"
                     "|---|---|---:|---:|---:|---|"]
                    (for [r rows]
                      (format "| %s | %s | %s | %s | %s | %s |" (:op r) (:system r)
                              (fmt-ms (:p50-ms r)) (fmt-ms (:p99-ms r))
                              (if (:goal-ms r) (str "< " (:goal-ms r) " ms") "-")
                              (met r))))))

(defn- write-csv! [^File f rows]
  (io/make-parents f)
  (spit f (str (str/join "\n"
                         (cons (str/join "," (map name csv-columns))
                               (for [r rows]
                                 (str/join "," [(:system r) (:op r)
                                                (format "%.4f" (double (:p50-ms r)))
                                                (format "%.4f" (double (:p95-ms r)))
                                                (format "%.4f" (double (:p99-ms r)))
                                                (format "%.1f" (double (:ops-per-s r)))
                                                (:n r) (or (:goal-ms r) "") (met r)]))))
               "\n")))

(defn- load-average
  "The system load average over the last minute (negative when unknown)."
  ^double []
  (.getSystemLoadAverage (ManagementFactory/getOperatingSystemMXBean)))

(defn- report-md [{:keys [command machine date datoms ops rows opts load-before load-after]}]
  (str "# Synthetic query-engine benchmark\n\n"
       "Command: `" command "`  \n"
       "Machine: " machine "  \n"
       (format "Load average (1 min): %.2f before the run, %.2f after  \n"
               (double load-before) (double load-after))
       "Date: " date "\n\n"
       "The goals of the query-engine issue: a 100-hop recursive chain, and `not`, `or` and a "
       "grouped `:with` sum over 10K entities, each under " goal-ms " ms. An op meets its goal "
       "when its median (p50) is within it, as the issue-tracker benchmark reads its goals; the "
       "1000-hop chains have no goal (informative).\n\n"
       (format "Data: %,d datoms: a chain of %,d nodes (`:node/id`, `:node/next`) and %,d items "
               datoms (inc chain-length) n-items)
       "(`:item/id`, `:item/group` in " n-groups " groups, `:item/amount`, `:item/kind` among "
       (str/join " " kinds) ", `:item/flag` on about 60% of them), java.util.Random seed " seed
       (format "; and an issue tracker of %,d users, %,d labels and %,d issues (%,d of them labelled) "
               (:users tracker) (:labels tracker) (:issues tracker) (:labelled tracker))
       "for the planner's cases. Each answer was checked against the one computed from the "
       "data before timing.\n\n"
       "Each query: " (:warmup-ms opts) " ms of untimed calls, then up to " (:reps opts)
       " timed calls (stopping after " (:max-ms opts) " ms, but not before 10); "
       "nearest-rank percentiles of those times.\n\n"
       (table rows) "\n\n"
       "| op | query |\n|---|---|\n"
       (str/join "\n" (for [{:keys [op what query inputs]} ops]
                        (str "| " op " | " what ": `" (pr-str query) "`"
                             (cond
                               (empty? inputs) nil
                               ;; the window ops' rows: a relation input, too long to print
                               (and (vector? (first inputs)) (< 20 (count (first inputs))))
                               (format " with its %,d rows as the relation input"
                                       (count (first inputs)))
                               :else
                               (str " with " (if (vector? (first inputs)) "rules " "inputs ") "`"
                                    (pr-str (if (vector? (first inputs)) (first inputs) inputs))
                                    "`"))
                             " |")))
       "\n"))

;; ---------------------------------------------------------------- main

(defn- launcher
  "How this JVM was started: Leiningen sets the system property datalith.version."
  []
  (if (System/getProperty "datalith.version")
    "lein bench-synthetic"
    "clojure -M:bench:bench-synthetic"))

(defn run-all!
  "Loads the data into every system, checks every answer, times every query.
  Returns the result rows (op-major, systems side by side)."
  [opts data ops]
  (let [systems (atom [])]
    (try
      (doseq [sys-name (:systems opts)]
        (let [s (open-system sys-name)
              _ (swap! systems conj s)
              t0 (System/nanoTime)
              _ (load! (:conn s) data)
              db (d/db (:conn s))]
          (log (format "  %-14s loaded in %.0f ms" sys-name (/ (- (System/nanoTime) t0) 1e6)))
          (check! sys-name db ops)
          (log (format "  %-14s every answer checked (%d queries)" sys-name (count ops)))
          (swap! systems update (dec (count @systems)) assoc :db db)))
      (System/gc)
      (vec (for [{:keys [op goal-ms] :as o} ops
                 {sys-name :name db :db} @systems]
             (let [st (harness/measure (fn [_] (run-op db o)) [nil] opts)
                   r (assoc st :system sys-name :op op :goal-ms goal-ms)]
               (log (format "  %-14s %-18s p50 %10.4f ms  p99 %10.4f ms  (n=%d) %s"
                            sys-name op (double (:p50-ms r)) (double (:p99-ms r)) (:n r) (met r)))
               r)))
      (finally
        (doseq [s @systems]
          (try (close-system s)
               (catch Exception e (log "closing" (:name s) "failed:" (ex-message e)))))))))

(defn -main [& argv]
  (try
    (let [opts (parse-args argv)
          out (io/file (:out opts))
          load-before (load-average)
          _ (log "=== synthetic data (seed" seed ")")
          data (generate)
          datoms (datom-count data)
          ops (cond->> (operations data)
                (:ops opts) (filterv #(re-find (:ops opts) (:op %))))
          rows (run-all! opts data ops)
          md (report-md {:command (str/join " " (cons (launcher) argv))
                         :machine (harness/machine) :date (str (Instant/now))
                         :datoms datoms :ops ops :rows rows :opts opts
                         :load-before load-before :load-after (load-average)})]
      (.mkdirs out)
      (spit (io/file out "synthetic.md") md)
      (write-csv! (io/file out "synthetic.csv") rows)
      (println md)
      (log (str "wrote " (io/file out "synthetic.md") " and " (io/file out "synthetic.csv")))
      (shutdown-agents)
      (System/exit 0))
    (catch Throwable e
      (log (str "bench-synthetic FAILED: " (or (ex-message e) e)))
      (when-not (instance? clojure.lang.ExceptionInfo e) (.printStackTrace e))
      (shutdown-agents)
      (System/exit 1))))
