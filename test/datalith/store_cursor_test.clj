(ns datalith.store-cursor-test
  "Cursors over trees of many pages, on every store kind: random walks of steps, seeks and value
  reads, checked against a sorted-map model at every move, across leaf pages and through a tree
  four pages deep; and seeks after Cursor.warm, which must land where seeks alone do."
  (:require [clojure.test :refer [deftest is use-fixtures]]
            [datalith.heap-watch :as heap-watch]
            [datalith.store-support :refer [bytes-of commit! scan unsigned-byte-comparator view
                                            walk-op with-each-store]])
  (:import [datalith.store Store SubDb]
           [java.nio ByteBuffer]
           [java.util Arrays]))

(set! *warn-on-reflection* true)

;; The heap watch of store-model-test (see there): should anything fill the heap, it prints every
;; thread's stack and the heap's largest classes.
(use-fixtures :once (fn [f] (heap-watch/watch!) (f)))

;; The Java page reader (LmdbCursor, LmdbTree) descends the tree and crosses leaf pages itself:
;; walks mixing steps, seeks near and far and value reads cross pages in both directions, over
;; keys of every length and values on overflow pages, and must agree with the model at every
;; move.
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
