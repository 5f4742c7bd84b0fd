(ns datalith.bench.valid-time
  "`lein with-profile +bench run -m datalith.bench.valid-time`: the cost of valid
  time (#19), in thread CPU time (ThreadMXBean) per call, the variants of each
  comparison interleaved call by call so that the machine's load hits them alike.

    lein with-profile +bench run -m datalith.bench.valid-time --scale 100k --reps 200

  On the issue tracker of `--scale` (datalith.workload, LMDB):
    q2 / valid-at-q2       Q2 on the db, and on (valid-at db now), the view made in
                           the call: the store has no valid-time events yet
    q2 / valid-at-q2-corr  the same after --corrections interval corrections of
                           :issue/state and :issue/assignee (1,000 per transaction)
    q3-corrected-past      Q3 (issues per state) on (valid-at db 2020-06-01) over them,
                           and on (as-of db 2020-06-01), the as-of point that view reads at
  Every valid-at answer is checked against the plain one where they must agree."
  (:require [datalith.core :as d]
            [datalith.workload :as w])
  (:import (java.lang.management ManagementFactory)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)
           (java.util Date Random)))

(set! *warn-on-reflection* true)

(defn- cpu-ns ^long []
  (.getCurrentThreadCpuTime (ManagementFactory/getThreadMXBean)))

(defn- timed
  "Runs each of `fs` (no-argument fns) `reps` times, interleaved; returns per fn
  {:p50-ms :p95-ms} of thread CPU time."
  [reps fs]
  (let [samples (reduce (fn [acc _]
                          (mapv (fn [xs f] (let [t0 (cpu-ns)] (f) (conj xs (- (cpu-ns) t0))))
                                acc fs))
                        (vec (repeat (count fs) [])) (range reps))]
    (mapv (fn [xs] (let [s (vec (sort xs)) n (count s)]
                     {:p50-ms (/ (s (quot n 2)) 1e6) :p95-ms (/ (s (min (dec n) (quot (* 95 n) 100))) 1e6)}))
          samples)))

(defn- report [label [a b]]
  (println (format "%-28s p50 %8.3f ms  p95 %8.3f ms | p50 %8.3f ms  p95 %8.3f ms | ratio %.2f"
                   label (:p50-ms a) (:p95-ms a) (:p50-ms b) (:p95-ms b)
                   (/ (:p50-ms b) (max 1e-9 (:p50-ms a))))))

(defn- corrections
  "n interval corrections of random issues' state or assignee, in transactions of 1,000."
  [conn ids data n]
  (let [rnd (Random. 7)
        n-issues (count (:issues data))
        n-users (count (:users data))
        day (* 24 3600 1000)
        base (.getTime #inst "2020-01-01")]
    (doseq [batch (partition-all 1000 (range n))]
      (d/transact! conn
                   (vec (for [_ batch
                              :let [i (get ids (w/issue-tempid (.nextInt rnd (int n-issues))))
                                    from (+ base (* day (.nextInt rnd 700)))
                                    iv {:db/valid-from (Date. (long from))
                                        :db/valid-to (Date. (long (+ from (* day (inc (.nextInt rnd 90))))))}]]
                          (if (.nextBoolean rnd)
                            [:db/add i :issue/state (rand-nth [:state/open :state/closed]) iv]
                            [:db/add i :issue/assignee
                             (get ids (w/user-tempid (.nextInt rnd (int n-users)))) iv])))))))

(defn -main [& argv]
  (let [{:strs [--scale --reps --corrections]} (apply hash-map argv)
        scale (keyword (or --scale "100k"))
        reps (parse-long (or --reps "200"))
        n-corr (parse-long (or --corrections "20000"))
        data (w/generate scale)
        dir (.toFile (Files/createTempDirectory "datalith-valid" (make-array FileAttribute 0)))
        conn (d/connect (.getPath dir) {:schema w/schema})
        {:keys [ids]} (w/load! data {:transact (fn [tx] (let [r (d/transact! conn tx)]
                                                         {:t (d/basis-t (:db-after r))
                                                          :tempids (:tempids r)}))})
        emails (mapv :email (take 20 (:users data)))
        pick (let [i (atom 0)] #(emails (mod (swap! i inc) (count emails))))]
    (try
      (println "scale" (name scale) "reps" reps "corrections" n-corr)
      (let [db (d/db conn)
            before db
            now (Date.)]
        (doseq [e emails]
          (assert (= (d/q w/q2 db e) (d/q w/q2 (d/valid-at db now) e))))
        (report "q2 | valid-at-q2 (no events)"
                (timed reps [#(d/q w/q2 db (pick)) #(d/q w/q2 (d/valid-at db now) (pick))])))
      (corrections conn ids data n-corr)
      (let [before (d/as-of (d/db conn) (- (d/basis-t (d/db conn)) (quot (+ n-corr 999) 1000)))
            db (d/db conn)
            later (Date. (+ (System/currentTimeMillis) 1000))]
        (doseq [e emails]
          (assert (= (d/q w/q2 before e) (d/q w/q2 (d/valid-at db later) e))
                  "the corrections lie in 2020-2021: now, the facts before them"))
        (report (str "q2 | valid-at-q2 (" n-corr " corr.)")
                (timed reps [#(d/q w/q2 db (pick)) #(d/q w/q2 (d/valid-at db later) (pick))]))
        (let [past #inst "2020-06-01"
              [plain as-of valid] (timed (max 5 (quot reps 20))
                                         [#(d/q w/q3 db) #(d/q w/q3 (d/as-of db past))
                                          #(d/q w/q3 (d/valid-at db past))])]
          (report "q3 | q3 valid-at 2020-06-01" [plain valid])
          (report "q3 | q3 as-of 2020-06-01" [plain as-of])
          (report "q3 as-of | valid-at, same t" [as-of valid])))
      (finally
        (d/close conn)
        (doseq [f (reverse (file-seq dir))] (.delete ^java.io.File f))))))
