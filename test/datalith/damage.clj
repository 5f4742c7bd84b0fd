(ns datalith.damage
  "Helpers for the tests of damaged stores: a connection with its store in hand, raw reads
  and writes of sub-databases, index keys of datoms, a sample database with every kind of
  datom, and a comparison of two databases as everything the API can read."
  (:require [datalith.core :as d]
            [datalith.test-util :as tu])
  (:import (clojure.lang Keyword)
           (datalith.conn Conn)
           (datalith.db Db)
           (datalith.store LmdbStore MemStore ReadTxn Store SubDb WriteTxn Cursor)
           (java.io File)
           (java.nio ByteBuffer)))

(set! *warn-on-reflection* true)

(defn open-store
  "A fresh store of `kind` (:lmdb or :mem) and its directory (nil for :mem)."
  [kind]
  (case kind
    :mem [(MemStore/open) nil]
    :lmdb (let [dir (tu/temp-dir)]
            [(LmdbStore/open (.toPath dir) {}) dir])))

(defmacro with-store-conn
  "Runs body with `conn` a connection on a fresh store of `kind` and `store` that store,
  closed and deleted afterwards; `dir` is its directory (nil for :mem)."
  [[conn store dir kind] & body]
  `(let [[^Store ~store ~dir] (open-store ~kind)
         ~conn (Conn/open ~store)]
     (try ~@body
          (finally (d/close ~conn) (some-> ~dir tu/delete-tree)))))

(def sub-dbs
  {:eavt SubDb/EAVT :aevt SubDb/AEVT :avet SubDb/AVET :vaet SubDb/VAET
   :heavt SubDb/HEAVT :haevt SubDb/HAEVT :havet SubDb/HAVET :hvaet SubDb/HVAET
   :log SubDb/LOG :blobs SubDb/BLOBS :meta SubDb/META})

(defn- ^bytes bytes-of [^ByteBuffer b]
  (let [out (byte-array (.limit b))]
    (.get b 0 out)
    out))

(defn entries
  "Every [key value] of sub-database `k` (a key of sub-dbs), as byte arrays, in key order."
  [^Store store k]
  (with-open [rt (.beginRead store)
              c (.cursor rt ^SubDb (sub-dbs k))]
    (loop [ok (.first c) out []]
      (if ok
        (let [e [(bytes-of (.key c)) (bytes-of (.val c))]]
          (recur (.next c) (conj out e)))
        out))))

(defn write!
  "Applies `ops` to the store in one write transaction: [:put k key val] or [:del k key],
  k a key of sub-dbs, key and val byte arrays."
  [^Store store ops]
  (with-open [wt (.beginWrite store)]
    (doseq [[op k ^bytes key ^bytes val] ops]
      (case op
        :put (.put wt ^SubDb (sub-dbs k) (ByteBuffer/wrap key) (ByteBuffer/wrap (or val (byte-array 0))))
        :del (.delete wt ^SubDb (sub-dbs k) (ByteBuffer/wrap key))))
    (.commit wt)))

(defn longs->bytes ^bytes [& xs]
  (let [b (ByteBuffer/allocate (* 8 (count xs)))]
    (doseq [x xs] (.putLong b (long x)))
    (.array b)))

(defn vpart
  "The index key part of value v of attribute a in db."
  ^bytes [^Db db a v]
  (Db/valuePart (.attr (.schema db) ^Keyword a) v))

(defn- cat-bytes ^bytes [& parts]
  (let [out (java.io.ByteArrayOutputStream.)]
    (doseq [^bytes p parts] (.write out p 0 (alength p)))
    (.toByteArray out)))

(defn index-key
  "The key of datom [e a v tx] (v an entity id for refs) in index k; history indexes take
  the retracting tx too."
  ^bytes [^Db db k [e a v tx] & [retracted-tx]]
  (let [aid (d/entid db a)
        vp (vpart db a v)
        txs (if retracted-tx (longs->bytes tx retracted-tx) (longs->bytes tx))]
    (case k
      (:eavt :heavt) (cat-bytes (longs->bytes e aid) vp txs)
      (:aevt :haevt) (cat-bytes (longs->bytes aid e) vp txs)
      (:avet :havet) (cat-bytes (longs->bytes aid) vp (longs->bytes e) txs)
      (:vaet :hvaet) (cat-bytes (longs->bytes v aid e) txs))))

(def sample-schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/bio {:db/valueType :db.type/string}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/friends {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :user/manager {:db/valueType :db.type/ref}
   :user/secret {:db/valueType :db.type/string :db/noHistory true}})

(def long-bio (apply str "A long biography: " (repeat 60 "0123456789")))

(defn load-sample!
  "Six transactions with every kind of datom: long values (BLOBS), refs, card-many adds
  and retractions, updates, an upsert, :db/noHistory, retractEntity, a schema change.
  Returns {:ada :bob :cy} entity ids."
  [conn]
  (d/transact! conn (vec (for [[a props] sample-schema] (assoc props :db/ident a))))
  (let [r (d/transact! conn [{:db/id "ada" :user/email "ada@x" :user/name "Ada" :user/bio long-bio
                              :user/tags #{:a :b}}
                             {:db/id "bob" :user/email "bob@x" :user/name "Bob" :user/manager "ada"
                              :user/friends #{"ada"} :user/secret "s1"}
                             {:db/id "cy" :user/email "cy@x" :user/name "Cy" :user/friends #{"bob"}}])
        {:strs [ada bob cy]} (:tempids r)]
    (d/transact! conn [[:db/add ada :user/name "Ada L"] [:db/retract ada :user/tags :a]
                       [:db/add ada :user/tags :c] [:db/add bob :user/friends cy]
                       [:db/add ada :user/friends cy]
                       [:db/add bob :user/secret "s2"] [:db/add ada :user/bio "short now"]])
    (d/transact! conn [{:user/email "bob@x" :user/name "Robert"}])
    (d/transact! conn [{:db/ident :user/score :db/valueType :db.type/long}])
    (d/transact! conn [[:db/add cy :user/score 7] [:db/retractEntity bob]
                       [:db/add ada :user/bio (str long-bio "!")]])
    {:ada ada :bob bob :cy cy}))

(defn- datom-vec [dt] [(:e dt) (:a dt) (:v dt) (:tx dt) (:added dt)])

(defn database-view
  "Everything the API reads of db, as data to compare: basis-t, the next entity id, the
  current and history datoms, the log, every as-of state, and a few queries."
  [^Db db]
  (let [t (d/basis-t db)]
    {:basis-t t
     :next-eid (.nextEid db)
     :eavt (set (map datom-vec (d/datoms db :eavt)))
     :avet (vec (map datom-vec (d/datoms db :avet)))
     :vaet (vec (map datom-vec (d/datoms db :vaet)))
     :history (set (map datom-vec (d/datoms (d/history db) :eavt)))
     :log (vec (for [{:keys [t data]} (d/tx-range db nil nil)] [t (set (map datom-vec data))]))
     :as-of (vec (for [i (range (inc t))] (set (map datom-vec (d/datoms (d/as-of db i) :aevt)))))
     :schema (d/schema db)
     :names (d/q '[:find ?e ?n :where [?e :user/name ?n]] db)
     :friends (d/q '[:find ?e ?f :where [?e :user/friends ?f]] db)}))
