(ns datalith.multiprocess-test
  "Several JVMs on one LMDB directory: writers take turns under the store's
  writer lock, each transaction is built on the latest commit whichever
  process made it, and `d/db` sees other processes' commits. The children are
  datalith.multiprocess-child."
  (:require [clojure.edn :as edn]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.multiprocess-child :as child]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.store LmdbStore MemStore ReadTxn Store SubDb WriteTxn)
           (java.io File)
           (java.nio ByteBuffer)
           (java.nio.file Files LinkOption Path)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- start
  "Starts a child JVM running datalith.multiprocess-child with `args`; its
  stdout and stderr go to files in `scratch`."
  [^File scratch name & args]
  (let [cmd (into [(str (System/getProperty "java.home") "/bin/java")
                   "--add-opens=java.base/java.nio=ALL-UNNAMED"
                   "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
                   "-XX:TieredStopAtLevel=1" "-XX:+UseSerialGC"
                   "-cp" (System/getProperty "java.class.path")
                   "clojure.main" "-m" "datalith.multiprocess-child"]
                  (map str args))
        out (File. scratch (str name ".out"))
        err (File. scratch (str name ".err"))]
    {:name name
     :out out
     :err err
     :process (-> (ProcessBuilder. ^java.util.List cmd)
                  (.redirectOutput out)
                  (.redirectError err)
                  (.start))}))

(defn- finish
  "Waits for a child (killing it after a minute) and returns its printed
  lines read as EDN, without the final :done; fails the test when it did not
  end well."
  [{:keys [name ^File out ^File err ^Process process]}]
  (let [ended (.waitFor process 60 TimeUnit/SECONDS)]
    (when-not ended
      (.destroyForcibly process)
      (.waitFor process)))
  (let [lines (mapv edn/read-string (remove str/blank? (str/split-lines (slurp out))))]
    (is (and (zero? (.exitValue process)) (= :done (peek lines)))
        (str name " ended badly: exit " (.exitValue process) "\n" (slurp err)))
    (vec (remove #{:done} lines))))

(defn- await-line
  "Waits (at most 30 s) until a child has printed `line`; true when it has."
  [{:keys [^File out]} line]
  (let [give-up (+ (System/currentTimeMillis) 30000)]
    (loop []
      (cond
        (some #{(pr-str line)} (str/split-lines (slurp out))) true
        (> (System/currentTimeMillis) give-up) false
        :else (do (Thread/sleep 10) (recur))))))

(defn- repeated
  "Up to five of the values that occur more than once in `xs`."
  [xs]
  (take 5 (keep (fn [[x n]] (when (< 1 n) x)) (frequencies xs))))

(defn- some-of
  "Up to five of `xs`: enough to show what went wrong."
  [xs]
  (take 5 xs))

(defn- log-datom [d] [(:e d) (:a d) (:v d) (:added d)])

(defn- first-assertions
  "entity id -> the t of the first transaction whose log asserts a datom about it."
  [log]
  (reduce (fn [m {:keys [t data]}]
            (reduce (fn [m {:keys [e]}]
                      (if (or (contains? m e) (>= e (d/t->tx 0))) m (assoc m e t)))
                    m data))
          {} log))

(defn- check-two-writers
  "Two writer processes on the database in `dir`, then what the log and the indexes hold."
  [^File dir]
  (let [path (.getPath dir)]
    (try
      (let [writers (mapv #(start dir (str "writer-" %) "writer" path % 2 2000) [1 2])
            each (mapv finish writers)
            acks (apply concat each)]
        (with-open [conn (d/connect path)]
          (let [db (d/db conn)
                log (d/tx-range conn nil nil)
                by-t (into {} (map (juxt :t #(set (map log-datom (:data %))))) log)
                first-t (first-assertions log)]
            (is (every? #(<= child/min-transactions (count %)) each)
                "each writer acknowledged every transaction it ran")
            (is (= (range (inc (d/basis-t db))) (map :t log)) "t is gapless in the log, each once")
            (is (= [] (repeated (map :t acks))) "no t acknowledged to both writers")
            (is (= [] (some-of (remove #(= (set (:tx-data %)) (by-t (:t %))) acks)))
                "every acknowledged transaction is in the log at its t, as acknowledged")
            (let [new-eids (mapcat :new-eids acks)]
              (is (= [] (repeated new-eids)) "no entity id created by two transactions")
              (is (= [] (some-of (for [{:keys [t new-eids]} acks e new-eids :when (not= t (first-t e))]
                                   [t e])))
                  "each new entity is first asserted by the transaction that created it"))
            (let [keys (d/datoms db :aevt :item/key)]
              (is (= [] (repeated (map :v keys)))
                  "each :item/key value is held by one entity")
              (is (= [] (repeated (map :e keys)))
                  "each entity has one :item/key")
              (is (= 7 (count (filter #(str/starts-with? (:v %) "shared-") keys)))
                  "the keys both writers upsert made one entity each"))
            (is (= 1 (count (d/datoms db :avet :db/ident :item/auto)))
                "an attribute both writers use without schema is installed once")
            (is (= [] (some-of (for [{:keys [tx-data]} acks
                                     [_ a v] tx-data
                                     :when (= a :db/ident)
                                     :when (not= 1 (count (d/datoms db :avet :db/ident v)))]
                                 v)))
                "every attribute a writer installed is in the schema, once"))))
      (finally (tu/delete-tree dir)))))

(deftest writers-in-two-processes
  ;; also on a store of 16 KiB pages (since stop 46): both processes' commits, write-backs and
  ;; hand-offs on LMDB's layout of Apple silicon
  (doseq [psize [4096 16384]]
    (testing (str "pages of " psize " bytes")
      (check-two-writers (tu/store-dir psize)))))

(deftest a-reader-process-sees-a-writer-process
  (let [dir (tu/temp-dir)
        path (.getPath dir)
        n 300]
    (try
      (with-open [conn (d/connect path {:map-size (* 64 1024)})]
        (let [t0 (d/basis-t (d/db conn))
              grower (start dir "grower" "grower" path n 2000)
              seen (future
                     ;; reads while the writer grows the map (to more than 600 KB, from 64 KB)
                     (loop [seen []]
                       (if (.isAlive ^Process (:process grower))
                         (let [db (d/db conn)
                               ks (d/q '[:find [?k ...] :where [_ :item/key ?k]] db)]
                           (Thread/sleep 1)
                           (recur (conj seen [(d/basis-t db) (count ks) db])))
                         seen)))
              acks (finish grower)
              seen @seen
              db (d/db conn)]
          (is (= n (count acks)))
          (is (= (:t (peek acks)) (d/basis-t db)) "d/db has the writer's last commit")
          (is (= (set (map :key acks)) (set (d/q '[:find [?k ...] :where [_ :item/key ?k]] db))))
          (is (= (str/join (repeat 2000 "x"))
                 (:item/text (d/entity db [:item/key (str "g" (dec n))]))))
          (is (apply <= (map first seen)) "the reader's basis t never goes back")
          (is (= [] (remove (fn [[t k]] (= k (max 0 (- t t0 1)))) (map pop seen)))
              "each value read holds the keys of its t (the writer's first transaction is its schema)")
          (testing "values read earlier are unaffected by later commits and map growth"
            (let [[t k early] (first (filter #(< 20 (second %) 200) seen))]
              (is early "the reader saw the writer midway")
              (is (= k (count (d/q '[:find [?k ...] :where [_ :item/key ?k]] early))))
              (is (= k (count (d/q '[:find [?k ...] :where [_ :item/key ?k]] (d/as-of db t)))))
              (is (= (inc k) (count (d/q '[:find [?k ...] :where [_ :item/key ?k]]
                                         (:db-after (d/with early [{:item/key "w"}]))))))))
          (testing "the reader writes after the writer, on its data"
            (let [r (d/transact! conn [{:item/key "g0" :item/n -1}])]
              (is (= (inc (d/basis-t db)) (d/basis-t (:db-after r))))
              (is (= -1 (:item/n (d/entity (d/db conn) [:item/key "g0"]))))
              (is (= n (count (d/q '[:find [?e ...] :where [?e :item/key]] (d/db conn)))))))))
      (finally (tu/delete-tree dir)))))

(deftest a-writer-waits-for-another-process
  (let [dir (tu/temp-dir)
        path (.getPath dir)]
    (try
      (with-open [conn (d/connect path {:schema {:item/key {:db/unique :db.unique/identity}}})]
        (let [holder (start dir "holder" "holder" path 1000)
              _ (is (await-line holder :holding) "the other process holds the writer lock")
              result (promise)
              writer (Thread. (fn []
                                (deliver result
                                         (try {:report (d/transact! conn [{:item/key "parent"}])
                                               :interrupted (Thread/interrupted)}
                                              (catch Throwable e {:error e})))))]
          (.start writer)
          (Thread/sleep 200)
          (is (not (realized? result)) "a transaction waits for the other process's")
          (.interrupt writer)
          (Thread/sleep 100)
          (is (not (realized? result)) "an interrupt does not end the wait")
          (let [{:keys [report interrupted error]} (deref result 30000 {:error :timeout})
                [{:keys [t]}] (filter map? (finish holder))]
            (is (nil? error))
            (is interrupted "the interrupt is kept for the caller")
            (is (= (inc t) (d/basis-t (:db-after report))) "built on the other process's commit")
            (is (= #{"holder" "parent"}
                   (set (d/q '[:find [?k ...] :where [_ :item/key ?k]] (d/db conn))))))))
      (finally (tu/delete-tree dir)))))

(deftest a-read-held-while-another-process-outgrows-the-map
  (let [dir (tu/temp-dir)
        t-key (doto (java.nio.ByteBuffer/allocateDirect 1) (.put 0 (byte (int \t))))]
    (try
      (with-open [^Store s (LmdbStore/open (.toPath dir) {"map-size" (* 64 1024)})]
        (let [^ReadTxn held (.beginRead s)
              acks (finish (start dir "grower" "grower" (.getPath dir) 300 2000))]
          (is (= 300 (count acks)))
          (let [e (is (thrown? ExceptionInfo (.beginRead s)))]
            (is (= :store/map-resized (:error (ex-data e))) "this thread cannot wait for the growth"))
          (is (nil? (.get held SubDb/META t-key)) "the held read keeps its snapshot")
          (.close held)
          (with-open [^ReadTxn r (.beginRead s)]
            (is (= (:t (peek acks)) (.getLong (.get r SubDb/META t-key) 0))
                "once it is closed, the map grows and reads see the other process's data"))))
      (finally (tu/delete-tree dir)))))

(deftest opening-while-another-process-commits
  ;; opening checks the data file's meta pages and size before LMDB maps it: a commit of
  ;; another process between those reads is not damage
  (let [dir (tu/temp-dir)
        path (.getPath dir)]
    (try
      (let [writer (start dir "writer" "writer" path 1 1 4000)
            opened (atom 0)]
        (let [give-up (+ (System/currentTimeMillis) 30000)]
          (while (and (not (.exists (File. dir "ready-1"))) (< (System/currentTimeMillis) give-up))
            (Thread/sleep 5)))
        (while (.isAlive ^Process (:process writer))
          (with-open [conn (d/connect path)]
            (is (<= 0 (d/basis-t (d/db conn))))
            (swap! opened inc)))
        (is (< 1 @opened) "opened again and again while the writer committed")
        (is (< 20 (count (finish writer))) "the writer committed meanwhile"))
      (finally (tu/delete-tree dir)))))

(defn- descriptors-of
  "How many of this process's file descriptors refer to files in directory `dir` (Linux)."
  [^File dir]
  (let [real (str (.toRealPath (.toPath dir) (make-array LinkOption 0)) "/")]
    (count (for [^File fd (.listFiles (File. "/proc/self/fd"))
                 :let [target (try (str (Files/readSymbolicLink (.toPath fd)))
                                   (catch java.io.IOException _ ""))]
                 :when (str/starts-with? target real)]
             target))))

(deftest a-store-keeps-its-locks-on-the-directory
  ;; The operating system's locks on a file belong to the process, and closing any of its
  ;; descriptors of the file drops them all. A store closes every descriptor of the directory's
  ;; files by the end of its close (one left to the garbage collector dropped, whenever it was
  ;; collected, the writer lock of the next store on the directory: another process then
  ;; committed during that store's final checkpoint); and a direct commit keeps LMDB's lock file
  ;; open until the environment closes (closing it dropped LMDB's lock that tells another
  ;; process's open that the environment is in use, and the reader slots' locks)
  (let [dir (tu/temp-dir)
        path (.toPath dir)
        probe (fn [file] (finish (start dir (str "probe-" file) "probe" (.getPath dir) file 0)))]
    (try
      (let [other (start dir "opener" "opener" (.getPath dir))]
        (is (await-line other :open))
        (dotimes [_ 3]
          ;; beside another process: the open takes no lock file's lock; only the close does
          (.close (LmdbStore/open path {}))
          (is (zero? (descriptors-of dir)) "a closed store leaves no descriptor of its files"))
        (.createNewFile (File. dir "stop"))
        (finish other))
      ;; without write-behind, whose commits, the directory its alone, take no writer lock
      (with-open [^LmdbStore s (LmdbStore/open path {"write-behind" false})]
        (with-open [^Store src (MemStore/open)]
          (with-open [^WriteTxn w (.beginWrite src)]
            (.put w SubDb/EAVT (ByteBuffer/wrap (byte-array [1 2 3])) (ByteBuffer/wrap (byte-array 0)))
            (.commit w))
          (with-open [^ReadTxn r (.beginRead src)]
            (.replaceAll s r)))
        (is (= 1 (.directReplaces s)) "the replace was a direct commit")
        (with-open [^WriteTxn _w (.beginWrite s)]
          (dotimes [_ 2] (System/gc) (Thread/sleep 100)) ; whatever was left is collected now
          (is (= [:held] (probe "writer.lock")) "the writer lock holds against other processes")
          (is (= [:held] (probe "lock.mdb"))
              "LMDB's lock on its lock file holds: the environment is seen in use")))
      (is (zero? (descriptors-of dir)) "closed after a direct commit too")
      (is (= [:free] (probe "writer.lock")) "the probe can tell a free lock")
      (is (= [:free] (probe "lock.mdb")))
      (finally (tu/delete-tree dir)))))
