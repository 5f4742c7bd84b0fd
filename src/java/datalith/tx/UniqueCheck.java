package datalith.tx;

import clojure.lang.ExceptionInfo;
import clojure.lang.RT;
import datalith.codec.Codec;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.IndexScan;
import datalith.db.Schema;
import datalith.db.Snapshot;
import datalith.db.TxChange;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Refuses a transaction after which two entities hold one value of a unique
 * attribute, counting what it asserts, what it retracts, and what the
 * database held before.
 */
final class UniqueCheck {
  private UniqueCheck() {}

  /**
   * Checks the assertions of {@code changes} against each other and against
   * {@code db} (before the transaction, read through {@code snap}), for every
   * attribute unique before the transaction (its data is taken as the schema was)
   * or after it ({@code next}: an alteration is checked against what it leaves).
   *
   * @throws ExceptionInfo {@code :tx/unique} for a value another entity holds
   */
  static void check(Db db, Snapshot snap, List<TxChange> changes, Schema next) {
    Schema before = db.schema();
    Map<Bytes, Long> inTx = new HashMap<>();
    // (attribute, value, entity) of the unique values the transaction retracts
    Set<Bytes> retracted = new HashSet<>();
    for (TxChange c : changes) {
      Attr a = unique(before, next, c.datom.aid);
      if (a != null && !c.datom.added) {
        retracted.add(new Bytes(new KeyBuilder(false).putLong(a.id)
            .put(Codec.keyPart(c.encoded)).putLong(c.datom.e).toBytes()));
      }
    }
    for (TxChange c : changes) {
      Attr a = unique(before, next, c.datom.aid);
      if (a == null || !c.datom.added) {
        continue;
      }
      byte[] vpart = Codec.keyPart(c.encoded);
      byte[] key = new KeyBuilder(false).putLong(a.id).put(vpart).toBytes();
      Long other = inTx.putIfAbsent(new Bytes(key), c.datom.e);
      if (other != null && other != c.datom.e) {
        throw uniqueError(a, c, other);
      }
      IndexScan scan = db.scan(snap, Index.AVET, new KeyBuilder().put(key).view());
      while (scan.next()) {
        long holder = scan.datom().e;
        byte[] held = new KeyBuilder(false).put(key).putLong(holder).toBytes();
        if (holder != c.datom.e && !retracted.contains(new Bytes(held))) {
          scan.close();
          throw uniqueError(a, c, holder);
        }
      }
      scan.close();
    }
  }

  /** Attribute {@code aid} when it is unique before the transaction or after it, else null. */
  private static Attr unique(Schema before, Schema next, long aid) {
    Attr a = next.attr(aid);
    if (a != null && a.isUnique()) {
      return a;
    }
    if (before == next) { // no schema change: one lookup a datom, as before alterations counted
      return null;
    }
    Attr b = before.attr(aid);
    return b != null && b.isUnique() ? b : null;
  }

  private static ExceptionInfo uniqueError(Attr a, TxChange c, long holder) {
    return Errors.error("tx/unique", "Unique conflict: " + a.ident + " "
        + RT.printString(c.datom.v) + " already belongs to entity " + holder,
        "attribute", a.ident, "value", c.datom.v, "entity", c.datom.e, "conflicting-entity", holder);
  }
}
