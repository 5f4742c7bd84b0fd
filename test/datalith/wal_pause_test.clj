(ns datalith.wal-pause-test
  "Pauses (Store.pauseSync, a bulk load's) and the write-ahead log of the LMDB store
  (option :commit :wal, h-walrev), with real child JVMs (datalith.wal-child) killed
  with SIGKILL:
  - a pause killed with the process keeps its commits; after an operating-system
    restart (its pause record's boot id not this boot's) with its unsynced pages
    lost, the store goes back to the pause's checkpoint, whole, also when the
    restart tore the checkpoint's meta page
  - a pause or its end that fails on the log's I/O leaves later commits durable
    through the log"
  (:require [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.wal-support :refer [await-child block-log! committed crashed-copy fresh-db
                                          io-error kill! lines lose-unsynced-pages! page
                                          read-bytes records start-child]])
  (:import (datalith.conn Conn)
           (java.io File RandomAccessFile)
           (java.nio ByteBuffer)
           (java.nio.file Files)
           (java.util Random)
           (java.util.zip CRC32C)))

(set! *warn-on-reflection* true)

;; h-walrev: pauses (Store.pauseSync) and the log

(defn- applied [^File f]
  (into #{} (keep #(some-> (re-matches #"applied (\d+)" %) second parse-long)) (lines f)))

(defn- await-applied [c n]
  (await-child c #(>= (count (applied (:out c))) n)))

(defn- reboot!
  "Rewrites the boot id in the pause record of dir's log (and the record's crc), as
  if the operating system had restarted since it was written."
  [^File dir]
  (let [{:keys [segment records]} (records dir)
        [at size] (first records)
        f (File. dir (str "wal." segment))
        b (ByteBuffer/wrap (read-bytes f))
        length (.getInt b (int (+ at 12)))]
    (is (= 3 (.get b (int (+ at 4)))) "the first record after the checkpoint is a pause")
    (is (pos? length) "it carries the boot id")
    (dotimes [i length]
      (.put b (int (+ at 32 i)) (byte (if (= 45 (.get b (int (+ at 32 i)))) 45 48))))
    (let [crc (CRC32C.)]
      (.update crc (.array b) (int at) (int (- size 4)))
      (.putInt b (int (+ at size -4)) (unchecked-int (.getValue crc))))
    (Files/write (.toPath f) (.array b)
                 ^"[Ljava.nio.file.OpenOption;" (make-array java.nio.file.OpenOption 0))))

(deftest a-pause-killed-with-its-process-keeps-its-commits-and-after-a-restart-goes-back-whole
  (testing "the process killed: every commit of the pause is there (the page cache has them)"
    (let [dir (fresh-db)
          c (start-child dir "child" 100000 "pause")]
      (try (await-applied c 60) (finally (kill! c)))
      (let [done (applied (:out c))
            {:keys [by-name]} (committed dir)
            got (get by-name "child" #{})]
        (is (<= 60 (count done)))
        (is (every? got done))
        (is (= got (set (range (count got)))))
        (is (= (set (range 5)) (by-name "parent"))))))
  (testing "an operating-system restart that lost unsynced pages: back to the pause's checkpoint"
    (doseq [seed [1 2 3]]
      (let [dir (fresh-db)
            before (read-bytes (File. dir "data.mdb"))
            c (start-child dir (str "child" seed) 100000 "pause")]
        (try (await-applied c (+ 50 (* 100 seed))) (finally (kill! c)))
        (reboot! dir)
        (is (pos? (lose-unsynced-pages! dir before (Random. seed))))
        (let [{:keys [by-name replayed]} (committed dir)]
          (is (= (set (range 5)) (by-name "parent")) seed)
          (is (nil? (by-name (str "child" seed))) "nothing the pause wrote was acknowledged")
          (is (zero? replayed)))))))

(defn- newest-meta
  "The larger txnid of the two meta pages in `data` (bytes of a data.mdb)."
  [^bytes data]
  (let [b (.order (ByteBuffer/wrap data) java.nio.ByteOrder/LITTLE_ENDIAN)]
    (max (.getLong b (int (+ 16 128))) (.getLong b (int (+ page 16 128))))))

(deftest a-restart-that-tore-the-checkpoints-meta-page-goes-back-to-it
  ;; after an operating-system restart during a pause, the pause's commits (never synced) may
  ;; have torn the meta page of the checkpoint's commit X, whose slot the commit X + 2 rewrote,
  ;; while the other slot still holds X - 1 (X + 1's write lost): the data file's last commit
  ;; then reads as X - 1, one before the checkpoint, which is no replaced data file; the open
  ;; goes back to the checkpoint (it refused the directory as "replaced")
  (let [dir (fresh-db)
        before (read-bytes (File. dir "data.mdb"))
        x (newest-meta before)
        c (start-child dir "child" 100000 "pause")]
    (try (await-applied c 50) (finally (kill! c)))
    (reboot! dir)
    (is (pos? (lose-unsynced-pages! dir before (Random. 7))))
    (with-open [raf (RandomAccessFile. (File. dir "data.mdb") "rw")]
      (let [torn (byte-array page)
            other (bit-xor 1 (bit-and x 1))]
        (.nextBytes (Random. 8) torn)
        (.seek raf (* page (bit-and x 1)))
        (.write raf torn)
        (.seek raf (* page other))
        (.write raf before (int (* page other)) (int page))))
    (let [{:keys [by-name replayed]} (committed dir)]
      (is (= (set (range 5)) (by-name "parent")))
      (is (nil? (by-name "child")) "nothing the pause wrote was acknowledged")
      (is (zero? replayed)))))

(deftest a-failed-pause-or-end-of-pause-leaves-later-commits-durable-through-the-log
  (testing "a pause whose checkpoint fails begins no pause"
    (let [dir (fresh-db)]
      (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
        (let [unblock (block-log! conn dir ["data.mdb"])] ; fails after the sync
          (is (= :store/io (io-error #(.pauseSync (.store ^Conn conn)))))
          (unblock))
        (d/transact! conn [{:w/p "after" :w/i 0}])
        (let [{:keys [by-name replayed]} (committed (crashed-copy dir))]
          (is (= #{0} (by-name "after")) "the acknowledged commit survives the crash")
          (is (= 1 replayed) "from its record")))))
  (testing "an end of pause that fails: the next commit's record follows a checkpoint"
    (doseq [names [["wal.0" "wal.1"] ["data.mdb"]]] ; before the checkpoint, or in it
      (let [dir (fresh-db)]
        (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
          (let [pause (.pauseSync (.store ^Conn conn))]
            (d/transact! conn [{:w/p "paused" :w/i 0}])
            (d/transact! conn [{:w/p "paused" :w/i 1}])
            (let [unblock (block-log! conn dir names)]
              (is (= :store/io (io-error #(.close ^java.lang.AutoCloseable pause))))
              (unblock)))
          (d/transact! conn [{:w/p "after" :w/i 0}])
          (let [{:keys [by-name replayed]} (committed (crashed-copy dir))]
            (is (= #{0} (by-name "after")) names)
            (is (= #{0 1} (by-name "paused")) names)
            (is (= 1 replayed) names)))))))
