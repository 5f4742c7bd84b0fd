package datalith.tx;

import clojure.lang.ExceptionInfo;
import clojure.lang.Keyword;
import clojure.lang.RT;
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
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The state of one transaction in progress: for each (entity, attribute) it
 * touches, a slot of the values the entity had before the transaction (read
 * on first touch) and those the transaction asserts, each with what the
 * transaction does to it. Assertions and retractions are applied here, and
 * checked against each other: a value both asserted and retracted, or two
 * values asserted for a cardinality-one attribute, is a {@code :tx/conflict};
 * a cardinality-one assertion retracts the value held before. Values are
 * checked against their attribute's type as they come in ({@link Values}).
 *
 * <p>Every operation compares with the database before the transaction, so
 * the order of tx-data does not matter: conflicts are decided from what
 * {@link Val#asserted} and {@link Val#retracted} record, whatever order set
 * them. {@link #changes} lists the datoms that result.
 *
 * <p>One {@code Slots} per transaction, made and owned by
 * {@link Transactor}; {@link Applier}, {@link Composites} and
 * {@link TxInstant} write to it in turn, on the transactor's thread.
 */
final class Slots {
  /** One value in a slot. Only {@link Slots} changes it; the others read. */
  static final class Val {
    static final int EXISTING = 0; // in the db before, kept
    static final int ADDED = 1; // new
    static final int RETRACTED = 2; // in the db before, retracted
    static final int ABSENT = 3; // not in the db before: an explicit retraction of it does nothing
    final Object v;
    /** The value's full encoding ({@code Codec.encode}), as stored or to store. */
    final byte[] encoded;
    /** The tx that asserted it: for an ADDED value, this transaction; 0 for ABSENT. */
    final long assertedTx;
    int status;
    /** Asserted by the transaction (redundantly when EXISTING). */
    boolean asserted;
    /** Retracted explicitly, not only replaced by a cardinality-one assertion. */
    boolean retracted;
    /** The tx-data form that last changed it; null for what the transactor derives. */
    Object form;

    Val(Object v, byte[] encoded, long assertedTx, int status) {
      this.v = v;
      this.encoded = encoded;
      this.assertedTx = assertedTx;
      this.status = status;
    }

    /** Whether the entity holds it after the transaction. */
    boolean isLive() {
      return status == EXISTING || status == ADDED;
    }
  }

  /** The key of a slot. */
  record Key(long e, long aid) {}

  /** One slot: the attribute, and its values by key part of their encoding. */
  private static final class Slot {
    final Attr attr;
    final LinkedHashMap<Bytes, Val> vals = new LinkedHashMap<>(4);

    Slot(Attr attr) {
      this.attr = attr;
    }
  }

  private final Db db;
  private final Snapshot snap;
  private final Schema schema;
  private final long tx;
  /** The attributes as the transaction defines them, by ident, for checking tuples. */
  private final Function<Keyword, Attr> attrs;
  /** In the order they were first touched; within a slot, values in the order they were met. */
  private final LinkedHashMap<Key, Slot> slots;

  /**
   * @param db the database before the transaction, read through {@code snap}
   * @param tx the transaction's id
   * @param attrs the attributes as the transaction defines them, by ident
   * @param expected about how many slots the transaction touches (its operations), to size the
   *     map once
   */
  Slots(Db db, Snapshot snap, long tx, Function<Keyword, Attr> attrs, int expected) {
    this.db = db;
    this.snap = snap;
    this.schema = db.schema();
    this.tx = tx;
    this.attrs = attrs;
    this.slots = new LinkedHashMap<>(Math.max(16, expected + expected / 3 + 1));
  }

  /** The values of {@code a} of {@code e}: those before the transaction, and what it did. */
  Collection<Val> values(long e, Attr a) {
    return slot(e, a).values();
  }

  /** The values of the slot (e, aid) if the transaction touched it, else null (reads nothing). */
  Collection<Val> touched(long e, long aid) {
    Slot s = slots.get(new Key(e, aid));
    return s == null ? null : s.vals.values();
  }

  /** The slots touched so far, in the order they were first touched (a copy). */
  List<Key> keys() {
    return new ArrayList<>(slots.keySet());
  }

  private LinkedHashMap<Bytes, Val> slot(long e, Attr a) {
    Key k = new Key(e, a.id);
    Slot slot = slots.get(k);
    if (slot != null) {
      return slot.vals;
    }
    slot = new Slot(a);
    slots.put(k, slot);
    LinkedHashMap<Bytes, Val> s = slot.vals;
    // Only entities below nextEid and transactions before this one hold values: every id a
    // committed transaction used is below the nextEid it stored, this transaction's own id is
    // new, and later ones are refused (EntityIds.named). So new entities read nothing.
    if (e < db.nextEid() || (e >= Db.TX0 && e < tx)) {
      // stored values are encoded as the attribute was when they were written
      Attr stored = schema.attr(a.id);
      KeyBuilder kb = new KeyBuilder().putLong(e).putLong(a.id);
      IndexScan scan = db.scan(snap, Index.EAVT, kb.view());
      while (scan.next()) {
        Datom d = scan.datom();
        byte[] enc = Codec.encode(d.v, tagOf(stored != null ? stored : a, d.v));
        s.put(new Bytes(Codec.keyPart(enc)), new Val(d.v, enc, d.tx, Val.EXISTING));
      }
      scan.close();
    }
    return s;
  }

  private static int tagOf(Attr a, Object v) {
    return a.valueType == Codec.T_ANY ? Codec.inferTag(v) : a.valueType;
  }

  /** Asserts {@code raw} (checked and coerced to a's type) for {@code a} of {@code e}. */
  void add(long e, Attr a, Object raw, Object form) {
    Object v = Values.coerce(a, raw, form, attrs);
    byte[] enc = Codec.encode(v, tagOf(a, v));
    Bytes key = new Bytes(Codec.keyPart(enc));
    LinkedHashMap<Bytes, Val> s = slot(e, a);
    Val same = s.get(key);
    if (same != null && same.retracted) {
      throw conflict(e, a, v, form, same.form);
    }
    if (!a.many) {
      for (Val x : s.values()) {
        if (x != same && x.asserted) {
          throw conflict(e, a, v, form, x.form);
        }
      }
      for (Val x : s.values()) {
        if (x != same && x.status == Val.EXISTING) {
          x.status = Val.RETRACTED;
          x.form = form;
        }
      }
    }
    if (same == null) {
      same = new Val(v, enc, tx, Val.ADDED);
      s.put(key, same);
    }
    same.asserted = true;
    same.form = form;
  }

  /** Retracts {@code raw} of {@code a} of {@code e}: a no-op when e did not have it. */
  void retract(long e, Attr a, Object raw, Object form) {
    Object v = Values.coerce(a, raw, form, attrs);
    byte[] enc = Codec.encode(v, tagOf(a, v));
    LinkedHashMap<Bytes, Val> s = slot(e, a);
    Bytes key = new Bytes(Codec.keyPart(enc));
    Val x = s.get(key);
    if (x == null) {
      x = new Val(v, enc, 0, Val.ABSENT);
      s.put(key, x);
    }
    if (x.asserted) {
      throw conflict(e, a, v, form, x.form);
    }
    if (x.status != Val.ABSENT) {
      x.status = Val.RETRACTED;
    }
    x.retracted = true;
    x.form = form;
  }

  /** Retracts the values {@code e} had before the transaction; values it asserts stay. */
  void retractAll(long e, Attr a, Object form) {
    for (Val x : slot(e, a).values()) {
      if (x.status == Val.ADDED || x.status == Val.ABSENT) {
        continue;
      }
      if (x.asserted) {
        throw conflict(e, a, x.v, form, x.form);
      }
      x.status = Val.RETRACTED;
      x.retracted = true;
      x.form = form;
    }
  }

  /**
   * Asserts {@code newRaw} for cardinality-one {@code a} of {@code e} if the
   * value e had before the transaction is {@code oldRaw} (none: null).
   *
   * @throws ExceptionInfo {@code :tx/cas-failed} when it is not
   */
  void cas(long e, Attr a, Object oldRaw, Object newRaw, Object form) {
    Val live = null; // the value before the transaction
    for (Val x : slot(e, a).values()) {
      if (x.status == Val.EXISTING || x.status == Val.RETRACTED) {
        live = x;
      }
    }
    boolean ok;
    if (oldRaw == null) {
      ok = live == null;
    } else {
      Object old = Values.coerce(a, oldRaw, form, attrs);
      ok = live != null && Arrays.equals(Codec.keyPart(Codec.encode(old, tagOf(a, old))),
          Codec.keyPart(live.encoded));
    }
    if (!ok) {
      throw Errors.error("tx/cas-failed", "Compare-and-swap failed: " + a.ident + " of entity "
          + e + " is " + (live == null ? "absent" : RT.printString(live.v)), "entity", e,
          "attribute", a.ident, "expected", oldRaw, "actual", live == null ? null : live.v,
          "form", form);
    }
    add(e, a, newRaw, form);
  }

  private static ExceptionInfo conflict(long e, Attr a, Object v, Object form, Object otherForm) {
    return Errors.error("tx/conflict", "The transaction both asserts and retracts, or asserts two "
        + "values of cardinality-one " + a.ident + " for entity " + e,
        "entity", e, "attribute", a.ident, "value", v, "form", form, "other-form", otherForm);
  }

  /**
   * The datoms the transaction writes: slot by slot, in the order they were
   * touched, its retractions then its assertions.
   */
  List<TxChange> changes() {
    List<TxChange> out = new ArrayList<>(slots.size());
    for (Map.Entry<Key, Slot> en : slots.entrySet()) {
      long e = en.getKey().e();
      Attr a = en.getValue().attr;
      Keyword ident = a.ident;
      int start = out.size(); // the slot's first datom: its retractions go before its assertions
      int retractions = 0;
      for (Val x : en.getValue().vals.values()) { // once: one iterator a slot
        if (x.status == Val.RETRACTED) {
          out.add(start + retractions++, new TxChange(new Datom(e, a.id, ident, x.v, tx, false), a,
              x.encoded, x.assertedTx));
        } else if (x.status == Val.ADDED) {
          out.add(new TxChange(new Datom(e, a.id, ident, x.v, tx, true), a, x.encoded, tx));
        }
      }
    }
    return out;
  }
}
