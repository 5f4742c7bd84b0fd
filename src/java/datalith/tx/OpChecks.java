package datalith.tx;

import clojure.lang.RT;
import datalith.db.Attr;
import datalith.db.Errors;
import datalith.db.Schema;

/**
 * What no operation may do to an attribute, whatever the data: write a
 * composite tuple other than by asserting it (it is derived, see
 * {@link Composites}), give {@code :db/txInstant} to
 * anything but the transaction being made, or retract one (it dates its
 * transaction, and as-of by date depends on it).
 */
final class OpChecks {
  private OpChecks() {}

  /** For {@code [:db/add e a v]} and the attributes of maps; {@code tx}: this transaction. */
  static void assertion(Object e, Attr a, long tx, Object form) {
    if (a.id == Schema.TX_INSTANT && !(e instanceof Long l && l == tx)) {
      throw Errors.error("tx/tx-instant", ":db/txInstant can only be given to the transaction"
          + " itself (\"datomic.tx\")", "entity", e instanceof TempRef r ? r.name : e,
          "form", form);
    }
  }

  /** For {@code [:db/cas e a old new]}. */
  static void cas(Object e, Attr a, long tx, Object form) {
    refuseComposite(a, form);
    assertion(e, a, tx, form);
  }

  /** For {@code [:db/retract e a v]} and {@code [:db/retract e a]}. */
  static void retraction(Attr a, Object form) {
    refuseComposite(a, form);
    if (a.id == Schema.TX_INSTANT) {
      throw Errors.error("tx/tx-instant", "A transaction's :db/txInstant cannot be retracted",
          "form", form);
    }
  }

  private static void refuseComposite(Attr a, Object form) {
    if (a.tupleAttrs != null) {
      throw Errors.error("tx/composite-tuple", "Composite tuple " + a.ident + " is derived from "
          + RT.printString(RT.vector((Object[]) a.tupleAttrs)) + ": retract or change those,"
          + " not the tuple", "attribute", a.ident, "form", form);
    }
  }
}
