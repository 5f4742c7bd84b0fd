(ns datalith.core
  "datalith: an embedded, durable, immutable Datalog database.

  Open a database with `connect`, change it with `transact!`, read it through
  immutable database values from `db`:

    (require '[datalith.core :as d])
    (def conn (d/connect \"/tmp/people\" {:schema {:user/email {:db/unique :db.unique/identity}}}))
    (d/transact! conn [{:user/email \"ada@example.com\" :user/name \"Ada\"}])
    (:user/name (d/entity (d/db conn) [:user/email \"ada@example.com\"]))
    ; => \"Ada\"

  Every fact is a datom `[e a v tx added]`; nothing is overwritten, so
  `as-of`, `since` and `history` see any past state."
  (:refer-clojure :exclude [filter with sync])
  (:require [datalith.args :refer [conn-arg db-arg error explaining function? long-arg opts-arg
                                     query-shape? tx-shape?]]
            [datalith.bulk :as bulk]
            [datalith.dirs :refer [->path delete-contents empty-target with-store]]
            [datalith.printing]
            [datalith.readers]
            [datalith.replica :as replica]
            [datalith.specs :as specs])
  (:import (datalith.conn Conn TxFuture TxReport With)
           (datalith.db Db Entity IndexScan Rebuild Reverse Schema Verify)
           (datalith.query Engine)
           (datalith.pull Puller)
           (datalith.index Datom Index)
           (datalith.store LmdbBackup LmdbStore MemStore Store)
           (java.io File)
           (java.util List)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------- connections

(defn- store-options
  "Clojure options -> the string-keyed map the Java stores take (which check
  the values' types: :store/option)."
  ^java.util.Map [opts]
  (cond-> {}
    (contains? opts :map-size) (assoc "map-size" (:map-size opts))
    (contains? opts :sync) (assoc "sync" (:sync opts))
    (contains? opts :max-readers) (assoc "max-readers" (:max-readers opts))
    (contains? opts :write-behind) (assoc "write-behind" (:write-behind opts))
    (contains? opts :write-back-commits) (assoc "write-back-commits" (:write-back-commits opts))
    (contains? opts :write-back-ms) (assoc "write-back-ms" (:write-back-ms opts))
    (contains? opts :commit) (assoc "commit" (let [c (:commit opts)]
                                               (if (keyword? c) (name c) c)))
    (contains? opts :page-reader) (assoc "page-reader" (let [r (:page-reader opts)]
                                                         (if (keyword? r) (name r) r)))))

(defn- schema-tx
  "Schema given as a DataScript-style map {ident props} or Datomic-style maps
  -> the attribute maps that differ from `current` (the schema map of the db)."
  [schema current]
  (let [attrs (if (and (map? schema) (every? map? (vals schema)))
                (for [[ident props] schema] (assoc props :db/ident ident))
                schema)]
    (when-not (and (sequential? attrs) (every? map? attrs))
      (throw (error :db/invalid-schema
                    "A schema is a map {ident {:db/valueType ...}} or a vector of attribute maps"
                    {:schema schema})))
    (vec (remove (fn [{:keys [db/ident] :as a}]
                   (let [have (get current ident)
                         ;; :db.attr/preds is cardinality many: given ones already held add nothing
                         preds (get a :db.attr/preds)
                         a (dissoc a :db/id :db.attr/preds)]
                     (and have (= a (select-keys have (keys a)))
                          (every? (set (:db.attr/preds have))
                                  (if (or (nil? preds) (coll? preds)) preds [preds])))))
                 attrs))))

(declare transact!)

(defn connect
  "Opens a database and returns its connection (close it with `close` or
  `with-open`).

  `target`: a directory path (string, File or Path) for a durable LMDB
  database, created if needed; `:mem` or nothing for an in-memory one; or an
  options map with `:dir`. Options:
    :schema       attributes to install: {ident {:db/valueType .. :db/cardinality ..}}
                  or a vector of attribute maps; re-installing is a no-op
    :map-size     LMDB's initial map size in bytes (it grows by itself)
    :sync         false to skip fsync on commit: faster bulk loads, but an OS
                  crash may lose the last commits (default true: durable)
    :commit       how a durable commit reaches the disk: :wal (default), one
                  fdatasync of one record in a write-ahead log, LMDB's pages
                  synced at checkpoints; :lmdb-sync, LMDB's own sync of the
                  pages of each commit. The JVM property datalith.commit sets
                  the default.
    :write-behind true (the default; the JVM property datalith.write-behind
                  sets it) lays each durable commit (:commit :wal) in memory over
                  LMDB's last commit and writes many into LMDB at once, on a thread
                  of the store (within :write-back-ms, default 50, or every
                  :write-back-commits, default 1024): commits cost about one
                  fdatasync of the log. Only while no other process has the
                  database open: opened beside one, commits go into LMDB
                  directly; another process's open waits (milliseconds) while
                  this one writes every commit back and then does so too.
                  Alone again, the store takes write-behind back (within
                  250 ms). false puts each commit into LMDB's trees.
    :page-reader  :java (default) reads LMDB's pages in Java (every seek, scan
                  and get), checking every page and address first (a damaged
                  file is a :store/corrupt ex-info); :lmdb leaves every read and
                  write to LMDB itself, the slower plain path. The JVM property datalith.page-reader sets
                  the default.
    :strict?      true to refuse, with a clear error, a query pattern, a pull
                  pattern or tx-data naming an attribute that is not installed
                  (:query/unknown-attribute, :pull/unknown-attribute,
                  :tx/unknown-attribute). Default false, lenient as Datomic's
                  reads are: an unknown attribute matches nothing in a query or
                  pull, and tx-data installs it on first use (cardinality one,
                  any type).
    :log          {:kafka {:bootstrap-servers \"host:port\" :topic \"t\"}}: a node of a
                  replicated database (datalith.replica): transact! appends the tx-data to
                  the Kafka topic (one partition, created when missing) and returns once
                  this node applied it; every node applies every record in order into its
                  own store, which keeps the offset it reached. tx-data is data only (a fn
                  value: :log/unserializable; a transaction function is named by its
                  symbol, and must be pure and on every node's classpath). transact-async
                  and import! go through the log too. :timeout-ms (default 30000): an
                  append Kafka did not acknowledge by then throws :log/unknown-outcome (it
                  may still commit, on every node: look before retrying).

  Before LMDB maps an existing data file, its meta pages are checked: an
  empty, foreign or truncated data file is a :store/corrupt ex-info at
  connect, and a disk too full for the lock file a :store/io one; the files
  are left as they were.

  Several processes may connect to one directory at once and all of them
  may write: a transaction waits for the directory's writer lock (one
  transaction at a time across the processes), then builds on the last
  commit, whichever process made it, so t and entity ids are never handed
  out twice. `db` returns the last commit of any process. One process
  connects to a directory once: a second `connect` to it throws until the
  first connection is closed. An in-memory database belongs to its process.

    (with-open [conn (d/connect \"/tmp/x\")] (d/basis-t (d/db conn)))
    ; => 0"
  (^Conn [] (connect :mem {}))
  (^Conn [target]
   (if (map? target)
     (connect (or (:dir target) :mem) target)
     (connect target {})))
  (^Conn [target opts]
   (opts-arg opts)
   (when-not (boolean? (:strict? opts false))
     (throw (error :db/invalid-options ":strict? is true or false" {:strict? (:strict? opts)})))
   (let [^Store store (if (= :mem target)
                        (MemStore/open)
                        (LmdbStore/open (->path target) (store-options opts)))
         ^Conn conn (try (cond-> (Conn/open store (boolean (:strict? opts)))
                           (:log opts) (replica/follow! (:log opts)))
                   (catch Throwable t (.close store) (throw t)))]
     (when-let [s (:schema opts)]
       (try (let [tx (schema-tx s (.toMap (.schema (.db conn))))]
              (when (seq tx)
                (transact! conn tx)))
            (catch Throwable t (.close conn) (throw t))))
     conn)))

(defn close
  "Closes a connection and its store, after a transaction running on another
  thread ends. Database values read from it stop working. Closing from
  inside a transaction of the connection (a transaction function) throws
  :db/close-in-tx and leaves it open: the transaction fails, and the
  connection works on."
  [conn]
  (.close (conn-arg conn)))

(defn db
  "The latest database value of `conn`, including what other processes
  committed to its directory: immutable, it never sees later transactions."
  ^Db [conn]
  (.db (conn-arg conn)))

(defn- report->map [^TxReport r]
  (.toMap r))

(defn- tx-data-of [tx]
  (let [data (if (and (map? tx) (contains? tx :tx-data)) (:tx-data tx) tx)]
    (when-not (or (nil? data) (sequential? data) (instance? List data))
      (throw (error :tx/invalid-data "tx-data must be a vector or list of maps and lists"
                    {:tx-data tx})))
    data))

(defn transact!
  "Runs one transaction and returns {:db-before :db-after :tx-data :tempids}.
  All of it is committed, durably, or (on any error, an ex-info with an
  :error key) none of it.

  tx-data is a vector of entity maps and lists:
    {:db/id \"tmp\" :user/name \"Ada\"}    [:db/add e a v]    [:db/retract e a v]
    [:db/retract e a]    [:db/retractEntity e]    [:db/cas e a old new]
    [:db.fn/retractAttribute e a]  ; = [:db/retract e a]: every value of a
    (my.ns/tx-fn arg ...) ; calls (my.ns/tx-fn db arg ...) -> more tx-data
    [:db.fn/call f arg ...] ; calls the function value f: (f db arg ...) -> more tx-data

  A transaction function returns tx-data and has no other effect: calling
  `transact!` on the same connection from it (or from anything it calls)
  throws :tx/reentrant, failing the transaction. Transactions wait for one
  another, here and in other processes on the same directory. Transactions
  given to one connection at once, from many threads or by `transact-async`,
  commit in groups that share one sync, each with its own t and report; one
  that fails fails alone; each call returns once its own transaction is durable.

    (:tempids (d/transact! conn [{:db/id \"a\" :user/name \"Ada\"}]))
    ; => {\"a\" 1000, :db/current-tx 13194139533313}"
  [conn tx-data]
  (explaining ::specs/tx-data tx-data tx-shape?
    (report->map (.transact (conn-arg conn) (tx-data-of tx-data)))))

(defn with
  "The report of applying tx-data to `db` in memory only: nothing is written.
  Its :db-after can be read, and extended with more `with`, like any value."
  [db tx-data]
  (let [db (db-arg db)]
    (explaining ::specs/tx-data tx-data tx-shape?
      (report->map (With/run db (tx-data-of tx-data))))))

;; ---------------------------------------------------------------- values

(defn basis-t
  "The t of the last transaction `db` includes."
  [db]
  (.basisT (db-arg db)))

(defn t->tx "The transaction entity id of basis t." [t] (Db/tToTx (long-arg t :t)))
(defn tx->t "The basis t of a transaction entity id." [tx] (Db/txToT (long-arg tx :tx)))

(defn as-of
  "`db` as it was at `point`: a t, a transaction id or a java.util.Date."
  ^Db [db point]
  (.asOf (db-arg db) point))

(defn since
  "`db` with only the datoms asserted after `point` (a t, tx id or Date)."
  ^Db [db point]
  (.since (db-arg db) point))

(defn history
  "`db` with every assertion and retraction, each datom's :added telling which."
  ^Db [db]
  (.historyView (db-arg db)))

(defn filter
  "`db` with only the datoms `(pred db datom)` accepts (Datomic's and DataScript's
  filter): every read of it (datoms, seek-datoms, index-range, q, pull, entity,
  lookup refs) and of the views made from it (as-of, since, history; filter again
  to add a predicate) sees only them. `pred` gets the value it was applied to and
  each datom. A filtered value is read-only: `with` refuses it.

    (def public (d/filter db (fn [_ datom] (not= :user/password (:a datom)))))
    (:user/password (d/entity public [:user/email \"ada@example.com\"]))
    ; => nil"
  ^Db [db pred]
  (let [db (db-arg db)]
    (when-not (function? pred)
      (throw (error :db/invalid-filter "filter takes a function (fn [db datom])" {:pred pred})))
    (.filtered db pred)))

(defn filtered? "Whether `db` is a filtered value (from `filter`)." [db] (.isFiltered (db-arg db)))

(defn as-of-t "The as-of point of `db`, or nil." [db] (.asOfT (db-arg db)))
(defn since-t "The since point of `db`, or nil." [db] (.sinceT (db-arg db)))
(defn history? "Whether `db` is a history view." [db] (.isHistory (db-arg db)))

(defn schema
  "The attributes installed in `db`: {ident {:db/valueType .. :db/cardinality ..}}."
  [db]
  (.toMap (.schema (db-arg db))))

(defn entid
  "The entity id named by `ident-or-ref` (an id, an ident keyword or a lookup
  ref [unique-attr value]), or nil."
  [db ident-or-ref]
  (let [db (db-arg db)]
    (with-open [s (.snapshot db)]
      (let [e (.entid db s ident-or-ref)]
        (when (>= e 0) e)))))

(defn ident
  "The ident keyword of the entity `eid` names (an id, an ident keyword or a
  lookup ref), or nil when it has none, as Datomic's `ident`: the inverse of
  `entid` for attributes and enum entities.

    (d/ident db (d/entid db :user/email))
    ; => :user/email"
  [db eid]
  (let [db (db-arg db)]
    (with-open [s (.snapshot db)]
      (let [e (.entid db s eid)]
        (when (>= e 0) (.ident (.schema db) e))))))

(defn entity
  "A lazy, navigable view of an entity: keyword lookups give values, refs are
  entities (or their ident keyword, for enums), :attr/_ref gives the set of
  entities pointing here. nil when
  `eid` names no entity.

    (:user/name (d/entity db [:user/email \"ada@example.com\"]))
    ; => \"Ada\""
  [db eid]
  (when-let [e (entid db eid)]
    (Entity. ^Db db (long e))))

(defn touch
  "Loads every attribute of an entity; returns it."
  [e]
  (if (instance? Entity e)
    (.touch ^Entity e)
    (throw (error :db/invalid-entity "touch takes an entity (from entity)" {:entity e}))))

;; ---------------------------------------------------------------- indexes

(def ^:private indexes
  {:eavt Index/EAVT :aevt Index/AEVT :avet Index/AVET :vaet Index/VAET})

(defn- index-of ^Index [k]
  (or (indexes k)
      (throw (error :db/invalid-index "The index is one of :eavt :aevt :avet :vaet" {:index k}))))

(def ^:private chunk-size 512)

(defn- datom-seq
  "Datoms read in chunks, each through one short read transaction."
  [^Db db ^Index index ^bytes prefix ^bytes seek ^bytes upper ^bytes resume]
  (lazy-seq
    (let [^objects r (.chunk db index prefix seek upper resume chunk-size)
          ^List ds (aget r 0)
          more (aget r 1)]
      (if more
        (concat ds (datom-seq db index prefix nil upper more))
        (seq ds)))))

(defn datoms
  "The datoms of `index` (:eavt :aevt :avet :vaet) whose leading components
  equal `components`, in index order, as a lazy sequence.

    (d/datoms db :eavt [:user/email \"ada@example.com\"] :user/name)
    ; => (#datalith/datom [1000 :user/name \"Ada\" 13194139533313 true])"
  [db index & components]
  (let [db (db-arg db)
        ix (index-of index)]
    (if-let [prefix (.keyFor db ix (object-array components))]
      (datom-seq db ix prefix nil nil nil)
      ())))

(defn seek-datoms
  "The datoms of `index` from the position `components` on, to the end of the index."
  [db index & components]
  (let [db (db-arg db)
        ix (index-of index)]
    (if-let [start (.keyFor db ix (object-array components))]
      (datom-seq db ix (byte-array 0) start nil nil)
      ())))

(defn- index-range* [^Db db attr start end]
  (when-not (keyword? attr)
    (throw (error :db/invalid-attribute "index-range takes an attribute ident" {:attribute attr})))
  (if-let [prefix (.avetKey db attr nil)]
    (let [lo (when (some? start) (.avetKey db attr start))
          hi (when (some? end) (.avetKey db attr end))
          ;; a long value's key holds a prefix and a hash: widen the bounds to whole
          ;; runs of such keys (sorted by value when read) and compare values there
          lo-wide (Db/widenBound lo false)
          hi-wide (Db/widenBound hi true)]
      (cond->> (datom-seq db Index/AVET prefix lo-wide hi-wide nil)
        (not (identical? lo lo-wide))
        (drop-while #(neg? (IndexScan/compareValues (.v ^Datom %) start)))
        (not (identical? hi hi-wide))
        (take-while #(neg? (IndexScan/compareValues (.v ^Datom %) end)))))
    ()))

(defn index-range
  "The AVET datoms of `attr` with `start` <= value < `end` (nil for an open
  end), in value order."
  [db attr start end]
  (index-range* (db-arg db) attr start end))

(defn tx-range
  "The transactions with start <= t < end (each a t, a tx id or a Date; nil
  for open ends) of a connection or database value: a sequence of
  {:t :tx :data [datoms]}."
  [conn-or-db start end]
  (let [db (db-arg (if (instance? Conn conn-or-db) (.db ^Conn conn-or-db) conn-or-db))]
    (for [^objects row (.txRange db start end)]
      {:t (aget row 0) :tx (aget row 1) :data (vec (aget row 2))})))

(defn log
  "The transaction log of `conn`, for `tx-range`."
  [conn]
  (.db (conn-arg conn)))

;; ---------------------------------------------------------------- checking, repairing, copying (core/care.clj)

(load "core/care")

;; ---------------------------------------------------------------- queries

(defn q
  "Runs a Datalog query (Datomic's language): `query` is a vector, a map or a
  string of EDN; `inputs` match its :in (default [$]). A map
  {:query q :args [inputs ...]} may also carry:
    :timeout   ms; a query that runs past it throws :query/timeout (checked
               between clauses and every few rows of every loop: scans, joins,
               predicates, functions, not, or, rules, aggregates, pulls)
    :max-rows  the most rows any relation the query makes may have, the
               answer and every intermediate one (a join, a scan, a rule's
               table); one larger throws :query/too-many-rows before it can
               exhaust memory
    :offset    results to skip, and :limit the most to return (-1: all), as
               Datomic's query map has them: they cut the answer the query
               gives, after its own :offset and :limit
  A relation :find gives a set of tuples; with :with and no aggregate, a
  vector of them that keeps the repeats :with makes (Datomic's bag).

  A query may order and cut its answer: :order-by [[?v :desc] ?w] (keys are
  :find variables, aggregates or windows as written in :find; values of
  different types order as comparisons do: nil, numbers, vectors, ..., then
  keywords, symbols, booleans, strings, instants, uuids), :limit n and
  :offset n. An ordered relation is a vector; ties on every key are ordered by
  the columns, so that pages never overlap. Window columns in :find compute a
  value per row, (sum ?x :over {:partition-by [?g] :order-by [?t]}), with
  sum, count, min, max, avg, rank, dense-rank, row-number, lag and lead.

    (d/q '[:find ?title ?t :where [?i :issue/state :state/open] [?i :issue/created-at ?t]
           [?i :issue/title ?title] :order-by [[?t :desc]] :limit 2] db)
    ; => [[\"Newest\" #inst \"2026-12-01\"] [\"Older\" #inst \"2026-11-30\"]]

    (d/q '[:find ?name . :in $ ?email :where [?e :user/email ?email] [?e :user/name ?name]]
         db \"ada@example.com\")
    ; => \"Ada\""
  [query & inputs]
  (if (and (map? query) (contains? query :query))
    (let [args (:args query)]
      (when-not (or (nil? args) (sequential? args) (instance? List args))
        (throw (error :query/args "A query map's :args is a vector of inputs" {:args args})))
      (explaining ::specs/query (:query query) query-shape?
        (Engine/q (:query query) (object-array args)
                  (select-keys query [:timeout :max-rows :limit :offset]))))
    (explaining ::specs/query query query-shape?
      (Engine/q query (object-array inputs) nil))))

(defn prepare
  "Parses and validates `query` once, for `q`, `qseq` and `run` to take in its
  place: they neither read nor look it up again. A prepared query runs on any
  database and holds the plan of its last run, which the next run reuses while
  the rules are the same form and each database is in the same size class (the
  base-4 magnitude of its datom count): a database four times larger or smaller
  plans again. `:offset` and `:limit` in a query map make another query, which
  plans as an unprepared one does.

    (def by-email (d/prepare '[:find ?e . :in $ ?email :where [?e :user/email ?email]]))
    (d/q by-email db \"ada@example.com\")
    (d/run by-email {:$ db :email \"ada@example.com\"})"
  [query]
  (explaining ::specs/query query query-shape? (Engine/prepare query)))

(defn run
  "Runs `query` (prepared, or any query `q` takes) with `inputs` by position (a
  vector, one per :in element) or by name (a map): :email for ?email and for
  [?email ...], :$ or :$src for a source, :% for the rules, :pattern for a pull
  pattern name. A name missing or unknown, or an input with none (a tuple or
  relation binding: pass those by position), is :query/inputs.

    (d/run by-email {:$ db :email \"ada@example.com\"})
    ; => 17592186045418"
  [query inputs]
  (let [parsed (prepare query)]
    (cond (map? inputs) (Engine/run parsed (Engine/namedInputs (Engine/parse parsed) inputs))
          (or (nil? inputs) (sequential? inputs)) (Engine/run parsed (object-array inputs))
          :else (throw (error :query/inputs "run's inputs are a vector or a map by name"
                              {:inputs inputs})))))

(defn explain
  "Runs `query` like `q` and returns the plan it used, as data: each clause in
  the order run, the method (scan, lookup-join, hash-join with the index used;
  semi-join-lookup or semi-join-scan for a pattern that binds no variable a
  later clause or the find needs, which only keeps the rows it matches, and
  exists for one that shares nothing with the rest either, which only has to
  match once; filter, in-range for a comparison an earlier pattern's range
  already met, function, anti-join, union, rule), the rows after it (variables
  no longer needed projected away), and its time."
  [query & inputs]
  (Engine/explain query (object-array inputs)))

;; ---------------------------------------------------------------- pull

(defn pull
  "The entity `eid` (id, ident or lookup ref) as a map shaped by `pattern`
  (Datomic's pull grammar: `*`, attributes, :db/id, nested maps, reverse refs
  :ns/_attr, [:attr :as k :limit n :default v :xform f], recursion {:attr ...}
  or {:attr n}). nil when the entity has none of the pattern's attributes.

    (d/pull db [:user/name {:user/friend [:user/name]}] [:user/email \"b@x\"])
    ; => {:user/name \"Bob\", :user/friend [{:user/name \"Ada\"}]}"
  [db pattern eid]
  (explaining ::specs/pull-pattern pattern #{:pull/pattern}
    (Puller/pull (db-arg db) pattern eid)))

(defn pull-many
  "`pull` of each of `eids`, in order, through one read."
  [db pattern eids]
  (when-not (or (nil? eids) (coll? eids) (instance? java.util.Collection eids))
    (throw (error :pull/entities "pull-many takes a collection of entity ids" {:entities eids})))
  (explaining ::specs/pull-pattern pattern #{:pull/pattern}
    (Puller/pullMany (db-arg db) pattern (vec eids))))

;; ---------------------------------------------------------------- Datomic's names, qseq (core/compat.clj)

(load "core/compat")

;; ---------------------------------------------------------------- valid time (h-valid, #19)

(defn valid-at
  "`db` as the facts valid at instant `inst` show it, as they were known at
  `db`'s basis or as-of point: valid time and transaction time at once. `q`,
  `pull`, `entity`, `datoms` and the index reads all see it, and it composes
  with `as-of` in either order. A fact given no valid-time interval is valid
  from its transaction's txInstant until a later transaction retracts it.

  Intervals [from, to) are given in tx-data, bounds being instants:
    [:db/add e a v {:db/valid-from #inst \"2026-03-01\" :db/valid-to #inst \"2026-06-01\"}]
    [:db/retract e a v {:db/valid-from #inst \"2026-03-01\"}]  ; true before and after, not during
    {:db/id e :user/city \"Oslo\" :db/valid-from #inst \"2026-01-01\"}  ; this map's attributes
    {:db/id \"datomic.tx\" :db/valid-from #inst \"2026-01-01\"}  ; every add and retract of the tx
  A missing :db/valid-from is the txInstant, a missing :db/valid-to open-ended.

    (:user/city (d/entity (d/valid-at db #inst \"2026-02-01\") e))
    ; => \"Oslo\"

  In a query, a :valid-at section reads one source (or several) this way: an
  instant for $, or pairs of a source and its instant, each an #inst or a
  scalar :in variable (Minigraf's :valid-at; XTDB's per-table FOR VALID_TIME
  AS OF). The answer is the same query's on (valid-at db inst); other sources
  stay transaction time. At :any-valid-time, a source is read as
  (any-valid-time db), its patterns [e a v from to] binding intervals:

    (d/q '[:find ?then ?now :in $ $then ?e ?when :valid-at $then ?when
           :where [$then ?e :user/city ?then] [?e :user/city ?now]]
         db db e #inst \"2026-02-01\")
    {:find [?c .] :in [$ ?e] :valid-at #inst \"2026-02-01\" :where [[?e :user/city ?c]]}"
  ^Db [db inst]
  (.validAt (db-arg db) inst))

(defn- valid-attr ^datalith.db.Attr [^Db db attr]
  (when-not (keyword? attr)
    (throw (error :db/invalid-attribute "Expected an attribute ident" {:attribute attr})))
  (.attr (.schema db) ^clojure.lang.Keyword attr))

(defn valid-intervals
  "Every valid-time version of attribute `attr` in `db`, as known at `db`'s basis
  or as-of point: one `[e v from to tx]` per interval [from, to) over which
  entity e's `attr` had value v (of every entity, or one `[v from to tx]` for
  entity `e`), `tx` the transaction that asserted it; an open-ended interval's
  `to` is `end-of-time`, #inst \"9999-12-31T23:59:59.999-00:00\", so intervals
  compare as instants (and print and read back). Called in a query with `$`, it binds an
  assertion's interval, \"who was assigned to issue X during Q1\":

    (d/q '[:find ?who :in $ ?start ?end
           :where [?i :issue/key \"X\"]
                  [(datalith.core/valid-intervals $ ?i :issue/assignee) [[?a ?from ?to]]]
                  [(< ?from ?end)] [(< ?start ?to)]
                  [?a :person/name ?who]]
         db #inst \"2026-01-01\" #inst \"2026-04-01\")"
  ([db attr]
   (let [db (db-arg db)]
     (if-let [a (valid-attr db attr)]
       (mapv vec (datalith.db.ValidTime/intervals db -1 a))
       [])))
  ([db e attr]
   (let [db (db-arg db)
         a (valid-attr db attr)
         eid (with-open [s (.snapshot db)] (.entid db s e))]
     (if (and a (not (neg? eid)))
       (mapv #(subvec (vec %) 1) (datalith.db.ValidTime/intervals db eid a))
       []))))

;; valid time at any instant (h-valid3, #19)

(defn any-valid-time
  "`db` read at any valid time (Minigraf's :any-valid-time): a query source whose
  facts are every valid-time version of its attributes, as known at `db`'s basis
  or as-of point, each `[e a v from to]` over [from, to) (an open end is
  `end-of-time`, so intervals compare as instants). A pattern on
  it binds an assertion's interval where a database's has tx and added; an
  attribute variable binds idents. The same as a query's `:valid-at $src
  :any-valid-time`. \"Who was assigned to issue X during Q1\" in one query:

    (d/q '[:find ?who :in $ ?start ?end :valid-at :any-valid-time
           :where [?i :issue/key \"X\"] [?i :issue/assignee ?a ?from ?to]
                  [(< ?from ?end)] [(< ?start ?to)] [?a :person/name ?who]]
         db #inst \"2026-01-01\" #inst \"2026-04-01\")

  A pattern's tuples are made when it runs, for its attribute and its entity
  when constant (a variable attribute reads every attribute): name both where
  the data is large."
  ^datalith.db.AnyValidTime [db]
  (datalith.db.AnyValidTime. (db-arg db)))

;; the end of valid time (h-validend, #19)

(def ^java.util.Date end-of-time
  "The end of valid time, #inst \"9999-12-31T23:59:59.999-00:00\" (XTDB's
  end-of-time): the `to` of every open-ended interval that `valid-intervals` and
  `any-valid-time` hand out, the last instant an #inst prints and reads back. A
  :db/valid-to at or after it is open-ended, so a handed-out interval goes back
  in as it came; `valid-at` and :db/valid-from take instants before it.

    (let [[_ _ to] (peek (d/valid-intervals db e :person/city))]
      (= d/end-of-time to))
    ; => true, when e's last city is open-ended"
  (java.util.Date. datalith.db.ValidTime/END_OF_TIME))
