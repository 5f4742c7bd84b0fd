(ns datalith.wal-support
  "What the tests of the LMDB store's write-ahead log share (datalith.wal-test, wal-pause-test
  and wal-write-behind-test): child JVMs (datalith.wal-child) started, awaited and killed, what
  a database holds once reopened after them, the loss of a data file's unsynced pages, the
  records of the log, and a log whose I/O fails on purpose."
  (:require [clojure.string :as str]
            [clojure.test :refer [is]]
            [datalith.child-jvm :as child]
            [datalith.core :as d]
            [datalith.test-util :as tu]
            [datalith.wal-child :as wal-child])
  (:import (clojure.lang ExceptionInfo)
           (datalith.conn Conn)
           (datalith.store LmdbStore)
           (java.io File RandomAccessFile)
           (java.nio ByteBuffer)
           (java.nio.channels FileChannel)
           (java.nio.file Files StandardCopyOption)
           (java.util Arrays Random)))

(set! *warn-on-reflection* true)

(def page 4096)

(defn replayed [conn]
  (.replayedAtOpen ^LmdbStore (.store ^Conn conn)))

(defn lines [^File f]
  (if (.exists f) (vec (str/split-lines (slurp f))) []))

(defn acks [^File f]
  (into #{} (keep #(some-> (re-matches #"ack (\d+)" %) second parse-long)) (lines f)))

(defn start-child
  "Starts datalith.wal-child on dir (with `mode`, when given); {:process :out}."
  [^File dir name limit & mode]
  (let [out (File. (.getParentFile dir) (str name ".out"))
        err (File. (.getParentFile dir) (str name ".err"))]
    {:out out
     :process (child/start (apply child/command (.getParent dir) "datalith.wal-child"
                                  (.getPath dir) (.getPath out) name limit mode)
                           err)}))

(defn await-child
  "Waits (at most 120 s) until (ready?) holds, the child wrote `done`, or its process ended."
  [{:keys [out ^Process process]} ready?]
  (let [give-up (+ (System/currentTimeMillis) 120000)]
    (loop []
      (when-not (or (ready?) (some #{"done"} (lines out)) (not (.isAlive process))
                    (> (System/currentTimeMillis) give-up))
        (Thread/sleep 20)
        (recur)))))

(defn await-acks
  "Waits (at most 120 s) until the child acknowledged n transactions or wrote `done`."
  [c n]
  (await-child c #(>= (count (acks (:out c))) n)))

(defn kill! [{:keys [^Process process]}]
  (.destroyForcibly process)
  (.waitFor process))

(defn committed
  "{name #{i}} of the entities in the database at dir, and the open's replay count."
  [^File dir]
  (with-open [conn (d/connect (.getPath dir) {:commit :wal})]
    (is (:ok? (d/verify conn)))
    {:by-name (reduce (fn [m [p i]] (update m p (fnil conj #{}) i)) {}
                      (d/q '[:find ?p ?i :where [?e :w/p ?p] [?e :w/i ?i]] (d/db conn)))
     :replayed (replayed conn)}))

(defn is-acked-prefix
  "Asserts that `got` (the transactions found after a crash) holds every one of `acked` (those
  acknowledged), and is a prefix without gaps, with at most one unacknowledged."
  [got acked]
  (is (every? got acked) "every acknowledged transaction is there")
  (is (= got (set (range (count got)))) "a prefix, without gaps")
  (is (<= (count got) (inc (count acked))) "at most one unacknowledged"))

(defn fresh-db
  "A database in a new directory with the child's schema and a few transactions,
  closed (so checkpointed); its directory."
  ^File []
  (let [dir (File. (tu/temp-dir) "db")]
    (with-open [conn (d/connect (.getPath dir) {:commit :wal :schema wal-child/schema})]
      (dotimes [i 5] (d/transact! conn [{:w/p "parent" :w/i i}])))
    dir))

(defn read-bytes ^bytes [^File f] (Files/readAllBytes (.toPath f)))

(defn lose-unsynced-pages!
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

(defn records
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

(defn field [^Class c ^String name obj]
  (.get (doto (.getDeclaredField c name) (.setAccessible true)) obj))

(defn block-log!
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

(defn crashed-copy
  "A copy of dir's files as a process killed now would leave them (the page cache's)."
  ^File [^File dir]
  (let [to (File. (tu/temp-dir) "crashed")]
    (.mkdirs to)
    (doseq [^String n ["data.mdb" "wal.0" "wal.1"]]
      (Files/copy (.toPath (File. dir n)) (.toPath (File. to n))
                  ^"[Ljava.nio.file.CopyOption;" (make-array StandardCopyOption 0)))
    to))

(defn io-error [f]
  (try (f) nil (catch ExceptionInfo e (:error (ex-data e)))))
