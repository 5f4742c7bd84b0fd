(ns datalith.bench.q2-gap
  "Why Q2 times differently in `lein bench` and in q2-profile (issue #17): on
  the LMDB database q2-profile keeps (--dir), times Q2's three forms of the
  bench (q2-ref on the db, as-of-q2 on the as-of view at the middle of the
  load, valid-at-q2 on a valid-at view made in the call) with the bench's own
  arguments and harness (`harness/measure`, the bench's default warm-up, --reps
  timed calls), each form also on the other forms' emails, then again after
  every form has run for a while (JIT warm), and prints d/explain of each form.

    lein with-profile +bench run -m datalith.bench.q2-gap --dir DIR [--reps 50]
      [--rounds 2] [--order ref,as-of,valid-at] [--curve SECONDS]
      [--steady-windows N --steady-window-ms MS]   (harness/measure's steady warm-up)"
  (:require [clojure.string :as str]
            [datalith.bench.harness :as harness]
            [datalith.bench.ops :as ops]
            [datalith.core :as d]
            [datalith.workload :as w])
  (:import (java.lang.management ManagementFactory)
           (java.util Date)))

(set! *warn-on-reflection* true)

(defn- cpu-ns ^long [] (.getCurrentThreadCpuTime (ManagementFactory/getThreadMXBean)))

(defn- bench-args
  "The bench's arguments of each read at `scale` (ops/args needs only the counts)."
  [scale]
  (let [{:keys [users issues]} (w/scales scale)]
    (ops/args {:users (vec (repeat users nil)) :issues (vec (repeat issues nil))})))

(defn- as-of-t
  "The bench's as-of point on a database loaded by w/load! in batches of 1000: the t
  after the middle issue batch (one t per transaction, the 10 updates last)."
  [db scale]
  (let [batches (long (Math/ceil (/ (:issues (w/scales scale)) 1000.0)))]
    (- (d/basis-t db) 10 (- batches (max 1 (quot batches 2))))))

(defn- timed
  "harness/measure of (f arg) over args with the bench's defaults and `reps`, plus
  this thread's CPU per call over the whole measure (warm-up included)."
  [f args reps steady]
  (let [c0 (cpu-ns)
        st (harness/measure f args (merge {:warmup-ms 1000 :warmup-calls 300 :max-warmup-ms 20000
                                           :reps reps :max-ms 20000}
                                          steady))]
    (assoc st :cpu-us-per-call-incl-warmup (/ (- (cpu-ns) c0) 1e3))))

(defn- parse-args [args]
  (reduce (fn [m [k v]] (assoc m (keyword (subs k 2)) v)) {} (partition 2 args)))

(defn -main [& argv]
  (let [{:keys [dir reps rounds order scale steady-windows steady-window-ms]
         :or {reps "50" rounds "2" order "ref,as-of,valid-at" scale "1m"}} (parse-args argv)
        steady (when steady-windows
                 {:steady-windows (parse-long steady-windows)
                  :steady-window-ms (parse-long steady-window-ms)})
        scale-k (keyword scale)
        reps (parse-long reps)
        args (bench-args scale-k)
        conn (d/connect dir {})
        db (d/db conn)
        t (as-of-t db scale-k)
        as-of (d/as-of db t)
        instant (Date.)
        forms {"ref" #(d/q w/q2 db %)
               "as-of" #(d/q w/q2 as-of %)
               "valid-at" #(d/q w/q2 (d/valid-at db instant) %)}
        emails {"ref" (:q2-ref args) "as-of" (:as-of-q2 args) "valid-at" (:valid-at-q2 args)}
        rows (fn [f es] (/ (reduce + (map #(count (f %)) es)) (double (count es))))]
    (println "uptime:" (str/trim (slurp (.getInputStream (.exec (Runtime/getRuntime) "uptime")))))
    (println "basis-t" (d/basis-t db) "as-of-t" t
             "max issue # in as-of view"
             (reduce max (for [e (:as-of-q2 args) [_ title] (d/q w/q2 as-of e)]
                           (parse-long (second (re-find #"\(#(\d+)\)" title))))))
    (when-let [secs (:curve (parse-args argv))]
      ;; from cold: the median of each window of 250 ms of q2-ref calls
      (let [es (:q2-ref args) end (+ (System/nanoTime) (* (parse-long secs) 1000000000))]
        (loop [i 0 w 0]
          ;; i: calls so far
          (when (< (System/nanoTime) end)
            (let [w-end (+ (System/nanoTime) 250000000)
                  times (java.util.ArrayList.)
                  i (loop [i (long i)]
                      (if (< (System/nanoTime) w-end)
                        (let [t0 (System/nanoTime)]
                          (d/q w/q2 db (es (mod i (count es))))
                          (.add times (- (System/nanoTime) t0))
                          (recur (inc i)))
                        i))
                  sorted (sort times)]
              (println (format "window %2d calls %6d median %.3f ms" w i
                               (/ (nth sorted (quot (count sorted) 2)) 1e6)))
              (recur (long i) (inc w)))))))
    (doseq [r (range (parse-long rounds))
            form (str/split order #",")
            es ["ref" "as-of"]]
      (let [f (forms form)
            st (timed f (emails es) reps steady)]
        (println (format "round %d %-8s on %-5s emails (%.1f rows): p50 %.3f ms p95 %.3f ms n=%d; thread CPU of the measure %.0f ms"
                         r form es (rows f (emails es)) (double (:p50-ms st)) (double (:p95-ms st))
                         (:n st) (/ (:cpu-us-per-call-incl-warmup st) 1e3)))))
    (doseq [[form f-db] {"ref" db "as-of" as-of "valid-at" (d/valid-at db instant)}]
      (println form (pr-str (map (juxt :clause :method :rows :index) (:clauses (d/explain w/q2 f-db (first (:q2-ref args))))))))
    (d/close conn)
    (shutdown-agents)))
