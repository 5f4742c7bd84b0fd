;; Part of the namespace datalith.core: Datomic's and DataScript's names; reading backwards, index-pull and qseq.
;; core.clj holds the ns form (its requires and imports apply here) and loads this file
;; in place, so the public names stay in datalith.core.

(in-ns 'datalith.core)

;; ---------------------------------------------------------------- Datomic's and DataScript's names

(defn entity-db
  "The database value an entity (from `entity`) reads.

    (= db (d/entity-db (d/entity db [:user/email \"ada@example.com\"])))
    ; => true"
  ^Db [entity]
  (if (instance? Entity entity)
    (.db ^Entity entity)
    (throw (error :db/invalid-entity "entity-db takes an entity (from entity)" {:entity entity}))))

(defn squuid
  "A random UUID whose first 32 bits are the time in seconds (Datomic's
  sequential UUID): values made later sort after, which keeps an index of
  them local.

    (d/squuid-time-millis (d/squuid))
    ; => 1764614400000 (now, to the second)"
  ^java.util.UUID []
  (let [u (java.util.UUID/randomUUID)
        secs (quot (System/currentTimeMillis) 1000)]
    (java.util.UUID. (bit-or (bit-shift-left secs 32)
                             (bit-and (.getMostSignificantBits u) 0xFFFFFFFF))
                     (.getLeastSignificantBits u))))

(defn squuid-time-millis
  "The time, in milliseconds since the epoch (to the second), that `squuid` wrote into `uuid`."
  [uuid]
  (if (instance? java.util.UUID uuid)
    (* 1000 (unsigned-bit-shift-right (.getMostSignificantBits ^java.util.UUID uuid) 32))
    (throw (error :db/invalid-uuid "squuid-time-millis takes a UUID" {:uuid uuid}))))

(def ^:private tempid-counter (java.util.concurrent.atomic.AtomicLong. -1000000))

(defn tempid
  "A tempid for tx-data, as Datomic's: each call with a partition alone gives a new
  one; with `n` (a negative number) the same `n` names the same new entity within a
  transaction. datalith has no partitions: any keyword is taken, :db.part/tx names the
  transaction itself. A tempid is a negative long; the report's :tempids maps it to
  the entity id.

    (let [t (d/tempid :db.part/user)]
      (get (:tempids (d/transact! conn [{:db/id t :user/name \"Ada\"}])) t))
    ; => 1000"
  ([partition]
   (when-not (keyword? partition)
     (throw (error :db/invalid-partition "A partition is a keyword, like :db.part/user"
                   {:partition partition})))
   (if (= :db.part/tx partition)
     "datomic.tx"
     (.decrementAndGet ^java.util.concurrent.atomic.AtomicLong tempid-counter)))
  ([partition n]
   (when-not (keyword? partition)
     (throw (error :db/invalid-partition "A partition is a keyword, like :db.part/user"
                   {:partition partition})))
   (when-not (and (integer? n) (<= Long/MIN_VALUE n -1))
     (throw (error :db/invalid-tempid "A tempid's number is negative" {:n n})))
   (if (= :db.part/tx partition) "datomic.tx" (long n))))

(defn resolve-tempid
  "The entity id a transaction gave `tempid` (a string, a negative number or a
  `tempid`), from its report's `:tempids`; nil when it named none. Datomic's
  takes the report's database first, DataScript's not: both are taken.

    (let [r (d/transact! conn [{:db/id \"ada\" :user/name \"Ada\"}])]
      (d/resolve-tempid (:db-after r) (:tempids r) \"ada\"))
    ; => 1000"
  ([tempids tempid]
   (when-not (map? tempids)
     (throw (error :db/invalid-tempids "resolve-tempid takes a report's :tempids, a map"
                   {:tempids tempids})))
   (get tempids (if (integer? tempid) (long tempid) tempid)))
  ([db tempids tempid]
   (when-not (instance? Db db)
     (throw (error :db/invalid-db "resolve-tempid takes a database value first" {:db db})))
   (resolve-tempid tempids tempid)))

(defn- view?
  "Whether `db` sees less or more than its current state (as-of, since, history, filter)."
  [^Db db]
  (or (some? (.asOfT db)) (some? (.sinceT db)) (.isHistory db) (.isFiltered db)))

(defn db-stats
  "Statistics of `db`, as Datomic's: {:datoms n :attrs {ident {:count n}}}, the
  datoms each attribute has (current ones; for an as-of, since, history or
  filtered view, the ones it sees, counted by reading them all).

    (d/db-stats db)
    ; => {:datoms 96, :attrs {:user/email {:count 3}, :db/ident {:count 40}, ...}}"
  [db]
  (let [^Db db (db-arg db)
        schema (.schema db)
        counts (if (view? db)
                 (persistent! (reduce (fn [m ^Datom d] (assoc! m (.aid d) (inc (get m (.aid d) 0))))
                                      (transient {}) (datom-seq db Index/AEVT (byte-array 0) nil nil nil)))
                 (into {} (.counts (.stats db))))
        attrs (into {} (for [[aid n] counts
                             :when (pos? (long n))
                             :let [ident (.ident ^Schema schema (long aid))]
                             :when ident]
                         [ident {:count n}]))]
    {:datoms (reduce + 0 (map :count (vals attrs))) :attrs attrs}))

(defn sync
  "The latest database value of `conn`: every transaction committed, by any
  process, when it is called (embedded, there is nothing to wait for; a node of a
  replicated database first applies every record the log held then, waiting at
  most 60 s: :log/timeout). With `t`: embedded, the same, checked to include t
  (:db/invalid-t when no transaction t was committed yet); on a node, waits until
  the node's value includes transaction t, from any node, at most `timeout-ms`
  (default 60000), else :log/timeout (the log's last read error, if any, as its
  cause). A writer's t read on another node: (d/sync other-conn t).

    (d/basis-t (d/sync conn))
    ; => 12"
  (^Db [conn] (replica/sync! (conn-arg conn)) (db conn))
  (^Db [conn t] (sync conn t replica/default-timeout-ms))
  (^Db [conn t timeout-ms]
   (let [conn (conn-arg conn)
         t (long-arg t :t)
         ms (long-arg timeout-ms :timeout-ms)]
     (if (replica/await-t! conn t ms)
       (db conn)
       (let [d (sync conn)]
         (when (> t (.basisT d))
           (throw (error :db/invalid-t "No transaction with this t was committed yet"
                         {:t t :basis-t (.basisT d)})))
         d)))))

(defn transact-async
  "Gives the transaction to the connection, as `transact!` does, and returns at
  once a future of its report: `deref` it for the report, once the transaction is
  durable, or for the transaction's error (the same ex-info transact! throws);
  `(deref f ms timeout-value)` and `realized?` work too. Transactions given to
  transact-async run one after another, in the order of the calls; pipelined,
  they commit in groups sharing one sync with each other and with other threads'
  `transact!` calls. On a node of a replicated database the tx-data is appended
  to the log at once, in the order of the calls, and the future is realized once
  this node applied it.

    (:tempids @(d/transact-async conn [{:db/id \"a\" :user/name \"Ada\"}]))
    ; => {\"a\" 1000, :db/current-tx 13194139533313}"
  [conn tx-data]
  (let [^TxFuture f (.transactAsync (conn-arg conn) (tx-data-of tx-data))]
    (reify
      clojure.lang.IDeref
      (deref [_] (report->map (.get f)))
      clojure.lang.IBlockingDeref
      (deref [_ ms timeout]
        (if-let [r (.get f (long ms))] (report->map r) timeout))
      clojure.lang.IPending
      (isRealized [_] (.isDone f)))))

(defn- listener-key
  "`key`, checked to hash (a key nested deeper than the stack cannot be a map's)."
  [key]
  (try (.hashCode ^Object key) key
       (catch NullPointerException _ key)
       (catch StackOverflowError _
         (throw (error :db/invalid-listener "A listener's key nests collections too deep" {})))))

(defn listen!
  "Calls `(f report)` with the report of every transaction `conn` commits from now
  on ({:db-before :db-after :tx-data :tempids}), in commit order, after the commit,
  on a thread of its commit group (before its `transact!` returns, or its
  `transact-async` future completes), under `key`
  (replacing the listener of that key; default: a new key, returned). An exception
  in `f` goes to the thread's uncaught exception handler: the transaction stands.
  Only this connection's transactions are reported, not other processes'.

    (d/listen! conn :log (fn [{:keys [tx-data]}] (println (count tx-data) \"datoms\")))
    ; => :log"
  ([conn f] (listen! conn (Object.) f))
  ([conn key f]
   (let [c (conn-arg conn)]
     (when-not (function? f)
       (throw (error :db/invalid-listener "A listener is a function of the report" {:listener f})))
     (.listen c (listener-key key) f)
     key)))

(defn unlisten!
  "Removes the listener `listen!` registered under `key`.

    (d/unlisten! conn :log)
    ; => nil"
  [conn key]
  (.unlisten (conn-arg conn) (listener-key key))
  nil)

(defn tx-report-queue
  "A java.util.concurrent.BlockingQueue receiving the report of every transaction
  `conn` commits from the first call on ({:db-before :db-after :tx-data :tempids}),
  in commit order: unbounded, never dropped. Every call returns the same queue until
  `remove-tx-report-queue`. Only this connection's transactions are reported.

    (let [q (d/tx-report-queue conn)]
      (d/transact! conn [{:user/name \"Ada\"}])
      (count (:tx-data (.take q))))
    ; => 2"
  ^java.util.concurrent.BlockingQueue [conn]
  (.txReportQueue (conn-arg conn)))

(defn remove-tx-report-queue
  "Stops filling the queue of `tx-report-queue` (what it holds stays); the next
  `tx-report-queue` makes a new one.

    (d/remove-tx-report-queue conn)
    ; => nil"
  [conn]
  (.removeTxReportQueue (conn-arg conn))
  nil)

;; ---------------------------------------------------------------- reading backwards, index-pull, qseq

(def ^:private reverse-chunk 512)

(defn- rdatom-seq
  "The datoms of `index` below `upper` (exclusive; nil: the end), backwards: chunks of
  about `reverse-chunk` index entries, each read forwards and reversed."
  [^Db db ^Index index ^bytes upper]
  (lazy-seq
    (let [lower (Reverse/chunkStart db index upper reverse-chunk)
          chunk (vec (datom-seq db index (byte-array 0) lower upper nil))]
      (concat (rseq chunk)
              (when lower (rdatom-seq db index lower))))))

(defn rseek-datoms
  "The datoms of `index` from the position `components` on, backwards to the start
  of the index (Datomic's and DataScript's rseek-datoms): the datoms matching
  `components` come first, the last of them first, then every datom before them.

    (map :v (d/rseek-datoms db :avet :user/age 40))
    ; => (40 36 29 ...)"
  [db index & components]
  (let [db (db-arg db)
        ix (index-of index)]
    (if (empty? components)
      (rdatom-seq db ix nil)
      (if-let [start (.keyFor db ix (object-array components))]
        (if-let [upper (Reverse/after start)]
          (rdatom-seq db ix upper)
          (rdatom-seq db ix nil))
        ()))))

(defn index-pull
  "Walks an index and pulls each entity it meets, as a lazy sequence (Datomic's
  index-pull). `arg-map`:
    :index     :avet (pulls each datom's entity) or :aevt (pulls each datom's
               value, an entity: the attribute is a ref)
    :selector  a pull pattern
    :start     [attr] or [attr value] (:avet) or [attr entity] (:aevt): where the
               walk starts; it stays within attr
    :reverse   true to walk backwards from :start

    (d/index-pull db {:index :avet :selector [:user/name] :start [:user/age 30]})
    ; => ({:user/name \"Ada\"} {:user/name \"Bob\"})"
  [db arg-map]
  (when-not (map? arg-map)
    (throw (error :db/invalid-options "index-pull takes a map {:index :selector :start}" {:arg-map arg-map})))
  (let [db (db-arg db)
        {:keys [index selector start reverse]} arg-map]
    (when-not (or (identical? :avet index) (identical? :aevt index))
      (throw (error :db/invalid-index "index-pull's :index is :avet or :aevt" {:index index})))
    (when-not (and (sequential? start) (seq start) (keyword? (first start)) (<= (count start) 3))
      (throw (error :db/invalid-components "index-pull's :start is [attr ...] in the index's order"
                    {:start start})))
    (let [attr (first start)
          a (.attr (.schema db) ^clojure.lang.Keyword attr)
          pattern (datalith.pull.PullPattern/parse selector)
          datoms (apply (if reverse rseek-datoms seek-datoms) db index start)]
      (when (and (= :aevt index) a (not (.isRef ^datalith.db.Attr a)))
        (throw (error :db/invalid-attribute "index-pull on :aevt pulls the values: a ref attribute"
                      {:attribute attr})))
      (if a
        (->> datoms
             (take-while #(= (.aid ^Datom %) (.id ^datalith.db.Attr a)))
             (map #(Puller/pull db pattern (if (= :avet index) (.e ^Datom %) (.v ^Datom %)))))
        ()))))

(defn qseq
  "`q` whose answer, for a relation or collection :find, is a lazy sequence (Datomic's
  qseq): the `(pull ?e pattern)` of each row is made as the sequence is read, each
  through a short read of its own. A query without aggregates, order or rules whose
  first step scans a pattern (the usual case) is also read a chunk of that scan at a
  time as the sequence is consumed, so an answer larger than the heap can be read and
  dropped as it goes; its :limit stops the reading. Otherwise the rows are found at
  the call. Takes what `q` takes. Scalar and tuple finds answer as `q` does.

    (first (d/qseq '[:find (pull ?e [:user/name]) :where [?e :user/email]] db))
    ; => [{:user/name \"Ada\"}]"
  [query & inputs]
  (if (and (map? query) (contains? query :query))
    (let [args (:args query)]
      (when-not (or (nil? args) (sequential? args) (instance? List args))
        (throw (error :query/args "A query map's :args is a vector of inputs" {:args args})))
      (Engine/qseq (:query query) (object-array args)
                   (select-keys query [:timeout :max-rows :limit :offset])))
    (Engine/qseq query (object-array inputs) nil)))
