package datalith.conn;

import clojure.lang.ExceptionInfo;
import datalith.db.LogOffset;
import datalith.db.Snapshot;
import java.util.List;

/**
 * Applies the records of a replicated transaction log to a connection, a run of them at a time,
 * through the connection's group commit ({@code Conn.runGroup}): the records of a run commit in
 * as few store writes as its bound on a group allows, each record still its own transaction (its
 * t, its instant, its report, its failure), and each write commits with the log offset after its
 * last record ({@link LogOffset}), so that a node's datoms and its position in the log never
 * disagree. Holds the connection's transaction lock while it runs, as an import does.
 */
public final class Logged {
  /** What applying one record did: its report, or the transaction's own error (nothing written). */
  public static final class Outcome {
    public final TxReport report;
    public final ExceptionInfo error;

    Outcome(TxReport report, ExceptionInfo error) {
      this.report = report;
      this.error = error;
    }
  }

  /**
   * One record of the log to apply: its tx-data, its offset and its time (epoch ms), which dates
   * the transaction (the previous transaction's instant when that is later), the same on every
   * node. Its outcome is set once {@link #apply} ran it.
   */
  public static final class Record extends GroupMember {
    private final Object txData;
    private final long offset;
    private final long time;
    private Throwable own; // the transactor's error this record fails alone with
    private TxReport report;
    private Throwable failure;

    /** The record at {@code offset}, holding {@code txData}, appended at {@code time}. */
    public Record(Object txData, long offset, long time) {
      this.txData = txData;
      this.offset = offset;
      this.time = time;
    }

    /** What applying it did; null before {@link #apply} ran it. */
    public Outcome outcome() {
      if (report != null) {
        return new Outcome(report, null);
      }
      return failure == own && own != null ? new Outcome(null, (ExceptionInfo) own) : null;
    }

    /** The record's offset in the log. */
    long offset() {
      return offset;
    }

    @Override
    Object txData() {
      return txData;
    }

    @Override
    long clock() {
      return time;
    }

    /**
     * The transactor's ex-info only: a record fails alone, alike on every node, only for its
     * tx-data. Any other failure (the store's, staging's) stops the node.
     */
    @Override
    boolean failsAlone(Throwable e, boolean staging) {
      if (!staging && e instanceof ExceptionInfo) {
        own = e;
        return true;
      }
      return false;
    }

    @Override
    void settle(TxReport report, Throwable failure) {
      this.report = report;
      this.failure = failure;
    }

    @Override
    boolean isSettled() {
      return report != null || failure != null;
    }
  }

  private Logged() {}

  /** The offset of the next record {@code conn} is to apply (0 for a store that never followed). */
  public static long offset(Conn conn) {
    try (Snapshot s = Snapshot.of(conn.store())) {
      return LogOffset.read(s);
    }
  }

  /**
   * Applies {@code run}, records of consecutive offsets from the connection's own on, in order:
   * each is a transaction on the value after the ones before it, committed (in groups of the
   * run) with the offset after the group's last record as the node's position. A record that
   * fails (the transactor's ex-info) writes nothing and gets its error as its outcome: on a
   * restart before the next commit it runs again on the same value, and fails again alike (a
   * group of failed records only commits nothing).
   *
   * @throws RuntimeException when the store fails (not a record): the node must stop; the groups
   *     before the failing one are committed
   */
  public static void apply(Conn conn, List<Record> run) {
    conn.lockForLog();
    try {
      List<Record> rest = run;
      while (!rest.isEmpty()) {
        List<Record> group = rest;
        rest = conn.runGroup(group, (wt, taken) ->
            LogOffset.stage(wt, group.get(taken - 1).offset + 1));
        for (Record r : group) {
          if (r.failure != null && r.failure != r.own) {
            if (r.failure instanceof Error e) {
              throw e;
            }
            throw (RuntimeException) r.failure; // runGroup meets no checked exception
          }
        }
      }
    } finally {
      conn.unlockAfterImport();
    }
  }
}
