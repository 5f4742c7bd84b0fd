/**
 * Database values, and what reads and writes them in the store.
 *
 * <p>Reading: a {@link datalith.db.Db} is an immutable value (the state after basis t, possibly
 * viewed as-of, since or as history, possibly filtered by predicates ({@code Filter}, asked by
 * {@code IndexScan} of every datom, so that every read sees only what they accept), possibly
 * with speculative transactions laid over it as an {@code Overlay}). It holds no store resources: each read opens a short
 * {@link datalith.db.Snapshot} of the store of its {@link datalith.db.Source} (its connection's),
 * and {@link datalith.db.IndexScan} reads an index under a prefix as the value sees it, merging
 * the current and history sub-databases when the view needs both (an as-of view's scans pass the
 * runs of keys of entities that came after its point, which the connection's
 * {@link datalith.db.EntityBounds} bound from the log), keeping to its keys with
 * {@code ScanRange} (the prefix and upper bound), reaching a restart's prefix with
 * {@code ScanRestarts} (steps or a seek) and decoding its values through
 * {@code ScanValueCache} (the few short values recently decoded); {@link datalith.db.Reverse}
 * picks the bounds of the chunks that read an index backwards. {@link datalith.db.Schema}
 * and {@link datalith.db.Attr} are the schema, itself data; {@link datalith.db.Entity} is the
 * lazy entity view; {@link datalith.db.Stats} the per-attribute counts the planner uses.
 * {@link datalith.db.ValidTime} is valid time: a value's valid-at views (the as-of view at the
 * instant, whose scans hide the pairs that have valid-time events and merge in their values
 * valid at the instant: {@link datalith.db.ValidCursor} over the sorted keys of the replayed
 * lines, {@link datalith.db.ValidKeys}, which a connection's {@link datalith.db.ValidCache}
 * shares between the values of one point, and a later point starts from, replaying only the
 * pairs the log shows changed since) and its valid-time versions, from the
 * {@code :db.valid/event} datoms transactions carry; {@link datalith.db.AnyValidTime} is a
 * value at any valid time, a query source of those versions as tuples {@code [e a v from to]}.
 * An open-ended interval ends at {@link datalith.db.ValidTime#END_OF_TIME}.
 *
 * <p>Writing: a transaction's {@link datalith.db.TxChange}s (the transactor's output) become
 * index, history, log and META writes in {@code Writes}: into a store write transaction,
 * committed by {@link datalith.db.Latest}, which also reads the latest value back from a store
 * (any process's commit) and bootstraps an empty one; or into an overlay, for
 * {@link datalith.db.Db#withChanges}. {@code LogRecord} is the format of the transaction log, the
 * source of truth; {@code Meta} names the keys of META.
 *
 * <p>Checking and repair: {@link datalith.db.Verify} checks every sub-database against the log
 * (with {@code Digest}, {@code Examine}, {@code SeekCheck}, {@code IndexKeys},
 * {@code Problems}); {@link datalith.db.Rebuild} writes a new store from the log.
 * {@link datalith.db.Errors} builds every user-facing error of the packages above the store;
 * {@link datalith.db.Fns} finds the Clojure functions that tx-data, queries and pulls name.
 *
 * <p>Layering: above codec, store and index; below the transactor, pull, the query engine and
 * connections, none of which it knows.
 *
 * <p>Threading: database values, schemas, statistics, {@code Latest} and {@code TxChange} are
 * immutable and may be shared by any threads; an {@code Entity} is thread-safe. A
 * {@code Snapshot}, and every scan and buffer read through it, belongs to the thread that opened
 * it, for the call that opened it. {@code Verify} and {@code Rebuild} run on the calling thread,
 * reading their source in one read transaction.
 */
package datalith.db;
