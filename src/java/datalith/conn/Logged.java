package datalith.conn;

import clojure.lang.ExceptionInfo;
import datalith.db.Latest;
import datalith.db.LogOffset;
import datalith.db.Snapshot;
import datalith.store.Store;
import datalith.store.WriteTxn;
import datalith.tx.Transactor;

/**
 * Applies the records of a replicated transaction log to a connection, one at a time, each a
 * transaction committed with the log offset after it ({@link LogOffset}) in one store write, so
 * that a node's datoms and its position in the log never disagree. Holds the connection's
 * transaction lock while it runs, as an import does.
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

  private Logged() {}

  /** The offset of the next record {@code conn} is to apply (0 for a store that never followed). */
  public static long offset(Conn conn) {
    try (Snapshot s = Snapshot.of(conn.store())) {
      return LogOffset.read(s);
    }
  }

  /**
   * Runs {@code txData}, the record at {@code offset}, dated {@code clock} (the record's time; the
   * previous transaction's when that is later), and commits it with {@code offset + 1} as the
   * node's position. A transaction that fails (the transactor's ex-info) writes nothing and comes
   * back as the outcome's error: on a restart before the next commit it runs again on the same
   * value, and fails again alike.
   *
   * @throws RuntimeException when the store fails (not the transaction): the node must stop
   */
  public static Outcome apply(Conn conn, Object txData, long offset, long clock) {
    Store store = conn.store();
    conn.lockForLog();
    TxReport report = null;
    try (WriteTxn wt = store.beginWrite()) {
      Latest base;
      Transactor.Result r;
      try (Snapshot s = Snapshot.of(store)) {
        base = conn.refreshForImport(s);
        try {
          r = Transactor.run(base.db(), s, txData, base.instant(), null, clock);
        } catch (ExceptionInfo e) {
          return new Outcome(null, e);
        }
      }
      base.expectBasis(wt);
      Latest after = base.stage(wt, r.changes, r.schema, r.t, r.nextEid);
      LogOffset.stage(wt, offset + 1);
      wt.commit();
      report = new TxReport(base.db(), after.db(), r.changes, r.tempids);
      conn.committedByImport(report, after);
    } finally {
      conn.unlockAfterImport();
    }
    return new Outcome(report, null);
  }
}
