;; Part of the namespace datalith.core: verify, rebuild-indexes, backup, export and import!.
;; core.clj holds the ns form (its requires and imports apply here) and loads this file
;; in place, so the public names stay in datalith.core.

(in-ns 'datalith.core)

;; ---------------------------------------------------------------- checking and repairing

(defn verify
  "Checks a database for damage and returns what it found, as data. `source` is a
  connection, or the directory of a database not open in this process (any on-disk
  format). The transaction log, whose every record carries a checksum, is the source of
  truth: the check walks every sub-database once, in one read transaction, and holds
  fixed-size digests rather than datoms, so it runs in bounded memory:

  - the log: every record passes its checksum and decodes; its t run 0, 1, 2 ... without a gap
  - EAVT = AEVT = AVET, VAET = their ref datoms, and the same for the history indexes;
    replaying the log gives EAVT (current datoms) and the history (retracted ones, with the
    txs that asserted and retracted them); keys well formed and ascending
  - on LMDB, seeks from the root land where the walk says (LMDB's branch pages route them)
  - BLOBS: every long value under its hash, none missing
  - the schema the log gives holds for the current datoms: no second value of a
    cardinality-one attribute, no unique value held twice, no value of another type
  - META: t is the log's last t, next-eid above every entity id used, statistics = counts
  - on LMDB, every page of the last commit's trees and its free list reads as LMDB's writes
    read it (:pages; a store where it does not refuses writes, :store/corrupt)

    (d/verify conn)
    ; => {:ok? true, :t 12, :format 2, :problem-count 0, :problems [],
    ;     :checks {:log {:records 13 :datoms 96 :checksums :checked :problems 0}
    ;              :eavt {:datoms 80 :problems 0} ... :blobs {:entries 0 :problems 0}
    ;              :meta {:problems 0} :pages {:problems 0}}}

  Each problem is a map {:index check :problem kind ...} naming a :datom ([e a v tx], or
  [e a v tx retracted-tx] in history), a :key (hex) or a :t; see datalith.db.Verify for
  the kinds. Options: :max-problems, how many problems to list (default 100; all are
  counted)."
  ([source] (verify source {}))
  ([source opts]
   (let [{:keys [max-problems] :or {max-problems Verify/DEFAULT_MAX_PROBLEMS}} (opts-arg opts)
         max-problems (long-arg max-problems ":max-problems")]
     (when-not (<= 0 max-problems Integer/MAX_VALUE)
       (throw (error :db/invalid-options ":max-problems is a count" {:max-problems max-problems})))
     (with-store [store source]
       (Verify/run store (int max-problems))))))

(defn rebuild-indexes
  "Rebuilds a database from its transaction log into a new one: every index, the history,
  the long values and META, as the log's transactions would have written them. For a
  database whose indexes `verify` finds damaged, and to bring a store of the older on-disk
  format (1, before log records had checksums) to the current one. The source is only read.

  `source`: a connection, or the directory of a database not open in this process.
  `target`: a new (or empty) directory, or :mem. The whole log is checked first: when a
  record fails its checksum, or a t is missing, it throws :store/corrupt naming that :t and
  writes nothing. It refuses (:store/corrupt, :problem :log-end) when the source's META t is
  past the log's end, which means records lost from the log's end, unless
  `:trust-log-end true`. Returns {:t :records :datoms :next-eid :source-format :checksums},
  with :conn, the new database's connection (close it), when target is :mem.

    (d/rebuild-indexes \"/data/shop\" \"/data/shop-rebuilt\")
    ; => {:t 1200, :records 1201, :datoms 48211, :next-eid 9051, :source-format 2,
    ;     :checksums :checked}"
  ([source target] (rebuild-indexes source target {}))
  ([source target opts]
   (let [{:keys [trust-log-end]} (opts-arg opts)]
     (with-store [store source]
       (let [run (fn [^Store into] (Rebuild/run store into (boolean trust-log-end)))]
         (if (= :mem target)
           (let [into (MemStore/open)
                 report (try (run into) (catch Throwable t (.close into) (throw t)))]
             (assoc report :conn (Conn/open into)))
           (let [[^File dir created?] (empty-target target)]
             (try (with-open [into (LmdbStore/open (.toPath dir) {})]
                    (run into))
                  (catch Throwable t
                    (delete-contents dir)
                    (when created? (.delete dir))
                    (throw t))))))))))

(defn backup
  "Writes a consistent copy of a database into `target`, a new or empty directory: its last
  commit, which `connect` opens like any database. `source` is a connection, or the
  directory of a database not open in this process. An LMDB database is copied by LMDB from
  one snapshot while it stays open for reads and writes, in this and other processes; an
  in-memory one is rebuilt from its log into the directory (as `rebuild-indexes`).

  Options: :compact true leaves LMDB's free pages out (a smaller file), reading every page
  through LMDB, which does not check pages for damage: compact a database that `verify`
  passes. The default copies page for page and reads only the meta pages, which connect
  checks. A target that holds anything is refused (:store/not-empty); on failure the target
  is left as it was. Returns {:dir :t :bytes}: the copy's directory, its basis t and the size
  of its data file.

    (d/backup conn \"/backups/shop-2026-12-01\")
    ; => {:dir \"/backups/shop-2026-12-01\", :t 1200, :bytes 5373952}"
  ([source target] (backup source target {}))
  ([source target opts]
   (let [{:keys [compact]} (opts-arg opts)
         [^File dir created?] (empty-target target)]
     (try
       (.mkdirs dir)
       (with-store [store source]
         (if (instance? LmdbStore store)
           (LmdbBackup/copy store (.toPath dir) (boolean compact))
           (with-open [into (LmdbStore/open (.toPath dir) {})]
             (Rebuild/run store into false))))
       (catch Throwable t
         (delete-contents dir)
         (when created? (.delete dir))
         (throw t)))
     (with-open [^Conn copy (connect dir)]
       {:dir (str target)
        :t (basis-t (db copy))
        :bytes (.length (File. dir "data.mdb"))}))))

;; ---------------------------------------------------------------- export and import

(defn export
  "A database's history as tx-data: one record `{:t t :tx-data [...]}` a
  transaction, t 1 to the basis t of `source` (a connection or a database
  value; the bootstrap, t 0, is left out), each with its :db/txInstant, so
  that `import!` into an EMPTY database (of either store, this version or a
  later one) gives an equal database: the same datoms in every index, the same
  as-of and history at every t.

  Entity ids are written as they are (transactions' own too: an import makes
  each record the transaction of its t); attributes a transaction installs
  come first in it, as maps {:db/id e :db/ident k ...}; schema values name
  system entities by ident (:db.type/string); derived composite tuples are
  left out (the transactor derives them again); byte arrays, floats and URIs
  are tagged #datalith/bytes \"base64\", #datalith/float \"1.5\" and
  #datalith/uri \"https://example.com\".

  With one argument: the records as a lazy sequence. With `out` (a file path,
  File or java.io.Writer, which stays open): writes them as EDN, one a line,
  and returns {:transactions :datoms :t-last}. Also the way to move a database
  between stores, versions and machines.

    (d/export conn \"/tmp/shop.edn\")
    ; => {:transactions 1200, :datoms 120228, :t-last 1200}
    (first (d/export (d/db conn)))
    ; => {:t 1, :tx-data [{:db/id 1000, :db/ident :user/email, ..} .. [:db/add 13194139533313 :db/txInstant #inst \"..\"]]}"
  ([source]
   (bulk/export-seq (db-arg (if (instance? Conn source) (.db ^Conn source) source))))
  ([source out]
   (let [records (export source)]
     (if (instance? java.io.Writer out)
       (bulk/export-to records out)
       (bulk/export-file records out)))))

(defn import!
  "Loads a large body of tx-data into `conn` much faster than `transact!`
  chunk by chunk: each chunk is one transaction, with `transact!`'s semantics
  (schema, uniqueness and upserts, cardinality, lookup refs, redundant datoms
  dropped), its own t and :db/txInstant, so as-of and history read an import as
  they read transactions. The import holds the connection's transaction lock
  and commits without fsync, then syncs once at the end (returning or
  throwing): a JVM crash loses nothing committed, an operating system crash
  during the import may lose its last chunks (never part of one); once it
  returns, all is on disk. A staged import (:staged, the default into a new
  LMDB database) commits its chunks in memory and writes them at its end: a
  crash before then loses them all. Listeners get the chunks' reports when it ends.

  `source`: an EDN file (path, File or Path) or a java.io.Reader whose
  top-level forms are tx-data, vectors of tx-data, or `export` records; a seq
  of those; or a seq of datoms (`d/datoms` of another database: attributes
  first, then :chunk-size datoms a transaction, entity ids kept; current
  datoms only, no history). An export record imports only as the transaction
  of its t (into an empty database, t 1 first): elsewhere it is refused
  (:import/record-t).

  Options:
    :progress    (fn [{:keys [chunk transactions datoms basis-t elapsed-ms]}])
                 called after each committed chunk; returning :stop stops the
                 import there
    :resume?     true skips the export records whose t the database has: a
                 rerun of an import that stopped completes it
    :skip        skips the first n chunks (rerunning a tx-data source)
    :chunk-size  datoms a transaction for a source of datoms (default 10000)
    :staged      true stages the chunks in memory, each still its own
                 transaction, and writes them into the store in one commit
                 at the end (also when a chunk fails or :progress stops it);
                 false commits chunk by chunk. Default: staged into an LMDB
                 database, whatever it holds (laid over it in memory,
                 nothing copied); not into an in-memory one. While
                 it stages, d/db and other processes see the database as it
                 was; a crash loses the staged chunks (the database stays as
                 before the import: rerun it); another process committing
                 meanwhile makes it commit nothing (:import/conflict)
    :staged-budget  datoms staged at most (default: as many as a third of
                 the heap holds, about 500 bytes each, at most 16M); past it
                 the staged chunks are written and the rest commits chunk by
                 chunk

  Returns {:transactions :datoms :t-first :t-last :skipped :stopped-at
  :elapsed-ms} (:stopped-at: the index of the first chunk not imported, when
  :progress stopped it). A chunk that fails stops the import with the ex-info
  `transact!` gives, with :import/chunk (its index in the source, from 0) and
  :import/report (what was committed before it) added; the chunks before it
  stay committed.

  On a node of a replicated database each chunk is one record of the log,
  transacted as `transact!` does, one after another (:resume? plays no part);
  export records are refused there (:import/record-t): import an export into an
  embedded database, then seed every node from its backup, on a new topic.

    (d/import! conn \"/tmp/shop.edn\")
    ; => {:transactions 1200, :datoms 120228, :t-first 1, :t-last 1200, ..}"
  ([conn source] (import! conn source {}))
  ([conn source opts]
   (bulk/import! (conn-arg conn) source (opts-arg opts))))
