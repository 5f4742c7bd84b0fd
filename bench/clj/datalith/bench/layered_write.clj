(ns datalith.bench.layered-write
  "How a LayeredStore's delta is best written back into its LMDB base (issue #17): by its puts
  and deletes in one write transaction, or by replaceAll of the merge (every tree written afresh
  as pages). A base of N index-like keys (24 bytes, empty values) in EAVT and AEVT, a delta of
  N / RATIO new keys spread over the base's key range, each way timed on a fresh copy; prints
  wall and this thread's CPU seconds. The ratio where the two cost the same is
  LayeredStore/REPLACE_RATIO's measure.

    lein with-profile +bench run -m datalith.bench.layered-write [options]
      --base N        entries a sub-database of the base holds (default 1000000)
      --ratios LIST   base/delta ratios to time (default 2,4,8,16,32,64)
      --dir DIR       the LMDB directory (default target/layered-write; deleted first)"
  (:require [clojure.string :as str]
            [datalith.bench.system :refer [delete-tree]])
  (:import (datalith.store LayeredStore LmdbStore ReadTxn Store SubDb WriteTxn)
           (java.io File)
           (java.lang.management ManagementFactory)
           (java.nio ByteBuffer)
           (java.util Random)))

(set! *warn-on-reflection* true)

(def ^:private dbs [SubDb/EAVT SubDb/AEVT])

(defn- cpu-ns ^long [] (.getCurrentThreadCpuTime (ManagementFactory/getThreadMXBean)))

(defn- key-of
  "A 24-byte key: `hi` then `lo`, big-endian, then 8 bytes of `rnd`."
  ^ByteBuffer [^long hi ^long lo ^Random rnd]
  (-> (ByteBuffer/allocateDirect 24) (.putLong hi) (.putLong lo) (.putLong (.nextLong rnd)) (.flip)))

(def ^:private empty-val (ByteBuffer/allocateDirect 0))

(defn- fill-base!
  "Writes `n` keys into each sub-database of `store`: entity-like runs of 5 keys."
  [^Store store ^long n]
  (let [rnd (Random. 1)]
    (with-open [w (.beginWrite store)]
      (doseq [db dbs, i (range n)]
        (.put w db (key-of (quot i 5) (mod i 5) rnd) empty-val))
      (.commit w))))

(defn- stage!
  "Puts `d` keys into each sub-database of `layered`, spread over the base's range."
  [^LayeredStore layered ^long n ^long d]
  (let [rnd (Random. 2)]
    (with-open [w (.beginWrite layered)]
      (doseq [db dbs, _ (range d)]
        (.put w db (key-of (.nextInt rnd (int (max 1 (quot n 5)))) 7 rnd) empty-val))
      (.commit w))))

(defn- timed [label f]
  (let [start (System/nanoTime) cpu (cpu-ns)]
    (f)
    (printf "  %-12s %6.2f s wall, %6.2f s CPU%n" label
            (/ (double (- (System/nanoTime) start)) 1e9) (/ (double (- (cpu-ns) cpu)) 1e9))
    (flush)))

(defn- one-way
  "A fresh base of `n` keys, a delta of `d`, written back by `how`."
  [^File dir n d how]
  (delete-tree dir)
  (let [^Store store (LmdbStore/open (.toPath dir) {"sync" false})]
    (try
      (fill-base! store n)
      (with-open [layered (LayeredStore/over store 0)]
        (stage! layered n d)
        (timed (name how)
               #(case how
                  :puts (with-open [^WriteTxn w (.beginWrite store)]
                          (.writeDelta layered w)
                          (.commit w))
                  :replace-all (with-open [^ReadTxn r (.beginRead layered)]
                                 (.replaceAll store r)))))
      (finally (.close store) (delete-tree dir)))))

(defn -main [& args]
  (let [opts (merge {"--base" "1000000" "--ratios" "2,4,8,16,32,64" "--dir" "target/layered-write"}
                    (apply hash-map args))
        n (parse-long (opts "--base"))
        dir (File. ^String (opts "--dir"))]
    (doseq [ratio (map parse-long (str/split (opts "--ratios") #","))]
      (printf "base %,d a sub-database, delta %,d (1/%d)%n" n (quot n ratio) ratio)
      (doseq [how [:puts :replace-all]]
        (one-way dir n (quot n ratio) how)))
    (shutdown-agents)))
