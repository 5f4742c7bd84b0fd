(ns datalith.wal-write-behind-test
  "Write-behind (LmdbBehind) over the write-ahead log of the LMDB store (option :commit :wal):
  commits durable in the log, laid in memory over LMDB's last commit and written back into
  LMDB later by a thread of the store; with real child JVMs (datalith.wal-child) killed with
  SIGKILL:
  - power loss with nothing written back, and amid write-backs every 3 commits: every
    acknowledged transaction comes back, as a gapless prefix
  - a store with write-behind hands its directory over to another process's open (which reads
    every commit acknowledged before it and commits into LMDB directly) and takes write-behind
    back once alone; killed after, it keeps every acknowledged commit; an open beside such a
    store of stop 37 fails
  - it loads in a small heap; its options are checked; a close writes everything back; a log
    whose checkpoint cannot carry (written before write-behind) still recovers; a write-back
    that fails keeps its commits and is tried again"
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [datalith.child-jvm :as child]
            [datalith.core :as d]
            [datalith.test-util :as tu]
            [datalith.wal-child :as wal-child]
            [datalith.wal-support :refer [acks await-acks await-child block-log! committed
                                          crashed-copy fresh-db is-acked-prefix kill! lines
                                          lose-unsynced-pages! read-bytes records replayed
                                          start-child]])
  (:import (clojure.lang ExceptionInfo)
           (datalith.conn Conn)
           (datalith.store LmdbStore)
           (java.io File)
           (java.nio ByteBuffer)
           (java.nio.channels FileChannel)
           (java.nio.file Files OpenOption StandardOpenOption)
           (java.util Random)
           (java.util.zip CRC32C)))

(set! *warn-on-reflection* true)

;; Write-behind (LmdbBehind): commits durable in the log, laid in memory over LMDB's last
;; commit, and written back into LMDB later by a thread of the store

(deftest write-behind-commits-only-in-the-log-survive-the-loss-of-unsynced-pages
  ;; nothing is written back while the child runs: LMDB's file holds only the checkpoint's
  ;; commit, every acknowledged transaction is a record of the log (numbered after the
  ;; checkpoint as LMDB's commits would be), and the reopen replays them all
  (let [dir (fresh-db)
        before (read-bytes (File. dir "data.mdb"))
        c (start-child dir "behind" 600 "behind")]
    (try (await-acks c 150)
         (finally (kill! c)))
    (let [acked (acks (:out c))
          {:keys [records]} (records dir)
          _ (lose-unsynced-pages! dir before (Random. 17))
          {:keys [by-name replayed]} (committed dir)
          got (get by-name "behind" #{})
          txnids (mapv peek records)]
      (is (<= 150 (count acked)))
      (is (= txnids (vec (range (first txnids) (+ (count txnids) (first txnids)))))
          "consecutive txnids")
      (is-acked-prefix got acked)
      (is (<= (count acked) replayed) "they were replayed from the log")
      (is (= (set (range 5)) (by-name "parent"))))))

(defn- checkpoint-epoch
  "The epoch of the last checkpoint of dir's log."
  [^File dir]
  (apply max (for [n [0 1]
                   :let [b (ByteBuffer/wrap (read-bytes (File. dir (str "wal." n))))]
                   :when (and (<= 32 (.limit b)) (= 0x444C574C (.getInt b 0)))]
               (.getLong b 24))))

(deftest write-behind-killed-amid-write-backs-keeps-every-acknowledged-commit
  ;; write-backs every 3 commits or 1 ms, each a checkpoint carrying the records made while it
  ;; ran into the other segment: a kill at any point of one loses nothing acknowledged
  (doseq [seed [1 2 3]]
    (let [dir (fresh-db)
          epoch (checkpoint-epoch dir)
          c (start-child dir (str "often" seed) 100000 "behind-often")]
      (try (await-acks c (* 100 seed))
           (finally (kill! c)))
      (is (< (+ epoch 10) (checkpoint-epoch dir)) "write-backs took checkpoints all along")
      (let [acked (acks (:out c))
            {:keys [by-name]} (committed dir)
            got (get by-name (str "often" seed) #{})]
        (is (<= (* 100 seed) (count acked)))
        (is-acked-prefix got acked)))))

(defn- names-in
  "The :w/i of the entities named `p` in `db`."
  [db p]
  (set (d/q '[:find [?i ...] :in $ ?p :where [?e :w/p ?p] [?e :w/i ?i]] db p)))

(defn- behind-held?
  "Whether a process holds byte 3 of dir's open.lock: a store laying its commits over LMDB's
  file (write-behind, alone on the directory)."
  [^File dir]
  (with-open [ch (FileChannel/open (.toPath (File. dir "open.lock"))
                                   (into-array OpenOption [StandardOpenOption/READ
                                                           StandardOpenOption/WRITE]))]
    (if-let [l (.tryLock ch 3 1 true)]
      (do (.release l) false)
      true)))

(deftest a-write-behind-store-hands-its-directory-over-to-another-process
  (doseq [mode ["behind" "behind-often"]]
    (testing (str "a child with write-behind (" mode "), committing all the while: another"
                  " process's open waits for it to write every commit back and goes on")
      (let [dir (fresh-db)
            c (start-child dir (str "held-" mode) 100000 mode)]
        (try (await-acks c 30)
             (let [before (acks (:out c))
                   start (System/nanoTime)]
               (with-open [conn (d/connect (.getPath dir) {:commit :wal :write-behind true})]
                 (println (format "hand-off (%s): connect took %.1f ms, %d commits acknowledged"
                                  mode (/ (- (System/nanoTime) start) 1e6)
                                  (count (acks (:out c)))))
                 (is (not (.writingBehind ^LmdbStore (.store ^Conn conn)))
                     "not alone: this open commits into LMDB directly")
                 (is (every? (names-in (d/db conn) (str "held-" mode)) before)
                     "every commit the child acknowledged before the open is read here")
                 (testing "both processes go on committing, each seeing the other's"
                   (await-acks c (+ 20 (count (acks (:out c)))))
                   (dotimes [i 20] (d/transact! conn [{:w/p "parent-after" :w/i i}]))
                   (let [seen (acks (:out c))]
                     (await-acks c (+ 5 (count seen)))
                     (is (every? (names-in (d/db conn) (str "held-" mode)) seen)))))
               (testing "once this open closed, the child takes write-behind back"
                 (let [start (System/nanoTime)]
                   (is (tu/await-true #(behind-held? dir)))
                   (println (format "retake (%s): %.1f ms after the close" mode
                                    (/ (- (System/nanoTime) start) 1e6))))
                 (is (tu/await-true #(= "writing-behind true"
                                     (last (filter #{"writing-behind true" "writing-behind false"}
                                                   (lines (:out c)))))))
                 (await-acks c (+ 20 (count (acks (:out c))))))
               (testing "and hands the directory over again to the next open"
                 (let [seen (acks (:out c))]
                   (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
                     (is (not (.writingBehind ^LmdbStore (.store ^Conn conn))))
                     (is (every? (names-in (d/db conn) (str "held-" mode)) seen))
                     (d/transact! conn [{:w/p "parent-after" :w/i 20}])))))
             (finally (kill! c)))
        (testing "after the child's death every acknowledged commit of both is there"
          (let [{:keys [by-name]} (committed dir)]
            (is-acked-prefix (get by-name (str "held-" mode) #{}) (acks (:out c)))
            (is (= (set (range 21)) (get by-name "parent-after")))))))))

(deftest a-write-behind-open-beside-another-process-commits-directly
  (let [dir (fresh-db)
        c (start-child dir "other" 100000)]
    (try (await-acks c 10)
         (with-open [conn (d/connect (.getPath dir) {:commit :wal :write-behind true})]
           (is (not (.writingBehind ^LmdbStore (.store ^Conn conn))))
           (d/transact! conn [{:w/p "beside" :w/i 0}])
           (await-acks c (+ 10 (count (acks (:out c)))))
           (testing "the other process's death leaves it alone: it takes write-behind"
             (kill! c)
             (is (tu/await-true #(.writingBehind ^LmdbStore (.store ^Conn conn))))
             (dotimes [i 20] (d/transact! conn [{:w/p "beside" :w/i (inc i)}]))))
         (finally (kill! c)))
    (let [{:keys [by-name]} (committed dir)]
      (is (= (set (range 21)) (get by-name "beside")))
      (is-acked-prefix (get by-name "other" #{}) (acks (:out c))))
    (testing "alone again, an open has write-behind"
      (with-open [conn (d/connect (.getPath dir) {:commit :wal :write-behind true})]
        (is (.writingBehind ^LmdbStore (.store ^Conn conn)))))))

(deftest a-store-that-takes-write-behind-back-keeps-every-acknowledged-commit-after-kill-9
  ;; the child opens beside this process, commits into LMDB directly, takes write-behind once
  ;; this process closes, and writes nothing back from then on: its later commits are only in
  ;; its log (after the checkpoint it took), which the reopen after its kill replays
  (let [dir (fresh-db)
        conn (d/connect (.getPath dir) {:commit :wal})
        c (start-child dir "retaken" 100000 "behind")]
    (try (await-acks c 20)
         (is (not (behind-held? dir)) "beside this process, the child commits directly")
         (is (not (some #{"writing-behind true"} (lines (:out c)))))
         (.close ^Conn conn)
         (is (tu/await-true #(some #{"writing-behind true"} (lines (:out c))))
             "alone, it takes write-behind")
         (is (behind-held? dir))
         (let [at (count (acks (:out c)))]
           (await-acks c (+ at 100))
           (kill! c)
           (let [acked (acks (:out c))
                 {:keys [by-name replayed]} (committed dir)]
             (is (<= (+ at 100) (count acked)))
             (is-acked-prefix (get by-name "retaken" #{}) acked)
             (is (<= 100 replayed) "the commits laid over LMDB were replayed from the log")))
         (finally (kill! c) (.close ^Conn conn)))))

(deftest an-open-beside-a-write-behind-store-of-stop-37-fails
  ;; that store cannot hand the directory over: it must stay alone on it
  (let [dir (fresh-db)
        c (start-child dir "old" 0 "stop-37")]
    (try (await-child c #(some #{"ready"} (lines (:out c))))
         (let [e (try (d/connect (.getPath dir) {:commit :wal}) nil
                      (catch ExceptionInfo e e))]
           (is (= :store/lmdb (:error (ex-data e))) (pr-str e))
           (is (re-find #"older datalith" (str (ex-message e)))))
         (finally (kill! c)))
    (testing "once it is gone, the directory opens"
      (is (= (set (range 5)) (get (:by-name (committed dir)) "parent"))))))

(deftest write-behind-loads-in-a-small-heap
  ;; the layers' bounds follow the heap: a child JVM of -Xmx48m commits 150 transactions of
  ;; 1,000 entities each with write-behind, written back only when the active layer's bytes
  ;; say so; with bounds of 16 and 64 MiB whatever the heap (stop 37's), it ran out of memory
  ;; after 10
  (let [dir (fresh-db)
        work (.getParent dir)
        out (File. work "heavy.out")
        err (File. work "heavy.err")
        cmd (concat [(first (child/command work "x"))] ["-Xmx48m"]
                    (rest (child/command work "datalith.wal-child" (.getPath dir) (.getPath out)
                                         "heavy" 150 "heavy")))
        p (child/start cmd err)]
    (try (await-child {:out out :process p} (constantly false))
         (is (some #{"done"} (lines out)) (slurp err))
         (is (not (str/includes? (slurp err) "OutOfMemoryError")))
         (finally (kill! {:process p})))
    (let [{:keys [by-name]} (committed dir)]
      (is (= (set (range 150)) (by-name "heavy")))
      (is (= 150000 (count (by-name "heavy+")))))))

(deftest write-behind-option-errors
  (let [dir (File. (tu/temp-dir) "db")]
    (doseq [[opts bad] [[{"write-behind" true "commit" "lmdb-sync"} "write-behind"]
                        [{"write-behind" true "sync" false} "write-behind"]
                        [{"write-behind" "yes"} "write-behind"]
                        [{"write-back-commits" 0} "write-back-commits"]
                        [{"write-back-commits" 1.5} "write-back-commits"]
                        [{"write-back-ms" -1} "write-back-ms"]]]
      (let [e (try (LmdbStore/open (.toPath dir) opts) nil (catch ExceptionInfo e e))]
        (is (= :store/option (:error (ex-data e))) (pr-str opts))
        (is (= bad (:option (ex-data e))) (pr-str opts))))))

(deftest write-behind-close-writes-everything-back-and-a-reopen-replays-nothing
  (let [dir (File. (tu/temp-dir) "db")
        opts {:commit :wal :write-behind true :write-back-commits 1000000 :write-back-ms 3600000
              :schema wal-child/schema}]
    (with-open [conn (d/connect (.getPath dir) opts)]
      (dotimes [i 50] (d/transact! conn [{:w/p "x" :w/i i}]))
      (is (zero? (.writeBacks ^LmdbStore (.store ^Conn conn))) "nothing written back yet")
      (is (= 50 (count (d/q '[:find ?e :where [?e :w/p "x"]] (d/db conn))))))
    (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
      (is (zero? (replayed conn)))
      (is (:ok? (d/verify conn)))
      (is (= (set (range 50)) (set (map first (d/q '[:find ?i :where [?e :w/p "x"] [?e :w/i ?i]]
                                                   (d/db conn)))))))))

(deftest a-log-whose-checkpoint-cannot-carry-still-recovers
  ;; checkpoints written before write-behind were 200 bytes ({owner, meta page}), with their
  ;; records right after: such a log, left by a killed process, still replays
  (let [dir (File. (tu/temp-dir) "db")
        copy (File. (tu/temp-dir) "copy")]
    (with-open [conn (d/connect (.getPath dir) {:commit :wal :schema wal-child/schema})]
      (dotimes [i 12] (d/transact! conn [{:w/p "old" :w/i i}]))
      (.mkdirs copy)
      (doseq [^File f (.listFiles dir)]
        (Files/copy (.toPath f) (.toPath (File. copy (.getName f)))
                    ^"[Ljava.nio.file.CopyOption;" (make-array java.nio.file.CopyOption 0))))
    (let [{:keys [segment records]} (records copy)
          f (File. copy (str "wal." segment))
          b (ByteBuffer/wrap (read-bytes f))
          size (.getInt b 8)
          old (ByteBuffer/allocate (.capacity b))]
      (is (= 216 size) "this version's checkpoint")
      (is (<= 12 (count records)))
      ;; the old checkpoint: the same fields but carry and first, 200 bytes, then the records
      (.put old (.array b) 0 (- 200 4))
      (.putInt old 8 200)
      (.putInt old 12 160) ; its payload: owner and meta page
      (let [crc (CRC32C.)]
        (.update crc (.array old) 0 196)
        (.putInt old 196 (unchecked-int (.getValue crc))))
      (.put old 200 (.array b) (int size) (int (- (.capacity b) size)))
      (Files/write (.toPath f) (.array old)
                   ^"[Ljava.nio.file.OpenOption;" (make-array java.nio.file.OpenOption 0))
      (let [{:keys [by-name replayed]} (committed copy)]
        (is (= (set (range 12)) (by-name "old")))
        (is (= (count records) replayed))))))

(deftest a-write-back-that-fails-keeps-its-commits-and-is-tried-again
  ;; the write-back's checkpoint cannot read LMDB's file: commits go on, durable in the log and
  ;; read from memory; the layer stays until a write-back succeeds; a crash meanwhile loses
  ;; nothing acknowledged
  (let [dir (fresh-db)]
    (with-open [conn (d/connect (.getPath dir) {:commit :wal :write-behind true
                                                 :write-back-commits 2 :write-back-ms 1})]
      (let [store ^LmdbStore (.store ^Conn conn)
            unblock (block-log! conn dir ["data.mdb"])
            before (.writeBacks store)]
        (dotimes [i 10] (d/transact! conn [{:w/p "during" :w/i i}]))
        (Thread/sleep 300) ; write-backs tried, and failed, meanwhile
        (is (= before (.writeBacks store)) "no write-back succeeded")
        ;; (no query while data.mdb is a directory: the page reader's bound, the file's size,
        ;; would read as one page)
        (unblock)
        (is (= (set (range 10)) (set (map first (d/q '[:find ?i :where [?e :w/p "during"] [?e :w/i ?i]]
                                                     (d/db conn))))))
        (let [{:keys [by-name]} (committed (crashed-copy dir))]
          (is (= (set (range 10)) (by-name "during")) "a crash now loses nothing"))
        (let [give-up (+ (System/currentTimeMillis) 10000)]
          (while (and (= before (.writeBacks store)) (< (System/currentTimeMillis) give-up))
            (Thread/sleep 20)))
        (is (< before (.writeBacks store)) "tried again, it succeeds once the file reads")))
    (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
      (is (zero? (replayed conn)))
      (is (= (set (range 10)) (set (map first (d/q '[:find ?i :where [?e :w/p "during"] [?e :w/i ?i]]
                                                   (d/db conn)))))))))
