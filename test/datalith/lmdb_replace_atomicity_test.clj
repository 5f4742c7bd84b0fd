(ns datalith.lmdb-replace-atomicity-test
  "LmdbStore.replaceAll (see datalith.lmdb-replace-test) whole or not at all, for every process:
  - child JVMs killed after replaceAll returned keep the new contents; killed in the middle,
    they hold the old or the new contents, whole (:commit :wal and :lmdb-sync, each outside
    and inside a pause)
  - a store open in this process, its map smaller than another process's replace wrote, reads
    the new contents
  - the safety review: a child killed the moment its replace is published (the lock file's
    txnid) keeps it after recovery; a process committing through LMDB's own write lock alone
    waits for a replace and its later commits stay
  - a replace whose page writes fail (as on a full disk) commits nothing; backups taken while
    replaces run open whole; a replace without the log survives a switch to it; a replace
    whose checkpoint fails is seen by no one"
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [datalith.child-jvm :as child]
            [datalith.lmdb-replace-child :as rc]
            [datalith.lmdb-replace-support :refer [check-store entries open-store random-writes!
                                                   replace-with! same-entries? scan-back]]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.store LmdbBackup LmdbStore SubDb)
           (java.io File)
           (java.nio ByteBuffer ByteOrder)
           (java.nio.channels FileChannel)
           (java.nio.file StandardOpenOption)
           (java.util Random)
           (java.util.concurrent LinkedBlockingQueue TimeUnit)))

(set! *warn-on-reflection* true)

;; ---- crashes ---------------------------------------------------------------

(defn- start-replace
  "A child replacing the store at dir with (contents seed 1); {:process :lines}."
  [^File dir commit seed pause]
  (let [p (child/start (apply child/command (.getParent dir) "datalith.lmdb-replace-child"
                              "replace" (.getPath dir) commit seed 1 (when pause ["pause"]))
                       (File. (.getParentFile dir) "replace.err"))]
    {:process p :lines (child/line-queue (.getInputStream p))}))

(defn- await-line [{:keys [^LinkedBlockingQueue lines]} line]
  (loop []
    (let [l (.poll lines 120 TimeUnit/SECONDS)]
      (cond (= l line) true
            (or (nil? l) (= l :eof)) false
            :else (recur)))))

(defn- kill! [{:keys [^Process process]}]
  (.destroyForcibly process)
  (.waitFor process))

(defn- reopened-digest
  "The digest of the store at dir after a reopen (recovering), with each page reader: both
  must agree, and the forward and backward scans of every sub-database too."
  [^File dir commit]
  (let [ds (for [reader ["java" "lmdb"]]
             (with-open [s (open-store dir reader commit)
                         r (.beginRead s)]
               (doseq [db (SubDb/values)]
                 (is (same-entries? (rseq (rc/scan r db)) (scan-back r db))))
               (rc/digest #(rc/scan r %))))]
    (is (apply = ds))
    (first ds)))

(deftest replace-survives-kill-9
  (doseq [[commit pause] [["wal" false] ["wal" true] ["lmdb-sync" false] ["lmdb-sync" true]]]
    (testing (str commit (when pause ", inside a pause"))
      (let [dir (File. (tu/temp-dir) "db")
            rnd (Random. 11)
            digests {11 (rc/model-digest (rc/contents 11 1))
                     12 (rc/model-digest (rc/contents 12 1))}]
        (try
          (with-open [s (open-store dir "java" commit)]
            (replace-with! s (rc/contents 11 1)))
          (let [took (let [c (start-replace dir commit 12 pause)
                           _ (is (await-line c "start"))
                           started (System/nanoTime)]
                       (testing "killed after replaceAll returned: the new contents"
                         (is (await-line c "replaced"))
                         (kill! c)
                         (is (= (digests 12) (reopened-digest dir commit))))
                       (max 1 (quot (- (System/nanoTime) started) 1000000)))]
           (testing "killed in the middle: the old contents or the new, whole"
            (loop [i 0, now 12, seen #{}]
              (if (< i 6)
                (let [target (if (= now 12) 11 12)
                      c (start-replace dir commit target pause)]
                  (is (await-line c "start"))
                  (Thread/sleep (long (.nextInt rnd (int (+ 5 (* 3 took))))))
                  (kill! c)
                  (let [d (reopened-digest dir commit)
                        got (some (fn [[seed dg]] (when (= dg d) seed)) digests)]
                    (is (contains? #{now target} got) (str "iteration " i))
                    (recur (inc i) (long (or got now)) (conj seen got))))
                (println "replace-survives-kill-9" commit pause "contents seen:" seen)))))
          (finally (tu/delete-tree (.getParentFile dir))))))))

(deftest another-process-reads-the-replaced-contents
  (testing "a store open in this process, its map smaller than what another process's replace
  wrote, grows its map and reads the new contents at its next read"
    (let [dir (File. (tu/temp-dir) "db")
          rnd (Random. 13)
          model (rc/contents 12 1)]
      (try
        (with-open [s (open-store dir "java" "wal" {"map-size" (bit-shift-left 64 10)})]
          (random-writes! s (rc/contents 1 0.01) rnd 10)
          (with-open [r (.beginRead s)] (rc/scan r SubDb/EAVT)) ; a reader of the old state
          (let [c (start-replace dir "wal" 12 false)]
            (try
              (is (await-line c "replaced"))
              (doseq [reader-thread [:this :another]]
                (testing (name reader-thread)
                  (let [check #(with-open [r (.beginRead s)] (check-store r model rnd))]
                    (if (= reader-thread :this)
                      (check)
                      (let [f (future (check))] @f)))))
              (finally (kill! c)))))
        (finally (tu/delete-tree (.getParentFile dir)))))))

;; ---- the safety review (h-pagesrev) ------------------------------------------

(defn- published-txnid
  "The txnid the lock file publishes (mti_txnid, LmdbDirectCommit.LOCK_TXNID), read by pread:
  what every process's next read transaction reads."
  ^long [^FileChannel ch]
  (let [b (.order (ByteBuffer/allocate 8) (ByteOrder/nativeOrder))]
    (.read ch b 48)
    (.getLong b 0)))

(deftest a-published-replace-survives-a-kill
  (testing "a child's replace is killed the moment the lock file publishes it (every process's
  next read transaction sees the new contents from then on): a reopen keeps the new contents,
  whatever step after the publish the kill fell in"
    (doseq [commit ["wal" "lmdb-sync"]]
      (testing commit
        (let [dir (File. (tu/temp-dir) "db")
              digests {11 (rc/model-digest (rc/contents 11 1))
                       12 (rc/model-digest (rc/contents 12 1))}]
          (try
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s (rc/contents 11 1)))
            (doseq [[i target] (map-indexed vector [12 11 12 11])]
              (let [c (start-replace dir commit target false)]
                (is (await-line c "start"))
                (with-open [lock (FileChannel/open (.toPath (File. dir "lock.mdb"))
                                                   (into-array StandardOpenOption
                                                               [StandardOpenOption/READ]))]
                  ;; the wait is long: the replace's fsyncs wait for the whole machine's
                  ;; dirty pages, and a run beside I/O-heavy processes once took over 120 s
                  (let [t (published-txnid lock)
                        deadline (+ (System/nanoTime) (* 300 1000000000))]
                    (while (and (= t (published-txnid lock)) (< (System/nanoTime) deadline))
                      (Thread/onSpinWait))
                    (let [timed-out (= t (published-txnid lock))]
                      (kill! c)
                      (is (not timed-out) "the child published its replace within 300 s")
                      (is (= (inc t) (published-txnid lock)) "published before the kill"))))
                (is (= (digests target) (reopened-digest dir commit)) (str "iteration " i))))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

(deftest a-writer-of-lmdb-alone-waits-for-a-replace
  (testing "a process that commits through LMDB's own write lock alone (a datalith from before
  writer.lock, another program) while a replace runs: its commits wait for the replace, which
  holds that lock too; those after it stay, on the new trees, read soundly, and none before it"
    (let [dir (File. (tu/temp-dir) "db")
          model (rc/contents 12 1)
          lock-file (atom nil)]
      (try
        (with-open [s (open-store dir "java" "lmdb-sync")]
          (replace-with! s (rc/contents 11 0.2))
          (let [p (child/start (child/command (.getParent dir) "datalith.lmdb-replace-child"
                                              "lmdb-writer" (.getPath dir) "lmdb-sync")
                               (File. (.getParentFile dir) "writer.err"))
                c {:process p :lines (child/line-queue (.getInputStream p))}
                put (fn [] (let [l (.poll ^LinkedBlockingQueue (:lines c) 120 TimeUnit/SECONDS)]
                             (when (string? l) (parse-long (subs l 4)))))]
            (try
              (is (put) "the writer commits before the replace")
              (replace-with! s model)
              ;; closing a descriptor of lock.mdb drops the process's locks on it, s's
              ;; environment's among them: this one is closed after s is
              (let [^FileChannel lock (reset! lock-file
                                              (FileChannel/open (.toPath (File. dir "lock.mdb"))
                                                                (into-array StandardOpenOption
                                                                            [StandardOpenOption/READ])))]
                (let [replaced (published-txnid lock)
                      deadline (+ (System/nanoTime) (* 120 1000000000))]
                  (while (and (< (published-txnid lock) (+ replaced 3))
                              (< (System/nanoTime) deadline))
                    (Thread/sleep 1))
                  (kill! c)
                  (is (<= (+ replaced 3) (published-txnid lock)) "3 commits after the replace")))
              (with-open [r (.beginRead s)]
                (let [child? (fn [[^bytes k _]] (and (= 10 (alength k)) (= -1 (aget k 0))
                                                    (= -1 (aget k 1))))
                      eavt (rc/scan r SubDb/EAVT)
                      ids (set (map (fn [[^bytes k _]] (.getLong (ByteBuffer/wrap k) 2))
                                    (filter child? eavt)))
                      counter (some (fn [[^bytes k ^bytes v]]
                                      (when (= "child" (String. k "US-ASCII"))
                                        (.getLong (ByteBuffer/wrap v))))
                                    (rc/scan r SubDb/META))]
                  (is (some? counter))
                  (is (<= 3 (count ids)) "the writer's commits after the replace")
                  (is (= (set (range (apply min (or counter 0) ids) (inc (or counter 0)))) ids)
                      "the writer's keys since the replace, and none from before it")
                  (is (true? (same-entries? (entries (model SubDb/EAVT)) (remove child? eavt))))
                  (doseq [db (SubDb/values) :when (not (#{SubDb/EAVT SubDb/META} db))]
                    (is (true? (same-entries? (entries (model db)) (rc/scan r db))) (str db)))
                  (is (true? (same-entries?
                              (entries (model SubDb/META))
                              (remove (fn [[^bytes k _]] (= "child" (String. k "US-ASCII")))
                                      (rc/scan r SubDb/META)))))))
              (finally (kill! c)))))
        (is (some? (reopened-digest dir "lmdb-sync")) "reopened, read soundly both ways")
        (finally
          (some-> ^FileChannel @lock-file .close)
          (tu/delete-tree (.getParentFile dir)))))))

(deftest a-replace-that-cannot-write-its-pages-commits-nothing
  (testing "a child whose file writes fail past a size (RLIMIT_FSIZE, as a full disk fails
  them) while its replace writes the new pages: :store/io, nothing committed; the store reopens
  with the old contents, and a replace then writes over the pages left behind"
    (doseq [commit ["wal" "lmdb-sync"]]
      (testing commit
        (let [dir (File. (tu/temp-dir) "db")
              old (rc/contents 11 0.2)
              err (File. (.getParentFile dir) "replace.err")]
          (try
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s old))
            (let [limit-kb (+ 1024 (quot (.length (File. dir "data.mdb")) 1024))
                  cmd (str "ulimit -f " limit-kb " && exec "
                           (str/join " " (map #(str "'" % "'")
                                              (child/command (.getParent dir)
                                                             "datalith.lmdb-replace-child"
                                                             "replace" (.getPath dir) commit
                                                             12 1))))
                  p (child/start ["sh" "-c" cmd] err)
                  lines (child/line-queue (.getInputStream p))]
              (is (await-line {:lines lines} "start"))
              (is (.waitFor p 120 TimeUnit/SECONDS))
              (is (= ["failed :store/io"] (child/drain lines)) (slurp err)))
            (is (= (rc/model-digest old) (reopened-digest dir commit)) "the old contents")
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s (rc/contents 12 1)))
            (is (= (rc/model-digest (rc/contents 12 1)) (reopened-digest dir commit)))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

(deftest a-backup-during-a-replace-is-whole
  (testing "page-for-page backups (LMDB's copy takes its write lock while it copies the meta
  pages) taken over and over while replaces run: each opens with the old contents or the new,
  whole, never a meta page of a replace without its pages"
    (doseq [commit ["wal" "lmdb-sync"]]
      (testing commit
        (let [root (tu/temp-dir)
              dir (File. root "db")
              models {11 (rc/contents 11 0.3) 12 (rc/contents 12 0.3)}
              digests (into {} (for [[k m] models] [(rc/model-digest m) k]))]
          (try
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s (models 11))
              (let [done (promise)
                    backups (future
                              (loop [i 0, out []]
                                (if (realized? done)
                                  out
                                  (let [d (File. root (str "backup" i))]
                                    (.mkdirs d)
                                    (LmdbBackup/copy s (.toPath d) false)
                                    (recur (inc i) (conj out d))))))]
                (try
                  (doseq [seed (take 10 (cycle [12 11]))]
                    (replace-with! s (models seed)))
                  (finally (deliver done true)))
                (is (pos? (count @backups)))
                (doseq [^File d @backups]
                  (let [got (try (with-open [b (LmdbStore/open (.toPath d)
                                                               {"commit" "lmdb-sync"})]
                                   (rc/store-digest b))
                                 (catch ExceptionInfo e (ex-message e)))]
                    (is (contains? digests got) (str (.getName d) ": " got))))))
            (finally (tu/delete-tree root))))))))

(deftest a-replace-without-the-log-survives-a-switch-to-it
  (testing "a store written through the log (its checkpoint left behind), replaced with
  \"lmdb-sync\" (inside a pause or not), then reopened with \"wal\": recovery keeps the replace
  (the replace retires the log's checkpoint), and commits after it stay"
    (doseq [pause [false true]]
      (testing (if pause "inside a pause" "outside a pause")
        (let [dir (File. (tu/temp-dir) "db")
              rnd (Random. 41)
              model (rc/contents 12 0.3)]
          (try
            (with-open [s (open-store dir "java" "wal")]
              (random-writes! s (rc/contents 11 0.1) rnd 50))
            (with-open [s (open-store dir "java" "lmdb-sync")]
              (if pause
                (with-open [_ (.pauseSync s)] (replace-with! s model))
                (replace-with! s model)))
            (is (= (rc/model-digest model) (reopened-digest dir "wal")))
            (with-open [s (open-store dir "java" "wal")]
              (random-writes! s model rnd 50))
            (is (= (rc/model-digest model) (reopened-digest dir "wal")))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

(defn- field [^Class c ^String name obj]
  (.get (doto (.getDeclaredField c name) (.setAccessible true)) obj))

(deftest a-replace-whose-checkpoint-fails-is-seen-by-no-one
  (testing "through the log, the segment the replace's checkpoint goes to fails its writes
  (/dev/full: a full disk): replaceAll throws :store/io, and no reader, now or after a reopen,
  sees the new contents; commits go on after"
    (let [dir (File. (tu/temp-dir) "db")
          rnd (Random. 43)
          old (rc/contents 11 0.2)]
      (try
        (with-open [s (open-store dir "java" "wal")]
          (replace-with! s old)
          (random-writes! s old rnd 20) ; this process owns the log's last checkpoint
          (let [wal (field LmdbStore "wal" s)
                ^"[Ljava.nio.channels.FileChannel;" files (field (class wal) "files" wal)
                target (- 1 (long (field (class wal) "segment" wal)))
                kept (aget files target)]
            (aset files target (FileChannel/open (.toPath (File. "/dev/full"))
                                                 (into-array StandardOpenOption
                                                             [StandardOpenOption/READ
                                                              StandardOpenOption/WRITE])))
            (try
              (is (= :store/io
                     (try (with-open [src (rc/mem-store (rc/contents 12 0.2))
                                      r (.beginRead src)]
                            (.replaceAll s r))
                          nil
                          (catch ExceptionInfo e (:error (ex-data e))))))
              (is (= (rc/model-digest old) (rc/store-digest s)) "a reader sees the old contents")
              (finally
                (.close ^FileChannel (aget files target))
                (aset files target kept)))
            (random-writes! s old rnd 20)
            (is (= (rc/model-digest old) (rc/store-digest s)))))
        (is (= (rc/model-digest old) (reopened-digest dir "wal")) "reopened: the old contents")
        (finally (tu/delete-tree (.getParentFile dir)))))))
