package datalith.tx;

import clojure.lang.Keyword;
import datalith.codec.Codec;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.IndexScan;
import datalith.db.Schema;
import datalith.db.Snapshot;
import datalith.db.TxChange;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/** Refuses schema changes that are invalid or unsafe for the data already stored. */
final class SchemaCheck {
  private SchemaCheck() {}

  static void check(Db db, Snapshot snap, Schema before, Schema after, List<TxChange> changes) {
    Set<Long> touched = new LinkedHashSet<>();
    for (TxChange c : changes) {
      if (Schema.isSchemaAttr(c.datom.aid)) {
        touched.add(c.datom.e);
      } else if (c.datom.aid == Schema.ATTR_PREDS && c.datom.e < Schema.FIRST_USER_ID) {
        throw Errors.error("schema/system", "System attributes take no :db.attr/preds",
            "entity", c.datom.e, "ident", before.ident(c.datom.e), "value", c.datom.v);
      }
    }
    for (long e : touched) {
      Map<Long, Object> pb = before.props(e);
      Map<Long, Object> pa = after.props(e);
      Object ident = pa.get(Schema.IDENT) != null ? pa.get(Schema.IDENT) : pb.get(Schema.IDENT);
      if (e < Schema.FIRST_USER_ID) {
        throw Errors.error("schema/system", "System entities cannot be changed", "entity", e,
            "ident", ident);
      }
      Object vtA = pa.get(Schema.VALUE_TYPE);
      Object vtB = pb.get(Schema.VALUE_TYPE);
      if (vtA != null && !(vtA instanceof Long l && l >= Schema.TYPE_BASE
          && l < Schema.TYPE_BASE + Schema.typeCount())) {
        throw Errors.error("schema/invalid", ":db/valueType must be one of the :db.type/* idents",
            "attribute", ident, "value", vtA);
      }
      if (!Objects.equals(vtA, vtB)) {
        if (vtB != null) {
          throw Errors.error("schema/alter", "The :db/valueType of " + ident + " cannot change",
              "attribute", ident, "from", before.ident((Long) vtB),
              "to", vtA == null ? null : after.ident((Long) vtA));
        }
        if (hasDatoms(db, snap, e)) {
          throw Errors.error("schema/alter", "Cannot give " + ident
              + " a :db/valueType once it has values", "attribute", ident);
        }
        // values the transaction asserts were taken as the attribute was before it
        int tag = Schema.typeTag((Keyword) after.ident((Long) vtA));
        for (TxChange c : changes) {
          if (c.datom.aid == e && c.datom.added && c.encoded[0] != tag) {
            throw Errors.error("schema/alter", "Cannot give " + ident + " the :db/valueType "
                + after.ident((Long) vtA) + " in a transaction that asserts a value of another"
                + " type for it", "attribute", ident, "value", c.datom.v);
          }
        }
      }
      Object cardA = pa.get(Schema.CARDINALITY);
      if (cardA != null && !(cardA.equals(Schema.CARD_ONE) || cardA.equals(Schema.CARD_MANY))) {
        throw Errors.error("schema/invalid", ":db/cardinality must be :db.cardinality/one or /many",
            "attribute", ident, "value", cardA);
      }
      if (Long.valueOf(Schema.CARD_MANY).equals(pb.get(Schema.CARDINALITY))
          && !Long.valueOf(Schema.CARD_MANY).equals(cardA) && hasManyValues(db, snap, e, changes)) {
        throw Errors.error("schema/alter", "Cannot make " + ident
            + " cardinality-one: some entity has several values", "attribute", ident);
      }
      Object uA = pa.get(Schema.UNIQUE);
      if (uA != null && !(uA.equals(Schema.UNIQUE_IDENTITY) || uA.equals(Schema.UNIQUE_VALUE))) {
        throw Errors.error("schema/invalid", ":db/unique must be :db.unique/identity or /value",
            "attribute", ident, "value", uA);
      }
      if (uA != null && pb.get(Schema.UNIQUE) == null
          && hasDuplicateValues(db, snap, e, changes)) {
        throw Errors.error("schema/alter", "Cannot make " + ident
            + " unique: two entities share a value", "attribute", ident);
      }
      if (Boolean.TRUE.equals(pa.get(Schema.IS_COMPONENT))
          && !Long.valueOf(Schema.TYPE_BASE + Schema.typeIndex(Codec.T_REF)).equals(vtA)) {
        throw Errors.error("schema/invalid", ":db/isComponent needs :db.type/ref",
            "attribute", ident);
      }
      checkTuple(ident, pa, after);
      if (pb.get(Schema.IDENT) != null && pa.get(Schema.IDENT) == null && hasDatoms(db, snap, e)) {
        throw Errors.error("schema/alter", "Cannot retract the ident of attribute " + ident
            + " while it has values", "attribute", ident);
      }
    }
  }

  /**
   * {@code :db/tupleAttrs}, {@code :db/tupleType} and {@code :db/tupleTypes}:
   * at most one, only with {@code :db.type/tuple}, and well formed: 2 to 8
   * {@code :db.type/*} keywords other than tuple, or 2 to 8 attributes of
   * cardinality one that are not tuples themselves.
   */
  private static void checkTuple(Object ident, Map<Long, Object> pa, Schema after) {
    Object attrs = pa.get(Schema.TUPLE_ATTRS);
    Object type = pa.get(Schema.TUPLE_TYPE);
    Object types = pa.get(Schema.TUPLE_TYPES);
    int given = (attrs != null ? 1 : 0) + (type != null ? 1 : 0) + (types != null ? 1 : 0);
    if (given == 0) {
      return;
    }
    if (!Long.valueOf(Schema.TYPE_BASE + Schema.typeIndex(Codec.T_TUPLE))
        .equals(pa.get(Schema.VALUE_TYPE))) {
      throw Errors.error("schema/invalid", ":db/tupleAttrs, :db/tupleType and :db/tupleTypes need"
          + " :db/valueType :db.type/tuple", "attribute", ident);
    }
    if (given > 1) {
      throw Errors.error("schema/invalid", "A tuple attribute has one of :db/tupleAttrs,"
          + " :db/tupleType and :db/tupleTypes", "attribute", ident);
    }
    if (type != null && !(type instanceof Long l && isElementType(l))) {
      throw Errors.error("schema/invalid", ":db/tupleType must be a :db.type/* other than tuple",
          "attribute", ident, "value", type);
    }
    if (types != null && !(types instanceof List<?> l && fits(l) && l.stream().allMatch(
        x -> x instanceof Keyword k && Schema.typeTag(k) >= 0 && Schema.typeTag(k) != Codec.T_TUPLE))) {
      throw Errors.error("schema/invalid", ":db/tupleTypes must be 2 to 8 :db.type/* keywords other"
          + " than tuple", "attribute", ident, "value", types);
    }
    if (attrs != null && !(attrs instanceof List<?> l && fits(l) && l.stream().allMatch(
        x -> x instanceof Keyword k && !k.equals(ident) && isPart(after.attr(k))))) {
      throw Errors.error("schema/invalid", ":db/tupleAttrs must be 2 to 8 attributes of cardinality"
          + " one that are not tuples", "attribute", ident, "value", attrs);
    }
  }

  private static boolean fits(List<?> l) {
    return l.size() >= 2 && l.size() <= 8;
  }

  private static boolean isElementType(long typeId) {
    return typeId >= Schema.TYPE_BASE && typeId < Schema.TYPE_BASE + Schema.typeCount()
        && typeId != Schema.TYPE_BASE + Schema.typeIndex(Codec.T_TUPLE);
  }

  private static boolean isPart(Attr a) {
    return a != null && !a.many && a.valueType != Codec.T_TUPLE;
  }

  private static boolean hasDatoms(Db db, Snapshot snap, long aid) {
    IndexScan s = db.scan(snap, Index.AEVT, new KeyBuilder().putLong(aid).view());
    boolean any = s.next();
    s.close();
    return any;
  }

  /**
   * Whether some entity holds several values of {@code aid} after the transaction: those it held
   * before, less those {@code changes} retract, plus those they assert (the data of a
   * transaction that makes {@code aid} cardinality-one is taken as the schema before it has it,
   * so it may assert a second value, which the alteration then refuses; or retract all but one).
   */
  private static boolean hasManyValues(Db db, Snapshot snap, long aid, List<TxChange> changes) {
    Map<Long, Integer> delta = new HashMap<>();
    for (TxChange c : changes) {
      if (c.datom.aid == aid) {
        delta.merge(c.datom.e, c.datom.added ? 1 : -1, Integer::sum);
      }
    }
    IndexScan s = db.scan(snap, Index.AEVT, new KeyBuilder().putLong(aid).view());
    try {
      long last = -1;
      int held = 0;
      while (s.next()) {
        long e = s.e();
        if (e != last) {
          if (last >= 0 && held + orZero(delta.remove(last)) > 1) {
            return true;
          }
          last = e;
          held = 0;
        }
        held++;
      }
      if (last >= 0 && held + orZero(delta.remove(last)) > 1) {
        return true;
      }
    } finally {
      s.close();
    }
    for (int d : delta.values()) { // entities that held none before
      if (d > 1) {
        return true;
      }
    }
    return false;
  }

  private static int orZero(Integer n) {
    return n == null ? 0 : n;
  }

  /**
   * Whether two entities hold one value of {@code aid} after the transaction, among the values
   * held before (less those {@code changes} retract); the values the transaction asserts are
   * {@link UniqueCheck}'s, with uniqueness as the transaction leaves it.
   */
  private static boolean hasDuplicateValues(Db db, Snapshot snap, long aid,
      List<TxChange> changes) {
    Map<Long, List<Object>> retracted = new HashMap<>();
    for (TxChange c : changes) {
      if (c.datom.aid == aid && !c.datom.added) {
        retracted.computeIfAbsent(c.datom.e, k -> new ArrayList<>(1)).add(c.datom.v);
      }
    }
    IndexScan s = db.scan(snap, Index.AVET, new KeyBuilder().putLong(aid).view());
    Object last = null;
    long lastE = -1;
    try {
      while (s.next()) {
        long e = s.e();
        Object v = s.v();
        if (retractedBy(retracted.get(e), v)) {
          continue;
        }
        if (lastE >= 0 && e != lastE && Datom.valueEquals(v, last)) {
          return true;
        }
        last = v;
        lastE = e;
      }
      return false;
    } finally {
      s.close();
    }
  }

  private static boolean retractedBy(List<Object> values, Object v) {
    if (values != null) {
      for (Object r : values) {
        if (Datom.valueEquals(r, v)) {
          return true;
        }
      }
    }
    return false;
  }
}
