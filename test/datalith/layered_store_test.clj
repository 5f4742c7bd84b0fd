(ns datalith.layered-store-test
  "LayeredStore (a MemStore delta over a snapshot of an LMDB or in-memory store) against a
  sorted-map model: random puts, deletes and overwrites in several sub-databases, every cursor
  move, snapshots kept open across later commits, and the two ways its delta is written back."
  (:require [clojure.test :refer [deftest is testing]]
            [datalith.store-test :as st])
  (:import [datalith.store Cursor LayeredStore LmdbStore MemStore ReadTxn Store SubDb WriteTxn]
           [java.nio ByteBuffer]
           [java.nio.file Files Path]
           [java.nio.file.attribute FileAttribute]
           [java.util Arrays Random]))

(set! *warn-on-reflection* true)

(def ^:private dbs
  "Sub-databases the trials write: values of every length, empty values (an index's), and one
  the base leaves empty (the layered store reads the delta's own cursor there)."
  [SubDb/EAVT SubDb/AEVT SubDb/LOG])

(defn- call-with-base
  "Calls (f store) with a fresh base store of `kind` (:lmdb or :mem), closed afterwards."
  [kind f]
  (if (= kind :mem)
    (let [s (MemStore/open)] (try (f s) (finally (.close s))))
    (let [dir (Files/createTempDirectory "datalith-layered-test" (make-array FileAttribute 0))]
      (try
        (let [s (LmdbStore/open dir {"sync" false})] (try (f s) (finally (.close s))))
        (finally (doseq [^java.io.File f (reverse (file-seq (.toFile ^Path dir)))] (.delete f)))))))

(defn- buf ^ByteBuffer [^bytes b] (ByteBuffer/wrap b))

(defn- bytes-of ^bytes [^ByteBuffer b]
  (let [a (byte-array (.remaining b))] (.get b (.position b) a) a))

(defn- empty-model [] (into {} (for [db dbs] [db (sorted-map-by st/unsigned-byte-comparator)])))

(defn- write!
  "Applies `ops` ([op db key val]) through one write transaction of `s`, committing when
  `commit?`; returns `model` with them (when committed)."
  [^Store s model ops commit?]
  (with-open [^WriteTxn w (.beginWrite s)]
    (let [m (reduce (fn [m [op db ^bytes k ^bytes v]]
                      (if (= op :put)
                        (do (.put w db (buf k) (buf v)) (assoc-in m [db k] v))
                        (do (.delete w db (buf k)) (update m db dissoc k))))
                    model ops)]
      (if commit? (do (.commit w) m) model))))

(defn- scan [^ReadTxn r db forward?]
  (with-open [c (.cursor r db)]
    (loop [ok (if forward? (.first c) (.last c)) acc []]
      (if ok
        (let [acc (conj acc [(vec (bytes-of (.key c))) (vec (bytes-of (.val c)))])]
          (recur (if forward? (.next c) (.prev c)) acc))
        acc))))

(defn- entries [model db] (mapv (fn [[k v]] [(vec k) (vec v)]) (model db)))

(defn- walk-agrees?
  "A cursor of `r` over `db` moved at random (steps both ways, seeks near and far, first, last,
  and bulk runs) agrees with the model at every move."
  [^ReadTxn r model db ^Random rnd rand-key]
  (let [m (model db)
        ks (vec (keys m))
        n (count ks)
        expect (fn [i] (when (< -1 i n) [(vec (ks i)) (vec (m (ks i)))]))
        walk-op @#'st/walk-op]
    (with-open [^Cursor c (.cursor r db)]
      (loop [step 0 at (if (.first c) 0 -1)]
        (cond
          (= step 300) true
          (zero? n) (not (or (.first c) (.last c) (.seek c (buf (rand-key)))))
          ;; a bulk run over keys of one prefix: lands on a key with it, as many steps on
          (and (<= 0 at (dec n)) (zero? (.nextInt rnd 8)))
          (let [^bytes k (ks at)
                prefix (buf (Arrays/copyOf k (min (alength k) (inc (.nextInt rnd 2)))))
                moved (.skipRun c prefix)
                at' (+ at moved)]
            (if (= (expect at') [(vec (bytes-of (.key c))) (vec (bytes-of (.val c)))])
              (recur (inc step) at')
              (do (is false (str "skipRun at step " step)) false)))
          :else
          (let [[at' found?] (walk-op c rnd ks at rand-key)
                got (when found? [(vec (bytes-of (.key c))) (vec (bytes-of (.val c)))])]
            (if (= (expect at') got)
              (recur (inc step) (if found? at' (if (.first c) 0 -1)))
              (do (is (= (expect at') got) (str "step " step)) false))))))))

(defn- agrees?
  "Every read of `r` agrees with `model`: scans both ways, gets of the pool, random walks."
  [^ReadTxn r model pool rnd rand-key]
  (every? (fn [db]
            (and (= (entries model db) (scan r db true))
                 (= (reverse (entries model db)) (scan r db false))
                 (every? (fn [^bytes k]
                           (= (some-> (get-in model [db k]) vec)
                              (some-> (.get r db (buf k)) bytes-of vec)))
                         pool)
                 (walk-agrees? r model db rnd rand-key)))
          dbs))

(defn- trial
  "Fills a base of `kind` from `seed`, lays a store over it, commits random transactions there
  (some discarded) checking every read, and keeps a snapshot of each of the later commits open
  to check at the end (the delta's commits edit its trees in place until the first is kept,
  then copy); then writes the delta back into the base (`how`: :delta or :replace-all) and checks
  the base. `absorb`: LayeredStore/over's (the base is small: 0 merges every read, a large one
  copies the base into the delta). True when everything agreed."
  [kind seed how absorb]
  (call-with-base
   kind
   (fn [^Store base]
     (let [rnd (Random. seed)
           rand-key (fn [] (let [b (byte-array (inc (.nextInt rnd 3)))] (.nextBytes rnd b) b))
           pool (vec (distinct (map vec (repeatedly 400 rand-key))))
           pool (mapv byte-array pool)
           pick (fn [xs] (nth xs (.nextInt rnd (count xs))))
           rand-val (fn [] (byte-array (pick [0 0 3 40 700]) (byte (.nextInt rnd 100))))
           op (fn [dbs-written]
                (let [db (pick dbs-written)]
                  [(if (< (.nextInt rnd 3) 2) :put :delete) db (nth pool (.nextInt rnd (count pool)))
                   (if (= db SubDb/AEVT) (byte-array 0) (rand-val))]))
           base-model (write! base (empty-model)
                              (repeatedly 250 #(op [SubDb/EAVT SubDb/AEVT])) true)]
       (with-open [layered (LayeredStore/over base absorb)]
         (let [kept (atom [])
               model (reduce (fn [model i]
                               (let [m (write! layered model (repeatedly (.nextInt rnd 60) #(op dbs))
                                               (pos? (.nextInt rnd 4)))]
                                 (with-open [r (.beginRead layered)]
                                   (is (agrees? r m pool rnd rand-key) (str "after transaction " i)))
                                 (when (>= i 6)
                                   (swap! kept conj [(.beginRead layered) m]))
                                 m))
                             base-model (range 14))]
           (is (every? (fn [[^ReadTxn r m]] (try (agrees? r m pool rnd rand-key) (finally (.close r))))
                       @kept)
               "every snapshot still reads its commit")
           (is (= (entries base-model SubDb/EAVT)
                  (with-open [r (.beginRead base)] (scan r SubDb/EAVT true)))
               "the base is untouched")
           (case how
             :delta (with-open [w (.beginWrite base)]
                      (.writeDelta layered w)
                      (.commit w))
             :replace-all (with-open [r (.beginRead layered)]
                            (.replaceAll base r)))
           (with-open [r (.beginRead base)]
             (agrees? r model pool rnd rand-key))))))))

(deftest layered-store-against-a-sorted-map
  (doseq [kind [:lmdb :mem], how [:delta :replace-all], seed (range 6)]
    (testing (str kind " base, written back by " how ", seed " seed)
      (is (trial kind seed how 0)))))

(deftest a-small-base-copied-into-the-delta-against-a-sorted-map
  (doseq [kind [:lmdb :mem], seed (range 3)]
    (testing (str kind " base, seed " seed)
      (is (trial kind seed :replace-all 100000)))))

(deftest an-empty-base-reads-through-the-deltas-own-cursor
  (call-with-base
   :lmdb
   (fn [^Store base]
     (write! base (empty-model) [[:put SubDb/EAVT (byte-array [1]) (byte-array [2])]] true)
     (with-open [layered (LayeredStore/over base 0)]
       (write! layered (empty-model) [[:put SubDb/AEVT (byte-array [1]) (byte-array 0)]
                                      [:put SubDb/EAVT (byte-array [3]) (byte-array 0)]
                                      [:delete SubDb/EAVT (byte-array [1]) nil]] true)
       (with-open [r (.beginRead layered)
                   aevt (.cursor r SubDb/AEVT)
                   eavt (.cursor r SubDb/EAVT)]
         (is (= "MemCursor" (.getSimpleName (class aevt))) "AEVT: nothing in the base")
         (is (= "MergedCursor" (.getSimpleName (class eavt))))
         (is (= [[[3] []]] (scan r SubDb/EAVT true)) "the base's key deleted")))
     (with-open [layered (LayeredStore/over base 1)]
       (with-open [r (.beginRead layered) eavt (.cursor r SubDb/EAVT)]
         (is (= "MemCursor" (.getSimpleName (class eavt))) "a base of 1 entry copied into the delta"))
       (is (.replacesAll layered) "written back only by replaceAll")
       (is (thrown? IllegalStateException (with-open [w (.beginWrite base)] (.writeDelta layered w))))))))

(deftest the-delta-is-large-or-small-against-the-base
  (call-with-base
   :lmdb
   (fn [^Store base]
     (write! base (empty-model) (for [i (range 800)] [:put SubDb/EAVT (.toByteArray (biginteger (+ 1000 i))) (byte-array 0)]) true)
     (with-open [layered (LayeredStore/over base 0)]
       (write! layered (empty-model) [[:put SubDb/EAVT (byte-array [1]) (byte-array 0)]] true)
       (is (not (.replacesAll layered)) "1 write over 800 entries: puts")
       (write! layered (empty-model) (for [i (range (quot 800 LayeredStore/REPLACE_RATIO))]
                                       [:put SubDb/AEVT (.toByteArray (biginteger i)) (byte-array 0)]) true)
       (is (.replacesAll layered) "one in REPLACE_RATIO: every tree rewritten")))))
