package datalith.conn;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;
import datalith.db.Db;
import datalith.db.TxChange;
import datalith.index.Datom;
import java.util.List;

/** What a transaction did: the values before and after, its datoms, and its tempids. Immutable. */
public final class TxReport {
  public final Db dbBefore;
  public final Db dbAfter;
  /** Assertions and retractions, each with this transaction's tx id. */
  public final List<Datom> txData;
  /** User tempid -> entity id, plus {@code :db/current-tx} -> the transaction's id. */
  public final IPersistentMap tempids;

  TxReport(Db dbBefore, Db dbAfter, List<TxChange> changes, IPersistentMap tempids) {
    this.dbBefore = dbBefore;
    this.dbAfter = dbAfter;
    this.txData = TxChange.datoms(changes);
    this.tempids = tempids;
  }

  private static final Keyword DB_BEFORE = Keyword.intern("db-before");
  private static final Keyword DB_AFTER = Keyword.intern("db-after");
  private static final Keyword TX_DATA = Keyword.intern("tx-data");
  private static final Keyword TEMPIDS = Keyword.intern("tempids");

  /** The report as Clojure sees it: {@code {:db-before :db-after :tx-data [datoms] :tempids}}. */
  public IPersistentMap toMap() {
    return PersistentArrayMap.createAsIfByAssoc(new Object[] {DB_BEFORE, dbBefore, DB_AFTER,
        dbAfter, TX_DATA, PersistentVector.create(txData), TEMPIDS, tempids});
  }
}
