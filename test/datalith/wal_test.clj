(ns datalith.wal-test
  "The write-ahead log of the LMDB store (option :commit :wal, issue #17), with
  real child JVMs (datalith.wal-child) killed with SIGKILL; without write-behind
  (each commit LMDB's after its record) but where a test says write-behind:
  - power loss: after a checkpoint, a child commits and is killed; every page of
    data.mdb written since the checkpoint, and both meta pages, are then
    overwritten with garbage or their old bytes (what an operating-system crash
    may leave of unsynced writes); the reopened database holds every
    acknowledged transaction, whole, and d/verify finds nothing
  - a torn last record is dropped; a damaged record followed by a valid one is
    :store/corrupt
  - two processes writing at once keep every acknowledged transaction after each
    is killed
  - a clean close leaves nothing to replay
  - a pause (Store.pauseSync, a bulk load's) killed with the process keeps its
    commits; after an operating-system restart (its pause record's boot id not
    this boot's) with its unsynced pages lost, the store goes back to the pause's
    checkpoint, whole
  - a pause or its end that fails on the log's I/O leaves later commits durable
    through the log (h-walrev)"
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [datalith.child-jvm :as child]
            [datalith.core :as d]
            [datalith.test-util :as tu]
            [datalith.wal-child :as wal-child])
  (:import (clojure.lang ExceptionInfo)
           (datalith.conn Conn)
           (datalith.store LmdbStore SubDb)
           (java.io File RandomAccessFile)
           (java.nio ByteBuffer)
           (java.nio.channels FileChannel)
           (java.nio.file Files OpenOption StandardCopyOption StandardOpenOption)
           (java.util Arrays Random)
           (java.util.zip CRC32C)))

(set! *warn-on-reflection* true)

(def ^:private page 4096)

(defn- replayed [conn]
  (.replayedAtOpen ^LmdbStore (.store ^Conn conn)))

(defn- lines [^File f]
  (if (.exists f) (vec (str/split-lines (slurp f))) []))

(defn- acks [^File f]
  (into #{} (keep #(some-> (re-matches #"ack (\d+)" %) second parse-long)) (lines f)))

(defn- start-child
  "Starts datalith.wal-child on dir (with `mode`, when given); {:process :out}."
  [^File dir name limit & mode]
  (let [out (File. (.getParentFile dir) (str name ".out"))
        err (File. (.getParentFile dir) (str name ".err"))]
    {:out out
     :process (child/start (apply child/command (.getParent dir) "datalith.wal-child"
                                  (.getPath dir) (.getPath out) name limit mode)
                           err)}))

(defn- await-child
  "Waits (at most 120 s) until (ready?) holds, the child wrote `done`, or its process ended."
  [{:keys [out ^Process process]} ready?]
  (let [give-up (+ (System/currentTimeMillis) 120000)]
    (loop []
      (when-not (or (ready?) (some #{"done"} (lines out)) (not (.isAlive process))
                    (> (System/currentTimeMillis) give-up))
        (Thread/sleep 20)
        (recur)))))

(defn- await-acks
  "Waits (at most 120 s) until the child acknowledged n transactions or wrote `done`."
  [c n]
  (await-child c #(>= (count (acks (:out c))) n)))

(defn- kill! [{:keys [^Process process]}]
  (.destroyForcibly process)
  (.waitFor process))

(defn- committed
  "{name #{i}} of the entities in the database at dir, and the open's replay count."
  [^File dir]
  (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
    (is (:ok? (d/verify conn)))
    {:by-name (reduce (fn [m [p i]] (update m p (fnil conj #{}) i)) {}
                      (d/q '[:find ?p ?i :where [?e :w/p ?p] [?e :w/i ?i]] (d/db conn)))
     :replayed (replayed conn)}))

(defn- is-acked-prefix
  "Asserts that `got` (the transactions found after a crash) holds every one of `acked` (those
  acknowledged), and is a prefix without gaps, with at most one unacknowledged."
  [got acked]
  (is (every? got acked) "every acknowledged transaction is there")
  (is (= got (set (range (count got)))) "a prefix, without gaps")
  (is (<= (count got) (inc (count acked))) "at most one unacknowledged"))

(defn- fresh-db
  "A database in a new directory with the child's schema and a few transactions,
  closed (so checkpointed); its directory."
  ^File []
  (let [dir (File. (tu/temp-dir) "db")]
    (with-open [conn (d/connect (.getPath dir) {:commit :wal :schema wal-child/schema})]
      (dotimes [i 5] (d/transact! conn [{:w/p "parent" :w/i i}])))
    dir))

(defn- read-bytes ^bytes [^File f] (Files/readAllBytes (.toPath f)))

(defn- lose-unsynced-pages!
  "Overwrites every page of dir's data.mdb that differs from `before` (bytes of it
  at the checkpoint), every page past its end, and both meta pages, each with
  random bytes or (when it had them) its old ones; the number of pages changed."
  [^File dir ^bytes before ^Random rnd]
  (let [f (File. dir "data.mdb")
        now (read-bytes f)
        pages (quot (alength now) page)]
    (with-open [raf (RandomAccessFile. f "rw")]
      (count
       (for [p (range pages)
             :let [from (* p page)
                   old? (<= (+ from page) (alength before))
                   differs? (or (not old?)
                                (not (Arrays/equals ^bytes now (int from) (int (+ from page))
                                                    ^bytes before (int from) (int (+ from page)))))]
             :when (or (< p 2) differs?)]
         (let [bytes (if (and old? (.nextBoolean rnd))
                       (Arrays/copyOfRange before (int from) (int (+ from page)))
                       (let [b (byte-array page)] (.nextBytes rnd b) b))]
           (.seek raf from)
           (.write raf ^bytes bytes)
           p))))))

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

(defn- records
  "[offset size txnid] of the records of the current segment of dir's log, after its
  checkpoint."
  [^File dir]
  (let [seg (fn [n] (ByteBuffer/wrap (read-bytes (File. dir (str "wal." n)))))
        epoch (fn [^ByteBuffer b] (if (and (<= 32 (.limit b)) (= 0x444C574C (.getInt b 0))) (.getLong b 24) -1))
        [^ByteBuffer b e] (max-key second [(seg 0) (epoch (seg 0))] [(seg 1) (epoch (seg 1))])]
    (loop [at (.getInt b 8) out []]
      (if (and (= 0x444C574C (.getInt b (int at))) (= e (.getLong b (int (+ at 24)))))
        (recur (+ at (.getInt b (int (+ at 8))))
               (conj out [at (.getInt b (int (+ at 8))) (.getLong b (int (+ at 16)))]))
        {:segment (if (= b (seg 0)) 0 1) :records out}))))

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

(defn- field [^Class c ^String name obj]
  (.get (doto (.getDeclaredField c name) (.setAccessible true)) obj))

(defn- block-log!
  "Closes the store's log's channels to the files `names` (\"wal.0\" and \"wal.1\", or
  \"data.mdb\", which the log reads meta pages from) and puts a directory in place of each
  file, so that the log's next I/O on them fails (it reopens them); a function that undoes
  it."
  [conn ^File dir names]
  (let [wal (field LmdbStore "wal" (.store ^Conn conn))
        close! #(doseq [^FileChannel ch (if (= names ["data.mdb"])
                                          [(field (class wal) "data" wal)]
                                          (field (class wal) "files" wal))]
                  (some-> ch .close))]
    (close!)
    (doseq [n names]
      (Files/move (.toPath (File. dir ^String n)) (.toPath (File. dir (str n ".away")))
                  ^"[Ljava.nio.file.CopyOption;" (make-array StandardCopyOption 0))
      (.mkdir (File. dir ^String n)))
    (fn []
      (close!) ; what the log opened meanwhile is the directory
      (doseq [n names]
        (.delete (File. dir ^String n))
        (Files/move (.toPath (File. dir (str n ".away"))) (.toPath (File. dir ^String n))
                    ^"[Ljava.nio.file.CopyOption;" (make-array StandardCopyOption 0))))))

(defn- crashed-copy
  "A copy of dir's files as a process killed now would leave them (the page cache's)."
  ^File [^File dir]
  (let [to (File. (tu/temp-dir) "crashed")]
    (.mkdirs to)
    (doseq [^String n ["data.mdb" "wal.0" "wal.1"]]
      (Files/copy (.toPath (File. dir n)) (.toPath (File. to n))
                  ^"[Ljava.nio.file.CopyOption;" (make-array StandardCopyOption 0)))
    to))

(defn- io-error [f]
  (try (f) nil (catch ExceptionInfo e (:error (ex-data e)))))

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
