(ns datalith.multiprocess-child
  "A child JVM for datalith.multiprocess-test, run as

    java -cp <classpath> <jvm opts> clojure.main -m datalith.multiprocess-child MODE DIR ARG...

  MODE writer (DIR ID PEERS MILLIS): connects to DIR, waits until PEERS
  writers have connected, then transacts for MILLIS ms and at least
  `min-transactions` times, however loaded the machine (new entities with a
  unique identity, upserts of keys every writer shares, tempids naming each
  other, schema additions) and prints one EDN map per acknowledged
  transaction: {:t :tx-data [[e a v added] ...] :new-eids [...]}, the ids
  of the entities it created.

  MODE grower (DIR N SIZE): transacts N entities with a SIZE-character
  string each, one a transaction, so that the LMDB map grows many times, and
  prints each acknowledged t as {:t t :key k}.

  MODE holder (DIR MILLIS): runs one transaction that holds the writer lock
  for MILLIS ms, printing :holding when it has it and {:t t} when committed.

  MODE opener (DIR): connects to DIR, prints :open, and closes once DIR holds a file
  named stop (or after a minute).

  MODE probe (DIR FILE BYTE): tries to lock byte BYTE of DIR's FILE exclusively, as
  another process would, and prints :held when some process holds a lock over it,
  :free when not (letting the lock it took go).

  Prints :done as its last line; exits 0, or 1 with the error on stderr."
  (:require [datalith.core :as d])
  (:import (java.io File)
           (java.nio.channels FileChannel)
           (java.nio.file OpenOption StandardOpenOption)))

(set! *warn-on-reflection* true)

(def schema
  {:item/key {:db/unique :db.unique/identity}
   :item/ref {:db/valueType :db.type/ref}
   :item/n {:db/valueType :db.type/long}
   :item/text {:db/valueType :db.type/string}})

(defn- new-eids
  "The entity ids among `ids` that have no datom in `db-before`: the ones this
  transaction created."
  [db-before ids]
  (vec (distinct (filter #(empty? (d/datoms db-before :eavt %)) ids))))

(defn- ack! [{:keys [db-before db-after tx-data tempids]}]
  (prn {:t (d/basis-t db-after)
        :tx-data (mapv (fn [d] [(:e d) (:a d) (:v d) (:added d)]) tx-data)
        :new-eids (new-eids db-before (vals (dissoc tempids :db/current-tx)))})
  (flush))

(defn- tx-of
  "The transaction number `n` of writer `id`: a rotation of the kinds of
  change the test covers."
  [id n]
  (let [own (str "w" id "-" n)]
    (case (int (mod n 5))
      ;; a new entity, and a second one pointing at it through a tempid
      0 [{:db/id "a" :item/key own :item/n n}
         {:db/id "b" :item/key (str own "-b") :item/ref "a"}]
      ;; an upsert of a key both writers use: one entity per key, whoever makes it
      1 [{:item/key (str "shared-" (mod n 7)) :item/n n}]
      ;; an upsert and a new entity referring to the upserted one
      2 [{:db/id "s" :item/key (str "shared-" (mod (* 3 n) 7))}
         {:item/key own :item/ref "s"}]
      ;; a schema addition, used in the same transaction by a new entity
      3 [{:db/ident (keyword "attr" own) :db/valueType :db.type/long
          :db/cardinality :db.cardinality/one}
         {:item/key own (keyword "attr" own) n}]
      ;; an attribute outside the schema: installed by whichever writer uses it first
      4 [{:item/key own :item/auto (- n)}])))

(defn- await-peers
  "Marks writer `id` connected and waits (at most 30 s) until `peers` are."
  [^File dir id peers]
  (.createNewFile (File. dir (str "ready-" id)))
  (let [give-up (+ (System/currentTimeMillis) 30000)]
    (while (< (count (filter #(.startsWith (.getName ^File %) "ready-") (.listFiles dir))) peers)
      (when (> (System/currentTimeMillis) give-up)
        (throw (ex-info "The other writers did not connect" {:peers peers})))
      (Thread/sleep 5))))

(def min-transactions 30)

(defn- writer [dir id peers millis]
  (with-open [conn (d/connect dir {:schema schema :sync false})]
    (await-peers (File. ^String dir) id peers)
    (let [end (+ (System/currentTimeMillis) millis)]
      (loop [n 0]
        (when (or (< n min-transactions) (< (System/currentTimeMillis) end))
          (ack! (d/transact! conn (tx-of id n)))
          (recur (inc n)))))))

(defn- grower [dir n size]
  (with-open [conn (d/connect dir {:schema schema :sync false :map-size (* 64 1024)})]
    (dotimes [i n]
      (let [k (str "g" i)
            r (d/transact! conn [{:item/key k :item/n i :item/text (apply str (repeat size "x"))}])]
        (prn {:t (d/basis-t (:db-after r)) :key k})
        (flush)))))

(defn hold
  "A transaction function that keeps its transaction, and with it the
  directory's writer lock, for `millis` ms; prints :holding first."
  [_db millis]
  (prn :holding)
  (flush)
  (Thread/sleep (long millis))
  [])

(defn- holder [dir millis]
  (with-open [conn (d/connect dir {:schema schema})]
    (let [r (d/transact! conn [(list `hold millis) {:item/key "holder"}])]
      (prn {:t (d/basis-t (:db-after r))})
      (flush))))

(defn- opener [dir]
  (with-open [_conn (d/connect dir)]
    (prn :open)
    (flush)
    (let [give-up (+ (System/currentTimeMillis) 60000)]
      (while (and (not (.exists (File. ^String dir "stop")))
                  (< (System/currentTimeMillis) give-up))
        (Thread/sleep 10)))))

(defn- probe [dir file b]
  (with-open [ch (FileChannel/open (.toPath (File. ^String dir ^String file))
                                   ^"[Ljava.nio.file.OpenOption;"
                                   (into-array OpenOption [StandardOpenOption/READ
                                                           StandardOpenOption/WRITE]))]
    (if-let [l (.tryLock ch (long b) 1 false)]
      (do (.release l) (prn :free))
      (prn :held))
    (flush)))

(defn -main [mode dir & args]
  (try
    (case mode
      "writer" (let [[id peers millis] args]
                 (writer dir id (parse-long peers) (parse-long millis)))
      "grower" (let [[n size] args]
                 (grower dir (parse-long n) (parse-long size)))
      "holder" (holder dir (parse-long (first args)))
      "opener" (opener dir)
      "probe" (let [[file b] args]
                (probe dir file (parse-long b))))
    (prn :done)
    (flush)
    (shutdown-agents)
    (System/exit 0)
    (catch Throwable t
      (binding [*out* *err*]
        (println (pr-str (Throwable->map t))))
      (System/exit 1))))
