package datalith.tx;

import clojure.lang.PersistentVector;
import datalith.codec.Codec;
import datalith.db.Attr;
import datalith.db.Errors;
import datalith.db.Schema;
import datalith.db.TxChange;
import datalith.db.ValidTime;
import datalith.index.Datom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The valid-time step, after collect: each operation that has an interval ({@link ValidForms})
 * becomes an event, a datom {@code [tx :db.valid/event [aid e v added from to]]} on the
 * transaction entity (installing {@code :db.valid/event} in the first transaction that needs
 * it). An assertion with an interval stays an ordinary assertion too; a retraction with one is
 * not an ordinary retraction (the fact stays true outside the interval), so its plain retraction
 * is dropped, unless a cardinality-one assertion of the same transaction replaces the value.
 */
final class ValidEvents {
  private ValidEvents() {}

  /**
   * The ops to apply to the plain (transaction-time) state: {@code ops} without the assertions
   * with an interval of a cardinality-one attribute that another assertion with an interval of
   * the same entity and attribute, and a later (or equal, and later in tx-data) valid-from,
   * outdates; so one transaction can write several values of a history. The interval of a
   * missing valid-from, the txInstant, counts as the latest.
   */
  static List<Op> plainOps(ValidForms forms, List<Op> ops, long tx) {
    if (forms.isEmpty()) {
      return ops;
    }
    Map<List<Long>, Integer> latest = new HashMap<>();
    for (int i = 0; i < ops.size(); i++) {
      Op op = ops.get(i);
      ValidForms.Interval iv = intervalOf(forms, op, tx);
      if (iv != null && op.kind() == Op.Kind.ADD && !op.attr().many) {
        List<Long> pair = List.of((Long) op.e(), op.attr().id);
        Integer j = latest.get(pair);
        if (j == null || fromOf(intervalOf(forms, ops.get(j), tx)) <= fromOf(iv)) {
          latest.put(pair, i);
        }
      }
    }
    List<Op> out = new ArrayList<>(ops.size());
    for (int i = 0; i < ops.size(); i++) {
      Op op = ops.get(i);
      Integer j = op.kind() == Op.Kind.ADD && op.attr() != null
          ? latest.get(List.of((Long) op.e(), op.attr().id)) : null;
      if (j == null || j == i || intervalOf(forms, op, tx) == null) {
        out.add(op);
      }
    }
    return out;
  }

  private static long fromOf(ValidForms.Interval iv) {
    return iv.from() == null ? Long.MAX_VALUE : iv.from();
  }

  /** The interval of {@code op}: its form's, else the transaction's where that applies; or null. */
  private static ValidForms.Interval intervalOf(ValidForms forms, Op op, long tx) {
    ValidForms.Interval own = forms.byForm.get(op.form());
    if (own != null) {
      return own;
    }
    return forms.txLevel == null || ((Long) op.e()) == tx || op.attr() == null
        || op.attr().id < Schema.FIRST_USER_ID ? null : forms.txLevel;
  }

  /** {@code changes} with the events of {@code forms} for {@code ops} (resolved) added. */
  static List<TxChange> add(ValidForms forms, List<Op> ops, List<TxChange> changes, Schema schema,
      long tx) {
    if (forms.isEmpty()) {
      return changes;
    }
    long txInstant = txInstant(changes, tx);
    List<TxChange> out = new ArrayList<>(changes);
    Attr eventAttr = schema.attr(ValidTime.EVENT);
    if (eventAttr == null) {
      eventAttr = install(out, schema, tx);
    }
    Set<Object> seen = new HashSet<>();
    for (Op op : ops) {
      ValidForms.Interval own = forms.byForm.get(op.form());
      ValidForms.Interval iv = intervalOf(forms, op, tx);
      if (iv == null) {
        continue;
      }
      boolean added;
      switch (op.kind()) {
        case ADD, CAS -> added = true;
        case RETRACT -> added = false;
        default -> {
          if (own == null) {
            continue; // retractEntity and retracting an attribute stay plain
          }
          throw Errors.error("tx/invalid-interval", "Only :db/add and :db/retract take a"
              + " valid-time interval", "form", op.form());
        }
      }
      long from = iv.from() != null ? iv.from() : txInstant;
      if (iv.to() != null && iv.to() <= from) {
        throw Errors.error("tx/invalid-interval", "A valid-time interval ends after it starts"
            + " (its :db/valid-from is the transaction's txInstant)", "form", iv.form(),
            "valid-from", new Date(from), "valid-to", new Date(iv.to()));
      }
      Attr a = op.attr();
      long e = (Long) op.e();
      Object v = Codec.coerce(op.v(), a.valueType == Codec.T_ANY ? Codec.T_ANY : a.valueType);
      if (!added) {
        dropRetraction(out, e, a, v);
      }
      PersistentVector event = PersistentVector.create(a.id, e, v, added, new Date(from),
          iv.to() == null ? null : new Date(iv.to()));
      if (seen.add(event)) {
        out.add(new TxChange(new Datom(tx, ValidTime.EVENT, ValidTime.K_EVENT, event, tx, true),
            eventAttr, Codec.encode(event, Codec.T_EDN), tx));
      }
    }
    return out;
  }

  private static long txInstant(List<TxChange> changes, long tx) {
    for (TxChange c : changes) {
      if (c.datom.e == tx && c.datom.aid == Schema.TX_INSTANT && c.datom.added) {
        return ((Date) c.datom.v).getTime();
      }
    }
    throw new IllegalStateException("every transaction has a txInstant");
  }

  /**
   * Removes the plain retraction of {@code v} by a retraction with an interval, unless a
   * cardinality-one assertion for the same entity and attribute replaces it in this transaction.
   */
  private static void dropRetraction(List<TxChange> out, long e, Attr a, Object v) {
    if (!a.many) {
      for (TxChange c : out) {
        if (c.datom.e == e && c.datom.aid == a.id && c.datom.added) {
          return;
        }
      }
    }
    byte[] enc = Codec.encode(v, a.valueType == Codec.T_ANY ? Codec.inferTag(v) : a.valueType);
    out.removeIf(c -> c.datom.e == e && c.datom.aid == a.id && !c.datom.added
        && Arrays.equals(c.encoded, enc));
  }

  /** Adds the datoms that install {@code :db.valid/event}; returns the attribute. */
  private static Attr install(List<TxChange> out, Schema schema, long tx) {
    long id = ValidTime.EVENT;
    List<Datom> datoms = List.of(
        new Datom(id, Schema.IDENT, Schema.K_IDENT, ValidTime.K_EVENT, tx, true),
        new Datom(id, Schema.CARDINALITY, Schema.K_CARDINALITY, Schema.CARD_MANY, tx, true),
        new Datom(id, Schema.DOC, Schema.K_DOC, "The valid-time events of a transaction:"
            + " [attribute-id entity value added valid-from valid-to]", tx, true));
    for (Datom d : datoms) {
      Attr sys = schema.attr(d.aid);
      out.add(new TxChange(d, sys, Codec.encode(d.v, sys.valueType), tx));
    }
    return schema.with(datoms).attr(id);
  }
}
