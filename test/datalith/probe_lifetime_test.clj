(ns datalith.probe-lifetime-test
  "A caller's direct buffer is read only while the store holds it. LMDB's reads (and the Java
  page reader's comparisons) take a direct probe's bytes at its address; a probe that the
  caller made for the call alone is unreachable once its address is taken, so a collection in
  the read could free it (a direct buffer's cleaner runs right after the collection) and the
  read compare freed memory: a key that is there read as absent, at random, more often the
  busier the heap (store-test's generative property failed so about once in ten runs).

  A child JVM reads fresh direct probes of long keys on every store kind while its young
  generation, a few MiB, is collected many times a second, with glibc filling freed memory
  (MALLOC_PERTURB_), so that a read of a freed probe goes wrong rather than finding its old
  bytes. The child is datalith.probe-lifetime-test's -main."
  (:require [clojure.edn :as edn]
            [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [datalith.store-test :as st])
  (:import (datalith.store Cursor ReadTxn Store SubDb WriteTxn)
           (java.lang.management ManagementFactory GarbageCollectorMXBean)
           (java.nio ByteBuffer)
           (java.util Random)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(def ^:private key-count 2000)

(defn- stored-key
  "Key `i`: 490 bytes, the first 480 shared, so that a comparison reads most of the probe."
  ^bytes [i]
  (let [b (byte-array 490 (byte 0x55))]
    (.putInt (ByteBuffer/wrap b) 482 (int i))
    b))

(defn- probe
  "A new direct buffer holding `b`, with a byte either side (position and limit matter), that
  nothing but the call it is passed to holds."
  ^ByteBuffer [^bytes b]
  (let [bb (ByteBuffer/allocateDirect (+ 2 (alength b)))]
    (.put bb (byte 7))
    (.put bb b)
    (.put bb (byte 7))
    (.position bb 1)
    (.limit bb (inc (alength b)))))

(defn- collections []
  (reduce + (map #(.getCollectionCount ^GarbageCollectorMXBean %)
                 (ManagementFactory/getGarbageCollectorMXBeans))))

(defn- read-store
  "Reads fresh probes of stored keys from `s`, a store of `kind`, for `ms` milliseconds: point
  gets, and unless `gets-only`, cursor seeks and expectations of a commit; the reads that went
  wrong, counted."
  [^Store s kind ms gets-only]
  (let [rnd (Random. 7)
        wrong (atom {:get 0 :seek 0 :expect 0})
        reads (atom 0)
        gcs (collections)]
    (with-open [^WriteTxn w (.beginWrite s)]
      (dotimes [i key-count]
        (.put w SubDb/EAVT (ByteBuffer/wrap (stored-key i)) (ByteBuffer/wrap (byte-array 8 (unchecked-byte i)))))
      (.commit w))
    (let [end (+ (System/nanoTime) (* ms 1000000))]
      (while (< (System/nanoTime) end)
        (with-open [^ReadTxn r (.beginRead s)
                    ^Cursor c (.cursor r SubDb/EAVT)]
          (dotimes [_ 500]
            (let [i (.nextInt rnd key-count)]
              (when (nil? (.get r SubDb/EAVT (probe (stored-key i))))
                (swap! wrong update :get inc))
              (when-not (or gets-only
                            (and (.seek c (probe (stored-key i)))
                                 (= i (.getInt (.key c) 482))))
                (swap! wrong update :seek inc)))))
        (swap! reads + (if gets-only 500 1000))
        (when-not gets-only
          (let [i (.nextInt rnd key-count)]
            (try
              (with-open [^WriteTxn w (.beginWrite s)]
                (.expect w SubDb/EAVT (probe (stored-key i)) (ByteBuffer/wrap (byte-array 8 (unchecked-byte i))))
                (.commit w))
              (catch clojure.lang.ExceptionInfo _
                (swap! wrong update :expect inc)))))))
    {:kind kind :gets-only gets-only :wrong @wrong :reads @reads :collections (- (collections) gcs)}))

(defn- read-kind
  "read-store on a fresh store of `kind` (store-test's), deleted after."
  [kind ms gets-only]
  (st/call-with-store kind {"sync" false} (fn [s] (read-store s kind ms gets-only))))

(defn -main
  "The child: reads with point gets alone from LMDB's Java page reader (the read that went
  wrong) for `long-ms` milliseconds, then every read from every kind for `ms` each; prints one
  EDN map a run."
  [long-ms ms]
  (let [long-ms (Long/parseLong long-ms)
        ms (Long/parseLong ms)
        stop (volatile! false)
        ;; garbage from another thread too, so that collections come at any point of a read
        churn (doto (Thread. ^Runnable (fn [] (while (not @stop) (count (str (range 100))))))
                (.setDaemon true)
                (.start))]
    (prn (read-kind :lmdb long-ms true))
    (doseq [kind st/kinds]
      (prn (read-kind kind ms false)))
    (vreset! stop true)
    (.join churn)
    (prn :done)
    (shutdown-agents)))

(deftest a-probe-the-caller-dropped-is-read-while-the-store-holds-it
  (let [cmd [(str (System/getProperty "java.home") "/bin/java")
             "--add-opens=java.base/java.nio=ALL-UNNAMED"
             "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
             ;; C1 alone: a safepoint at every loop's back edge, in the comparisons too (with
             ;; C2 as well the bug showed, less often); a small young generation, collected
             ;; hundreds of times a second. Against the code before the fix, the gets went
             ;; wrong about once a second.
             "-XX:TieredStopAtLevel=1" "-XX:+UseSerialGC" "-Xmn2m"
             "-cp" (System/getProperty "java.class.path")
             "clojure.main" "-m" "datalith.probe-lifetime-test" "12000" "1500"]
        pb (ProcessBuilder. ^java.util.List cmd)
        _ (.put (.environment pb) "MALLOC_PERTURB_" "165")
        p (.start pb)
        out (future (slurp (.getInputStream p)))
        err (future (slurp (.getErrorStream p)))
        ended (.waitFor p 120 TimeUnit/SECONDS)]
    (when-not ended
      (.destroyForcibly p))
    (let [lines (mapv edn/read-string (remove str/blank? (str/split-lines @out)))]
      (is (and ended (zero? (.exitValue p)) (= :done (peek lines)))
          (str "the child ended badly:\n" @out @err))
      (is (= (set st/kinds) (set (keep :kind lines))))
      (is (= (inc (count st/kinds)) (count (filter map? lines))))
      (doseq [{:keys [wrong reads collections] :as line} (filter map? lines)]
        (is (= {:get 0 :seek 0 :expect 0} wrong) (pr-str line))
        ;; not vacuous: many reads, and the heap collected many times under them
        (is (< 10000 reads) (pr-str line))
        (is (< 50 collections) (pr-str line))))))
