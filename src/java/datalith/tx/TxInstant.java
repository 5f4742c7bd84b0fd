package datalith.tx;

import clojure.lang.RT;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.IndexScan;
import datalith.db.Latest;
import datalith.db.Schema;
import datalith.db.Snapshot;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.Collection;
import java.util.Date;

/**
 * Dates a transaction with {@code :db/txInstant}: the one tx-data gives it
 * (on {@code "datomic.tx"}), or now. Instants never decrease with t (as-of by
 * date depends on it): a clock that went back gives the previous
 * transaction's instant again, and a given instant older than it is refused,
 * as Datomic does.
 */
final class TxInstant {
  private TxInstant() {}

  /**
   * Asserts the instant of transaction {@code tx} in {@code slots} unless
   * tx-data gave one, which it checks instead; {@code db} is the database
   * before the transaction, read through {@code snap}, and {@code previous}
   * its basis transaction's instant in epoch milliseconds when the caller
   * knows it, else {@link Latest#UNKNOWN_INSTANT} (read from EAVT then), and
   * {@code now} the clock's reading in epoch milliseconds (the record's time
   * on a replicated log, so that every node dates it alike).
   *
   * @throws clojure.lang.ExceptionInfo {@code :tx/past-instant} for a given
   *     instant older than the previous transaction's
   */
  static void stamp(Db db, Snapshot snap, long tx, Slots slots, long previous, long clock) {
    Attr inst = db.schema().attr(Schema.TX_INSTANT);
    Date prev = previous != Latest.UNKNOWN_INSTANT ? new Date(previous) : read(db, snap, inst);
    Collection<Slots.Val> given = slots.touched(tx, inst.id);
    if (given == null) {
      Date now = new Date(clock);
      slots.add(tx, inst, prev != null && prev.after(now) ? prev : now, null);
      return;
    }
    for (Slots.Val x : given) {
      if (x.status == Slots.Val.ADDED && prev != null && ((Date) x.v).before(prev)) {
        throw Errors.error("tx/past-instant", "The :db/txInstant " + RT.printString(x.v)
            + " is older than the previous transaction's, " + RT.printString(prev),
            "value", x.v, "previous", prev, "form", x.form);
      }
    }
  }

  /** The instant of {@code db}'s basis transaction in EAVT; null before any. */
  private static Date read(Db db, Snapshot snap, Attr inst) {
    IndexScan scan = db.scan(snap, Index.EAVT,
        new KeyBuilder().putLong(Db.tToTx(db.basisT())).putLong(inst.id).view());
    Date prev = scan.next() ? (Date) scan.datom().v : null;
    scan.close();
    return prev;
  }
}
