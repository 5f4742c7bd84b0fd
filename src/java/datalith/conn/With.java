package datalith.conn;

import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Snapshot;
import datalith.tx.Transactor;

/**
 * Speculative transactions: a transaction applied to a database value in memory only, as
 * Datomic's {@code with}. The value after it reads the same store as the one before, through an
 * overlay of the transaction's datoms; nothing is written, no connection is needed, and it can
 * be extended with more {@code with} like any value.
 */
public final class With {
  private With() {}

  /**
   * The transaction of {@code txData} applied to {@code base} (its current state: as-of and
   * since filters are dropped) in memory only. Any thread may call it.
   *
   * @throws clojure.lang.ExceptionInfo {@code :db/history} for a history view, {@code :db/filtered}
   *     for a filtered one, besides the transaction's own errors
   */
  public static TxReport run(Db base, Object txData) {
    if (base.isHistory()) { // Datomic: with is not for history databases
      throw Errors.error("db/history", "Cannot apply with to a history database", "db", base);
    }
    if (base.isFiltered()) { // DataScript: a filtered value is read-only
      throw Errors.error("db/filtered", "Cannot apply with to a filtered database", "db", base);
    }
    Db before = base.current();
    Transactor.Result r;
    try (Snapshot s = before.snapshot()) {
      r = Transactor.run(before, s, txData);
    }
    Db after = before.withChanges(r.changes, r.schema, r.t, r.nextEid);
    return new TxReport(before, after, r.changes, r.tempids);
  }
}
