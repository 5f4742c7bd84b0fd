(ns datalith.kill-harness
  "The kill -9 harness (issue #13): a child JVM (datalith.kill-child) streams transactions
  against an LMDB directory and writes each acknowledged t to a file (not a pipe: the last
  lines a killed child wrote to a pipe were seen lost); the parent kills it with SIGKILL
  (Process.destroyForcibly) at a random moment (now and then before its database is even
  open), reopens the directory and checks it, then starts the next life on the same
  directory. Lives take turns: durable commits as `d/connect` makes them (with write-behind
  since stop 38: laid in memory and written back into LMDB by a thread), durable commits
  without write-behind (each LMDB's own commit), durable commits with write-behind written
  back every 20 commits or 5 ms, and {:sync false}, which risks only
  operating-system crashes: a killed process loses nothing acknowledged in either mode.

  After each kill:
  - every acknowledged transaction is there, whole: the log's record of its t holds exactly
    the datoms transact! returned; at most one more transaction (committed, not yet
    acknowledged) follows them, and it too is whole (d/verify checks it against the indexes)
  - d/verify: the log's t without gaps, every index, the history, BLOBS and META agree
  - the model (the acknowledged datoms, and the log's for the transactions nobody
    acknowledged: bootstrap, schema installs, a last commit) replayed gives EAVT, its union
    is the history view, and replayed to sampled t it gives as-of t

  With :threads n (issue #17), each child streams from n threads at once, so that its
  transactions commit in groups; up to n committed transactions may then be unacknowledged
  at the kill (each thread's one in flight), and acknowledgements come in any order.

  Long runs: `lein kill-test 2000 [PER-DIR [PAGE-SIZE]]` (or `clojure -M:test:kill-test 2000`
  after build/compile): PER-DIR lives share a directory before the next one starts fresh
  (default 100), so that the checks stay quick; PAGE-SIZE (16384: Apple silicon's) gives every
  directory a database of pages of that size to start from."
  (:require [clojure.edn :as edn]
            [clojure.string :as str]
            [datalith.child-jvm :as child]
            [datalith.core :as d]
            [datalith.test-util :as tu])
  (:import (java.io File)
           (java.util Random)))

(def ^:private ready-timeout-s 120)
(def ^:private sigkill-exit 137)

(defn- parse-lines
  "{:ready t-or-nil :acks {t datoms} :errs [refused transactions' messages] :other [lines not
  of the protocol]} of a child's output."
  [lines]
  (reduce (fn [m ^String l]
            (cond
              (str/starts-with? l "ready ") (assoc m :ready (parse-long (subs l 6)))
              (str/starts-with? l "ack ")
              (let [i (str/index-of l " " 4)]
                (assoc-in m [:acks (parse-long (subs l 4 i))]
                          (set (edn/read-string (subs l (inc i))))))
              (str/starts-with? l "err ") (update m :errs conj (subs l 4))
              :else (update m :other conj l)))
          {:ready nil :acks (sorted-map) :errs [] :other []}
          lines))

(defn- complete-lines
  "The lines of file f that end with a newline."
  [^File f]
  (let [s (if (.exists f) (slurp f) "")
        lines (str/split-lines s)]
    (if (str/ends-with? s "\n") lines (vec (butlast lines)))))

(defn- await-line
  "Polls the child's output file until a line starts with `prefix`, the child ends, or time
  runs out."
  [^Process p ^File out seed prefix]
  (let [deadline (+ (System/currentTimeMillis) (* 1000 ready-timeout-s))]
    (loop []
      (cond
        (some #(str/starts-with? % prefix) (complete-lines out)) nil
        (not (.isAlive p)) nil
        (> (System/currentTimeMillis) deadline)
        (do (.destroyForcibly p)
            (throw (ex-info (str "The kill child wrote no " (str/trim prefix) " line") {:seed seed})))
        :else (do (Thread/sleep 5) (recur))))))

(defn- run-life
  "Starts a child on dir and kills it at a random moment (with threads > 1, after its first
  acknowledgement, so that groups are in flight): {:ready :acks :errs :exit :early?}."
  [^File dir ^File work seed sync threads ^Random rnd]
  (let [out (File. work (str "life-" seed ".out"))
        p (-> (ProcessBuilder. ^java.util.List
               (vec (child/command work "datalith.kill-child" dir seed sync out threads)))
              (.redirectOutput (File. work "child.out"))
              (.redirectError (File. work "child.err"))
              (.start))
        early? (< (.nextDouble rnd) 0.15)]
    (if early?
      (Thread/sleep (long (.nextInt rnd 1500)))
      (do (await-line p out seed "ready ")
          (when (> threads 1)
            (await-line p out seed "ack "))
          (Thread/sleep (long (+ 20 (.nextInt rnd 400))))))
    (.destroyForcibly p)
    (let [exit (.waitFor p)
          lines (complete-lines out)]
      (.delete out)
      (assoc (parse-lines lines) :exit exit :early? early?
             :crash (when (not= sigkill-exit exit)
                      (assoc (child/crash-frame work) :stderr (slurp (File. work "child.err"))))))))

(defn- datom-vec [x] [(:e x) (:a x) (:v x) (:tx x) (:added x)])

(defn- log-datoms [db t]
  (set (map datom-vec (:data (first (d/tx-range db t (inc t)))))))

(defn- replay
  "The current datoms [e a v tx] after the model's first n transactions."
  [model n]
  (set (map (fn [[eav tx]] (conj eav tx))
            (reduce (fn [state datoms]
                      (reduce (fn [s [e a v tx added]]
                                (if added (assoc s [e a v] tx) (dissoc s [e a v])))
                              state
                              ;; retractions first: a datom retracted and asserted anew in one
                              ;; transaction is current after it
                              (sort-by #(if (nth % 4) 1 0) datoms)))
                    {}
                    (subvec model 0 n)))))

(defn- check-life
  "Reopens dir after a life and checks it against the model (a vector: t -> datoms), the
  child having streamed from `threads` threads; returns {:model :failures :unacked?}."
  [^File dir model threads {:keys [acks ready errs]} ^Random rnd]
  (with-open [conn (d/connect (.getPath dir))]
    (let [db (d/db conn)
          basis (d/basis-t db)
          last-ack (if (seq acks) (key (last acks)) -1)
          ;; the last t anyone saw: the model's, the child's at ready (or the bootstrap's, t 0,
          ;; which a child killed before ready may have committed), its last acknowledged one
          known (max (dec (count model)) (or ready 0) last-ack)
          failures (transient [])
          fail! (fn [check data] (conj! failures (assoc data :check check)))]
      (when (< basis last-ack)
        (fail! :acknowledged-lost {:basis-t basis :last-ack last-ack}))
      (when (> basis (+ known threads))
        (fail! :too-many-unacknowledged {:basis-t basis :known-t known :ready ready
                                          :acks (vec (keys acks)) :errs errs}))
      (doseq [[t datoms] acks
              :when (<= t basis)
              :let [logged (log-datoms db t)]
              :when (not= datoms logged)]
        (fail! :acknowledged-not-whole {:t t :acked datoms :logged logged}))
      (let [model (into model (for [t (range (count model) (inc basis))]
                                (vec (get acks t (log-datoms db t)))))
            report (d/verify conn)]
        (when-not (:ok? report)
          (fail! :verify {:problems (:problems report)}))
        (when (not= (replay model (count model))
                    (set (map (comp pop datom-vec) (d/datoms db :eavt))))
          (fail! :eavt-is-not-the-replay {:basis-t basis}))
        (when (not= (set (mapcat identity model))
                    (set (map datom-vec (d/datoms (d/history db) :eavt))))
          (fail! :history-is-not-the-log {:basis-t basis}))
        (doseq [t (repeatedly 3 #(.nextInt rnd (inc basis)))]
          (when (not= (replay model (inc t))
                      (set (map (comp pop datom-vec) (d/datoms (d/as-of db t) :eavt))))
            (fail! :as-of-is-not-the-replay {:t t})))
        {:model model
         :unacked? (> basis known)
         :failures (persistent! failures)}))))

(def modes
  "How the lives commit, in turn (the child's SYNC argument): durable (write-behind, the
  default), durable without write-behind, durable with write-backs every few commits,
  {:sync false}."
  ["true" "through" "behind" "false"])

(defn run
  "Runs `lives` lives (each: start, kill -9, reopen, check), `per-dir` to a directory (of
  pages of `psize` bytes, 4096 by default); `progress` is called with each life's summary.
  Returns the totals:
  {:kills :by-mode {mode n} :acks :early :unacked-commits :max-t :failures :seconds}, the
  modes those of `modes`."
  [{:keys [lives per-dir seed threads progress psize]
    :or {per-dir 100 seed 1 threads 1 progress (fn [_]) psize 4096}}]
  (let [rnd (Random. seed)
        work (tu/temp-dir)
        t0 (System/nanoTime)]
    (try
      (loop [i 0, dir nil, model [], totals {:kills 0 :by-mode (zipmap modes (repeat 0)) :acks 0
                                            :early 0
                                            :unacked-commits 0 :max-t 0 :failures []}]
        (if (= i lives)
          (do (some-> dir tu/delete-tree)
              (assoc totals :seconds (/ (- (System/nanoTime) t0) 1e9)))
          (let [fresh? (zero? (mod i per-dir))
                _ (when (and fresh? dir) (tu/delete-tree dir))
                dir (if fresh? (tu/store-dir psize) dir)
                model (if fresh? [] model)
                sync (nth modes (mod i (count modes)))
                out (run-life dir work (+ (* 1000 seed) i) sync threads rnd)
                {:keys [model failures unacked?]}
                (try (check-life dir model threads out rnd)
                     (catch Exception e ; a directory that cannot be read: the next life starts anew
                       {:model [] :failures [{:check :reopen :error (str e)}]}))
                failures (cond-> failures
                           (:crash out) (conj {:check :child-died :exit (:exit out)
                                               :crash (:crash out)})
                           (seq (:other out)) (conj {:check :child-said :lines (:other out)}))
                summary {:life i :sync sync :early? (:early? out) :acks (count (:acks out))
                         :t (dec (count model)) :failures failures}]
            (progress summary)
            (recur (inc i) dir model
                   (-> totals
                       (update :kills inc)
                       (update-in [:by-mode sync] inc)
                       (update :acks + (count (:acks out)))
                       (update :early + (if (:early? out) 1 0))
                       (update :unacked-commits + (if unacked? 1 0))
                       (update :max-t max (dec (count model)))
                       (update :failures into (map #(assoc % :life i) failures)))))))
      (finally (tu/delete-tree work)))))

(defn -main
  "lein kill-test LIVES [PER-DIR [PAGE-SIZE]]: prints a line per 100 lives and the totals;
  exits 1 when a check failed. PAGE-SIZE (default 4096): the stores' pages (see run)."
  [& [lives per-dir psize]]
  (let [lives (parse-long (or lives "2000"))
        per-dir (parse-long (or per-dir "100"))
        totals (run {:lives lives :per-dir per-dir :seed 1 :psize (parse-long (or psize "4096"))
                     :progress (fn [{:keys [life failures] :as s}]
                                 (when (or (seq failures) (zero? (mod (inc life) 100)))
                                   (println (pr-str s))
                                   (flush)))})]
    (println (pr-str (update totals :failures #(take 10 %))))
    (shutdown-agents)
    (System/exit (if (empty? (:failures totals)) 0 1))))
