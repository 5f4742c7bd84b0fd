/**
 * Connections, the top of the core: {@link datalith.conn.Conn} owns a store, runs its
 * transactions one at a time, committing the ones given to it at once in groups that share one
 * store write (the transactor, {@code datalith.tx}, computes each; {@code datalith.db.Latest}
 * stages each into the group's write) and holds the latest database value; {@code TxQueue}
 * holds the transactions waiting for the next group and the leader role;
 * {@link datalith.conn.With} applies a transaction to a database value in memory only;
 * {@link datalith.conn.TxReport} says what either did; {@link datalith.conn.Import} commits a
 * sequence of chunks of tx-data, each a transaction, holding the lock throughout with the
 * store's fsync paused until it ends, into the store or, staged ({@code Staged}), into a
 * {@code LayeredStore} over a snapshot of the store (nothing copied), whose delta it writes into
 * the store in one commit at its end (the connection's value stays the store's until then). {@code Listeners} hands each committed
 * report to the connection's listeners and report queue; {@link datalith.conn.TxFuture} is one
 * waiting transaction and its result (the pending report of {@code Conn.transactAsync}).
 * A connection that follows a replicated log ({@code datalith.log}) hands its transactions to
 * its {@link datalith.conn.Replicated} writer instead (its {@code transactAsync} too, whose
 * future settles the {@code TxFuture}; an import goes chunk by chunk through the writer, in
 * {@code datalith.replica}), and {@link datalith.conn.Logged} applies the log's records to it in
 * runs through the same group commit ({@code GroupMember}: a waiting transaction or a log
 * record), each write committed with the log offset after its last record; a catch-up run into
 * an LMDB store, whatever it holds, is staged as an import is ({@link datalith.conn.StagedLog},
 * over {@code Staged}), each record committed into the staging with the offset after it.
 *
 * <p>Layering: this package sits above the transactor, pull and the query engine, and only the
 * APIs ({@code datalith.api}, {@code datalith.core}) sit above it. A database value reaches its
 * store through {@code datalith.db.Source}, which {@code Conn} implements, so no package below
 * needs a connection (the layering test, {@code datalith.layering-test}, keeps every dependency
 * running down).
 *
 * <p>Group commit: a transaction joins the connection's queue; whichever caller finds no leader
 * (or is told to lead) takes every queued transaction (up to a bound) as a group, opens one store
 * write transaction, runs each on the value after the ones before it (the transactor reads the
 * group's earlier datoms through an overlay, as {@code with} does), stages each (its own t, log
 * record and META), commits once (one sync), publishes the reports in order and wakes each caller,
 * whose transaction is then durable; then it hands the leader role to the oldest caller still
 * waiting (or, when only async transactions wait, to one of the connection's async threads). A
 * transaction that throws fails alone and writes nothing. Callers block on their own transaction,
 * not on a lock, so a group forms from whatever queued during the last sync; a leader whose
 * recent groups held several transactions first waits a moment (at most 0.2 ms) for as many to
 * queue, so that the writers just woken from the last group are not left to a group of their own.
 * Each staged value carries its transaction's {@code :db/txInstant} ({@code Latest.instant}),
 * which the next transaction of the group, or the next group, checks its own against.
 *
 * <p>Threading: a {@code Conn} is thread-safe. Its groups run one at a time (its lock, held by the
 * leader, and the store's writer lock across processes); {@code db()} runs alongside them and
 * publishes the newest value it reads, whose basis t only grows. The thread running a transaction
 * (its transaction functions, and what they call) may neither transact on that connection nor
 * close it: both throw. {@code With.run} may be called from any thread; reports are immutable.
 * Listeners and the report queue get each report after its commit, outside the transaction lock,
 * in commit order, on a thread of the group (its caller, or the leader), one thread delivering at
 * a time (a transaction returns, and an async one completes, once its report is delivered).
 * {@code transactAsync} queues the transaction and returns; when no group is running, or no caller
 * waits in the queue, one of the connection's daemon threads leads (made on demand, shut down by
 * {@code close}). An import holds the lock from its first chunk to its last: groups wait for it,
 * and its reports are delivered when it ends.
 */
package datalith.conn;
