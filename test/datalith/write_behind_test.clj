(ns datalith.write-behind-test
  "LMDB with write-behind (LmdbBehind, option :write-behind): commits durable in the
  write-ahead log, laid in memory over LMDB's last commit, written back by a thread of
  the store. What a connection's user relies on, with write-backs every few commits
  or milliseconds so that each meets the layers in every state:
  - readers never see a commit go missing, appear twice or out of order while layers
    are frozen, written back and dropped under them
  - concurrent writers upserting one identity make one entity; a transaction that
    fails in a group fails alone and writes nothing
  - history and as-of read the same as on a store without write-behind
  - a backup, an import (the store's sync paused) and a close see every commit
    (the crash tests are in datalith.wal-write-behind-test; the property tests run on
    :lmdb-behind too: datalith.test-util/checked-stores)"
  (:require [clojure.java.io :as io]
            [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.conn Conn)
           (datalith.store Cursor LmdbStore MemStore ReadTxn Store SubDb WriteTxn)
           (java.nio ByteBuffer)
           (java.util.concurrent CountDownLatch TimeUnit)))

(set! *warn-on-reflection* true)

(def ^:private schema
  {:w/i {:db/valueType :db.type/long}
   :w/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :w/n {:db/valueType :db.type/long}})

(defn- store ^LmdbStore [conn]
  (.store ^Conn conn))

(defn- is-of [db]
  (set (map first (d/q '[:find ?i :where [?e :w/i ?i]] db))))

(deftest readers-see-every-commit-once-and-in-order-across-write-backs
  (tu/with-conn [conn :lmdb-behind {:schema schema}]
    (let [stop (atom false)
          problems (atom [])
          reader (future
                   (loop [last-n -1 reads 0]
                     (if @stop
                       reads
                       (let [db (d/db conn)
                             is (is-of db)
                             n (count is)]
                         (when-not (= is (set (range n)))
                           (swap! problems conj [:gap n (d/basis-t db)]))
                         (when (< n last-n)
                           (swap! problems conj [:went-back last-n n]))
                         (recur n (inc reads))))))]
      ;; At least 400 commits, and on until write-backs ran meanwhile: on a loaded machine
      ;; the write-back thread may not be scheduled during the first 400 (CI saw none once).
      (let [n (loop [i 0]
                (if (or (and (>= i 400) (>= (.writeBacks (store conn)) 3)) (= i 20000))
                  i
                  (do (d/transact! conn [{:w/i i}])
                      (recur (inc i)))))]
        (reset! stop true)
        (is (pos? @reader))
        (is (empty? @problems) (pr-str (take 5 @problems)))
        (is (= (set (range n)) (is-of (d/db conn)))))
      (is (pos? (.writeBacks (store conn))) "the commits were written back meanwhile"))))

(defn- counter-key ^ByteBuffer [^long i]
  (-> (ByteBuffer/allocate 9) (.put (byte 7)) (.putLong i) (.flip)))

(defn- keys-in ^long [^Store s]
  (with-open [^ReadTxn r (.beginRead s)]
    (let [^Cursor c (.cursor r SubDb/EAVT)]
      (try (loop [n 0 more (.first c)] (if more (recur (inc n) (.next c)) n))
           (finally (.close c))))))

;; The store's own read, without a database above it: each commit puts key i and deletes key
;; i - 1, so every state a read may see holds one key. A read takes the layers' views first,
;; then LMDB's; a write-back of the active layer landing between the two puts that layer's
;; later commits (key j, and key i deleted) under a view of it that still holds key i: two
;; keys (f1b32c8: the read begins again when the active layer changed meanwhile). The window
;; is a few instructions wide; readers on more threads than cores are descheduled inside it.
(defn- one-key-throughout
  "Commits into `s` for 3 s, each putting key i and deleting key i - 1, while 6 threads read;
  the counts of keys the reads saw other than one, by count."
  [^Store s]
  (with-open [^WriteTxn w (.beginWrite s)]
    (.put w SubDb/EAVT (counter-key 0) (ByteBuffer/allocate 0))
    (.commit w))
  (let [stop (atom false)
        seen (atom {})
        readers (doall (for [_ (range 6)]
                         (future
                           (loop [reads 0]
                             (if @stop
                               reads
                               (let [n (keys-in s)]
                                 (when (not= 1 n)
                                   (swap! seen update n (fnil inc 0)))
                                 (recur (inc reads))))))))
        start (System/nanoTime)]
    (loop [i 1]
      (when (< (- (System/nanoTime) start) 3e9)
        (with-open [^WriteTxn w (.beginWrite s)]
          (.put w SubDb/EAVT (counter-key i) (ByteBuffer/allocate 0))
          (.delete w SubDb/EAVT (counter-key (dec i)))
          (.commit w))
        (recur (inc i))))
    (reset! stop true)
    (is (every? pos? (map deref readers)))
    @seen))

;; The store's own read, without a database above it: each commit puts key i and deletes key
;; i - 1, so every state a read may see holds one key. With write-behind a read takes the
;; layers' views first, then LMDB's; a write-back of the active layer landing between the two
;; put that layer's later commits (key j, and key i deleted) under a view of it that still
;; held key i: two keys (f1b32c8: the read begins again when the active layer changed
;; meanwhile; on the code before it, this test saw 7-16 such reads in 3 s). The window is a few
;; instructions wide; readers on more threads than cores are descheduled inside it. The
;; in-memory store reads one root: the same test, for the same promise.
(deftest a-read-never-mixes-a-layer-with-its-own-write-back
  (testing "LMDB with write-behind, a write-back after every commit"
    (let [dir (tu/temp-dir)
          ^Store s (LmdbStore/open (.toPath ^java.io.File dir)
                                   {"write-behind" true "write-back-commits" 1 "write-back-ms" 1})]
      (try
        (is (empty? (one-key-throughout s)) "reads that saw other than one key, by count")
        (is (pos? (.writeBacks ^LmdbStore s)) "the commits were written back meanwhile")
        (finally
          (.close s)
          (tu/delete-tree dir)))))
  (testing "in memory"
    (with-open [^Store s (MemStore/open)]
      (is (empty? (one-key-throughout s)) "reads that saw other than one key, by count"))))

(deftest concurrent-writers-upsert-one-entity-and-a-failure-fails-alone
  (tu/with-conn [conn :lmdb-behind {:schema schema}]
    (let [start (CountDownLatch. 1)
          writers (vec (for [t (range 8)]
                         (future
                           (.await start 10 TimeUnit/SECONDS)
                           (dotimes [k 25]
                             (d/transact! conn [{:w/email "one@x" :w/n (+ (* 100 t) k)}])
                             (try (d/transact! conn [{:w/email (str t "-" k "@x") :w/i "not a long"}])
                                  (catch ExceptionInfo _ nil))))))]
      (.countDown start)
      (run! deref writers)
      (let [db (d/db conn)]
        (is (= 1 (count (d/q '[:find ?e :where [?e :w/email "one@x"]] db))))
        (is (empty? (d/q '[:find ?e :where [?e :w/email ?m] [(not= ?m "one@x")]] db))
            "every failing transaction wrote nothing")))))

(deftest history-and-as-of-read-as-without-write-behind
  (let [txs (vec (for [i (range 60)]
                   (cond-> [{:w/email (str "u" (mod i 7) "@x") :w/n i}]
                     (zero? (mod i 5)) (conj {:w/i i}))))
        run (fn [conn]
              (let [ts (mapv #(d/basis-t (:db-after (d/transact! conn %))) txs)
                    db (d/db conn)]
                {:now (d/q '[:find ?m ?n :where [?e :w/email ?m] [?e :w/n ?n]] db)
                 :history (d/q '[:find ?m ?n ?added :where [?e :w/email ?m] [?e :w/n ?n _ ?added]]
                               (d/history db))
                 :as-of (vec (for [t (take-nth 7 ts)]
                               (d/q '[:find ?m ?n :where [?e :w/email ?m] [?e :w/n ?n]]
                                    (d/as-of db t))))}))]
    (tu/with-conn [behind :lmdb-behind {:schema schema}]
      (tu/with-conn [plain :lmdb-through {:schema schema}]
        (is (= (run plain) (run behind)))))))

(deftest backup-import-and-close-see-every-commit
  (let [parent (tu/temp-dir)
        dir (io/file parent "db")
        copy (io/file parent "copy")
        opts {:schema schema :write-behind true :write-back-commits 1000000
              :write-back-ms 3600000}]
    (try
      (with-open [conn (d/connect (.getPath dir) opts)]
        (dotimes [i 20] (d/transact! conn [{:w/i i}]))
        (is (zero? (.writeBacks (store conn))) "all 20 commits only in memory and the log")
        (testing "a backup writes them back first"
          (d/backup conn (.getPath copy))
          (with-open [c (d/connect (.getPath copy))]
            (is (= (set (range 20)) (is-of (d/db c))))))
        (testing "an import into the store, and commits after it"
          (d/transact! conn [{:w/i 20}])
          (is (= 2 (:transactions (d/import! conn [[{:w/i 21}] [{:w/i 22}]]))))
          (d/transact! conn [{:w/i 23}])
          (is (= (set (range 24)) (is-of (d/db conn))))))
      (with-open [conn (d/connect (.getPath dir) {})]
        (is (zero? (.replayedAtOpen (store conn))) "the close wrote everything back")
        (is (= (set (range 24)) (is-of (d/db conn))))
        (is (:ok? (d/verify conn))))
      (finally (tu/delete-tree parent)))))
