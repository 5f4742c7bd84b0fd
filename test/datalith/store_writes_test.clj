(ns datalith.store-writes-test
  "How a write transaction's writes reach the trees, on every store kind, each checked against a
  sorted-map model: runs of new keys amid other writes fill LMDB's pages, writes sort by key past
  their first bytes (keys that tie there), and a transaction larger than LMDB's replay batch
  ends as the model does."
  (:require [clojure.test :refer [deftest is use-fixtures]]
            [datalith.heap-watch :as heap-watch]
            [datalith.store-support :refer [*kind* ->bytes commit! scan shuffled
                                            unsigned-byte-comparator view with-each-store]])
  (:import [datalith.store LmdbStore SubDb]
           [java.nio ByteBuffer]
           [java.util Arrays]))

(set! *warn-on-reflection* true)

;; The heap watch of store-model-test (see there): should anything fill the heap, it prints every
;; thread's stack and the heap's largest classes.
(use-fixtures :once (fn [f] (heap-watch/watch!) (f)))

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
