/**
 * Connections, the top of the core: {@link datalith.conn.Conn} owns a store, runs its
 * transactions one at a time (the transactor, {@code datalith.tx}, computes each;
 * {@code datalith.db.Latest} commits it) and holds the latest database value;
 * {@link datalith.conn.With} applies a transaction to a database value in memory only;
 * {@link datalith.conn.TxReport} says what either did; {@link datalith.conn.Import} commits a
 * sequence of chunks of tx-data, each a transaction, holding the lock throughout with the
 * store's fsync paused until it ends. {@code Listeners} hands each committed
 * report to the connection's listeners and report queue; {@link datalith.conn.TxFuture} is the
 * pending report of {@code Conn.transactAsync}.
 *
 * <p>Layering: this package sits above the transactor, pull and the query engine, and only the
 * APIs ({@code datalith.api}, {@code datalith.core}) sit above it. A database value reaches its
 * store through {@code datalith.db.Source}, which {@code Conn} implements, so no package below
 * needs a connection (the layering test, {@code datalith.layering-test}, keeps every dependency
 * running down).
 *
 * <p>Threading: a {@code Conn} is thread-safe. Its transactions run one at a time (its lock, and
 * the store's writer lock across processes); {@code db()} runs alongside them and publishes the
 * newest value it reads, whose basis t only grows. The thread running a transaction (its
 * transaction functions, and what they call) may neither transact on that connection nor close
 * it: both throw. {@code With.run} may be called from any thread; reports are immutable.
 * Listeners and the report queue get each report after its commit, outside the transaction
 * lock, in commit order, on the committing thread, one thread delivering at a time (a
 * transaction returns once its report is delivered; an import's reports, once it ends).
 * {@code transactAsync} runs transactions on
 * the connection's one daemon thread, made on first use and shut down by {@code close}.
 */
package datalith.conn;
