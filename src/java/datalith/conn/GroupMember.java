package datalith.conn;

/**
 * One transaction of a group commit ({@code Conn.runGroup}): its tx-data, the instant that dates
 * it, and where its outcome goes. A waiting transaction of the connection ({@link TxFuture}) is
 * one; so is a record of a replicated log ({@link Logged}), which a node applies in runs.
 */
abstract class GroupMember {
  /** The transaction's tx-data. */
  abstract Object txData();

  /**
   * The instant (epoch ms) dating the transaction unless its tx-data gives one; the previous
   * transaction's instant when that is later. Called once, just before it runs.
   */
  abstract long clock();

  /** Takes the outcome: the report, or the failure (report null). Called at most once. */
  abstract void settle(TxReport report, Throwable failure);

  /** Whether {@link #settle} gave it its outcome. */
  abstract boolean isSettled();

  /**
   * Whether {@code failure}, thrown running this transaction ({@code staging} false) or staging
   * it into the group's write ({@code staging} true), is this transaction's own: it then fails
   * alone, writing nothing. Otherwise the whole group fails with it, nothing committed.
   */
  abstract boolean failsAlone(Throwable failure, boolean staging);
}
