package datalith.api;

import datalith.conn.TxReport;
import datalith.index.Datom;
import java.util.List;
import java.util.Map;

/** What a transaction did: the database before and after, its datoms and its tempids. */
public final class TxResult {
  private final TxReport report;

  TxResult(TxReport report) {
    this.report = report;
  }

  /**
   * The database before the transaction.
   *
   * @return the database value the transaction started from
   */
  public Database dbBefore() {
    return new Database(report.dbBefore);
  }

  /**
   * The database after the transaction.
   *
   * @return the database value the transaction made
   */
  public Database dbAfter() {
    return new Database(report.dbAfter);
  }

  /**
   * The datoms asserted and retracted, the transaction's own datoms included.
   *
   * @return the datoms, read-only
   */
  public List<Datom> txData() {
    return report.txData;
  }

  /**
   * The entity ids the tempids resolved to.
   *
   * @return tempid (String or negative Long) to entity id, and {@code :db/current-tx}
   *     to the transaction's id; read-only
   */
  @SuppressWarnings("unchecked")
  public Map<Object, Long> tempids() {
    return (Map<Object, Long>) (Map<?, ?>) report.tempids;
  }

  /**
   * The entity id a tempid resolved to.
   *
   * @param tempid the tempid as the transaction gave it (a String or a negative Long)
   * @return the entity id, or null when the transaction had no such tempid
   */
  public Long tempid(Object tempid) {
    return tempids().get(tempid);
  }
}
