package datalith.conn;

import java.util.concurrent.CompletableFuture;

/**
 * What a connection that follows a replicated transaction log writes through ({@link
 * Conn#replicate}): its transactions go to the log, and every node applies the log's records
 * in order ({@link Logged}).
 */
public interface Replicated {
  /**
   * Appends {@code txData} to the log and returns its report once this node applied it.
   *
   * @throws clojure.lang.ExceptionInfo the transaction's own error (the same as an embedded
   *     connection's), or the log's
   */
  TxReport transact(Object txData);

  /**
   * Appends {@code txData} to the log and returns at once a future of its report (once this
   * node applied it), failing as {@link #transact} throws; in the order of the calls.
   */
  CompletableFuture<TxReport> transactAsync(Object txData);

  /** Stops following the log (the applier ends) and closes the log's clients. Idempotent. */
  void stop();
}
