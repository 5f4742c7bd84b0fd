(ns ^:no-doc datalith.progress
  "A one-line text progress bar on stderr, for the CLI and the benchmarks.")

(set! *warn-on-reflection* true)

(def ^:private width 30)

(defn- render [label unit done total start-ns]
  (let [secs (/ (- (System/nanoTime) (long start-ns)) 1e9)
        frac (if (pos? total) (min 1.0 (/ (double done) total)) 1.0)
        filled (long (* frac width))]
    (format "\r%s [%s%s] %3d%% %,d/%,d %s  %,.0f %s/s  %.1f s"
            label
            (apply str (repeat filled "#"))
            (apply str (repeat (- width filled) "."))
            (long (* 100 frac)) done total unit
            (if (pos? secs) (/ done secs) 0.0) unit
            secs)))

(defn bar
  "A progress function (fn [done total]) that redraws the bar on stderr at
  most ten times a second, and on completion (done = total) ends the line.
  `unit` names what is counted (default \"datoms\")."
  ([label] (bar label "datoms"))
  ([label unit]
   (let [start (System/nanoTime)
         last-draw (volatile! 0)]
     (fn [done total]
       (let [now (System/nanoTime)
             finished? (>= (long done) (long total))]
         (when (or finished? (> (- now (long @last-draw)) 100000000))
           (vreset! last-draw now)
           (binding [*out* *err*]
             (print (render label unit done total start))
             (when finished? (println))
             (flush))))))))
