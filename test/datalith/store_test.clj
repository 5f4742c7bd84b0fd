(ns datalith.store-test
  "LmdbStore and MemStore against the Store contract and against a sorted-map model."
  (:require [clojure.test :refer [deftest is are testing use-fixtures]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.heap-watch :as heap-watch]
            [datalith.lmdb-file :as lmdb-file])
  (:import [datalith.store Cursor LmdbStore MemStore ReadTxn Store SubDb WriteTxn]
           [java.nio ByteBuffer]
           [java.nio.charset StandardCharsets]
           [java.nio.file Files Path]
           [java.nio.file.attribute FileAttribute]
           [java.util Arrays Comparator]))

(set! *warn-on-reflection* true)

;; This namespace's JVM once ran out of heap now and then: test.check shrinking a failing trial of
;; generative-against-sorted-map (a probe collected mid-read, see probe-lifetime-test), a failure
;; that did not come back on the smaller trials, so every one of the root's many shrinks was tried
;; and kept. Should anything fill the heap again, the watch prints every thread's stack and the
;; heap's largest classes.
(use-fixtures :once (fn [f] (heap-watch/watch!) (f)))

;; ---- stores ----------------------------------------------------------------

(def kinds
  "LMDB with its Java page reader, LMDB alone (option \"page-reader\" \"lmdb\": every read
  and write LMDB's own, the plain path the Java reader is checked against), both without
  write-behind (each commit put into LMDB's trees), MemStore, and MemStore editing in place
  when no read is open (MemStore/openInPlace), and LMDB with write-behind (its commits laid
  in memory over LMDB's, and written back every few commits: reads merge layers, or not, as
  the write-back thread finds the time)."
  [:lmdb :lmdb-plain :mem :mem-in-place :lmdb-behind])

(def model-kinds
  "The kinds the generative tests against a sorted-map model run on: `kinds`, and (since stop
  46) LMDB with its Java page reader on a store of pages of 16 KiB, LMDB's layout on Apple
  silicon (an empty store's file with its pages spread, lmdb-file's spread-pages!)."
  (conj kinds :lmdb-16k))

(defn- open-mem ^MemStore [kind]
  (if (= kind :mem-in-place) (MemStore/openInPlace) (MemStore/open)))

(def ^:dynamic *kind* "The kind of the store under test." nil)

(defn- temp-dir ^Path []
  (Files/createTempDirectory "datalith-store-test" (make-array FileAttribute 0)))

(defn- delete-tree [^Path dir]
  (doseq [^java.io.File f (reverse (file-seq (.toFile dir)))]
    (.delete f)))

(defn- open-lmdb ^Store [^Path dir opts]
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

(defn- ->bytes ^bytes [x]
  (if (string? x) (.getBytes ^String x StandardCharsets/UTF_8) x))

(defn- buf
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

(defn- bytes-of ^bytes [^ByteBuffer b]
  (let [a (byte-array (.remaining b))]
    (.get b (.position b) a)
    a))

(defn- str-of [^ByteBuffer b]
  (when b (String. (bytes-of b) StandardCharsets/UTF_8)))

(defn- put! [^WriteTxn w db k v] (.put w db (buf k) (buf v)))

(defn- commit!
  "Commits one transaction of [db k v] puts (v nil: delete)."
  [^Store s writes]
  (with-open [w (.beginWrite s)]
    (doseq [[db k v] writes]
      (if (nil? v) (.delete w db (buf k)) (put! w db k v)))
    (.commit w)))

(defn- lookup [^ReadTxn r k] (str-of (.get r SubDb/EAVT (buf k))))

(defn- scan
  "All [key val] byte-array pairs of `db`, forward (or backward)."
  ([^ReadTxn r db] (scan r db true))
  ([^ReadTxn r db forward?]
   (with-open [c (.cursor r db)]
     (loop [ok (if forward? (.first c) (.last c)) acc []]
       (if ok
         (let [acc (conj acc [(bytes-of (.key c)) (bytes-of (.val c))])]
           (recur (if forward? (.next c) (.prev c)) acc))
         acc)))))

(defn- strs [pairs] (mapv (fn [[k v]] [(String. ^bytes k StandardCharsets/UTF_8) (String. ^bytes v StandardCharsets/UTF_8)]) pairs))

(defn- seek-key [^Cursor c k] (when (.seek c (buf k)) (str-of (.key c))))

;; ---- basic operations ------------------------------------------------------

(deftest put-get-delete-seek
  (with-each-store [s]
    (commit! s [[SubDb/EAVT "b" "2"] [SubDb/EAVT "d" "4"] [SubDb/EAVT "a" "1"]
                [SubDb/EAVT "c" "3"] [SubDb/AEVT "b" "other db"]])
    (commit! s [[SubDb/EAVT "c" nil] [SubDb/EAVT "d" "four"] [SubDb/EAVT "zz" nil]])
    (with-open [r (.beginRead s)]
      (are [k v] (= v (lookup r k))
        "a" "1", "b" "2", "c" nil, "d" "four", "e" nil, "" nil)
      (is (= "other db" (str-of (.get r SubDb/AEVT (buf "b")))))
      (is (nil? (.get r SubDb/AVET (buf "b"))))
      (is (= [["a" "1"] ["b" "2"] ["d" "four"]] (strs (scan r SubDb/EAVT))))
      (is (= [["d" "four"] ["b" "2"] ["a" "1"]] (strs (scan r SubDb/EAVT false))))
      (is (= [] (scan r SubDb/LOG) (scan r SubDb/LOG false)))
      (with-open [c (.cursor r SubDb/EAVT)]
        (are [k found] (= found (seek-key c k))
          "" "a", "a" "a", "a\u0000" "b", "b" "b", "bb" "d", "c" "d", "d" "d", "d\u0000" nil, "e" nil))
      (testing "moves and their ends"
        (with-open [c (.cursor r SubDb/EAVT)]
          (is (thrown? IllegalStateException (.key c)))
          (is (false? (.next c)))
          (is (.last c))
          (is (= "d" (str-of (.key c))))
          (is (false? (.next c)))
          (is (false? (.next c)) "stays off the end")
          (is (false? (.prev c)) "stays off the end until positioned again")
          (is (thrown? IllegalStateException (.val c)))
          (is (.first c))
          (is (false? (.prev c)))
          (is (.seek c (buf "b")))
          (is (.prev c))
          (is (= ["a" "1"] [(str-of (.key c)) (str-of (.val c))]))))
      (testing "returned buffers are read-only and at position 0"
        (with-open [c (.cursor r SubDb/EAVT)]
          (.seek c (buf "b" true))
          (doseq [^ByteBuffer b [(.key c) (.val c) (.get r SubDb/EAVT (buf "b" true))]]
            (is (.isReadOnly b))
            (is (zero? (.position b)))
            (is (= 1 (.remaining b)))))))))

(deftest empty-values-and-key-limits
  (with-each-store [s]
    (commit! s [[SubDb/EAVT "k" ""] [SubDb/EAVT (byte-array 511 (byte -1)) "max"]])
    (with-open [r (.beginRead s)]
      (is (= "" (lookup r "k")))
      (is (= "max" (lookup r (byte-array 511 (byte -1)))))
      (is (nil? (lookup r (byte-array 600 (byte -1)))))
      (with-open [c (.cursor r SubDb/EAVT)]
        (is (= "k" (seek-key c (byte-array 1 (byte 0x6b)))))
        (is (= 511 (count (bytes-of (do (.seek c (buf (byte-array 511 (byte -2)))) (.key c))))))
        (is (false? (.seek c (buf (byte-array 512 (byte -1))))) "past every key")
        (is (.seek c (buf (byte-array 520 (byte -2)))) "a long key before the 511 x 0xFF key")))
    (with-open [w (.beginWrite s)]
      (doseq [k ["" (byte-array 512)]]
        (let [e (is (thrown? clojure.lang.ExceptionInfo (.put w SubDb/EAVT (buf k) (buf "v"))))]
          (is (= :store/key-size (:error (ex-data e)))))))))

;; ---- model-based generative test ------------------------------------------

(def ^:private gen-byte
  (gen/frequency [[3 (gen/elements [0 1 127 -128 -1])] [2 gen/byte]]))

(def ^:private long-prefixes
  [(vec (repeat 490 -1)) (vec (repeat 490 0)) (vec (take 490 (cycle [0 -1 1])))])

(def ^:private gen-key
  (gen/fmap byte-array
            (gen/frequency
             [[6 (gen/vector gen-byte 1 6)]
              [2 (gen/fmap (partial apply into) (gen/tuple (gen/elements long-prefixes) (gen/vector gen-byte 0 10)))]
              [1 (gen/vector gen-byte 1 500)]])))

(def ^:private gen-val
  (gen/fmap byte-array (gen/frequency [[1 (gen/return [])] [4 (gen/vector gen-byte 0 40)] [1 (gen/vector gen-byte 0 700)]])))

(def ^:private gen-trial
  (gen/let [pool (gen/vector gen-key 1 40)
            txns (gen/vector
                  (gen/tuple (gen/vector (gen/tuple (gen/elements [:put :put :delete]) gen/nat gen-val) 0 50)
                             (gen/frequency [[3 (gen/return true)] [1 (gen/return false)]]))
                  1 6)
            seeks (gen/vector (gen/one-of [gen-key
                                           (gen/return (byte-array 0))
                                           (gen/fmap byte-array (gen/vector gen-byte 501 540))])
                              5 15)
            direct? gen/boolean]
    {:pool pool :txns txns :seeks seeks :direct? direct?}))

(defn- model-seek [model ^bytes k]
  (when-let [[mk] (first (subseq model >= k))] (vec mk)))

(defn- view [pairs] (mapv (fn [[k v]] [(vec k) (vec v)]) pairs))

(defn- shuffled
  "The items of `coll` in an order drawn from `rnd`: a test's data comes from its seed alone (an
  unseeded shuffle once made a tree-shape bug show in one CI run of many)."
  [^java.util.Random rnd coll]
  (let [l (java.util.ArrayList. ^java.util.Collection (vec coll))]
    (java.util.Collections/shuffle l rnd)
    (vec l)))

(defn- agrees? [^Store s model {:keys [pool seeks direct?]}]
  (with-open [r (.beginRead s)]
    (let [fwd (view (scan r SubDb/EAVT))
          bwd (view (scan r SubDb/EAVT false))
          entries (view model)]
      (and (= entries fwd)
           (= (reverse entries) bwd)
           (every? (fn [k] (= (some-> (get model k) vec)
                              (some-> (.get r SubDb/EAVT (buf k direct?)) bytes-of vec)))
                   pool)
           (with-open [c (.cursor r SubDb/EAVT)]
             (every? (fn [^bytes k]
                       (let [current #(vec (bytes-of (.key c)))
                             found (when (.seek c (buf k direct?)) (current))]
                         (and (= (model-seek model k) found)
                              ;; next and prev from a seek agree with the model too
                              (or (nil? found)
                                  (and (= (some-> (second (subseq model >= k)) key vec)
                                          (when (.next c) (current)))
                                       (.seek c (buf k direct?))
                                       (= (some-> (first (rsubseq model < k)) key vec)
                                          (when (.prev c) (current))))))))
                     (concat seeks pool)))))))

(defn- trial-passes? [kind {:keys [pool txns direct?] :as trial}]
  (call-with-store
   kind {"map-size" (* 1024 1024) "sync" false}
   (fn [^Store s]
     (loop [model (sorted-map-by unsigned-byte-comparator) [[ops commit?] & more] txns]
       (let [model (with-open [w (.beginWrite s)]
                     (let [next-model (reduce (fn [m [op i v]]
                                                (let [k (nth pool (mod i (count pool)))]
                                                  (if (= op :put)
                                                    (do (.put w SubDb/EAVT (buf k direct?) (buf v direct?))
                                                        (assoc m k v))
                                                    (do (.delete w SubDb/EAVT (buf k direct?))
                                                        (dissoc m k)))))
                                              model ops)]
                       (if commit? (do (.commit w) next-model) model)))]
         (cond (not (agrees? s model trial)) false
               (seq more) (recur model more)
               :else true))))))

(deftest generative-against-sorted-map
  ;; A failing trial stops the run at once, reported with its seed (which replays it) and what it
  ;; returned or threw: shrinking these nested vectors once filled a 6 GB heap with test.check's
  ;; rose trees (the heap watch's report), so the failure itself was never seen.
  (doseq [kind model-kinds]
    (testing (name kind)
      (let [result (try
                     (tc/quick-check 40 (prop/for-all [trial gen-trial] (trial-passes? kind trial))
                                     :reporter-fn (fn [m]
                                                    (when (= :failure (:type m))
                                                      (throw (ex-info "a failing trial"
                                                                      (select-keys m [:seed :num-tests :failing-size :result]))))))
                     (catch clojure.lang.ExceptionInfo e
                       (if (= "a failing trial" (ex-message e)) (ex-data e) (throw e))))]
        (is (true? (:pass? result)) (pr-str (assoc result :kind kind)))))))

(deftest bulk-random-against-sorted-map
  (with-each-store [s {"map-size" (* 1024 1024) "sync" false}]
    (let [rnd (java.util.Random. 42)
          rand-key (fn [] (let [b (byte-array (inc (.nextInt rnd 12)))] (.nextBytes rnd b) b))
          model (reduce
                 (fn [model round]
                   (let [ks (repeatedly 8000 rand-key)
                         dels (take 5000 (shuffled rnd (concat (keys model) (take 1000 ks))))
                         writes (concat (map (fn [k] [SubDb/EAVT k (str round)]) ks)
                                        (map (fn [k] [SubDb/EAVT k nil]) dels))
                         model (reduce (fn [m [_ k v]] (if v (assoc m k (->bytes v)) (dissoc m k)))
                                       model writes)]
                     (commit! s writes)
                     (with-open [r (.beginRead s) c (.cursor r SubDb/EAVT)]
                       (is (= (view model) (view (scan r SubDb/EAVT))))
                       (is (= (reverse (view model)) (view (scan r SubDb/EAVT false))))
                       (is (every? (fn [^bytes k]
                                     (= (model-seek model k)
                                        (when (.seek c (buf k)) (vec (bytes-of (.key c))))))
                                   (repeatedly 2000 rand-key))))
                     model))
                 (sorted-map-by unsigned-byte-comparator)
                 (range 4))]
      (is (< 10000 (count model))))))

;; The Java page reader (LmdbCursor, LmdbTree) descends the tree and crosses leaf pages itself:
;; walks mixing steps, seeks near and far and value reads cross pages in both directions, over
;; keys of every length and values on overflow pages, and must agree with the model at every
;; move.
(defn- walk-op
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

(defn- walks-agree
  "Commits `model` (a sorted map of byte arrays) to `s`, then walks a cursor over it by `steps`
  random moves and scans it whole both ways, checking each against the model."
  [^Store s model steps ^java.util.Random rnd rand-key]
  (let [ks (vec (keys model))
        expect (fn [i] (when (< -1 i (count ks)) [(vec (ks i)) (vec (model (ks i)))]))]
    (commit! s (map (fn [[k v]] [SubDb/EAVT k v]) model))
    (with-open [r (.beginRead s) c (.cursor r SubDb/EAVT)]
      (is (= (view model) (view (scan r SubDb/EAVT))))
      (is (= (reverse (view model)) (view (scan r SubDb/EAVT false))))
      (is (= steps
             (loop [step 0 at (if (.first c) 0 -1)]
               (if (= step steps)
                 step
                 (let [[at' found?] (walk-op c rnd ks at rand-key)
                       got (when found? [(vec (bytes-of (.key c))) (vec (bytes-of (.val c)))])]
                   (if (= (expect at') got)
                     (recur (inc step) (if found? at' (if (.first c) 0 -1)))
                     (do (is (= (expect at') got) (str "step " step))
                         step))))))))))

(deftest cursor-walks-across-pages
  (with-each-store [s {"map-size" (* 4 1024 1024) "sync" false}]
    (let [rnd (java.util.Random. 7)
          rand-bytes (fn [n] (let [b (byte-array n)] (.nextBytes rnd b) b))
          rand-key #(rand-bytes (inc (.nextInt rnd (if (zero? (.nextInt rnd 20)) 511 24))))
          rand-val #(rand-bytes (case (int (.nextInt rnd 10))
                                  0 (+ 4000 (.nextInt rnd 9000)) ; on overflow pages
                                  1 0
                                  (.nextInt rnd 40)))]
      (walks-agree s (into (sorted-map-by unsigned-byte-comparator)
                           (repeatedly 6000 (fn [] [(rand-key) (rand-val)])))
                   20000 rnd rand-key))))

;; Keys of 300 to 500 bytes put about ten on a page, leaf or branch: 5000 of them make a tree
;; four pages deep, whose leaves the cursor crosses to through two and three levels of branches.
(deftest cursor-walks-a-deep-tree
  (with-each-store [s {"map-size" (* 16 1024 1024) "sync" false}]
    (let [rnd (java.util.Random. 11)
          rand-bytes (fn [n] (let [b (byte-array n)] (.nextBytes rnd b) b))
          rand-key #(rand-bytes (+ 300 (.nextInt rnd 200)))]
      (walks-agree s (into (sorted-map-by unsigned-byte-comparator)
                           (repeatedly 5000 (fn [] [(rand-key) (rand-bytes (.nextInt rnd 16))])))
                   20000 rnd rand-key))))

;; The two warmed-seek tests' data and checks: a sorted-map model of n random keys of min-len
;; to min-len + spread bytes (values up to 15), and the model's ceiling of a probe.
(defn- random-model [^java.util.Random rnd n min-len spread]
  (let [rand-bytes (fn [n] (let [b (byte-array n)] (.nextBytes rnd b) b))]
    (into (sorted-map-by unsigned-byte-comparator)
          (repeatedly n (fn [] [(rand-bytes (+ min-len (.nextInt rnd spread)))
                                (rand-bytes (.nextInt rnd 16))])))))

(defn- model-ceiling [model p] (some-> (first (subseq model >= p)) key vec))

(defn- direct-of ^ByteBuffer [^bytes b]
  (.flip (.put (ByteBuffer/allocateDirect (alength b)) b)))

;; Cursor.warm makes the descents (and on LMDB's Java page reader, the search of the leaf page)
;; of the seeks that follow it: each such seek must land where a seek alone does, on a tree four
;; pages deep, for probes that are keys, prefixes of keys, between keys and past either end,
;; warmed in batches and sought in order with probes that were not warmed among them.
(deftest warmed-seeks-land-where-seeks-do
  (with-each-store [s {"map-size" (* 16 1024 1024) "sync" false}]
    (let [rnd (java.util.Random. 13)
          rand-bytes (fn [n] (let [b (byte-array n)] (.nextBytes rnd b) b))
          model (random-model rnd 5000 300 200)
          ks (vec (keys model))
          probe (fn []
                  (let [^bytes k (ks (.nextInt rnd (count ks)))]
                    (case (int (.nextInt rnd 5))
                      0 k
                      1 (Arrays/copyOf k (inc (.nextInt rnd 8))) ; a prefix: lands on k or before
                      2 (rand-bytes (inc (.nextInt rnd 12)))
                      3 (byte-array [(unchecked-byte -1) (unchecked-byte -1)]) ; past the last key
                      (byte-array [(byte 0)]))))
          ceiling (partial model-ceiling model)
          direct direct-of]
      (commit! s (map (fn [[k v]] [SubDb/EAVT k v]) model))
      (with-open [r (.beginRead s) c (.cursor r SubDb/EAVT)]
        (dotimes [_ 60]
          (let [batch (vec (sort unsigned-byte-comparator
                                 (repeatedly (inc (.nextInt rnd 40)) probe)))
                n (.nextInt rnd (inc (count batch))) ; the first n are warmed
                sought (if (zero? (.nextInt rnd 3))
                         (vec (sort unsigned-byte-comparator (into batch (repeatedly 3 probe))))
                         batch)]
            (.warm c (into-array ByteBuffer (map direct batch)) n)
            (doseq [^bytes p sought]
              (is (= (ceiling p)
                     (when (.seek c (direct p)) (vec (bytes-of (.key c)))))))))))))

;; A warmed seek from a positioned cursor takes the warmed descent even when the page the cursor
;; is on holds the probe (LMDB's Java page reader: it then skips that page's first and last
;; keys, which an unwarmed seek compares first): the probes here are neighbours, so that most
;; land on the cursor's page, among them the first and last keys of pages, the bytes just
;; before and after keys, and keys the cursor stands on; warmed in part, sought in order.
(deftest warmed-seeks-on-the-current-page
  (with-each-store [s {"map-size" (* 16 1024 1024) "sync" false}]
    (let [rnd (java.util.Random. 17)
          model (random-model rnd 3000 8 300)
          ks (vec (keys model))
          near (fn [^bytes k]
                 (case (int (.nextInt rnd 4))
                   0 k
                   1 (Arrays/copyOf k (inc (alength k))) ; just after k
                   2 (let [b (aclone k) i (dec (alength b))] ; just before k, or k itself
                       (when-not (zero? (aget b i)) (aset b i (unchecked-byte (dec (aget b i)))))
                       b)
                   (Arrays/copyOf k (max 1 (dec (alength k)))))) ; a prefix of k
          ceiling (partial model-ceiling model)
          direct direct-of]
      (commit! s (map (fn [[k v]] [SubDb/EAVT k v]) model))
      (with-open [r (.beginRead s) c (.cursor r SubDb/EAVT)]
        (dotimes [_ 100]
          (let [from (.nextInt rnd (- (count ks) 60))
                batch (vec (sort unsigned-byte-comparator
                                 (for [i (range from (+ from 60)) :when (< (.nextInt rnd 3) 2)]
                                   (near (ks i)))))
                n (.nextInt rnd (inc (count batch)))]
            (.seek c (direct (ks from))) ; the cursor starts on the first probe's page
            (.warm c (into-array ByteBuffer (map direct batch)) n)
            (doseq [^bytes p batch]
              (is (= (ceiling p)
                     (when (.seek c (direct p)) (vec (bytes-of (.key c)))))))))))))

;; New entities' datoms land at the end of an attribute's keys, before the next attribute's:
;; LmdbReplay writes such runs at the end of full pages (LMDB alone splits the page in the middle
;; each time, leaving pages half full). Other writes in the same transactions touch the keys it
;; moves: rewrites, deletes, a put and a delete of one key, values on overflow pages. The key
;; right after the runs holds a value on an overflow page throughout (LmdbReplay once left such a
;; page to LMDB, and every later run split pages in the middle).
(deftest runs-fill-pages
  (with-each-store [s {"map-size" (* 32 1024 1024) "sync" false}]
    (let [rnd (java.util.Random. 5)
          key-of (fn [prefix i] (let [b (ByteBuffer/allocate 40)]
                                  (.put b 0 (byte prefix))
                                  (.putLong b 1 (long i))
                                  (.array b)))
          small #(byte-array (.nextInt rnd 8))
          fence (mapv #(key-of 2 %) (range 300)) ; every run lands before these
          round-writes
          (fn [round]
            (let [pick #(fence (inc (.nextInt rnd (dec (count fence))))) ; the first stays big
                  both (pick)]
              (concat
               (shuffled
                rnd
                (concat (for [i (range 400)] [(key-of 1 (+ (* round 400) i)) (small)])
                        [[(pick) (small)] [(pick) nil] [(pick) (byte-array 5000)]]
                        (for [_ (range 20)] [(key-of (nth [0 3] (.nextInt rnd 2)) (.nextInt rnd 100000)) (small)])))
               [[both (small)] [both nil]])))
          apply-writes (fn [model writes]
                         (commit! s (map (fn [[k v]] [SubDb/EAVT k v]) writes))
                         (reduce (fn [m [k v]] (if v (assoc m k v) (dissoc m k))) model writes))
          model (reduce (fn [model round] (apply-writes model (round-writes round)))
                        (apply-writes (sorted-map-by unsigned-byte-comparator)
                                      (map-indexed (fn [i k] [k (if (zero? i) (byte-array 5000) (small))]) fence))
                        (range 30))]
      (with-open [r (.beginRead s)]
        (is (= (view model) (view (scan r SubDb/EAVT))))
        (is (= (reverse (view model)) (view (scan r SubDb/EAVT false)))))
      (when (= *kind* :lmdb) ; :lmdb-plain leaves every put to LMDB
        ;; 40-byte keys and small values: 75 fit on a page, half full is 37
        (let [{:keys [entries leaf-pages]} (.pageStats ^LmdbStore s SubDb/EAVT)]
          (is (= (count model) entries))
          (is (< (* 60 leaf-pages) entries) (str leaf-pages " leaf pages")))))))

;; A write transaction sorts its logged writes by sub-database and key before applying them
;; (LMDB's WriteLog, MemStore's MemWrites), comparing each key's first bytes as numbers first
;; (LMDB's 32, MemStore's 32, which orders keys that tie there as they were made): keys that tie
;; there (long shared prefixes, keys that end in zeros or are zero-padded prefixes of others) must
;; still land in key order, and one key's writes keep the order they were made in, in every
;; sub-database.
(deftest writes-sort-by-key-past-their-prefixes
  (with-each-store [s {"map-size" (* 32 1024 1024) "sync" false}]
    (let [rnd (java.util.Random. 17)
          dbs [SubDb/EAVT SubDb/AVET SubDb/LOG SubDb/META]
          shared (byte-array 60 (byte -1))
          gen-key (fn []
                    (case (int (.nextInt rnd 4))
                      0 (byte-array (inc (.nextInt rnd 60))) ; zeros of any length
                      1 (let [b (Arrays/copyOf shared (+ 30 (.nextInt rnd 30)))] ; ties past 32
                          (aset-byte b (dec (alength b)) (byte (.nextInt rnd 3)))
                          b)
                      2 (let [b (byte-array (+ 8 (.nextInt rnd 40)))] ; one differing byte
                          (aset-byte b (.nextInt rnd (alength b)) (byte (- (.nextInt rnd 256) 128)))
                          b)
                      3 (let [b (byte-array (inc (.nextInt rnd 60)))] (.nextBytes rnd b) b)))
          pool (vec (repeatedly 300 gen-key))
          round (fn [] (vec (repeatedly 2000 (fn [] [(dbs (.nextInt rnd (count dbs)))
                                                      (pool (.nextInt rnd (count pool)))
                                                      (when (pos? (.nextInt rnd 4))
                                                        (str (.nextInt rnd 1000)))]))))
          models (reduce (fn [models writes]
                           (commit! s writes)
                           (reduce (fn [m [db k v]]
                                     (if v
                                       (update m db assoc k (->bytes v))
                                       (update m db dissoc k)))
                                   models writes))
                         (zipmap dbs (repeat (sorted-map-by unsigned-byte-comparator)))
                         (repeatedly 5 round))]
      (with-open [r (.beginRead s)]
        (doseq [db dbs]
          (is (= (view (models db)) (view (scan r db))) (str db)))))))

;; An LMDB write transaction replays its writes in key order a batch (256 KiB) at a time: a
;; transaction of several batches, with a value larger than a batch, keys written twice, and a
;; run of keys in the middle of the tree across batches, ends as the model does, and the run
;; still fills its pages.
(deftest writes-larger-than-a-replay-batch
  (with-each-store [s {"map-size" (* 64 1024 1024) "sync" false}]
    (let [key-of (fn [prefix i] (let [b (ByteBuffer/allocate 40)]
                                  (.put b 0 (byte prefix))
                                  (.putLong b 1 (long i))
                                  (.array b)))
          fence (mapv #(key-of 2 %) (range 100)) ; the runs land before these
          big (byte-array (* 3 512 1024) (byte 5)) ; 1.5 MiB
          run (fn [from n v] (for [i (range from (+ from n))] [SubDb/EAVT (key-of 1 i) v]))
          rounds [(concat (map (fn [k] [SubDb/EAVT k "fence"]) fence)
                          (run 0 100 "first"))
                  (concat (run 100 60000 "run") ; about 3 MiB of entries
                          [[SubDb/EAVT (key-of 0 1) big]
                           [SubDb/EAVT (key-of 1 5) nil]
                           [SubDb/EAVT (key-of 1 30000) "overwritten"]
                           [SubDb/EAVT (key-of 1 30000) "twice"]
                           [SubDb/EAVT (key-of 1 30001) nil]
                           [SubDb/EAVT (key-of 1 30001) "deleted, then put"]
                           [SubDb/AVET (key-of 1 1) big]
                           [SubDb/AVET (key-of 1 2) "after the big one"]])]
          models (reduce (fn [models writes]
                           (commit! s writes)
                           (reduce (fn [m [db k v]]
                                     (if v (update m db assoc k (->bytes v)) (update m db dissoc k)))
                                   models writes))
                         {SubDb/EAVT (sorted-map-by unsigned-byte-comparator)
                          SubDb/AVET (sorted-map-by unsigned-byte-comparator)}
                         rounds)]
      (with-open [r (.beginRead s)]
        (doseq [db [SubDb/EAVT SubDb/AVET]]
          (is (= (view (models db)) (view (scan r db))) (str db))))
      (when (= *kind* :lmdb) ; :lmdb-plain leaves every put to LMDB
        ;; 40-byte keys and 3-byte values: about 75 fit on a page
        (let [{:keys [entries leaf-pages]} (.pageStats ^LmdbStore s SubDb/EAVT)]
          (is (= (count (models SubDb/EAVT)) entries))
          (is (< (* 60 leaf-pages) entries) (str leaf-pages " leaf pages")))))))

;; ---- isolation -------------------------------------------------------------

(deftest snapshot-isolation
  (with-each-store [s]
    (commit! s [[SubDb/EAVT "k1" "v1"]])
    (let [before (.beginRead s)
          w (.beginWrite s)]
      (put! w SubDb/EAVT "k2" "v2")
      (put! w SubDb/META "m" "1")
      (with-open [during (.beginRead s)]
        (is (nil? (lookup during "k2")) "uncommitted writes are not seen")
        (.commit w)
        (.close w)
        (is (nil? (lookup during "k2")) "opened before the commit")
        (is (nil? (lookup before "k2")) "opened before the write")
        (is (= [["k1" "v1"]] (strs (scan before SubDb/EAVT)))))
      (.close before)
      (with-open [after (.beginRead s)]
        (is (= [["k1" "v1"] ["k2" "v2"]] (strs (scan after SubDb/EAVT))))
        (is (= "1" (str-of (.get after SubDb/META (buf "m")))))))
    (testing "a write closed without commit is discarded"
      (with-open [w (.beginWrite s)]
        (put! w SubDb/EAVT "k3" "v3")
        (.delete w SubDb/EAVT (buf "k1")))
      (with-open [r (.beginRead s)]
        (is (= [["k1" "v1"] ["k2" "v2"]] (strs (scan r SubDb/EAVT))))))
    (testing "transactions refuse use after close"
      (let [r (.beginRead s) c (.cursor r SubDb/EAVT)]
        (.close r)
        (is (thrown? IllegalStateException (.get r SubDb/EAVT (buf "k1"))))
        (is (= :store/closed (:error (ex-data (is (thrown? IllegalStateException (.first c))))))))
      (with-open [r (.beginRead s)]
        (let [c (.cursor r SubDb/EAVT)]
          (.close c)
          (is (thrown? IllegalStateException (.first c)))))
      (let [w (.beginWrite s)]
        (.commit w)
        (is (thrown? IllegalStateException (put! w SubDb/EAVT "x" "y")))
        (.close w)
        (is (thrown? IllegalStateException (.commit w)))))))

;; ---- concurrency -----------------------------------------------------------

(defn- run-for
  "Runs (f) in a loop on a new thread until `stop` is set; returns a future of
  the number of iterations."
  [stop f]
  (future (loop [n 0] (if @stop n (do (f) (recur (inc n)))))))

(deftest writer-and-readers
  (with-each-store [s {"sync" false}]
    (let [n 20
          stop (atom false)
          keys (mapv #(format "k%02d" %) (range n))
          write (fn [i] (commit! s (cons [SubDb/META "counter" (str i)]
                                         (map (fn [k] [SubDb/EAVT k (str i)]) keys))))
          _ (write 0)
          check (fn []
                  (with-open [r (.beginRead s)]
                    (let [counter (str-of (.get r SubDb/META (buf "counter")))
                          vals (map second (strs (scan r SubDb/EAVT)))]
                      (when-not (and (= n (count vals)) (every? #{counter} vals))
                        (throw (ex-info "inconsistent snapshot" {:counter counter :vals vals}))))))
          readers (doall (repeatedly 3 #(run-for stop check)))
          writer (future (loop [i 1]
                           (if @stop i (do (write i) (recur (inc i))))))]
      (Thread/sleep 2000)
      (reset! stop true)
      (is (< 10 @writer) "the writer was not blocked by readers")
      (doseq [r readers] (is (< 10 @r) "readers were not blocked")))))

;; ---- LMDB map growth and file size -----------------------------------------

(defn- data-file-size [^Path dir] (Files/size (.resolve dir "data.mdb")))

(defn- value-of [i size] (let [b (byte-array size)] (Arrays/fill b (unchecked-byte (mod i 251))) b))

(deftest map-grows-by-itself
  (doseq [kind kinds]
    (testing (name kind)
      (call-with-store
       kind {"map-size" (* 1024 1024) "sync" false}
       (fn [^Store s]
         (let [stop (atom false)
               reader (run-for stop #(with-open [r (.beginRead s)] (.get r SubDb/EAVT (buf "k0000000"))))
               batches (concat [[0 8000]] (map (fn [b] [(+ 8000 (* b 2000)) 2000]) (range 21)))]
           ;; 8 MB in the first transaction, 50 MB in all
           (doseq [[from n] batches]
             (with-open [w (.beginWrite s)]
               (doseq [i (range from (+ from n))]
                 (.put w SubDb/EAVT (buf (format "k%07d" i)) (ByteBuffer/wrap (value-of i 1000))))
               (.commit w)))
           (reset! stop true)
           (is (pos? @reader))
           (with-open [r (.beginRead s) c (.cursor r SubDb/EAVT)]
             (is (= 50000 (loop [ok (.first c) i 0]
                            (if-not ok
                              i
                              (do (when-not (and (= (format "k%07d" i) (str-of (.key c)))
                                                 (.equals (ByteBuffer/wrap (value-of i 1000)) (.val c)))
                                    (throw (ex-info "bad entry" {:i i})))
                                  (recur (.next c) (inc i))))))))))))))

(defn- put-values! [^WriteTxn w from n]
  (doseq [i (range from (+ from n))]
    (.put w SubDb/EAVT (buf (format "k%07d" i)) (ByteBuffer/wrap (value-of i 1000)))))

(defn- map-size-of
  "The LMDB store's map size in bytes (package-private, read by reflection)."
  [^LmdbStore s]
  (let [m (.getDeclaredMethod LmdbStore "mapSize" (make-array Class 0))]
    (.setAccessible m true)
    (.invoke m s (object-array 0))))

(deftest map-grows-ahead-of-need-once-half-used
  ;; 1000-byte values go three to a 4 KiB page: 100 take ~34 pages of the map's 256, 450 ~150
  (doseq [kind [:lmdb :lmdb-plain]]
    (testing (name kind)
      (call-with-store
       kind {"map-size" (* 1024 1024) "sync" false}
       (fn [^Store s]
         (are [from n size] (= size (do (with-open [w (.beginWrite s)]
                                          (put-values! w from n)
                                          (.commit w))
                                        (map-size-of s)))
           0   100 (* 1024 1024)       ; a quarter used: as it was
           100 350 (* 2 1024 1024)     ; more than half used: doubled by the commit
           450 10  (* 2 1024 1024))))))) ; a quarter of the grown map: as it was

(deftest reads-on-many-threads-through-many-growths
  ;; the map lock keeps every growth (a remap, which may move the map) out of every open read,
  ;; whichever thread, stripe or nesting it came by; a read of the moved map would crash the JVM
  ;; with the Java page reader, or read garbage
  (doseq [kind [:lmdb :lmdb-plain]]
    (testing (name kind)
      (call-with-store
       kind {"map-size" (* 1024 1024) "sync" false}
       (fn [^Store s]
         (let [written (atom 0)
               stop (atom false)
               bad (atom [])
               read-one (fn [^ReadTxn r ^java.util.Random rnd n] ; n: committed before r began
                          (let [n (long n)]
                            (when (pos? n)
                              (let [i (.nextInt rnd n)
                                    v (.get r SubDb/EAVT (buf (format "k%07d" i)))]
                                (when-not (and v (.equals (ByteBuffer/wrap (value-of i 1000)) v))
                                  (swap! bad conj i))))))
               readers (doall
                        (for [t (range 4)]
                          (let [rnd (java.util.Random. t)]
                            (run-for stop
                                     #(let [n @written]
                                        (with-open [r (.beginRead s)]
                                          (read-one r rnd n)
                                          (when (zero? (.nextInt rnd 4)) ; a read inside a read
                                            (with-open [r2 (.beginRead s)]
                                              (read-one r2 rnd n)))
                                          (read-one r rnd n)))))))]
           ;; 40 MB in 1,000-entry commits: the map grows from 1 MiB six times
           (dotimes [b 40]
             (with-open [w (.beginWrite s)]
               (put-values! w (* b 1000) 1000)
               (.commit w))
             (reset! written (* (inc b) 1000)))
           (Thread/sleep 100)
           (reset! stop true)
           (is (every? #(< 20 @%) readers) "every reader went on through the growths")
           (is (= [] (take 5 @bad)) "every read found its value")
           (is (<= (* 64 1024 1024) (map-size-of s)) "the map grew six times")))))))

(defn- commit-past-write-behinds-bound
  "Opens an LMDB store with write-behind and a map of 1 MiB in `dir`, and from another thread
  commits twice write-behind's bound in 1 MB commits, within a minute, while `hold` is
  :writer (that thread holds a read throughout) or :other (a third thread holds one for its
  first 3 s: the write-back, which must grow the map, waits for it); returns [store
  read-or-nil batches], or [store ::stuck batches] when the commits did not get past the bound
  (the store cannot then close)."
  [dir hold]
  (let [bound (let [f (.getDeclaredField (Class/forName "datalith.store.LmdbBehind")
                                         "MAX_BEHIND_BYTES")]
                (.setAccessible f true)
                (.getLong f nil))
        batches (+ 2 (quot (* 2 bound) (* 1000 1000))) ; 1,000 values of 1,000 bytes a commit
        ^Store s (open-lmdb dir {"write-behind" true "write-back-commits" 3
                                 "map-size" (* 1024 1024)})
        other (when (= hold :other)
                (let [held (promise)]
                  (future (with-open [_r (.beginRead s)]
                            (deliver held true)
                            (Thread/sleep 3000)))
                  @held))
        writer (future
                 (let [r (when (= hold :writer) (.beginRead s))]
                   (dotimes [b batches]
                     (with-open [w (.beginWrite s)]
                       (put-values! w (* b 1000) 1000)
                       (.commit w)))
                   r))]
    [s (deref writer 60000 ::stuck) batches]))

(deftest commits-past-write-behinds-bound
  (testing "a write that waits at the bound holds no lock the write-back needs (it held the
  commit lock, which the write-back's checkpoint takes: both waited for ever)"
    (let [dir (temp-dir)
          [^Store s r batches] (commit-past-write-behinds-bound dir :other)]
      (is (not= ::stuck r) "the commits past the bound went on")
      (when (not= ::stuck r) ; else the store cannot close: left to the process's end
        (try
          (with-open [r (.beginRead s)]
            (is (= (* batches 1000) (count (scan r SubDb/EAVT)))))
          (finally (.close s) (delete-tree dir))))))
  (testing "a thread holds a read and commits on while the write-back must grow the map, which
  waits for every read: once it waits at the bound, the growth closes its read, as it closes
  those of threads waiting for the writer lock (it stalled 30 s, then the write-back failed the
  waiting commit)"
    (let [dir (temp-dir)
          [^Store s ^ReadTxn r batches] (commit-past-write-behinds-bound dir :writer)]
      (is (not= ::stuck r) "the commits past the bound went on")
      (when (not= ::stuck r)
        (try
          (let [e (is (thrown? IllegalStateException (.get r SubDb/EAVT (buf "k0000000"))))]
            (is (= :store/closed (:error (ex-data e))) "the held read was closed for the growth"))
          (.close r)
          (with-open [r (.beginRead s)]
            (is (= (* batches 1000) (count (scan r SubDb/EAVT))))
            (is (.equals (ByteBuffer/wrap (value-of 7 1000)) (.get r SubDb/EAVT (buf "k0000007")))))
          (finally (.close s) (delete-tree dir)))))))

(deftest map-growth-closes-reads-that-would-wait-for-it
  (testing "a read open on the committing thread"
    (call-with-store
     :lmdb {"map-size" (* 1024 1024) "sync" false}
     (fn [^Store s]
       (let [r (.beginRead s)
             c (.cursor r SubDb/EAVT)]
         (with-open [w (.beginWrite s)]
           (put-values! w 0 4000)
           (.commit w))
         (let [e (is (thrown? IllegalStateException (.get r SubDb/EAVT (buf "k0000000"))))]
           (is (= :store/closed (:error (ex-data e)))))
         (is (thrown? IllegalStateException (.first c)))
         (.close r)
         (with-open [r (.beginRead s)]
           (is (= 4000 (count (scan r SubDb/EAVT)))))))))
  (testing "a read open on a thread waiting to write"
    (call-with-store
     :lmdb {"map-size" (* 1024 1024) "sync" false}
     (fn [^Store s]
       (let [w (.beginWrite s)
             waiting (promise)
             other (future
                     (with-open [r (.beginRead s)]
                       (deliver waiting true)
                       (with-open [w2 (.beginWrite s)]
                         (try (.get r SubDb/EAVT (buf "k0000000")) :still-open
                              (catch IllegalStateException _ :closed)))))]
         @waiting
         (Thread/sleep 200)
         (put-values! w 0 4000)
         (let [t0 (System/nanoTime)]
           (.commit w)
           (is (< (- (System/nanoTime) t0) 10e9) "the commit did not wait for the parked reader"))
         (.close w)
         (is (= :closed (deref other 10000 :timeout)))
         (with-open [r (.beginRead s)]
           (is (= 4000 (count (scan r SubDb/EAVT))))))))))

(deftest file-stays-bounded-under-overwrites
  (doseq [kind kinds]
    (testing (name kind)
      (let [dir (temp-dir)]
        (try
          (with-open [^Store s (case kind
                          :lmdb (open-lmdb dir {"sync" false "page-reader" "java"})
                          :lmdb-plain (open-lmdb dir {"sync" false "page-reader" "lmdb"})
                          :lmdb-behind (open-lmdb dir {"write-behind" true "write-back-commits" 3})
                          (:mem :mem-in-place) (open-mem kind))]
            (let [stop (atom false)
                  readers (doall (repeatedly 3 #(run-for stop (fn [] (with-open [r (.beginRead s)]
                                                                       (count (scan r SubDb/EAVT)))))))]
              (dotimes [round 300]
                (commit! s (map (fn [i] [SubDb/EAVT (format "key%04d" i) (value-of round 100)]) (range 1000))))
              (reset! stop true)
              (doseq [r readers] (is (pos? @r)))
              (with-open [r (.beginRead s)]
                (is (= 1000 (count (scan r SubDb/EAVT))))))
            (when (#{:lmdb :lmdb-plain :lmdb-behind} kind)
              ;; about 110 KB of live entries; 300 unreclaimed versions would take 30+ MB.
              ;; Readers pin a few versions each, more on a loaded machine: allow 12 MiB.
              (is (< (data-file-size dir) (* 12 1024 1024)) (str "data.mdb: " (data-file-size dir)))))
          (finally (delete-tree dir)))))))

;; ---- close and reopen -------------------------------------------------------

(deftest close-and-reopen
  (let [dir (temp-dir)]
    (try
      (let [s (open-lmdb dir {})]
        (is (.durable s))
        (commit! s [[SubDb/EAVT "a" "1"] [SubDb/META "basis" "7"]])
        (let [w (.beginWrite s)]
          (put! w SubDb/EAVT "b" "uncommitted")
          (.close w))
        (.close s)
        (.close s)
        (testing "use after close"
          (let [e (is (thrown? IllegalStateException (.beginRead s)))]
            (is (= :store/closed (:error (ex-data e)))))
          (is (thrown? IllegalStateException (.beginWrite s)))))
      (with-open [s (open-lmdb dir {"sync" false})]
        (is (not (.durable s)))
        (with-open [r (.beginRead s)]
          (is (= [["a" "1"]] (strs (scan r SubDb/EAVT))))
          (is (= "7" (str-of (.get r SubDb/META (buf "basis")))))))
      (finally (delete-tree dir))))
  (testing "one process opens a directory once"
    (let [dir (temp-dir)]
      (try
        (with-open [_ (open-lmdb dir {})]
          (let [e (is (thrown? clojure.lang.ExceptionInfo (open-lmdb dir {})))]
            (is (= :store/lmdb (:error (ex-data e))))))
        (with-open [_ (open-lmdb dir {})])
        (finally (delete-tree dir)))))
  (testing "mem"
    (let [s (MemStore/open)]
      (is (not (.durable s)))
      (.close s)
      (is (thrown? IllegalStateException (.beginRead s)))
      (is (thrown? IllegalStateException (.beginWrite s))))))

(deftest page-reader-option
  (let [dir (temp-dir)
        option-error (fn [opts] (try (.close (open-lmdb dir opts)) nil
                                     (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))]
    (try
      (are [opts] (= :store/option (option-error opts))
        {"page-reader" "mmap"}
        {"page-reader" :lmdb})
      (are [opts] (nil? (option-error opts))
        {"page-reader" "java"}
        {"page-reader" "lmdb"})
      (testing "the system property sets the default"
        (System/setProperty LmdbStore/PAGE_READER_PROPERTY "mmap")
        (try
          (is (= :store/option (option-error {})))
          (is (nil? (option-error {"page-reader" "lmdb"})) "the option wins")
          (finally (System/clearProperty LmdbStore/PAGE_READER_PROPERTY))))
      (finally (delete-tree dir)))))

(deftest max-readers-option
  ;; LMDB's lock file holds 64 bytes a reader, written out before LMDB maps it: a count in
  ;; the billions filled the disk (found by the bad-input test at 10,000 trials)
  (let [dir (temp-dir)
        lock (.toFile (.resolve dir "lock.mdb"))
        option-error (fn [opts] (try (.close (open-lmdb dir opts)) nil
                                     (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))]
    (try
      (are [n] (= :store/option (option-error {"max-readers" n}))
        0 -1 (inc LmdbStore/MAX_MAX_READERS) Integer/MAX_VALUE Long/MAX_VALUE
        (long 1e12) 1.5 (bigint 1) 1M)
      (is (or (not (.exists lock)) (< (.length lock) (* 1024 1024)))
          "a refused count writes no lock file of its size")
      (are [n] (nil? (option-error {"max-readers" n}))
        1 126 (int 2048) LmdbStore/MAX_MAX_READERS)
      (is (<= (.length lock) (+ (* 64 LmdbStore/MAX_MAX_READERS) 8192)))
      (finally (delete-tree dir)))))

(deftest an-option-nested-deep-is-named-not-printed
  (let [dir (temp-dir)
        deep (reduce (fn [v _] [v]) [] (range 100000))]
    (try
      (let [e (is (thrown? clojure.lang.ExceptionInfo (open-lmdb dir {"max-readers" deep})))]
        (is (= :store/option (:error (ex-data e)))))
      (finally (delete-tree dir)))))

(deftest close-waits-for-open-transactions
  (with-each-store [s]
    (commit! s [[SubDb/EAVT "a" "1"]])
    (let [r (.beginRead s)
          w (.beginWrite s)
          closing (future (.close s) :closed)]
      (Thread/sleep 100)
      (is (not (realized? closing)) "waits while transactions are open")
      (is (= "1" (lookup r "a")))
      (.close w)
      (.close r)
      (is (= :closed (deref closing 5000 :timeout)))
      (is (thrown? IllegalStateException (.beginRead s)))))
  (testing "refuses while this thread holds a transaction"
    (with-each-store [s]
      (let [w (.beginWrite s)]
        (is (thrown? IllegalStateException (.close s)))
        (.close w)))))

;; ---- expectations and the writer lock ---------------------------------------

(defn- commit-expecting!
  "Commits a put of k2 in EAVT, expecting `k` of META to hold `v` (nil:
  absent); the :error of the commit's ex-info, or nil when it commits."
  [^Store s k v]
  (try
    (with-open [w (.beginWrite s)]
      (.expect w SubDb/META (buf k) (when v (buf v)))
      (put! w SubDb/EAVT "k2" "written")
      (.commit w)
      nil)
    (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))

(deftest expect-guards-the-commit
  (with-each-store [s]
    (are [k v error]
         (do (commit! s [[SubDb/META "t" "7"] [SubDb/EAVT "k2" nil]])
             (= [error (when-not error "written")]
                [(commit-expecting! s k v) (with-open [r (.beginRead s)] (lookup r "k2"))]))
      "t" "7" nil
      "u" nil nil
      "t" "8" :store/conflict
      "t" "77" :store/conflict
      "t" nil :store/conflict
      "u" "7" :store/conflict)
    (testing "the conflict's data"
      (let [e (try (with-open [w (.beginWrite s)]
                     (.expect w SubDb/META (buf "t") (buf "6"))
                     (.commit w))
                   (catch clojure.lang.ExceptionInfo e e))]
        (is (= ["META" "t" "6" "7"]
               (-> (ex-data e)
                   ((juxt :sub-db :key :expected :found))
                   (update 1 #(String. ^bytes %))
                   (update 2 #(String. ^bytes %))
                   (update 3 #(String. ^bytes %)))))))
    (testing "after a conflict the store takes the next write"
      (is (nil? (commit-expecting! s "t" "7"))))
    (testing "an expected key is checked like a written one"
      (with-open [w (.beginWrite s)]
        (let [e (is (thrown? clojure.lang.ExceptionInfo (.expect w SubDb/META (buf "") nil)))]
          (is (= :store/key-size (:error (ex-data e)))))))))

(deftest an-interrupted-writer-still-writes
  (with-each-store [s]
    (.interrupt (Thread/currentThread))
    (try
      (commit! s [[SubDb/EAVT "a" "1"]])
      (is (Thread/interrupted) "the interrupt is kept for the caller")
      (finally (Thread/interrupted)))
    (commit! s [[SubDb/EAVT "b" "2"]])
    (with-open [r (.beginRead s)]
      (is (= [["a" "1"] ["b" "2"]] (strs (scan r SubDb/EAVT)))))))

;; ---- runs, appends and old snapshots (h-memtree) ----------------------------
;; MemStore's tree splits a node after a run of ascending keys (new entities' datoms land in
;; runs in every index) and keeps an index's leaves without values: commits of appends, runs
;; into the middle, random keys, deletes of runs and overwrites (empty and not), each commit's
;; snapshot kept open and checked against its model after every later commit.

(defn- segment-keys
  "The keys a segment writes, given the model before it: ascending past the greatest key
  (:append), ascending right after a model key (:run), random, or model keys: from a place
  (:delete-run, :overwrite), the last ones (:delete-tail) or in a random order (:delete-random)."
  [model [kind at n seed]]
  (let [ks (vec (keys model))
        rnd (java.util.Random. seed)
        suffix (fn [^bytes base i] (byte-array (concat base [(unchecked-byte (bit-shift-right i 8)) (unchecked-byte i)])))]
    (case kind
      :append (let [base (or (peek ks) (byte-array [16]))] (map #(suffix base (inc %)) (range n)))
      :run (let [base (if (seq ks) (nth ks (mod at (count ks))) (byte-array [8]))]
             (map #(suffix (byte-array (concat base [0])) %) (range n)))
      :random (repeatedly n #(let [b (byte-array (inc (.nextInt rnd 10)))] (.nextBytes rnd b) b))
      (:delete-run :overwrite) (when (seq ks) (take n (drop (mod at (count ks)) ks)))
      :delete-tail (take-last n ks)
      :delete-random (take n (shuffled rnd ks)))))

(defn- segment-val ^bytes [seed i]
  (if (even? seed) (byte-array 0) (.getBytes (str seed "/" i) StandardCharsets/UTF_8)))

(defn- write-segment
  "Writes one segment into `w`; returns the model after it."
  [^WriteTxn w model [kind _ _ seed :as segment]]
  (reduce (fn [m [i ^bytes k]]
            (if (#{:delete-run :delete-random :delete-tail} kind)
              (do (.delete w SubDb/EAVT (buf k)) (dissoc m k))
              (let [v (segment-val seed i)]
                (.put w SubDb/EAVT (buf k) (buf v))
                (assoc m k v))))
          model
          (map-indexed vector (segment-keys model segment))))

(defn- snapshot-agrees?
  "Whether read transaction `r` holds exactly `model`: scans both ways, gets, and seeks to each
  key, just past it, and to random probes, each seek followed by next and prev."
  [^ReadTxn r model]
  (let [ks (vec (keys model))
        rnd (java.util.Random. (count ks))
        probes (concat ks
                       (map #(byte-array (concat % [0])) ks)
                       (repeatedly 200 #(let [b (byte-array (inc (.nextInt rnd 6)))] (.nextBytes rnd b) b)))]
    (and (= (view model) (view (scan r SubDb/EAVT)))
         (= (reverse (view model)) (view (scan r SubDb/EAVT false)))
         (every? (fn [k] (= (vec (get model k)) (some-> (.get r SubDb/EAVT (buf k)) bytes-of vec))) ks)
         (with-open [c (.cursor r SubDb/EAVT)]
           (every? (fn [^bytes k]
                     (let [found (when (.seek c (buf k)) (vec (bytes-of (.key c))))]
                       (and (= (model-seek model k) found)
                            (or (nil? found)
                                (and (= (some-> (second (subseq model >= k)) key vec)
                                        (when (.next c) (vec (bytes-of (.key c)))))
                                     (.seek c (buf k))
                                     (= (some-> (first (rsubseq model < k)) key vec)
                                        (when (.prev c) (vec (bytes-of (.key c))))))))))
                   probes)))))

(defn- commits-agree?
  "Runs `commits` ([segments commit? keep?] each) on a fresh store of `kind`, keeping every
  commit's snapshot open (but those whose keep? is false, closed once checked); after each
  commit, every snapshot kept must still hold its model, and the last commit's too."
  [kind commits]
  (call-with-store
   kind {"map-size" (* 256 1024 1024) "sync" false}
   (fn [^Store s]
     (let [snapshots (atom [])]
       (try
         (loop [model (sorted-map-by unsigned-byte-comparator) [[segments commit? keep?] & more] commits]
           (let [next-model (with-open [w (.beginWrite s)]
                              (let [m (reduce #(write-segment w %1 %2) model segments)]
                                (when commit? (.commit w))
                                m))
                 model (if commit? next-model model)
                 last-ok (if (false? keep?)
                           (with-open [r (.beginRead s)] (snapshot-agrees? r model))
                           (do (swap! snapshots conj [(.beginRead s) model]) true))]
             (cond (not (and last-ok (every? (fn [[r m]] (snapshot-agrees? r m)) @snapshots))) false
                   (seq more) (recur model more)
                   :else true)))
         (finally (doseq [[^ReadTxn r] @snapshots] (.close r))))))))

(def ^:private gen-commits
  (gen/vector
   (gen/tuple (gen/vector (gen/tuple (gen/frequency [[3 (gen/return :append)] [3 (gen/return :run)]
                                                     [2 (gen/return :random)] [1 (gen/return :delete-run)]
                                                     [1 (gen/return :delete-random)] [1 (gen/return :delete-tail)]
                                                     [1 (gen/return :overwrite)]])
                                     gen/nat (gen/choose 0 300) gen/nat)
                          1 4)
              (gen/frequency [[4 (gen/return true)] [1 (gen/return false)]]))
   1 7))

(deftest runs-appends-and-snapshots-against-sorted-map
  (doseq [kind model-kinds]
    (testing (name kind)
      (let [result (tc/quick-check 30 (prop/for-all [commits gen-commits] (commits-agree? kind commits)))]
        (is (:pass? result) (pr-str (select-keys result [:seed :num-tests :shrunk])))))))

(deftest many-runs-into-a-deep-tree
  (let [rnd (java.util.Random. 17)
        segment #(vector % (.nextInt rnd 100000) %2 (.nextInt rnd 1000))
        commits (for [i (range 10)]
                  [(concat [(segment :append 3000)]
                           (for [_ (range 8)] (segment :run 600))
                           [(segment :random 2000) (segment :overwrite 500)]
                           (when (odd? i) [(segment :delete-run 4000) (segment :delete-random 1500)]))
                   true])]
    (doseq [kind kinds]
      (testing (name kind)
        (is (commits-agree? kind commits))))))

;; A run's split leaves its new entry alone in a node (BTreeEditor's `keep`), and a branch split
;; so holds one child alone; a delete that emptied such a child left it in the tree, an empty leaf
;; that a cursor's first, last, next and prev stepped into and read past its end (MemStore's
;; trees, and write-behind's layers, which are MemStore's): CI found it once, when an unseeded
;; shuffle happened on the order. Appends of a few sizes just past a full branch (64 leaves of 64
;; keys), then deletes from the tail, the head and the middle, and of everything.

(defn- lone-child-commits
  "Commits over `n` appended keys that empty the lone children appends leave at the tail, and
  those a run leaves in the middle; the first four keep their snapshots."
  [n]
  (let [c (fn [keep? & segments] [segments true keep?])]
    [(c true [:append 0 n 1])
     (c true [:delete-run (dec n) 1 0])                                ; the last key, alone in its leaf
     (c true [:append 0 1 3] [:delete-run (- n 65) 65 0])              ; again, and the leaf before it
     (c true [:delete-run 0 64 0] [:run 1000 600 5])                   ; the head; a run into the middle
     (c false [:delete-run 1001 600 0])                                ; the run again
     (c false [:append 0 64 7] [:delete-run (- n 130) 64 0])           ; a full leaf's worth, and before it
     (c false [:delete-run 0 (* 2 n) 0])                               ; everything
     (c false [:append 0 70 9])]))

(deftest deletes-that-empty-a-lone-child
  (doseq [n [4097 4160 4161 8193]
          kind kinds]
    (testing (str (name kind) ", " n " keys")
      (is (commits-agree? kind (lone-child-commits n))))))

;; Writes in random order of keys that share long prefixes, into trees a few levels deep, with
;; deletes: keys over a few shared prefixes and the bytes 0, 1 and 255 tie in the numbers the
;; writes are sorted by (their first 32 bytes, zero-padded) or differ there only in length (a zero
;; byte past another key's end), and a key written twice in a transaction keeps the last write.

(defn- tying-key
  "A key of one of a few prefixes (none, or of 7, 8, 15, 17 or 33 bytes) and 0 to 6 more bytes,
  mostly zeros; never empty."
  ^bytes [^java.util.Random rnd]
  (let [prefixes [[] [1 0 0 0 0 0 0] (repeat 8 0) (repeat 15 1) (concat (repeat 8 -1) (repeat 9 0))
                  (concat (repeat 30 -1) [0 0 0])]
        tail (repeatedly (.nextInt rnd 7) #(nth [0 0 1 -1] (.nextInt rnd 4)))
        k (concat (nth prefixes (.nextInt rnd (count prefixes))) tail)]
    (byte-array (if (seq k) k [0]))))

(defn- tying-commits-agree?
  "Commits `rounds` transactions of random puts and deletes of tying keys to a fresh store of
  `kind`; after each, the store must hold its sorted-map model."
  [kind seed rounds]
  (call-with-store
   kind {"map-size" (* 64 1024 1024) "sync" false}
   (fn [^Store s]
     (let [rnd (java.util.Random. seed)]
       (loop [model (sorted-map-by unsigned-byte-comparator) round 0]
         (if (= round rounds)
           true
           (let [puts (repeatedly 1500 #(tying-key rnd))
                 dels (concat (take 400 (shuffled rnd (keys model))) (repeatedly 100 #(tying-key rnd)))
                 writes (shuffled rnd (concat (map (fn [k] [SubDb/EAVT k (str round)]) puts)
                                         (map (fn [k] [SubDb/EAVT k nil]) dels)))
                 ;; a key's writes apply in the order made: the last one holds
                 model (reduce (fn [m [_ k v]] (if v (assoc m k (->bytes v)) (dissoc m k)))
                               model writes)]
             (commit! s writes)
             (if (with-open [r (.beginRead s)] (snapshot-agrees? r model))
               (recur model (inc round))
               false))))))))

(deftest random-writes-of-keys-with-long-shared-prefixes-against-sorted-map
  (doseq [kind model-kinds]
    (testing (name kind)
      (let [result (tc/quick-check 8 (prop/for-all [seed gen/large-integer]
                                       (tying-commits-agree? kind seed 4)))]
        (is (:pass? result) (pr-str (select-keys result [:seed :num-tests :shrunk])))))))

;; ---- commits in place (h-inplace) -------------------------------------------
;; A MemStore opened in place (a layered store's delta) edits its trees where they lie when no
;; read transaction is open at commit, and copies what it changes, as every MemStore does, when
;; one is: a read open across a commit keeps its snapshot either way.

(deftest commits-in-place-keep-open-snapshots
  (let [s (MemStore/openInPlace)
        ks (mapv #(format "k%04d" %) (range 500))
        all (fn [v] (map (fn [k] [SubDb/EAVT k v]) ks))
        holding (fn [v & {:keys [without with]}]
                  (sort (concat with (for [k ks :when (not= k without)] [k v]))))]
    (try
      (commit! s (all "a"))
      (is (= 1 (.inPlaceCommits s)) "no read open: in place")
      (with-open [r (.beginRead s)]
        (is (= (holding "a") (strs (scan r SubDb/EAVT)))))
      (testing "a read open across a commit keeps its snapshot: the commit copies"
        (let [before (.beginRead s)]
          (commit! s (concat (all "b") [[SubDb/EAVT "k0007" nil] [SubDb/EAVT "new" "n"]]))
          (is (= 1 (.inPlaceCommits s)))
          (is (= (holding "a") (strs (scan before SubDb/EAVT))))
          (.close before)))
      (testing "a read begun during the write transaction, before its commit"
        (let [w (.beginWrite s)]
          (put! w SubDb/EAVT "k0001" "c")
          (let [during (.beginRead s)]
            (.commit w)
            (.close w)
            (is (= 1 (.inPlaceCommits s)))
            (is (= (holding "b" :without "k0007" :with [["new" "n"]]) (strs (scan during SubDb/EAVT))))
            (.close during))))
      (testing "once every read is closed, commits edit in place, over leaves reads saw"
        (commit! s (concat (all "d") [[SubDb/EAVT "k0002" nil] [SubDb/EAVT "k0002x" "x"]]))
        (is (= 2 (.inPlaceCommits s)))
        (with-open [r (.beginRead s)]
          (is (= (holding "d" :without "k0002" :with [["k0002x" "x"] ["new" "n"]])
                 (strs (scan r SubDb/EAVT))))
          (is (= "x" (lookup r "k0002x")))))
      (testing "a read closed twice is counted once"
        (let [r (.beginRead s)]
          (.close r)
          (.close r))
        (let [r (.beginRead s)]
          (commit! s (concat (all "e") [[SubDb/EAVT "k0003" nil]]))
          (is (= 2 (.inPlaceCommits s)) "a read is open")
          (is (= "d" (lookup r "k0003")))
          (is (= (holding "d" :without "k0002" :with [["k0002x" "x"] ["new" "n"]])
                 (strs (scan r SubDb/EAVT))))
          (.close r)))
      (finally (.close s))))
  (testing "a store opened to copy never edits in place"
    (with-open [s (MemStore/open)]
      (commit! s [[SubDb/EAVT "a" "1"]])
      (commit! s [[SubDb/EAVT "b" "2"]])
      (is (zero? (.inPlaceCommits s))))))

(def ^:private gen-commits-some-kept
  "Commits as gen-commits makes them, each one's snapshot kept open (true) or closed once read."
  (gen/vector (gen/tuple (gen/vector (gen/tuple (gen/elements [:append :run :random :delete-run
                                                               :delete-random :overwrite])
                                                gen/nat (gen/choose 0 300) gen/nat)
                                     1 4)
                         (gen/frequency [[4 (gen/return true)] [1 (gen/return false)]])
                         (gen/frequency [[1 (gen/return true)] [3 (gen/return false)]]))
              1 10))

(deftest commits-in-place-against-sorted-map
  (doseq [kind [:mem :mem-in-place]]
    (testing (name kind)
      (let [result (tc/quick-check 40 (prop/for-all [commits gen-commits-some-kept]
                                        (commits-agree? kind commits)))]
        (is (:pass? result) (pr-str (select-keys result [:seed :num-tests :shrunk])))))))

(deftest commits-in-place-into-a-deep-tree
  (let [rnd (java.util.Random. 23)
        segment #(vector % (.nextInt rnd 100000) %2 (.nextInt rnd 1000))
        commits (for [i (range 10)]
                  [(concat [(segment :append 2000) (segment :run 600) (segment :run 600)]
                           [(segment :random 1500) (segment :overwrite 500)]
                           (when (odd? i) [(segment :delete-run 2000) (segment :delete-random 1000)]))
                   true
                   (>= i 7)])]
    (doseq [kind [:mem :mem-in-place]]
      (testing (name kind)
        (is (commits-agree? kind commits))))))

;; ---- large commits over many sub-databases (two threads on a MemStore) ---------------------

(defn- large-commit
  "One transaction's writes, [db key value-or-nil] in the order made: thousands over several
  sub-databases of sizes far apart (the one most written changes from commit to commit), new
  keys, overwrites and deletes of stored ones, and keys written two or three times in the one
  transaction (the last write stands)."
  [^java.util.Random rnd models]
  (let [all (java.util.ArrayList. ^java.util.Collection (vec (SubDb/values)))
        _ (java.util.Collections/shuffle all rnd)
        dbs (vec (take (+ 2 (.nextInt rnd 5)) all))
        rand-key (fn [] (let [b (byte-array (+ 1 (.nextInt rnd 40)))] (.nextBytes rnd b) b))]
    (vec (mapcat (fn [db i]
                   (let [n (if (zero? i) (+ 6000 (.nextInt rnd 8000)) (.nextInt rnd 3000))
                         stored (vec (keys (models db)))]
                     (for [_ (range n)
                           :let [k (if (and (seq stored) (< (.nextInt rnd 10) 3))
                                     (stored (.nextInt rnd (count stored)))
                                     (rand-key))]
                           w (case (int (.nextInt rnd 8))
                               0 [[db k nil]]
                               1 [[db k "first"] [db k nil] [db k (str "again" (.nextInt rnd 9))]]
                               2 [[db k "put"] [db k nil]]
                               [[db k (str (.nextInt rnd 1000))]])]
                       w)))
                 dbs (range)))))

(defn- apply-writes [models writes]
  (reduce (fn [ms [db k v]] (update ms db #(if v (assoc % k (->bytes v)) (dissoc % k))))
          models writes))

(deftest large-commits-over-many-sub-databases-against-sorted-maps
  (testing "commits of thousands of writes over several sub-databases (on a MemStore of a
  machine of two cores, applied on two threads, each taking the next tree): every sub-database
  agrees with its model after each commit, and snapshots kept open across later commits keep
  theirs"
    (doseq [kind kinds]
      (testing (name kind)
        (call-with-store
         kind {"map-size" (* 256 1024 1024) "sync" false}
         (fn [^Store s]
           (let [rnd (java.util.Random. 61)
                 empty-models (into {} (for [db (SubDb/values)]
                                         [db (sorted-map-by unsigned-byte-comparator)]))
                 kept (atom [])
                 agrees? (fn [^ReadTxn r models]
                           (every? (fn [db] (= (view (models db)) (view (scan r db))))
                                   (SubDb/values)))]
             (try
               (reduce (fn [models round]
                         (let [writes (large-commit rnd models)
                               models (apply-writes models writes)]
                           (commit! s writes)
                           (with-open [r (.beginRead s)]
                             (is (agrees? r models) (str "after commit " round)))
                           (when (odd? round) ; kept open: the next commit copies
                             (swap! kept conj [(.beginRead s) models]))
                           (doseq [[r m] @kept]
                             (is (agrees? r m) (str "a kept snapshot, after commit " round)))
                           models))
                       empty-models (range 8))
               (finally (doseq [[^ReadTxn r] @kept] (.close r))))
             (when (and (instance? MemStore s)
                        (> (.availableProcessors (Runtime/getRuntime)) 1))
               (is (pos? (.helpedCommits ^MemStore s)) "a helper applied some")))))))))

(deftest large-commits-read-while-their-trees-are-applied
  (testing "commits of thousands of writes with no read open (on a MemStore editing in place,
  applied in the background after the commit returns): a read begun at once, on this thread or
  another, sees every tree whole, whichever it reads first; a commit at once, with no read in
  between, builds on them whole; a failed expectation writes nothing"
    (doseq [kind kinds]
      (testing (name kind)
        (call-with-store
         kind {"map-size" (* 256 1024 1024) "sync" false}
         (fn [^Store s]
           (let [rnd (java.util.Random. 67)
                 dbs (vec (SubDb/values))
                 agrees? (fn [^ReadTxn r models order]
                           (every? (fn [db] (= (view (models db)) (view (scan r db)))) order))
                 shuffled #(shuffled rnd dbs)]
             (reduce
              (fn [models round]
                (let [writes (large-commit rnd models)
                      models (apply-writes models writes)]
                  (commit! s writes)
                  (case (mod round 4)
                    0 (with-open [r (.beginRead s)]
                        (is (agrees? r models (shuffled)) (str "read at once, round " round)))
                    1 (is (deref (future (with-open [r (.beginRead s)]
                                           (agrees? r models (shuffled)))))
                          (str "read at once on another thread, round " round))
                    2 (with-open [r (.beginRead s)] ; a get before any scan
                        (let [[db [k v]] (some (fn [db] (when-let [e (first (models db))] [db e]))
                                               (shuffled))]
                          (is (= (vec v) (some-> (.get r db (buf k)) bytes-of vec))
                              (str "a get at once, round " round))))
                    3 nil) ; the next commit at once
                  (when (= round 5)
                    (let [[db [k]] (some (fn [db] (when-let [e (first (models db))] [db e]))
                                         (shuffled))]
                      (is (thrown? Exception
                                   (with-open [w (.beginWrite s)]
                                     (put! w db k "x")
                                     (.expect w db (buf k) (buf "not-its-value"))
                                     (.commit w))))))
                  (with-open [r (.beginRead s)]
                    (is (agrees? r models dbs) (str "after round " round)))
                  models))
              (into {} (for [db dbs] [db (sorted-map-by unsigned-byte-comparator)]))
              (range 12))
             (when (and (= kind :mem-in-place)
                        (> (.availableProcessors (Runtime/getRuntime)) 1))
               (is (<= 6 (.helpedCommits ^MemStore s))
                   "the commits with no read open were applied in the background")))))))))
