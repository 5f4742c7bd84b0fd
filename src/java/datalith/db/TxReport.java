package datalith.db;

import clojure.lang.IPersistentMap;
import datalith.index.Datom;
import java.util.List;

/** What a transaction did: the values before and after, its datoms, and its tempids. */
public final class TxReport {
  public final Db dbBefore;
  public final Db dbAfter;
  /** Assertions and retractions, each with this transaction's tx id. */
  public final List<Datom> txData;
  /** User tempid -> entity id, plus {@code :db/current-tx} -> the transaction's id. */
  public final IPersistentMap tempids;

  TxReport(Db dbBefore, Db dbAfter, List<Datom> txData, IPersistentMap tempids) {
    this.dbBefore = dbBefore;
    this.dbAfter = dbAfter;
    this.txData = txData;
    this.tempids = tempids;
  }
}
