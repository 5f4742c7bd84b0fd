(ns datalith.bench.harness
  "The timing harness: warm-up, then many timed repetitions, percentiles over
  the repetitions; and the same for several threads at once. Also the line
  describing the machine that the reports carry."
  (:require [clojure.string :as str])
  (:import (java.lang.management ManagementFactory)
           (java.nio.file Files Paths)
           (java.util Arrays Random)
           (java.util.concurrent CountDownLatch)
           (java.util.concurrent.atomic AtomicBoolean)))

(set! *warn-on-reflection* true)

(def ^:private sink (volatile! nil)) ; results land here, so no call is dead code

(defn- percentile-ms
  "Nearest-rank percentile p (0-100) of sorted nanosecond timings, in ms."
  [^longs sorted p]
  (let [n (alength sorted)
        rank (max 1 (long (Math/ceil (* n (/ p 100.0)))))]
    (/ (aget sorted (dec (min n rank))) 1e6)))

(defn stats
  "{:p50-ms :p95-ms :p99-ms :ops-per-s :n} of `n` timings (ns) in `times`
  taken in `elapsed-ns` of wall time (ops-per-s = n / elapsed)."
  [^longs times n elapsed-ns]
  (let [sorted (Arrays/copyOf times (int n))]
    (Arrays/sort sorted)
    {:p50-ms (percentile-ms sorted 50)
     :p95-ms (percentile-ms sorted 95)
     :p99-ms (percentile-ms sorted 99)
     :ops-per-s (/ n (/ elapsed-ns 1e9))
     :n n}))

(defn settle!
  "Waits until this JVM has been nearly idle for two windows of 200 ms in a row
  (under 5% of one core: the background indexing, JIT compilation and GC that
  follow a bulk load), or until max-ms have passed; returns the ms waited. Run
  before timed reads, so that no system is timed while another one is busy."
  [max-ms]
  (let [os (ManagementFactory/getOperatingSystemMXBean)
        cpu-ns #(.getProcessCpuTime ^com.sun.management.OperatingSystemMXBean os)
        t0 (System/nanoTime)
        give-up (+ t0 (* (long max-ms) 1000000))]
    (loop [quiet 0]
      (if (or (= quiet 2) (> (System/nanoTime) give-up))
        (quot (- (System/nanoTime) t0) 1000000)
        (let [c0 (cpu-ns) w0 (System/nanoTime)
              _ (Thread/sleep 200)
              busy (/ (double (- (cpu-ns) c0)) (- (System/nanoTime) w0))]
          (recur (if (< busy 0.05) (inc quiet) 0)))))))

(defn- window-median
  "The median time (ns) of calls of (f arg), cycling through `args` from call i,
  for window-ms (at least 5 calls); returns [median next-i]."
  [f args i window-ms]
  (let [n-args (count args)
        end (+ (System/nanoTime) (* (long window-ms) 1000000))]
    (loop [i (long i) ^longs times (long-array 64) n 0]
      (if (and (>= n 5) (> (System/nanoTime) end))
        (let [sorted (Arrays/copyOf times n)]
          (Arrays/sort sorted)
          [(aget sorted (quot n 2)) i])
        (let [t0 (System/nanoTime)
              r (f (args (mod i n-args)))
              t1 (System/nanoTime)
              times (if (= n (alength times)) (Arrays/copyOf times (* 2 n)) times)]
          (vreset! sink r)
          (aset times n (- t1 t0))
          (recur (inc i) times (inc n)))))))

(defn- warm-until-steady!
  "Keeps calling (f arg) in windows of window-ms from call i until the median of
  `windows` windows in a row is not 5% below the best median of the windows
  before (the JIT has stopped making the calls faster), or until the clock
  passes `cap` (nanoTime). Returns how many windows ran."
  [f args i window-ms windows cap]
  (loop [i i best Long/MAX_VALUE flat 0 runs 0]
    (if (or (>= flat (long windows)) (> (System/nanoTime) (long cap)))
      runs
      (let [[median i] (window-median f args i window-ms)
            faster (< (long median) (* 0.95 best))]
        (recur i (min best (long median)) (if faster 0 (inc flat)) (inc runs))))))

(defn measure
  "Calls (f arg) cycling through `args`: untimed for at least warmup-ms and at
  least warmup-calls calls (5 when not given), though never past
  max-warmup-ms (default: warmup-ms) unless fewer than 5 calls were made;
  with steady-windows (a count) and steady-window-ms, the warm-up then goes on,
  up to max-warmup-ms in all, until the median call of steady-windows windows
  in a row is no longer 5% faster than the best window before: on a JVM the
  JIT keeps making a call path faster for many thousands of calls (Q2 at 1M:
  0.2 ms after 1 s of calls, 0.07 ms after 10 s), and a read timed before then
  measures the compiler, not the read. Then `reps` timed calls, stopping early
  once max-ms have passed (after at least min-reps). Returns `stats`;
  ops-per-s is reps over the sum of their times."
  [f args {:keys [warmup-ms warmup-calls max-warmup-ms reps max-ms min-reps
                  steady-windows steady-window-ms]
           :or {min-reps 10 warmup-calls 5}}]
  (let [args (vec args)
        n-args (count args)
        t0 (System/nanoTime)
        warm-until (+ t0 (* (long warmup-ms) 1000000))
        warm-cap (+ t0 (* (long (max (long warmup-ms) (long (or max-warmup-ms warmup-ms)))) 1000000))
        calls (loop [i 0]
                (let [now (System/nanoTime)]
                  (if (or (< i 5)
                          (and (< now warm-cap) (or (< i (long warmup-calls)) (< now warm-until))))
                    (do (vreset! sink (f (args (mod i n-args))))
                        (recur (inc i)))
                    i)))]
    (when (and steady-windows steady-window-ms)
      (warm-until-steady! f args calls steady-window-ms steady-windows warm-cap))
    (let [times (long-array reps)
          stop-at (+ (System/nanoTime) (* (long max-ms) 1000000))
          n (loop [i 0]
              (if (or (= i reps) (and (>= i (long min-reps)) (> (System/nanoTime) stop-at)))
                i
                (let [arg (args (mod i n-args))
                      t0 (System/nanoTime)
                      r (f arg)
                      t1 (System/nanoTime)]
                  (vreset! sink r)
                  (aset times i (- t1 t0))
                  (recur (inc i)))))]
      (stats times n (areduce times i sum 0 (+ sum (aget times i)))))))

(defn measure-threads
  "Runs `threads` threads, each calling (op rnd) in a loop with its own
  java.util.Random, for warmup-ms untimed then duration-ms timed; each
  thread first calls (open) for its state s and passes it as (op s rnd),
  then (close s). Returns `stats` over every timed call; ops-per-s is all
  calls over the wall time of the timed phase."
  [{:keys [open op close]} threads {:keys [warmup-ms duration-ms]}]
  (let [ready (CountDownLatch. threads)
        go (CountDownLatch. 1)
        measuring (AtomicBoolean. false)
        running (AtomicBoolean. true)
        results (object-array threads)
        workers
        (mapv (fn [k]
                (doto (Thread.
                       ^Runnable
                       (fn []
                         (let [s (try (open) (finally (.countDown ready)))
                               rnd (Random. (+ 1000 k))]
                           (try
                             (.await go)
                             (loop [^longs times (long-array 4096) n 0]
                               (if (.get running)
                                 (if (.get measuring)
                                   (let [t0 (System/nanoTime)
                                         r (op s rnd)
                                         t1 (System/nanoTime)
                                         times (if (= n (alength times))
                                                 (Arrays/copyOf times (* 2 n))
                                                 times)]
                                     (vreset! sink r)
                                     (aset times n (- t1 t0))
                                     (recur times (inc n)))
                                   (do (vreset! sink (op s rnd))
                                       (recur times n)))
                                 (aset results k [times n])))
                             (catch Throwable e
                               (.set running false)
                               (aset results k e))
                             (finally (close s))))))
                  (.setName (str "bench-reader-" k))
                  (.start)))
              (range threads))]
    (.await ready)
    (.countDown go)
    (Thread/sleep (long warmup-ms))
    (.set measuring true)
    (let [t0 (System/nanoTime)]
      (Thread/sleep (long duration-ms))
      (.set running false)
      (let [elapsed (- (System/nanoTime) t0)]
        (doseq [^Thread t workers] (.join t))
        (when-let [e (some #(when-not (vector? %) (or % :no-result)) results)]
          (throw (ex-info (str "A reader thread failed: " (if (instance? Throwable e) (ex-message e) e))
                          {} (when (instance? Throwable e) e))))
        (let [parts (vec results)
              total (reduce + (map second parts))
              all (long-array total)]
          (reduce (fn [off [^longs times n]]
                    (System/arraycopy times 0 all (int off) (int n))
                    (+ off n))
                  0 parts)
          (stats all total elapsed))))))

(defn machine
  "One line describing this machine and JVM."
  []
  (let [cpu (or (try (some #(some-> (re-find #"^model name\s*:\s*(.+)" %) second str/trim)
                          (Files/readAllLines (Paths/get "/proc/cpuinfo" (make-array String 0))))
                    (catch Exception _ nil))
                "unknown CPU")
        os (ManagementFactory/getOperatingSystemMXBean)
        mem (when (instance? com.sun.management.OperatingSystemMXBean os)
              (.getTotalMemorySize ^com.sun.management.OperatingSystemMXBean os))]
    (format "%s, %d cores, %s RAM; %s %s; Java %s (%s), max heap %d MiB"
            cpu (.availableProcessors (Runtime/getRuntime))
            (if mem (format "%.0f GiB" (/ mem 1073741824.0)) "?")
            (System/getProperty "os.name") (System/getProperty "os.version")
            (System/getProperty "java.version") (System/getProperty "java.vm.name")
            (quot (.maxMemory (Runtime/getRuntime)) 1048576))))

(defn split-list "The comma-separated items of `s`." [s] (remove str/blank? (str/split s #",")))

(defn parse-args
  "Command-line options `argv` applied to `defaults`: `setters` maps each
  option to (fn [opts value]) returning the new options; -h/--help prints
  `usage` and exits."
  [defaults setters usage argv]
  (loop [opts defaults [k v & more :as args] argv]
    (cond
      (empty? args) opts
      (#{"-h" "--help"} k) (do (println usage) (System/exit 0))
      (nil? v) (throw (ex-info (str "Option " k " needs a value\n" usage) {}))
      :else (if-let [set-opt (setters k)]
              (recur (set-opt opts v) more)
              (throw (ex-info (str "Unknown option " k "\n" usage) {}))))))
