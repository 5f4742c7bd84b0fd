/**
 * The transactor: turns tx-data into the datoms one transaction asserts and
 * retracts ({@link datalith.tx.Transactor}, its only entry point), with
 * Datomic's semantics. It reads the database before the transaction through
 * one snapshot and writes nothing: the connection above it
 * ({@code datalith.conn.Conn}) commits the changes it returns
 * ({@link datalith.db.TxChange}s, written by {@code datalith.db.Latest}), and
 * {@code datalith.conn.With} lays them over a value in memory. Any tx-data it
 * refuses is an ex-info with a namespaced {@code :error}, and it throws nothing
 * else.
 *
 * <p>{@code Transactor} conducts; each step is one class's job, and hands the
 * next its result:
 * <ol>
 *   <li>declare: {@code PendingAttrs} declares the attributes that maps with
 *       {@code :db/ident} define (a tempid's, or a new entity given by explicit
 *       id, as {@code export} writes them), so the rest of tx-data sees them as
 *       defined;
 *   <li>expand: {@code Expander} turns tx-data into {@code Op}s (entity maps,
 *       nested maps, reverse attributes, list forms, and the tx-data that
 *       {@code TxFns} gets from transaction functions), resolving each entity
 *       reference as it meets it ({@code EntityRefs}: ids through
 *       {@code EntityIds}, tempids through {@code Tempids}, idents, lookup
 *       refs) and checking each operation ({@code OpChecks}); entities that
 *       tx-data gives no id stay {@code TempRef}s;
 *   <li>resolve: {@code TempidResolver} upserts through unique identities,
 *       unifies tempids, and only then allocates ids for the rest (so the
 *       allocator never hands out an id tx-data names) and gives new
 *       attributes theirs, in the ops themselves (no copies), so that they
 *       name ids only;
 *   <li>apply: {@code Applier} applies the ops to {@code Slots}, the
 *       per-(entity, attribute) values before and after (a hash table of
 *       slots on (e, aid), a slot's few values scanned, many hashed), where values are
 *       checked against their types ({@code Values}) and cardinality
 *       conflicts found; a retractEntity becomes retractions there;
 *   <li>derive: {@code Composites} sets composite tuples from the values of
 *       their attributes; {@code TxInstant} dates the transaction;
 *   <li>collect: {@code Slots.changes} lists the datoms ({@code TxChange});
 *   <li>check: {@code SchemaCheck} refuses schema changes that are invalid or
 *       unsafe for the stored data, {@code UniqueCheck} a unique value held
 *       by two entities, {@code Predicates} a value an attribute's
 *       {@code :db.attr/preds} refuse and an entity its {@code :db/ensure} spec
 *       refuses (the {@code :db/ensure} operations, which store nothing, were
 *       taken out of the ops before apply).
 * </ol>
 * Valid time runs around these steps: {@code ValidForms} takes the valid-time intervals out of
 * tx-data before the declare step (keyed by the forms left in their place); before apply,
 * {@code ValidEvents.plainOps} leaves out the cardinality-one assertions with an interval that
 * a later valid-from of the same pair outdates; after collect, {@code ValidEvents.add} makes
 * each operation with an interval a {@code :db.valid/event} datom on the transaction (and
 * drops the plain retraction of a retraction with one).
 * State passes between steps as values (the ops, the changes). What several
 * steps share is explicit, made by {@code Transactor} for one transaction and
 * passed to the steps that need it: the registries {@code Tempids},
 * {@code EntityIds} and {@code PendingAttrs} (filled while expanding, resolved
 * by {@code TempidResolver}), and {@code Slots} (written by the apply and
 * derive steps, read by collect). {@code Printed} prints values for error
 * messages; {@code Bytes} keys maps by encoded values.
 *
 * <p>Threading: {@code Transactor.run} may be called from any thread, and
 * everything it makes lives for that one call on that thread, shared with no
 * other; a connection runs one transaction at a time. Its result is immutable.
 * The one thing that outlives a call is an import's {@code LookupCache} (the
 * entities its lookup refs found, kept across its chunks on its thread, and
 * told of each chunk it commits so that every entry stays true).
 */
package datalith.tx;
