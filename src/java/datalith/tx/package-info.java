/**
 * The transactor: turns tx-data into the datoms one transaction asserts and
 * retracts ({@link datalith.tx.Transactor}, its only entry point), with
 * Datomic's semantics. It reads the database before the transaction through
 * one snapshot and writes nothing; {@code datalith.db.Conn} writes what it
 * returns. Any tx-data it refuses is an ex-info with a namespaced
 * {@code :error}, and it throws nothing else.
 *
 * <p>A transaction runs in steps: attributes that maps define are declared
 * ({@code PendingAttrs}); tx-data, transaction functions included, is
 * expanded into operations, each entity reference resolved
 * ({@code EntityRefs}) and checked ({@code OpChecks}); tempids are unified by
 * upserts and the rest given new ids ({@code Tempids}, {@code EntityIds}:
 * only now, when every id tx-data names is known, does the allocator hand
 * out ids, so it never hands out a named one); operations are applied to a
 * per-(entity, attribute) state, values checked against their types
 * ({@code Values}); composite tuples are derived; schema changes
 * ({@code SchemaCheck}) and uniqueness are checked last.
 *
 * <p>Threading: a {@code Transactor} lives for one call on one thread;
 * {@code Conn} runs one transaction at a time. {@link datalith.tx.TxChange}
 * values are immutable.
 */
package datalith.tx;
