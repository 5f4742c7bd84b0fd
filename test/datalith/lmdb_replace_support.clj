(ns datalith.lmdb-replace-support
  "What the tests of LmdbStore.replaceAll share (datalith.lmdb-replace-test,
  lmdb-replace-atomicity-test and lmdb-replace-pages-test): a store without write-behind, the
  check of every cursor op and get of a store against a model of TreeMaps, a replace from a
  MemStore source read either way (its B+trees' leaves, or through cursors), and random writes
  applied to a store and its model alike."
  (:require [clojure.test :refer [is testing]]
            [datalith.lmdb-replace-child :as rc])
  (:import (datalith.store Cursor LmdbStore ReadTxn Store SubDb)
           (java.io File)
           (java.nio ByteBuffer)
           (java.util Arrays Map$Entry Random TreeMap)))

(set! *warn-on-reflection* true)

(defn open-store
  "A store without write-behind: these tests read the pages of LMDB's file after each commit."
  ^LmdbStore [^File dir reader commit & [opts]]
  (LmdbStore/open (.toPath dir) (merge {"page-reader" reader "commit" commit
                                        "map-size" (bit-shift-left 1 30) "write-behind" false}
                                       opts)))

(defn bytes-of ^bytes [^ByteBuffer b]
  (let [a (byte-array (.remaining b))]
    (.get (.duplicate b) a)
    a))

(defn entries
  "[[key val] ...] of a model's TreeMap."
  [^TreeMap m]
  (mapv (fn [^Map$Entry e] [(.getKey e) (.getValue e)]) m))

(defn same-entries?
  [xs ys]
  (and (= (count xs) (count ys))
       (every? true? (map (fn [[^bytes k1 ^bytes v1] [^bytes k2 ^bytes v2]]
                            (and (Arrays/equals k1 k2) (Arrays/equals v1 v2)))
                          xs ys))))

(defn scan-back [^ReadTxn txn db]
  (with-open [c (.cursor txn db)]
    (loop [more (.last c), out (transient [])]
      (if more
        (let [out (conj! out [(bytes-of (.key c)) (bytes-of (.val c))])]
          (recur (.prev c) out))
        (persistent! out)))))

(defn- at? [^Cursor c ^Map$Entry e]
  (and (Arrays/equals ^bytes (.getKey e) (bytes-of (.key c)))
       (Arrays/equals ^bytes (.getValue e) (bytes-of (.val c)))))

(defn- probe
  "A key to seek: a stored one, one just past it, one just before, or random bytes."
  ^bytes [^Random rnd keys]
  (if (or (empty? keys) (zero? (.nextInt rnd 4)))
    (let [b (byte-array (inc (.nextInt rnd 20)))] (.nextBytes rnd b) b)
    (let [^bytes k (nth keys (.nextInt rnd (count keys)))]
      (case (.nextInt rnd 3)
        0 k
        1 (Arrays/copyOf k (inc (alength k)))
        (if (> (alength k) 1) (Arrays/copyOf k (dec (alength k))) k)))))

(defn check-store
  "Every cursor op (first, last, next, prev, seek) and get of `txn` gives `model`'s entries."
  [^ReadTxn txn model ^Random rnd]
  (doseq [db (SubDb/values)]
    (testing (str db)
      (let [^TreeMap m (model db)
            es (entries m)
            keys (mapv first es)]
        (is (same-entries? es (rc/scan txn db)) "first/next")
        (is (same-entries? (rseq es) (scan-back txn db)) "last/prev")
        (with-open [c (.cursor txn db)]
          (dotimes [_ 60]
            (let [p (probe rnd keys)
                  e (.ceilingEntry m p)
                  found (.seek c (ByteBuffer/wrap p))]
              (is (= (some? e) found) "seek")
              (when (and e found)
                (is (at? c e) "seek")
                (let [nx (.higherEntry m (.getKey e))]
                  (is (= (some? nx) (.next c)) "next after seek")
                  (when nx
                    (is (at? c nx) "next after seek")
                    (is (.prev c))
                    (is (at? c e) "prev after next")))))))
        (dotimes [_ 60]
          (let [p (probe rnd keys)
                v (.get txn db (ByteBuffer/wrap p))
                expected (.get m p)]
            (is (if expected (Arrays/equals ^bytes expected (bytes-of v)) (nil? v)) "get")))))))

(defn- cursor-source
  "`txn` read through cursors that are not a MemStore's: replaceAll takes its generic way of
  reading a source (key and value buffers, copied) rather than a MemStore's leaves."
  ^ReadTxn [^ReadTxn txn]
  (reify ReadTxn
    (cursor [_ db]
      (let [^Cursor c (.cursor txn db)]
        (reify Cursor
          (seek [_ k] (.seek c k))
          (first [_] (.first c))
          (last [_] (.last c))
          (next [_] (.next c))
          (prev [_] (.prev c))
          (key [_] (.key c))
          (val [_] (.val c))
          (close [_] (.close c)))))
    (get [_ db k] (.get txn db k))
    (close [_] (.close txn))))

(def mem-cursor (Class/forName "datalith.store.MemCursor"))

(defn- source-of
  "A read transaction of the MemStore `src`, as replaceAll reads it by way `way`: :leaves (its
  cursors are MemCursors: the B+trees' leaves are read) or :cursor (see cursor-source)."
  ^ReadTxn [^Store src way]
  (let [r (.beginRead src)
        source (if (= way :cursor) (cursor-source r) r)]
    (with-open [c (.cursor source SubDb/EAVT)]
      (is (= (= way :leaves) (instance? mem-cursor c)) (str "the way " way " is taken")))
    source))

(defn replace-with!
  "Replaces the contents of `s` with `model`'s, read by way `way` (:leaves by default, see
  source-of), and checks that the trees were written as pages (not through the generic way's
  puts)."
  ([s model] (replace-with! s model :leaves))
  ([^LmdbStore s model way]
   (let [before (.directReplaces s)]
     (with-open [src (rc/mem-store model)
                 r (source-of src way)]
       (.replaceAll s r))
     (is (= (inc before) (.directReplaces s)) "written as pages"))))

(defn random-bytes ^bytes [^Random rnd n]
  (let [b (byte-array n)] (.nextBytes rnd b) b))

(defn random-writes!
  "One write transaction of n random puts of new keys, overwrites and runs of deletes on
  `s`, applied to `model` too."
  [^Store s model ^Random rnd n]
  (let [dbs (SubDb/values)]
    (with-open [w (.beginWrite s)]
      (dotimes [_ n]
        (let [db (aget dbs (.nextInt rnd (alength dbs)))
              ^TreeMap m (model db)
              value #(random-bytes rnd (if (zero? (.nextInt rnd 10)) (.nextInt rnd 5000)
                                           (.nextInt rnd 50)))]
          (case (int (if (.isEmpty m) 0 (.nextInt rnd 3)))
            0 (let [k (random-bytes rnd (inc (.nextInt rnd 60))), v (value)]
                (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v))
                (.put m k v))
            1 (let [k (.ceilingKey m (random-bytes rnd 4))
                    k (or k (.firstKey m))
                    v (value)]
                (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v))
                (.put m k v))
            2 (let [from (or (.ceilingKey m (random-bytes rnd 4)) (.firstKey m))]
                (doseq [k (vec (take (inc (.nextInt rnd 60)) (.keySet (.tailMap m from))))]
                  (.delete w db (ByteBuffer/wrap k))
                  (.remove m k))))))
      (.commit w))))

(defn stats-agree [^LmdbStore s model]
  (doseq [db (SubDb/values)]
    (is (= (count (model db)) (:entries (.pageStats s db))) (str db " entries"))))
