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
import java.util.HashMap;
import java.util.List;
import java.util.function.Function;

/**
 * The state of one transaction in progress: for each (entity, attribute) it
 * touches, a slot of the values the entity had before the transaction (read
 * on first touch) and those the transaction asserts, each with what the
 * transaction does to it. Assertions and retractions are applied here, and
 * checked against each other: a value both asserted and retracted, or two
 * values asserted for a cardinality-one attribute, is a {@code :tx/conflict},
 * as are two values of a cardinality-one attribute retracted explicitly (by
 * {@code :db/retract}, held or not, or by a retraction of all of them or of
 * the entity), as Datomic refuses them; a cardinality-one assertion retracts
 * the value held before, which is no explicit retraction. Values are
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
    /** Its key part ({@code Codec.keyPart(encoded)}): values are the same when their key parts are. */
    final byte[] key;
    /** The tx that asserted it: for an ADDED value, this transaction; 0 for ABSENT. */
    final long assertedTx;
    int status;
    /** Asserted by the transaction (redundantly when EXISTING). */
    boolean asserted;
    /** Retracted explicitly, not only replaced by a cardinality-one assertion. */
    boolean retracted;
    /** The tx-data form that last changed it; null for what the transactor derives. */
    Object form;

    Val(Object v, byte[] encoded, byte[] key, long assertedTx, int status) {
      this.v = v;
      this.encoded = encoded;
      this.key = key;
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

  /**
   * One slot: the entity, the attribute, and its values in the order they were met. A slot
   * holds few values, found by a linear scan of their key parts; past {@link #INDEXED} values a
   * hash index by key part joins the array (a cardinality-many attribute given many values).
   */
  private static final class Slot {
    static final int INDEXED = 8;
    final long e;
    final Attr attr;
    /** The first value (most slots hold one), then the others; n in all. */
    Val first;
    Val[] more;
    int n;
    /** By key part, once the slot holds more than INDEXED values; else null. */
    HashMap<Bytes, Val> index;

    Slot(long e, Attr attr) {
      this.e = e;
      this.attr = attr;
    }

    /** The i-th value, 0 <= i < n. */
    Val at(int i) {
      return i == 0 ? first : more[i - 1];
    }

    /** The value whose key part is {@code key}, or null. */
    Val find(byte[] key) {
      if (index != null) {
        return index.get(new Bytes(key));
      }
      for (int i = 0; i < n; i++) {
        Val x = at(i);
        if (Arrays.equals(x.key, key)) {
          return x;
        }
      }
      return null;
    }

    /** Adds {@code x}, whose key part no value of the slot has. */
    void add(Val x) {
      if (n == 0) {
        first = x;
      } else if (more == null) {
        more = new Val[] {x, null};
      } else {
        if (n - 1 == more.length) {
          more = Arrays.copyOf(more, more.length * 2);
        }
        more[n - 1] = x;
      }
      n++;
      if (index != null) {
        index.put(new Bytes(x.key), x);
      } else if (n > INDEXED) {
        index = new HashMap<>();
        for (int i = 0; i < n; i++) {
          index.put(new Bytes(at(i).key), at(i));
        }
      }
    }

    List<Val> list() {
      Val[] all = new Val[n];
      for (int i = 0; i < n; i++) {
        all[i] = at(i);
      }
      return Arrays.asList(all);
    }
  }

  private final Db db;
  private final Snapshot snap;
  private final Schema schema;
  private final long tx;
  /** The attributes as the transaction defines them, by ident, for checking tuples. */
  private final Function<Keyword, Attr> attrs;
  /** The slots, in the order they were first touched. */
  private final ArrayList<Slot> slots;
  /**
   * An open-addressing hash table of (e, aid) to 1 + the slot's index in {@link #slots}; 0 is
   * empty. Its length is a power of two, at least twice the number of slots.
   */
  private int[] table;

  /**
   * @param db the database before the transaction, read through {@code snap}
   * @param tx the transaction's id
   * @param attrs the attributes as the transaction defines them, by ident
   * @param expected about how many slots the transaction touches (its operations), to size the
   *     table once
   */
  Slots(Db db, Snapshot snap, long tx, Function<Keyword, Attr> attrs, int expected) {
    this.db = db;
    this.snap = snap;
    this.schema = db.schema();
    this.tx = tx;
    this.attrs = attrs;
    this.slots = new ArrayList<>(Math.max(16, expected));
    this.table = new int[Integer.highestOneBit(Math.max(16, expected) * 2 - 1) << 1];
  }

  /** The values of {@code a} of {@code e}: those before the transaction, and what it did. */
  Collection<Val> values(long e, Attr a) {
    return slot(e, a).list();
  }

  /** The values of the slot (e, aid) if the transaction touched it, else null (reads nothing). */
  Collection<Val> touched(long e, long aid) {
    int i = table[probe(table, e, aid)];
    return i == 0 ? null : slots.get(i - 1).list();
  }

  /** The slots touched so far, in the order they were first touched (a copy). */
  List<Key> keys() {
    List<Key> out = new ArrayList<>(slots.size());
    for (Slot s : slots) {
      out.add(new Key(s.e, s.attr.id));
    }
    return out;
  }

  private static int mix(long e, long aid) {
    long h = (e * 0x9E3779B97F4A7C15L) ^ (aid * 0xC2B2AE3D27D4EB4FL);
    return (int) (h ^ (h >>> 32));
  }

  // the index in t of slot (e, aid), or of the empty entry where it would go
  private int probe(int[] t, long e, long aid) {
    int mask = t.length - 1;
    for (int i = mix(e, aid) & mask; ; i = (i + 1) & mask) {
      int at = t[i];
      if (at == 0) {
        return i;
      }
      Slot s = slots.get(at - 1);
      if (s.e == e && s.attr.id == aid) {
        return i;
      }
    }
  }

  private Slot slot(long e, Attr a) {
    int i = probe(table, e, a.id);
    if (table[i] != 0) {
      return slots.get(table[i] - 1);
    }
    Slot slot = new Slot(e, a);
    slots.add(slot);
    table[i] = slots.size();
    if (slots.size() * 2 > table.length) {
      grow();
    }
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
        slot.add(new Val(d.v, enc, Codec.keyPart(enc), d.tx, Val.EXISTING));
      }
      scan.close();
    }
    return slot;
  }

  private void grow() {
    int[] t = new int[table.length * 2];
    for (int j = 0; j < slots.size(); j++) {
      Slot s = slots.get(j);
      t[probe(t, s.e, s.attr.id)] = j + 1;
    }
    table = t;
  }

  private static int tagOf(Attr a, Object v) {
    return a.valueType == Codec.T_ANY ? Codec.inferTag(v) : a.valueType;
  }

  /** Asserts {@code raw} (checked and coerced to a's type) for {@code a} of {@code e}. */
  void add(long e, Attr a, Object raw, Object form) {
    Object v = Values.coerce(a, raw, form, attrs);
    byte[] enc = Codec.encode(v, tagOf(a, v));
    byte[] key = Codec.keyPart(enc);
    Slot s = slot(e, a);
    Val same = s.find(key);
    if (same != null && same.retracted) {
      throw conflict(e, a, v, form, same.form);
    }
    if (!a.many) {
      for (int i = 0; i < s.n; i++) {
        Val x = s.at(i);
        if (x != same && x.asserted) {
          throw conflict(e, a, v, form, x.form);
        }
      }
      for (int i = 0; i < s.n; i++) {
        Val x = s.at(i);
        if (x != same && x.status == Val.EXISTING) {
          x.status = Val.RETRACTED;
          x.form = form;
        }
      }
    }
    if (same == null) {
      same = new Val(v, enc, key, tx, Val.ADDED);
      s.add(same);
    }
    same.asserted = true;
    same.form = form;
  }

  /** Retracts {@code raw} of {@code a} of {@code e}: a no-op when e did not have it. */
  void retract(long e, Attr a, Object raw, Object form) {
    Object v = Values.coerce(a, raw, form, attrs);
    byte[] enc = Codec.encode(v, tagOf(a, v));
    byte[] key = Codec.keyPart(enc);
    Slot s = slot(e, a);
    Val x = s.find(key);
    if (x == null) {
      x = new Val(v, enc, key, 0, Val.ABSENT);
      s.add(x);
    }
    if (x.asserted) {
      throw conflict(e, a, v, form, x.form);
    }
    checkOneRetracted(s, x, form);
    if (x.status != Val.ABSENT) {
      x.status = Val.RETRACTED;
    }
    x.retracted = true;
    x.form = form;
  }

  /**
   * Refuses the explicit retraction of {@code x} when {@code s}'s attribute is cardinality-one
   * and another of its values is retracted explicitly already.
   */
  private static void checkOneRetracted(Slot s, Val x, Object form) {
    if (s.attr.many) {
      return;
    }
    for (int i = 0; i < s.n; i++) {
      Val y = s.at(i);
      if (y != x && y.retracted) {
        throw Errors.error("tx/conflict", "The transaction retracts two values of"
            + " cardinality-one " + s.attr.ident + " for entity " + s.e, "entity", s.e,
            "attribute", s.attr.ident, "value", x.v, "other-value", y.v, "form", form,
            "other-form", y.form);
      }
    }
  }

  /** Retracts the values {@code e} had before the transaction; values it asserts stay. */
  void retractAll(long e, Attr a, Object form) {
    Slot s = slot(e, a);
    for (int i = 0; i < s.n; i++) {
      Val x = s.at(i);
      if (x.status == Val.ADDED || x.status == Val.ABSENT) {
        continue;
      }
      if (x.asserted) {
        throw conflict(e, a, x.v, form, x.form);
      }
      checkOneRetracted(s, x, form);
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
    for (Val x : slot(e, a).list()) {
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
          live.key);
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
    for (Slot s : slots) {
      long e = s.e;
      Attr a = s.attr;
      Keyword ident = a.ident;
      int start = out.size(); // the slot's first datom: its retractions go before its assertions
      int retractions = 0;
      for (int i = 0; i < s.n; i++) {
        Val x = s.at(i);
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
