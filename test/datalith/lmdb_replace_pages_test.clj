(ns datalith.lmdb-replace-pages-test
  "What becomes of the old trees' pages when LmdbStore.replaceAll (see
  datalith.lmdb-replace-test) writes new ones:
  - the old trees' pages go to the free list and later commits reuse them; a replace over the
    old trees (a layered store's sparse delta, and keys past their ends) keeps the pages it
    passes whole; old trees that do not read soundly are left behind
  - the safety review: a reader older than a replace reads the old contents whole after many
    commits, which reuse the old pages once it ends
  - a free list whose tree has branch pages is written back in key order"
  (:require [clojure.test :refer [deftest is testing]]
            [datalith.lmdb-replace-child :as rc]
            [datalith.lmdb-replace-support :refer [check-store entries open-store random-bytes
                                                   random-writes! replace-with! stats-agree]]
            [datalith.test-util :as tu])
  (:import (datalith.store LayeredStore Store SubDb)
           (java.io File)
           (java.nio ByteBuffer ByteOrder)
           (java.nio.channels FileChannel)
           (java.nio.file StandardOpenOption)
           (java.util Arrays Random TreeMap)))

(set! *warn-on-reflection* true)

(defn- last-meta
  "The first 160 bytes of the data file's last commit's meta page (that of the larger txnid),
  native order."
  ^ByteBuffer [^File dir]
  (with-open [ch (FileChannel/open (.toPath (File. dir "data.mdb"))
                                   (into-array StandardOpenOption [StandardOpenOption/READ]))]
    (let [metas (for [m [0 1]]
                  (let [b (.order (ByteBuffer/allocate 160) (ByteOrder/nativeOrder))]
                    (.read ch b (* m 4096))
                    b))]
      (last (sort-by #(.getLong ^ByteBuffer % 144) metas)))))

(defn- last-page
  "The last page of the data file's last commit."
  [^File dir]
  (.getLong (last-meta dir) 136))

(defn- write-model! [^Store s model parts]
  (doseq [part (range parts)]
    (with-open [w (.beginWrite s)]
      (doseq [[db ^TreeMap m] model
              [i [^bytes k ^bytes v]] (map-indexed vector (entries m))
              :when (= part (mod i parts))]
        (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v)))
      (.commit w))))

(deftest replaced-pages-are-reused
  (testing "the old trees' pages go to the free list, and later commits reuse them"
    (let [dir (File. (tu/temp-dir) "db")
          rnd (Random. 17)
          big (into {} (for [db (SubDb/values)]
                         [db (condp = db
                               SubDb/EAVT (#'rc/fill 20000 #(random-bytes rnd 30) #(byte-array 0))
                               SubDb/AVET (#'rc/fill 3000 #(random-bytes rnd 450) #(byte-array 0))
                               (TreeMap. rc/unsigned))]))
          small (rc/contents 21 0.01)]
      (try
        (with-open [s (open-store dir "java" "lmdb-sync")]
          (write-model! s big 1)
          (let [old-pages (last-page dir)]
            (replace-with! s small)
            (random-writes! s small rnd 1) ; the next commit: no reader older than the replace
            (let [after-replace (last-page dir)]
              (write-model! s big 1)
              (is (< (- (last-page dir) after-replace) (quot old-pages 2))
                  (str "pages: " old-pages " before the replace, " after-replace " after it, "
                       (last-page dir) " after writing as much again")))
            (doseq [[db ^TreeMap m] small] (.putAll ^TreeMap (big db) m))
            (with-open [r (.beginRead s)] (check-store r big rnd))))
        (finally (tu/delete-tree (.getParentFile dir)))))))

(defn- append-past-the-ends!
  "One write transaction of `n` new keys past the last of each sub-database of `model` (as a
  staged import's new entities land past EAVT's end), on `s` and in `model`."
  [^Store s model ^Random rnd n]
  (with-open [w (.beginWrite s)]
    (doseq [db (SubDb/values)
            :let [^TreeMap m (model db)]
            i (range n)]
      (let [k (byte-array (+ 3 (.nextInt rnd 40)) (unchecked-byte 0xff))
            _ (aset-byte k 2 (unchecked-byte i))
            v (random-bytes rnd (if (zero? (.nextInt rnd 8)) 3000 (.nextInt rnd 40)))]
        (when (or (.isEmpty m) (pos? (Arrays/compareUnsigned k ^bytes (.lastKey m))))
          (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v))
          (.put m k v))))
    (.commit w)))

(deftest a-replace-over-the-old-trees-keeps-the-pages-it-passes-whole
  (doseq [commit ["wal" "lmdb-sync"]]
    (testing (str "commit " commit ": the old trees under a sparse delta (puts, overwrites, runs
  of deletes) and keys past their ends, written back by replaceAll")
      (let [dir (File. (tu/temp-dir) "db")
            rnd (Random. 29)
            model (rc/contents 1 0.3)]
        (try
          (with-open [s (open-store dir "java" commit)]
            (write-model! s model 1)
            (let [taken (.takenPages s)
                  replaced (.directReplaces s)]
              (with-open [layered (LayeredStore/over s 0)]
                (random-writes! layered model rnd 20)
                (append-past-the-ends! layered model rnd 30)
                (with-open [r (.beginRead layered)]
                  (.replaceAll s r)))
              (is (= (inc replaced) (.directReplaces s)) "written as pages")
              (is (< (+ taken 100) (.takenPages s)) "most old leaf pages are kept"))
            (is (nil? (.pageAccountingProblem s)) "no page kept is in the free list")
            (with-open [r (.beginRead s)] (check-store r model rnd))
            (stats-agree s model)
            (testing "later commits reuse the freed pages, never the kept ones"
              (dotimes [_ 6] (random-writes! s model rnd 400))
              (with-open [r (.beginRead s)] (check-store r model rnd))
              (stats-agree s model)
              (is (nil? (.pageAccountingProblem s))))
            (testing "a second replace over trees that hold pages kept by the first"
              (let [taken (.takenPages s)]
                (with-open [layered (LayeredStore/over s 0)]
                  (random-writes! layered model rnd 20)
                  (append-past-the-ends! layered model rnd 30)
                  (with-open [r (.beginRead layered)]
                    (.replaceAll s r)))
                (is (< taken (.takenPages s))))
              (is (nil? (.pageAccountingProblem s)))
              (dotimes [_ 4] (random-writes! s model rnd 400))
              (with-open [r (.beginRead s)] (check-store r model rnd))
              (is (nil? (.pageAccountingProblem s)))))
          (testing "reopened, on LMDB's own page reader"
            (with-open [s2 (open-store dir "lmdb" commit)
                        r (.beginRead s2)]
              (check-store r model rnd)))
          (finally (tu/delete-tree (.getParentFile dir))))))))
(deftest damaged-old-trees-are-left-behind
  (testing "an old tree whose pages do not read soundly is replaced all the same; its pages
  are not freed"
    (let [dir (File. (tu/temp-dir) "db")
          rnd (Random. 29)
          old-model (rc/contents 41 0.3)
          model (rc/contents 42 0.3)
          eavt-keys (java.util.HashSet. ^java.util.Collection
                                        (map #(vec ^bytes %) (.keySet ^TreeMap (old-model SubDb/EAVT))))]
      (try
        (with-open [s (open-store dir "java" "lmdb-sync")]
          (replace-with! s old-model))
        (testing "a leaf page of EAVT says it is another page"
          (with-open [ch (FileChannel/open (.toPath (File. dir "data.mdb"))
                                           (into-array StandardOpenOption
                                                       [StandardOpenOption/READ
                                                        StandardOpenOption/WRITE]))]
            (let [b (.order (ByteBuffer/allocate 4096) (ByteOrder/nativeOrder))
                  leaf (first (for [n (range 2 (inc (last-page dir)))
                                    :let [_ (.clear b)
                                          _ (.read ch b (* n 4096))
                                          node (bit-and 0xFFFF (.getShort b 16))
                                          ksize (bit-and 0xFFFF (.getShort b (+ node 6)))]
                                    :when (and (= 2 (.getShort b 10)) (< (+ node 8 ksize) 4096)
                                               (.contains eavt-keys
                                                          (vec (Arrays/copyOfRange (.array b) (+ node 8)
                                                                                   (+ node 8 ksize)))))]
                                n))]
              (is leaf)
              (.write ch (.putLong (.order (ByteBuffer/allocate 8) (ByteOrder/nativeOrder)) 0 12345)
                      (long (* leaf 4096))))))
        (with-open [s (open-store dir "java" "lmdb-sync")]
          (replace-with! s model)
          (with-open [r (.beginRead s)] (check-store r model rnd))
          (random-writes! s model rnd 300)
          (with-open [r (.beginRead s)] (check-store r model rnd)))
        (finally (tu/delete-tree (.getParentFile dir)))))))

;; ---- the safety review (h-pagesrev) ------------------------------------------
(deftest a-reader-older-than-a-replace-keeps-its-pages
  (testing "a read transaction begun before a replace reads the old contents whole after many
  ordinary commits that take free pages (the old trees' pages, listed under the replace's
  txnid, wait for it to end), and those commits reuse them once it ends"
    (doseq [commit ["wal" "lmdb-sync"], reader ["java" "lmdb"]]
      (testing (str commit ", page-reader " reader)
        (let [dir (File. (tu/temp-dir) "db")
              rnd (Random. 23)
              old (rc/contents 31 0.5)
              new (rc/contents 32 0.05)]
          (try
            (with-open [s (open-store dir reader commit)]
              (replace-with! s old)
              (random-writes! s old rnd 200) ; an ordinary commit: pages freed, then reused
              (let [before (.beginRead s)]
                (try
                  (replace-with! s new)
                  (dotimes [_ 60] (random-writes! s new rnd 100))
                  (check-store before old rnd)
                  (finally (.close before))))
              (with-open [r (.beginRead s)] (check-store r new rnd)))
            ;; reopened: with "wal", the pin of the replace's checkpoint holds its free pages
            ;; until the next checkpoint, as it holds those of the commits after one
            (with-open [s (open-store dir reader commit)]
              (let [grown (last-page dir)]
                (dotimes [_ 60] (random-writes! s new rnd 100))
                (is (< (- (last-page dir) grown) 200) "the old trees' pages reused after it")
                (with-open [r (.beginRead s)] (check-store r new rnd))))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

;; ---- a free list of several levels ---------------------------------------------

(defn- free-list-depth
  "The depth of the free list's tree in the data file's last commit (its MDB_db record's
  md_depth, at 24 + 6 past the meta page's header)."
  [^File dir]
  (.getShort (last-meta dir) 46))

(deftest a-free-list-of-several-levels-is-written-back-in-key-order
  (testing "a replace over a free list whose tree has branch pages (many commits while a
  reader held their freed pages; found by a replicated node's catch-up, which failed with
  :store/order): written as pages, the old entries kept in key order; later commits and a
  reopen read the new contents"
    (doseq [commit ["wal" "lmdb-sync"]]
      (testing commit
        (let [dir (File. (tu/temp-dir) "db")
              rnd (Random. 37)
              old (rc/contents 51 0.2)
              new (rc/contents 52 0.05)]
          (try
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s old)
              (let [reader (.beginRead s)] ; each commit's freed pages wait: one entry each
                (try
                  (dotimes [_ 400] (random-writes! s old rnd 2))
                  (finally (.close reader))))
              (is (<= 2 (free-list-depth dir)) "the free list has branch pages")
              (replace-with! s new)
              (with-open [r (.beginRead s)] (check-store r new rnd))
              (dotimes [_ 40] (random-writes! s new rnd 50))
              (with-open [r (.beginRead s)] (check-store r new rnd)))
            (with-open [s (open-store dir "lmdb" commit)
                        r (.beginRead s)]
              (check-store r new rnd))
            (finally (tu/delete-tree (.getParentFile dir)))))))))
