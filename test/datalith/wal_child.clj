(ns datalith.wal-child
  "The child JVM of the write-ahead log's tests (datalith.wal-test, wal-pause-test and
  wal-write-behind-test): commits durable transactions through the write-ahead log until it is
  killed.

    java ... clojure.main -m datalith.wal-child DIR OUT NAME LIMIT

  Writes to file OUT (one write call a line) `ready` once the database is
  open, then `ack I` after each transact! of entity {:w/p NAME :w/i I :w/s S}
  returns (S a string of a seeded length, so records differ in size). After
  LIMIT transactions it writes `done` and waits to be killed. With a fifth
  argument `pause`, it commits with the store's fsync paused (Store.pauseSync, as
  an import does) and writes `applied I` instead of `ack I`: nothing it commits
  is acknowledged as durable. With `large`, each transaction also asserts 100
  entities {:w/p NAME+ :w/i I*1000+J :w/s S}: more than 64 KiB of writes, whose
  record the store writes to its log while LMDB puts them (LmdbWrite.logAhead).
  With `heavy`, 1,000 such entities a transaction, with write-behind (the
  default) written back only when its bytes say so. Without `heavy`,
  `behind` or `behind-often`, the store has no write-behind: each
  commit goes into LMDB after its record, the path these tests are about. With
  `behind`, the store has write-behind and writes nothing back while it
  runs (every commit only in its log and in memory); with `behind-often`, it
  has write-behind and writes back every 3 commits or 1 ms (checkpoints that
  carry the later records over, all the time). With `stop-37`, it only holds
  open.lock as a store of stop 37 with write-behind did (byte 1 exclusively).
  After an ack that finds the store's LmdbStore.writingBehind changed (from
  false at first), it writes `writing-behind true` (or false)."
  (:require [datalith.child-jvm :as child]
            [datalith.core :as d])
  (:import (datalith.conn Conn)
           (datalith.store LmdbStore)
           (java.io FileOutputStream)
           (java.util Random)))

(def schema
  {:w/p {:db/valueType :db.type/string}
   :w/i {:db/valueType :db.type/long}
   :w/s {:db/valueType :db.type/string}})

(defn- hold-as-stop-37!
  "Locks open.lock's byte 1 exclusively, as a store of stop 37 with write-behind held it,
  and waits to be killed."
  [dir line!]
  (let [f (java.nio.channels.FileChannel/open
           (.toPath (java.io.File. ^String dir "open.lock"))
           (into-array java.nio.file.OpenOption [java.nio.file.StandardOpenOption/CREATE
                                                 java.nio.file.StandardOpenOption/WRITE]))]
    (.lock f 1 1 false)
    (line! "ready")
    (Thread/sleep Long/MAX_VALUE)))

(defn -main [dir out name limit & [mode]]
  (child/exit-with-parent!)
  (when (= mode "stop-37")
    (let [f (FileOutputStream. ^String out true)]
      (hold-as-stop-37! dir (fn [^String s] (.write f (.getBytes (str s "\n")))))))
  (let [limit (parse-long limit)
        rnd (Random. (hash name))
        f (FileOutputStream. ^String out true)
        line! (fn [^String s] (.write f (.getBytes (str s "\n"))))
        conn (d/connect dir (merge {:commit :wal :schema schema}
                                   (case mode
                                     "behind" {:write-behind true :write-back-commits 1000000
                                               :write-back-ms 3600000}
                                     "behind-often" {:write-behind true :write-back-commits 3
                                                     :write-back-ms 1}
                                     "heavy" {:write-back-commits 1000000 :write-back-ms 3600000}
                                     {:write-behind false})))
        pause? (= mode "pause")
        behind? (volatile! false) ; the store's writingBehind, as last printed
        filler (case mode "large" 100 "heavy" 1000 0)]
    (when pause?
      (.pauseSync (.store ^Conn conn)))
    (line! "ready")
    (dotimes [i limit]
      (d/transact! conn (into [{:w/p name :w/i i
                                :w/s (apply str (repeat (.nextInt rnd 300) \x))}]
                              (for [j (range filler)]
                                {:w/p (str name "+") :w/i (+ (* i 1000) j)
                                 :w/s (apply str (repeat 300 \y))})))
      (line! (str (if pause? "applied " "ack ") i))
      (when (not= @behind? (.writingBehind ^LmdbStore (.store ^Conn conn)))
        (line! (str "writing-behind " (vswap! behind? not)))))
    (line! "done")
    (Thread/sleep Long/MAX_VALUE)))
