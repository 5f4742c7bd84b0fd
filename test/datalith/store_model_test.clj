(ns datalith.store-model-test
  "LmdbStore and MemStore against sorted-map models: generated transactions of puts and deletes,
  each store checked after every one (scans both ways, gets, seeks, steps from a seek); bulk
  random writes; runs, appends and deletes with every commit's snapshot kept open (MemStore's
  trees); keys with long shared prefixes; commits in place (MemStore/openInPlace); large commits
  over many sub-databases, read while their trees are applied. The generated ones run on a store
  of 16 KiB pages too (model-kinds)."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.heap-watch :as heap-watch]
            [datalith.store-support :refer [->bytes buf bytes-of call-with-store commit! kinds
                                            lookup put! scan shuffled strs
                                            unsigned-byte-comparator view with-each-store]])
  (:import [datalith.store MemStore ReadTxn Store SubDb WriteTxn]
           [java.nio.charset StandardCharsets]))

(set! *warn-on-reflection* true)

;; This namespace's JVM once ran out of heap now and then: test.check shrinking a failing trial of
;; generative-against-sorted-map (a probe collected mid-read, see probe-lifetime-test), a failure
;; that did not come back on the smaller trials, so every one of the root's many shrinks was tried
;; and kept. Should anything fill the heap again, the watch prints every thread's stack and the
;; heap's largest classes.
(use-fixtures :once (fn [f] (heap-watch/watch!) (f)))

(def model-kinds
  "The kinds the generative tests against a sorted-map model run on: `kinds`, and (since stop
  46) LMDB with its Java page reader on a store of pages of 16 KiB, LMDB's layout on Apple
  silicon (an empty store's file with its pages spread, lmdb-file's spread-pages!)."
  (conj kinds :lmdb-16k))

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
