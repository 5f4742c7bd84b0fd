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

(defn- eta [^double frac ^double secs]
  (if (and (pos? frac) (< frac 1.0))
    (format "ETA %.0f s" (* secs (/ (- 1.0 frac) frac)))
    ""))

(defn import-line
  "A progress function for `d/import!`'s :progress: redraws one line on stderr
  (datoms, datoms/s, the share of the source read and the time left, judged
  from it) at most ten times a second. `read-fraction` is a function giving
  the share of the source read so far, 0.0 to 1.0. Call the returned function
  with no argument to end the line."
  [label read-fraction]
  (let [last-draw (volatile! 0)
        draw (fn [{:keys [datoms elapsed-ms]}]
               (let [secs (/ (double elapsed-ms) 1000.0)
                     frac (double (read-fraction))]
                 (binding [*out* *err*]
                   (print (format "\r%s %,d datoms  %,.0f datoms/s  %3d%%  %s   " label datoms
                                  (if (pos? secs) (/ datoms secs) 0.0) (long (* 100 frac))
                                  (eta frac secs)))
                   (flush))))
        last-seen (volatile! nil)]
    (fn
      ([] (when-let [p @last-seen]
            (draw p)
            (binding [*out* *err*] (println))))
      ([p]
       (vreset! last-seen p)
       (let [now (System/nanoTime)]
         (when (> (- now (long @last-draw)) 100000000)
           (vreset! last-draw now)
           (draw p)))
       nil))))
