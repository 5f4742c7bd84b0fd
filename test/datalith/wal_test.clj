(ns datalith.wal-test
  "The write-ahead log of the LMDB store (option :commit :wal, issue #17), with
  real child JVMs (datalith.wal-child) killed with SIGKILL; without write-behind
  (each commit LMDB's after its record):
  - power loss: after a checkpoint, a child commits and is killed; every page of
    data.mdb written since the checkpoint, and both meta pages, are then
    overwritten with garbage or their old bytes (what an operating-system crash
    may leave of unsynced writes); the reopened database holds every
    acknowledged transaction, whole, and d/verify finds nothing; so too for
    commits large enough to be logged while LMDB puts them
  - a torn last record is dropped; a damaged record followed by a valid one is
    :store/corrupt
  - two processes writing at once keep every acknowledged transaction after each
    is killed
  - a clean close leaves nothing to replay
  - a data file older than the log is refused; interrupts during commits never
    leave the store refusing writes; a recovery that stops half way leaves the
    checkpoint whole; large commits flush the data file ahead of the checkpoint
  Pauses (Store.pauseSync) are wal-pause-test's, write-behind
  wal-write-behind-test's."
  (:require [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu]
            [datalith.wal-support :refer [acks await-acks committed fresh-db io-error
                                          is-acked-prefix kill! lose-unsynced-pages! read-bytes
                                          records replayed start-child]])
  (:import (clojure.lang ExceptionInfo)
           (datalith.store LmdbStore SubDb)
           (java.io File RandomAccessFile)
           (java.nio ByteBuffer)
           (java.nio.file Files)
           (java.util Arrays Random)
           (java.util.zip CRC32C)))

(set! *warn-on-reflection* true)

(deftest acknowledged-commits-survive-the-loss-of-unsynced-pages
  (doseq [seed [1 2 3]]
    (let [dir (fresh-db)
          before (read-bytes (File. dir "data.mdb"))
          c (start-child dir (str "child" seed) 600)]
      (try (await-acks c (+ 50 (* 100 seed)))
           (finally (kill! c)))
      (let [acked (acks (:out c))
            lost (lose-unsynced-pages! dir before (Random. seed))
            {:keys [by-name replayed]} (committed dir)
            got (get by-name (str "child" seed) #{})]
        (is (pos? lost) "pages written after the checkpoint were overwritten")
        (is (seq acked))
        (is-acked-prefix got acked)
        (is (<= (count acked) replayed) "they were replayed from the log")
        (is (= (set (range 5)) (by-name "parent")))))))

(deftest large-commits-logged-while-lmdb-puts-them-survive-the-loss-of-unsynced-pages
  ;; LmdbWrite.logAhead: each transaction's record (over 64 KiB) is written to the log by a
  ;; helper thread while LMDB puts its writes; killed, with its unsynced pages lost, the
  ;; database holds every acknowledged transaction whole (30 of them: 3 MB of log, short of a
  ;; checkpoint, whose synced pages the loss here must not take)
  (let [dir (fresh-db)
        before (read-bytes (File. dir "data.mdb"))
        c (start-child dir "large" 30 "large")]
    (try (await-acks c 20)
         (finally (kill! c)))
    (let [acked (acks (:out c))
          lost (lose-unsynced-pages! dir before (Random. 11))
          {:keys [by-name replayed]} (committed dir)
          got (get by-name "large" #{})]
      (is (pos? lost))
      (is (<= 20 (count acked)))
      (is-acked-prefix got acked)
      (is (= (set (for [i got j (range 100)] (+ (* i 1000) j))) (by-name "large+"))
          "each whole")
      (is (<= (count acked) replayed) "they were replayed from the log"))))

(deftest a-large-commit-whose-puts-find-the-map-full-leaves-one-record
  ;; the record of a commit of 64 KiB or more is written while LMDB puts its writes; when the
  ;; map is full, the record is cancelled, the map grows and the commit is made again with a
  ;; record of its own: the log holds each commit once, and replays them after a crash
  (let [dir (File. (tu/temp-dir) "db")
        copy (File. (tu/temp-dir) "copy")
        key (fn [^long n] (doto (ByteBuffer/allocateDirect 8) (.putLong n) (.flip)))
        val (fn [^long n] (let [b (byte-array 1000)]
                            (Arrays/fill b (byte (mod n 127)))
                            (ByteBuffer/wrap b)))
        commit! (fn [^LmdbStore s ks]
                  (with-open [w (.beginWrite s)]
                    (doseq [k ks]
                      (.put w SubDb/META (key k) (val k))
                      (when (< 100 k 1000) ; a second sub-database, sorted ahead (WriteLog)
                        (.put w SubDb/EAVT (key k) (val (inc k)))))
                    (.commit w)))
        check (fn [^LmdbStore s]
                (with-open [r (.beginRead s)]
                  (doseq [k (concat (range 10) (range 100 4100) (range 5000 5010))]
                    (is (= (val k) (.get r SubDb/META (key k))) k)
                    (when (< 100 k 1000)
                      (is (= (val (inc k)) (.get r SubDb/EAVT (key k))) k)))))]
    (with-open [s (LmdbStore/open (.toPath dir) {"commit" "wal" "write-behind" false "map-size" (* 1024 1024)})]
      (commit! s (range 10))
      (commit! s (range 100 4100)) ; 5 MB of values: the 1 MiB map is full before they are in
      (commit! s (range 5000 5010))
      (let [{:keys [records]} (records dir)
            txnids (mapv peek records)]
        (is (= 3 (count records)) "no record of the attempt that found the map full")
        (is (= txnids (vec (range (first txnids) (+ 3 (first txnids)))))))
      (check s)
      ;; what a kill -9 leaves: the files as they are now, the store open
      (.mkdirs copy)
      (doseq [^File f (.listFiles dir)]
        (Files/copy (.toPath f) (.toPath (File. copy (.getName f)))
                    ^"[Ljava.nio.file.CopyOption;" (make-array java.nio.file.CopyOption 0))))
    (with-open [s (LmdbStore/open (.toPath copy) {"commit" "wal"})]
      (is (= 3 (.replayedAtOpen s)))
      (check s))))

(defn- damage! [^File dir {:keys [segment]} offset]
  (with-open [raf (RandomAccessFile. (File. dir (str "wal." segment)) "rw")]
    (.seek raf offset)
    (let [x (.read raf)]
      (.seek raf offset)
      (.write raf (bit-xor x 0x5A)))))

(deftest a-torn-last-record-is-dropped-and-a-damaged-one-amid-the-log-is-corrupt
  (let [run (fn [] (let [dir (fresh-db)
                         c (start-child dir "child" 30)]
                     (try (await-acks c 30) (finally (kill! c)))
                     (is (= 30 (count (acks (:out c)))))
                     [dir (records dir)]))]
    (testing "a torn last record: the commits before it are replayed, it is not"
      (let [[dir log] (run)
            [at size] (peek (:records log))]
        (is (= 30 (count (:records log))))
        (damage! dir log (+ at size -10))
        (let [{:keys [by-name replayed]} (committed dir)]
          (is (= (set (range 29)) (by-name "child")))
          (is (= 29 replayed)))))
    (testing "a damaged record followed by valid ones: :store/corrupt, and the files stay"
      (let [[dir log] (run)
            [at] (nth (:records log) 10)]
        (damage! dir log (+ at 40))
        (let [e (try (d/connect (.getPath ^File dir) {:commit :wal}) nil
                     (catch ExceptionInfo e e))]
          (is (= :store/corrupt (:error (ex-data e))) (pr-str e)))
        (is (thrown? ExceptionInfo (d/connect (.getPath ^File dir) {:commit :wal}))
            "still refused: nothing was skipped")))))

(deftest two-processes-writing-at-once-keep-every-acknowledged-commit-after-kill-9
  (let [dir (fresh-db)
        a (start-child dir "a" 100000)
        b (start-child dir "b" 100000)]
    (try (await-acks a 40)
         (await-acks b 40)
         (kill! a)
         (await-acks b (+ 30 (count (acks (:out b)))))
         (finally (kill! a) (kill! b)))
    (let [{:keys [by-name]} (committed dir)]
      (doseq [n ["a" "b"]
              :let [acked (acks (:out (if (= n "a") a b)))
                    got (get by-name n #{})]]
        (is (seq acked))
        (is (every? got acked) n)
        (is (= got (set (range (count got)))) n)))))

(deftest a-clean-close-leaves-nothing-to-replay
  (let [dir (fresh-db)]
    (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
      (is (zero? (replayed conn)))
      (d/transact! conn [{:w/p "again" :w/i 0}]))
    (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
      (is (zero? (replayed conn)))
      (is (= #{[0]} (d/q '[:find ?i :where [?e :w/p "again"] [?e :w/i ?i]] (d/db conn)))))
    (testing "nor does opening without the log after it"
      (with-open [conn (d/connect (.getPath dir) {:commit :lmdb-sync})]
        (is (zero? (replayed conn)))
        (d/transact! conn [{:w/p "again" :w/i 1}]))
      (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
        (is (zero? (replayed conn)))
        (is (= #{[0] [1]} (d/q '[:find ?i :where [?e :w/p "again"] [?e :w/i ?i]]
                               (d/db conn))))))))

(deftest a-commit-that-changes-no-page-leaves-no-record
  ;; LMDB gives such a commit no txnid: a record of it would take the next commit's
  (let [dir (File. (tu/temp-dir) "db")
        key (fn [^long n] (doto (ByteBuffer/allocateDirect 8) (.putLong n) (.flip)))
        commit! (fn [^LmdbStore s f]
                  (with-open [w (.beginWrite s)]
                    (f w)
                    (.commit w)))]
    (with-open [s (LmdbStore/open (.toPath dir) {"commit" "wal" "write-behind" false})]
      (commit! s #(.put ^datalith.store.WriteTxn % SubDb/META (key 1) (key 1)))
      (commit! s #(.delete ^datalith.store.WriteTxn % SubDb/META (key 99)))
      (commit! s #(.put ^datalith.store.WriteTxn % SubDb/META (key 2) (key 2)))
      (let [txnids (mapv peek (:records (records dir)))]
        (is (= 2 (count txnids)))
        (is (= txnids (vec (range (first txnids) (+ 2 (first txnids))))))))))

(deftest a-data-file-older-than-the-log-is-refused
  ;; a data.mdb put back from before the log's checkpoint (two commits or more) is no torn
  ;; meta page: the open refuses it rather than lay the checkpoint's meta page over it
  (let [dir (fresh-db)
        f (File. dir "data.mdb")
        before (read-bytes f)]
    (with-open [conn (d/connect (.getPath dir) {:commit :wal :write-behind false})]
      (dotimes [i 3] (d/transact! conn [{:w/p "later" :w/i i}])))
    (Files/write (.toPath f) before ^"[Ljava.nio.file.OpenOption;" (make-array java.nio.file.OpenOption 0))
    (let [e (is (thrown? clojure.lang.ExceptionInfo (d/connect (.getPath dir) {:commit :wal})))]
      (is (= :store/corrupt (:error (ex-data e))))
      (is (re-find #"replaced" (ex-message e))))))

(deftest interrupts-during-commits-never-leave-the-store-refusing-writes
  ;; an interrupt that lands in a record's fdatasync closes the segment and sets the flag
  ;; again: the cancel that follows must clear it, or its write fails too
  (let [dir (File. (tu/temp-dir) "db")
        key (fn [^long n] (doto (ByteBuffer/allocateDirect 8) (.putLong n) (.flip)))]
    (with-open [s (LmdbStore/open (.toPath dir) {"commit" "wal" "write-behind" false})]
      (let [done (atom #{})
            worker (Thread.
                    (fn []
                      (dotimes [i 300]
                        (try
                          (with-open [w (.beginWrite s)]
                            (.put w SubDb/META (key i) (key i))
                            (.commit w))
                          (swap! done conj i)
                          (catch Throwable _ nil)))))]
        (.start worker)
        (while (.isAlive worker)
          (.interrupt worker)
          (Thread/sleep 0 200000))
        (is (< (count @done) 300) "some commits were interrupted")
        (with-open [w (.beginWrite s)]
          (.put w SubDb/META (key 1000) (key 1000))
          (.commit w))
        (with-open [r (.beginRead s)]
          (doseq [i (conj @done 1000)]
            (is (some? (.get r SubDb/META (key i))) i)))))))

(defn- rewrite-record!
  "Sets byte `i` of the payload of the record at `at` (size `size`) of dir's log's
  `segment` to `x`, with a crc that matches; the byte it had."
  [^File dir segment at size i x]
  (let [f (File. dir (str "wal." segment))
        b (ByteBuffer/wrap (read-bytes f))
        old (.get b (int (+ at 32 i)))
        crc (CRC32C.)]
    (.put b (int (+ at 32 i)) (byte x))
    (.update crc (.array b) (int at) (int (- size 4)))
    (.putInt b (int (+ at size -4)) (unchecked-int (.getValue crc)))
    (Files/write (.toPath f) (.array b)
                 ^"[Ljava.nio.file.OpenOption;" (make-array java.nio.file.OpenOption 0))
    old))

(deftest a-recovery-that-stops-half-way-leaves-the-checkpoint-whole
  ;; the replay's commits are unsynced: the checkpoint they start from stays pinned, so that
  ;; a crash in the middle of the replay finds it whole again
  (let [dir (fresh-db)
        before (read-bytes (File. dir "data.mdb"))
        c (start-child dir "child" 300)]
    (try (await-acks c 300) (finally (kill! c)))
    (let [acked (acks (:out c))
          {:keys [segment records]} (records dir)
          [at size] (nth records 250)
          old (rewrite-record! dir segment at size 0 0x7F)] ; an op that does not parse
      (is (= 300 (count acked)))
      (is (= :store/corrupt (io-error #(d/connect (.getPath dir) {:commit :wal})))
          "the replay stops at the record that does not parse")
      (lose-unsynced-pages! dir before (Random. 7)) ; an operating-system crash now
      (rewrite-record! dir segment at size 0 old)
      (let [{:keys [by-name replayed]} (committed dir)]
        (is (= (set (range 300)) (by-name "child")))
        (is (= 300 replayed))
        (is (= (set (range 5)) (by-name "parent")))))))

(deftest large-commits-flush-the-file-ahead-of-the-checkpoint
  ;; LmdbFlusher: the data file fdatasynced in the background as the log grows, so that the
  ;; checkpoint's own sync finds little to write; what the commits wrote reads back the same,
  ;; before and after a reopen
  (let [dir (File. (tu/temp-dir) "db")
        rnd (Random. 7)
        key (fn [^long n] (doto (ByteBuffer/allocateDirect 8) (.putLong n) (.flip)))
        val (fn [^long n] (let [b (byte-array 1000)]
                            (Arrays/fill b (byte (mod n 127)))
                            (ByteBuffer/wrap b)))
        model (atom (sorted-map))
        check (fn [^LmdbStore s]
                (with-open [r (.beginRead s)]
                  (doseq [[k n] @model]
                    (is (= (val n) (.get r SubDb/META (key k))) k))))]
    (with-open [s (LmdbStore/open (.toPath dir) {"commit" "wal" "write-behind" false})]
      (dotimes [i 40]
        (with-open [w (.beginWrite s)]
          (dotimes [_ 250]
            (let [k (.nextInt rnd 5000) n (.nextInt rnd 1000)]
              (.put w SubDb/META (key k) (val n))
              (swap! model assoc k n)))
          (.commit w)))
      (is (< 5 (.flushesAhead s)) "10 MB of log began flushes")
      (check s))
    (with-open [s (LmdbStore/open (.toPath dir) {"commit" "wal" "write-behind" false})]
      (is (zero? (.replayedAtOpen s)))
      (is (zero? (.flushesAhead s)))
      (check s))))
