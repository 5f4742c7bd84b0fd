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
  [^ReadTxn r model pool rnd rand-key & [read-dbs]]
  (every? (fn [db]
            (and (= (entries model db) (scan r db true))
                 (= (reverse (entries model db)) (scan r db false))
                 (every? (fn [^bytes k]
                           (= (some-> (get-in model [db k]) vec)
                              (some-> (.get r db (buf k)) bytes-of vec)))
                         pool)
                 (walk-agrees? r model db rnd rand-key)))
          (or read-dbs dbs)))

(defn- write-back!
  "Writes the delta of `layered` into `base`: `how` :delta (its puts and deletes in one write
  transaction) or :replace-all (every tree rewritten from the merged view)."
  [^LayeredStore layered ^Store base how]
  (case how
    :delta (with-open [w (.beginWrite base)]
             (.writeDelta layered w)
             (.commit w))
    :replace-all (with-open [r (.beginRead layered)]
                   (.replaceAll base r))
    ;; as a staged import writes back: the derived sub-databases built on a helper meanwhile
    :write-back (with-open [r (.beginWriteBack layered)]
                  (.replaceAll base r))))

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
           (write-back! layered base how)
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

;; A staging that derives AEVT from EAVT (and HAEVT from HEAVT), and AVET for the attributes
;; the writer leaves out: datoms asserted and retracted as the transactor writes them (AEVT and
;; HAEVT only when the transaction does not derive them; AVET's keys of the attributes it reads,
;; 1 and 2, always, of the others unless the store omits them, deletions always), reads of every
;; index at random points (a read of a derived one makes the next write transaction put them
;; into the delta, which then writes them), reads within one attribute as index scans make them,
;; snapshots of every commit read at the end, the delta written back both ways.

(def ^:private datom-dbs [SubDb/EAVT SubDb/AEVT SubDb/AVET SubDb/HEAVT SubDb/HAEVT])

(defn- long-bytes ^bytes [^long x] (.array (.putLong (ByteBuffer/allocate 8) x)))

(defn- datom-key
  "The key of datom [e a v tx] (v: bytes) in `db` (EAVT or AEVT order), with `rtx` appended
  for a history key."
  ^bytes [db [e a ^bytes v tx] rtx]
  (byte-array (concat (condp = db
                        SubDb/AVET (concat (long-bytes a) v (long-bytes e))
                        SubDb/AEVT (concat (long-bytes a) (long-bytes e) v)
                        SubDb/HAEVT (concat (long-bytes a) (long-bytes e) v)
                        (concat (long-bytes e) (long-bytes a) v))
                      (long-bytes tx)
                      (when rtx (long-bytes rtx)))))

(def ^:private pairs [[SubDb/EAVT SubDb/HEAVT] [SubDb/AEVT SubDb/HAEVT]])

(defn- write-datoms!
  "Asserts (`:add`) and retracts (`:retract`, with the retracting tx) datoms through one write
  transaction of `s`, as the transactor writes them (AEVT and HAEVT only when the transaction
  does not derive them); commits when `commit?`. Returns `model` (sub-database -> sorted map)
  with them when committed."
  [^Store s model ops commit?]
  (with-open [^WriteTxn w (.beginWrite s)]
    (let [written (if (.derives w SubDb/AEVT) (take 1 pairs) pairs)
          none (byte-array 0)
          m (reduce
             (fn [m [op [_ a :as d] rtx]]
               (doseq [[cur hist] written]
                 (if (= op :add)
                   (.put w cur (buf (datom-key cur d nil)) (buf none))
                   (do (.delete w cur (buf (datom-key cur d nil)))
                       (.put w hist (buf (datom-key hist d rtx)) (buf none)))))
               (if (= op :add)
                 (when (or (#{1 2} a) (not (.omits w SubDb/AVET a)))
                   (.put w SubDb/AVET (buf (datom-key SubDb/AVET d nil)) (buf none)))
                 (.delete w SubDb/AVET (buf (datom-key SubDb/AVET d nil))))
               (reduce (fn [m [cur hist]]
                         (if (= op :add)
                           (assoc-in m [cur (datom-key cur d nil)] none)
                           (-> m
                               (update cur dissoc (datom-key cur d nil))
                               (assoc-in [hist (datom-key hist d rtx)] none))))
                       (if (= op :add)
                         (assoc-in m [SubDb/AVET (datom-key SubDb/AVET d nil)] none)
                         (update m SubDb/AVET dissoc (datom-key SubDb/AVET d nil)))
                       pairs))
             model ops)]
      (if commit? (do (.commit w) m) model))))

(defn- within-agrees?
  "Reads of AVET in `r` as index scans make them agree with `model`: one cursor told, before
  each seek, that its reads stay within one attribute's keys (or one attribute and value, or
  nothing), seeking that prefix and stepping while keys have it; a hint that says the cursor
  moved is followed by a seek, and one that says it did not by steps from where it was to the
  prefix, as a scan's restart makes them."
  [^ReadTxn r model ^Random rnd]
  (let [avet (keys (model SubDb/AVET))
        valid (volatile! false)]
    (with-open [c (.cursor r SubDb/AVET)]
      (every?
       (fn [_]
         (let [a (inc (.nextInt rnd 41))
               ^bytes prefix (case (.nextInt rnd 4)
                        0 (byte-array 0)
                        1 (byte-array (concat (long-bytes a) [(byte (* 7 (.nextInt rnd 6)))]))
                        (long-bytes a))
               starts? (fn [^bytes k] (and (>= (alength k) (alength prefix))
                                           (Arrays/equals (Arrays/copyOf k (alength prefix)) prefix)))
               expected (mapv vec (filter starts? avet))
               stands (.within c (buf prefix))
               below? #(neg? (.compare ^java.util.Comparator st/unsigned-byte-comparator (bytes-of (.key c)) prefix))
               ;; a cursor that did not move steps forward to a prefix after it, as a restart does
               found (if (and stands @valid (below?))
                       (loop [] (if (.next c) (if (below?) (recur) true) false))
                       (.seek c (buf prefix)))
               got (loop [ok found acc []]
                     (if (and ok (starts? (bytes-of (.key c))))
                       (let [acc (conj acc (vec (bytes-of (.key c))))]
                         (recur (.next c) acc))
                       (do (vreset! valid ok) acc)))]
           (or (= expected got)
               (do (is (= expected got) (str "AVET within " (vec prefix))) false))))
       (range 12)))))

(defn- derive-trial
  [kind seed how absorb]
  (call-with-base
   kind
   (fn [^Store base]
     (let [rnd (Random. seed)
           pick (fn [xs] (nth xs (.nextInt rnd (count xs))))
           vparts (vec (for [i (range 6)] (byte-array (inc (mod i 3)) (byte (* 7 i)))))
           empty-m (into {} (for [db datom-dbs] [db (sorted-map-by st/unsigned-byte-comparator)]))
           within-agrees? (fn [r m] (within-agrees? r m rnd))
           clean identity
           tx (atom 1000)
           ops (fn [m n]
                 (let [t (swap! tx inc)
                       current (vec (keys (m SubDb/EAVT)))]
                   (vec (distinct
                         (for [_ (range n)]
                           (if (and (seq current) (zero? (.nextInt rnd 3)))
                             (let [^bytes k (pick current)
                                   bb (ByteBuffer/wrap k)]
                               [:retract [(.getLong bb 0) (.getLong bb 8)
                                          (Arrays/copyOfRange k 16 (- (alength k) 8))
                                          (.getLong bb (- (alength k) 8))] t])
                             ;; mostly 4 attributes, now and then one of 40 (a derived tree's
                             ;; buckets: more attributes than it first makes room for)
                             [:add [(inc (.nextInt rnd 30)) (inc (.nextInt rnd (if (zero? (.nextInt rnd 4)) 40 4)))
                                    (pick vparts) t]]))))))
           ;; one op a datom a transaction: a retraction of a datom asserted in it is left out
           ops (fn [m n] (let [xs (ops m n)
                               added (set (map (fn [[_ d]] (update (vec d) 2 vec)) (filter (comp #{:add} first) xs)))]
                           (->> xs
                                (remove (fn [[op d]] (and (= op :retract) (added (update (vec d) 2 vec)))))
                                (reduce (fn [acc [op d :as x]] (if (some #(= (update (vec (second %)) 2 vec) (update (vec d) 2 vec)) acc) acc (conj acc x))) []))))
           base-model (clean (write-datoms! base empty-m (ops empty-m 120) true))
           rand-key (fn [] (let [b (byte-array (inc (.nextInt rnd 20)))] (.nextBytes rnd b) b))]
       (with-open [layered (LayeredStore/over base absorb true)]
         (let [kept (atom [])
               model (reduce
                      (fn [model i]
                        (let [m (clean (write-datoms! layered model (ops model (.nextInt rnd 25))
                                                      (pos? (.nextInt rnd 5))))]
                          (when (zero? (.nextInt rnd 4)) ; a read of every index, derived ones too
                            (with-open [r (.beginRead layered)]
                              (is (agrees? r m (vec (mapcat keys (vals m))) rnd rand-key datom-dbs)
                                  (str "after transaction " i))))
                          (with-open [r (.beginRead layered)] ; the ones written
                            (is (agrees? r m (vec (keys (m SubDb/EAVT))) rnd rand-key [SubDb/EAVT SubDb/HEAVT])))
                          (with-open [r (.beginRead layered)] ; AVET as index scans read it
                            (is (within-agrees? r m) (str "within one attribute, after transaction " i)))
                          (when (zero? (.nextInt rnd 3))
                            (swap! kept conj [(.beginRead layered) m]))
                          m))
                      base-model (range 15))]
           (is (every? (fn [[^ReadTxn r m]]
                         (try (agrees? r m (vec (mapcat keys (vals m))) rnd rand-key datom-dbs)
                              (finally (.close r))))
                       @kept)
               "every snapshot still reads its commit, derived sub-databases too")
           (write-back! layered base how)
           (with-open [r (.beginRead base)]
             (agrees? r model (vec (mapcat keys (vals model))) rnd rand-key datom-dbs))))))))

(deftest a-staging-that-derives-aevt-against-a-sorted-map
  (doseq [kind [:lmdb :mem], how [:delta :replace-all :write-back], seed (range 5)]
    (testing (str kind " base, written back by " how ", seed " seed)
      (is (derive-trial kind seed how 0))))
  (doseq [kind [:lmdb :mem], seed (range 3)]
    (testing (str kind " base copied into the delta, seed " seed)
      (is (derive-trial kind seed :replace-all 100000)))))

(deftest a-write-of-a-derived-sub-database-is-refused
  (call-with-base
   :mem
   (fn [^Store base]
     (with-open [layered (LayeredStore/over base 0 true)
                 w (.beginWrite layered)]
       (is (.derives w SubDb/AEVT))
       (is (.derives w SubDb/HAEVT))
       (is (not (.derives w SubDb/EAVT)))
       (is (thrown? IllegalStateException (.put w SubDb/AEVT (buf (byte-array 17)) (buf (byte-array 0))))))
     (with-open [layered (LayeredStore/over base 0 true)]
       (write-datoms! layered {} [[:add [1 2 (byte-array [3]) 4]]] true)
       (with-open [r (.beginRead layered)]
         (is (= [[(vec (datom-key SubDb/AEVT [1 2 (byte-array [3]) 4] nil)) []]] (scan r SubDb/AEVT true))))
       (with-open [w (.beginWrite layered)]
         (is (.derives w SubDb/AEVT) "a read at one commit: still derived"))
       (write-datoms! layered {} [[:add [5 2 (byte-array [3]) 6]]] true)
       (with-open [r (.beginRead layered)]
         (is (= 2 (count (scan r SubDb/AEVT true)))))
       (with-open [w (.beginWrite layered)]
         (is (not (.derives w SubDb/AEVT)) "after reads of AEVT at two commits, the staging writes it"))
       (with-open [r (.beginRead layered)]
         (is (= 2 (count (scan r SubDb/AEVT true))) "the derived entries put into the delta"))))))

;; AVET made from EAVT sorts its keys by bytes, attribute by attribute: a radix sort of each
;; key's bytes 8 to 24 and, for keys alike there, of the rest. Values of every shape: strings
;; alike in their first 30 bytes, short ones, a few values many entities share (long runs of
;; keys alike in the value), entities anywhere in the range of ids, an attribute id whose top
;; bit is set.
(deftest avet-made-from-eavt-is-in-key-order
  (doseq [kind [:lmdb :mem], seed (range 3)]
    (testing (str kind ", seed " seed)
      (call-with-base
       kind
       (fn [^Store base]
         (let [rnd (Random. seed)
               rand-bytes (fn [n] (let [b (byte-array n)] (.nextBytes rnd b) b))
               shared (vec (repeatedly 6 #(rand-bytes (inc (.nextInt rnd 10)))))
               value (fn []
                       (case (.nextInt rnd 4)
                         0 (byte-array (concat (repeat 30 (byte 97)) (rand-bytes (inc (.nextInt rnd 12)))))
                         1 (rand-bytes (inc (.nextInt rnd 12)))
                         2 (shared (.nextInt rnd (count shared)))
                         (byte-array (concat [(byte 5)] (repeat (.nextInt rnd 20) (byte 0)) (rand-bytes 2)))))
               datoms (vec (distinct
                            (for [_ (range 4000)]
                              [(case (.nextInt rnd 3)
                                 0 (inc (.nextInt rnd 50))
                                 1 (.nextLong rnd)
                                 (+ 100000 (.nextInt rnd 1000000)))
                               ;; an id with its top bit set sorts last, as an unsigned key
                               ([3 4 5 -3] (.nextInt rnd 4)) (value) (+ 100 (.nextInt rnd 3))])))
               expected (->> datoms
                             (map #(datom-key SubDb/AVET % nil))
                             (sort st/unsigned-byte-comparator)
                             (mapv (fn [k] [(vec k) []])))]
           (with-open [layered (LayeredStore/over base 0 true)]
             (doseq [part (partition-all 1000 datoms)]
               (write-datoms! layered {} (map #(vector :add %) part) true))
             (with-open [r (.beginWriteBack layered)]
               (is (= expected (scan r SubDb/AVET true)))))))))))

(deftest a-write-back-read-builds-the-derived-indexes-on-a-helper
  (doseq [kind [:lmdb :mem]]
    (testing (name kind)
      (call-with-base
       kind
       (fn [^Store base]
         (let [datoms (for [e (range 1 30001)] [e (inc (mod e 7)) (byte-array [(mod e 5)]) 9])
               expected (fn [db] (->> datoms
                                      (map #(datom-key db % nil))
                                      (sort st/unsigned-byte-comparator)
                                      (mapv (fn [k] [(vec k) []]))))
               staged (fn [] (doto (LayeredStore/over base 0 true)
                               (write-datoms! {} (map #(vector :add %) datoms) true)))]
           (with-open [layered ^LayeredStore (staged)
                       r (.beginWriteBack layered)]
             (is (every? #(.ready r %) [SubDb/EAVT SubDb/HEAVT SubDb/VAET]) "only the derived ones wait")
             (is (= (expected SubDb/EAVT) (scan r SubDb/EAVT true)))
             (is (= (expected SubDb/AEVT) (scan r SubDb/AEVT true)))
             (is (= (expected SubDb/AVET) (scan r SubDb/AVET true))
                 "AVET: the keys written (attributes 1 and 2) with the ones made (3 to 7)")
             (is (= (reverse (expected SubDb/AVET)) (scan r SubDb/AVET false)))
             (is (= (reverse (expected SubDb/AEVT)) (scan r SubDb/AEVT false)))
             (is (= [] (scan r SubDb/HAEVT true)))
             (is (every? #(.ready r %) [SubDb/AEVT SubDb/AVET]) "built, once read"))
           (testing "an interrupt while a read waits for the helper is set again when the read closes"
             (with-open [layered ^LayeredStore (staged)]
               (let [r (.beginWriteBack layered)
                     ;; nothing between the interrupt and its check may look at it (a clojure.test
                     ;; report's STM transaction clears it)
                     aevt (do (.interrupt (Thread/currentThread))
                              (scan r SubDb/AEVT true))
                     _ (.close r)
                     interrupted (Thread/interrupted)]
                 (is (= (expected SubDb/AEVT) aevt))
                 (is interrupted))))
           (testing "a read closed unread waits for its helper"
             (with-open [layered ^LayeredStore (staged)]
               (let [r (.beginWriteBack layered)]
                 (.close r)
                 (is (.ready r SubDb/AEVT)))))))))))
