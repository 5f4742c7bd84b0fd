package datalith.api;

import datalith.conn.TxReport;
import datalith.index.Datom;
import java.util.List;
import java.util.Map;

/** What a transaction did. */
public final class TxResult {
  private final TxReport report;

  TxResult(TxReport report) {
    this.report = report;
  }

  public Database dbBefore() {
    return new Database(report.dbBefore);
  }

  public Database dbAfter() {
    return new Database(report.dbAfter);
  }

  /** The datoms asserted and retracted. */
  public List<Datom> txData() {
    return report.txData;
  }

  /** Tempid (String or negative Long) to entity id, and {@code :db/current-tx} to the tx id. */
  @SuppressWarnings("unchecked")
  public Map<Object, Long> tempids() {
    return (Map<Object, Long>) (Map<?, ?>) report.tempids;
  }

  /** The entity id a tempid resolved to, or null. */
  public Long tempid(Object tempid) {
    return tempids().get(tempid);
  }
}
