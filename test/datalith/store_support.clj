(ns datalith.store-support
  "What the Store tests share (datalith.store-test, store-model-test, store-cursor-test,
  store-writes-test and store-map-growth-test; layered-store-test and probe-lifetime-test use
  it too): the store kinds under test and a fresh store of each, byte buffers and their bytes,
  commits and scans, and a random cursor move a walk checks against a sorted-map model."
  (:require [clojure.test :refer [is testing]]
            [datalith.lmdb-file :as lmdb-file])
  (:import [datalith.store Cursor LmdbStore MemStore ReadTxn Store SubDb WriteTxn]
           [java.nio ByteBuffer]
           [java.nio.charset StandardCharsets]
           [java.nio.file Files Path]
           [java.nio.file.attribute FileAttribute]
           [java.util Arrays Comparator]))

(set! *warn-on-reflection* true)

;; ---- stores ----------------------------------------------------------------

(def kinds
  "LMDB with its Java page reader, LMDB alone (option \"page-reader\" \"lmdb\": every read
  and write LMDB's own, the plain path the Java reader is checked against), both without
  write-behind (each commit put into LMDB's trees), MemStore, and MemStore editing in place
  when no read is open (MemStore/openInPlace), and LMDB with write-behind (its commits laid
  in memory over LMDB's, and written back every few commits: reads merge layers, or not, as
  the write-back thread finds the time)."
  [:lmdb :lmdb-plain :mem :mem-in-place :lmdb-behind])

(defn open-mem ^MemStore [kind]
  (if (= kind :mem-in-place) (MemStore/openInPlace) (MemStore/open)))

(def ^:dynamic *kind* "The kind of the store under test." nil)

(defn temp-dir ^Path []
  (Files/createTempDirectory "datalith-store-test" (make-array FileAttribute 0)))

(defn delete-tree [^Path dir]
  (doseq [^java.io.File f (reverse (file-seq (.toFile dir)))]
    (.delete f)))

(defn open-lmdb ^Store [^Path dir opts]
  (LmdbStore/open dir opts))

(defn call-with-store
  "Calls (f store) with a fresh store of `kind`, closing it (and deleting its
  directory) afterwards."
  ([kind f] (call-with-store kind {} f))
  ([kind opts f]
   (binding [*kind* kind]
     (case kind
       (:mem :mem-in-place) (let [s (open-mem kind)]
                              (try (f s) (finally (.close s))))
       (:lmdb :lmdb-plain)
       (let [dir (temp-dir)]
         (try
           (let [s (open-lmdb dir (merge {"write-behind" false}
                                         (assoc opts "page-reader" (if (= kind :lmdb) "java" "lmdb"))))]
             (try (f s) (finally (.close s))))
           (finally (delete-tree dir))))
       :lmdb-16k
       (let [first-dir (temp-dir)
             dir (temp-dir)]
         (try
           (.close (open-lmdb first-dir {"write-behind" false}))
           (lmdb-file/spread-pages! (str first-dir) (str dir) 16384)
           (is (= 16384 (:psize (lmdb-file/last-meta (str dir)))) "pages of 16 KiB")
           (let [s (open-lmdb dir (merge {"write-behind" false} (assoc opts "page-reader" "java")))]
             (try (f s) (finally (.close s))))
           (finally (delete-tree first-dir) (delete-tree dir))))
       :lmdb-behind
       (let [dir (temp-dir)]
         (try
           (let [s (open-lmdb dir (-> opts (dissoc "sync")
                                      (assoc "write-behind" true "write-back-commits" 3)))]
             (try (f s) (finally (.close s))))
           (finally (delete-tree dir))))))))

(defmacro with-each-store
  "Runs body once per store kind, `sym` bound to a fresh store."
  [[sym opts] & body]
  `(doseq [kind# kinds]
     (testing (name kind#)
       (call-with-store kind# ~(or opts {}) (fn [~(with-meta sym {:tag `Store})] ~@body)))))

;; ---- bytes -----------------------------------------------------------------

(def unsigned-byte-comparator
  (reify Comparator
    (compare [_ a b] (Arrays/compareUnsigned ^bytes a ^bytes b))))

(defn ->bytes ^bytes [x]
  (if (string? x) (.getBytes ^String x StandardCharsets/UTF_8) x))

(defn buf
  "A heap (or direct) buffer holding `x` (a string or byte array), with
  bytes around it so that position and limit matter."
  (^ByteBuffer [x] (buf x false))
  (^ByteBuffer [x direct?]
   (let [^bytes b (->bytes x)
         n (alength b)
         ^ByteBuffer bb (if direct? (ByteBuffer/allocateDirect (+ n 2)) (ByteBuffer/allocate (+ n 2)))]
     (.put bb (byte 7))
     (.put bb b)
     (.put bb (byte 7))
     (.position bb 1)
     (.limit bb (inc n))
     bb)))

(defn bytes-of ^bytes [^ByteBuffer b]
  (let [a (byte-array (.remaining b))]
    (.get b (.position b) a)
    a))

(defn str-of [^ByteBuffer b]
  (when b (String. (bytes-of b) StandardCharsets/UTF_8)))

(defn put! [^WriteTxn w db k v] (.put w db (buf k) (buf v)))

(defn commit!
  "Commits one transaction of [db k v] puts (v nil: delete)."
  [^Store s writes]
  (with-open [w (.beginWrite s)]
    (doseq [[db k v] writes]
      (if (nil? v) (.delete w db (buf k)) (put! w db k v)))
    (.commit w)))

(defn lookup [^ReadTxn r k] (str-of (.get r SubDb/EAVT (buf k))))

(defn scan
  "All [key val] byte-array pairs of `db`, forward (or backward)."
  ([^ReadTxn r db] (scan r db true))
  ([^ReadTxn r db forward?]
   (with-open [c (.cursor r db)]
     (loop [ok (if forward? (.first c) (.last c)) acc []]
       (if ok
         (let [acc (conj acc [(bytes-of (.key c)) (bytes-of (.val c))])]
           (recur (if forward? (.next c) (.prev c)) acc))
         acc)))))

(defn strs [pairs] (mapv (fn [[k v]] [(String. ^bytes k StandardCharsets/UTF_8) (String. ^bytes v StandardCharsets/UTF_8)]) pairs))

;; ---- models ----------------------------------------------------------------

(defn view [pairs] (mapv (fn [[k v]] [(vec k) (vec v)]) pairs))

(defn shuffled
  "The items of `coll` in an order drawn from `rnd`: a test's data comes from its seed alone (an
  unseeded shuffle once made a tree-shape bug show in one CI run of many)."
  [^java.util.Random rnd coll]
  (let [l (java.util.ArrayList. ^java.util.Collection (vec coll))]
    (java.util.Collections/shuffle l rnd)
    (vec l)))

;; ---- concurrency -----------------------------------------------------------

(defn run-for
  "Runs (f) in a loop on a new thread until `stop` is set; returns a future of
  the number of iterations."
  [stop f]
  (future (loop [n 0] (if @stop n (do (f) (recur (inc n)))))))

;; ---- cursor walks ----------------------------------------------------------

(defn walk-op
  "Makes a random move of `c` from model index `at` of `ks`; returns [index-the-model-expects
  found?]."
  [^Cursor c ^java.util.Random rnd ks at rand-key]
  (let [n (count ks)
        index-of (fn [^bytes k]
                   (let [i (java.util.Collections/binarySearch ks k unsigned-byte-comparator)]
                     (if (neg? i) (- (inc i)) i)))
        seek (fn [^bytes k] [(index-of k) (.seek c (buf k (.nextBoolean rnd)))])]
    (case (int (.nextInt rnd 10))
      (0 1 2 3) [(inc at) (.next c)]
      (4 5) [(dec at) (.prev c)]
      6 (seek (ks (max 0 (min (dec n) (+ at (- (.nextInt rnd 200) 100))))))
      7 (seek (rand-key))
      8 (if (.nextBoolean rnd) [0 (.first c)] [(dec n) (.last c)])
      ;; just after a stored key: that key with a zero byte added
      9 (let [^bytes k (ks (max 0 (min (dec n) at)))]
          (seek (Arrays/copyOf k (inc (alength k))))))))
