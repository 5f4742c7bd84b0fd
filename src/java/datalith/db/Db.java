package datalith.db;

import clojure.lang.IFn;
import clojure.lang.Keyword;
import datalith.codec.Codec;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import datalith.store.SubDb;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.List;

/**
 * An immutable database value: the state after the transaction with basis
 * {@code t}, possibly viewed as-of, since or as history, possibly filtered, possibly with
 * speculative ({@code with}) transactions on top. It holds no store resources:
 * each read opens a short {@link Snapshot}. Any thread may use it.
 */
public final class Db {
  /** Transaction entity ids are {@code TX0 + t}. */
  public static final long TX0 = 3L << 42;
  static final long NO_AS_OF = Long.MAX_VALUE;
  static final long NO_SINCE = -1;

  /** Where the store is: the connection's, which may close. */
  final Source source;
  final Schema schema;
  final long basisT;
  /** The basis t of the committed store state this value reads through (= basisT without overlay). */
  final long storeT;
  final long asOfT;
  final long sinceT;
  final boolean history;
  final Overlay overlay;
  final long nextEid;
  final Stats stats;
  /** The predicates of a filtered value ({@link #filtered}), or null: every datom visible. */
  final Filter filter;
  /** The instant of a valid-at view ({@link #validAt}), or null. */
  final Date validAt;
  /** The value a valid-at view was made from (null when this is none). */
  final Db validBase;
  /** The tracked pairs a valid-at view's scans hide ({@code e -> aids}), or null. */
  final LongMap<long[]> validHidden;
  /** The lines whose keys a valid-at view's scans show at its instant, or null. */
  final ValidTime.Lines validShown;
  /** This value's replayed valid-time lines, made on first use (a memo of immutable data). */
  private volatile ValidTime.Lines validLines;

  Db(Source source, Schema schema, long basisT, long storeT, long asOfT, long sinceT, boolean history,
      Overlay overlay, long nextEid, Stats stats) {
    this(source, schema, basisT, storeT, asOfT, sinceT, history, overlay, nextEid, stats, null);
  }

  private Db(Source source, Schema schema, long basisT, long storeT, long asOfT, long sinceT,
      boolean history, Overlay overlay, long nextEid, Stats stats, Filter filter) {
    this(source, schema, basisT, storeT, asOfT, sinceT, history, overlay, nextEid, stats, filter,
        null, null, null);
  }

  private Db(Source source, Schema schema, long basisT, long storeT, long asOfT, long sinceT,
      boolean history, Overlay overlay, long nextEid, Stats stats, Filter filter, Date validAt,
      Db validBase, ValidTime.Lines validShown) {
    this.validAt = validAt;
    this.validBase = validBase;
    this.validShown = validShown;
    this.validHidden = validShown == null ? null : validShown.hidden();
    this.source = source;
    this.schema = schema;
    this.basisT = basisT;
    this.storeT = storeT;
    this.asOfT = asOfT;
    this.sinceT = sinceT;
    this.history = history;
    this.overlay = overlay;
    this.nextEid = nextEid;
    this.stats = stats;
    this.filter = filter;
  }

  /** Datom counts per attribute (of the current state: an estimate for views). */
  public Stats stats() {
    return stats;
  }

  public static long tToTx(long t) {
    return TX0 + t;
  }

  public static long txToT(long tx) {
    return tx - TX0;
  }

  /** The t of the last transaction this value includes. */
  public long basisT() {
    return basisT;
  }

  /** The as-of point, or null. */
  public Long asOfT() {
    if (validBase != null) {
      return validBase.asOfT();
    }
    return asOfT == NO_AS_OF ? null : asOfT;
  }

  /** The since point, or null. */
  public Long sinceT() {
    return sinceT == NO_SINCE ? null : sinceT;
  }

  public boolean isHistory() {
    return history;
  }

  public Schema schema() {
    return schema;
  }

  /**
   * The first user entity id no transaction up to {@code t} used ({@link EntityBounds}), read
   * through {@code s} with at most {@code allowance} more datoms of the log;
   * {@link EntityBounds#UNKNOWN} while not read, {@link EntityBounds#NONE} when it cannot be, or
   * for a value with a {@code with} overlay (whose transactions the log does not hold).
   */
  long entityBound(Snapshot s, long t, long allowance) {
    EntityBounds b = overlay == null ? source.entityBounds() : null;
    return b == null ? EntityBounds.NONE : b.at(s, t, allowance);
  }

  /** The entity id the next new entity would get. */
  public long nextEid() {
    return nextEid;
  }

  // ---- views

  /** This value as it was at {@code point}: a t, a transaction id or a {@link Date}. */
  public Db asOf(Object point) {
    if (validBase != null) {
      return validBase.asOf(point).validAt(validAt);
    }
    long t = toT(point);
    return new Db(source, schema, basisT, storeT, Math.min(asOfT, t), sinceT, history, overlay,
        nextEid, stats, filter);
  }

  /** Only the datoms asserted after {@code point} (a t, a transaction id or a Date). */
  public Db since(Object point) {
    refuseValidView("since");
    long t = toT(point);
    return new Db(source, schema, basisT, storeT, asOfT, Math.max(sinceT, t), history, overlay,
        nextEid, stats, filter);
  }

  /** Every assertion and retraction, each as a datom with its {@code added} flag. */
  public Db historyView() {
    refuseValidView("history");
    return new Db(source, schema, basisT, storeT, asOfT, sinceT, true, overlay, nextEid, stats,
        filter);
  }

  /**
   * This value with only the datoms {@code (pred this datom)} accepts, as well as those its
   * filters accept: every read of it (datoms, queries, pulls, entities, lookup refs) and of the
   * views made from it (as-of, since, history) sees only them.
   */
  public Db filtered(IFn pred) {
    if (validBase != null) {
      return validBase.filtered(pred).validAt(validAt);
    }
    return new Db(source, schema, basisT, storeT, asOfT, sinceT, history, overlay, nextEid, stats,
        new Filter(filter, pred, this));
  }

  /**
   * Whether this value is strict: its connection refuses queries, pulls and transactions that
   * name attributes which are not installed.
   */
  public boolean isStrict() {
    return source.strict();
  }

  /** Whether this value is filtered ({@link #filtered}). */
  public boolean isFiltered() {
    return filter != null;
  }

  /**
   * This value without as-of, since or history views, nor a {@link #filtered} predicate (its
   * {@code with} overlay kept).
   */
  public Db current() {
    if (validBase != null) {
      return validBase.current();
    }
    return asOfT == NO_AS_OF && sinceT == NO_SINCE && !history && filter == null ? this
        : new Db(source, schema, basisT, storeT, NO_AS_OF, NO_SINCE, false, overlay, nextEid, stats);
  }

  /**
   * This value as the facts valid at instant {@code inst} show it, as they were known at this
   * value's basis or as-of point (see {@link ValidTime}); composes with {@link #asOf} in either
   * order. A valid-at view of a valid-at view is the first's base at the new instant.
   *
   * @throws clojure.lang.ExceptionInfo {@code :db/invalid-valid-time} for a non-instant or an
   *     instant at or after {@link ValidTime#END_OF_TIME}; {@code :db/valid-at-view} for a since
   *     or history view
   */
  public Db validAt(Object inst) {
    if (!(inst instanceof Date d)) {
      throw Errors.error("db/invalid-valid-time", "valid-at takes an instant (a java.util.Date)",
          "instant", inst);
    }
    if (d.getTime() >= ValidTime.END_OF_TIME) {
      throw Errors.error("db/invalid-valid-time", "valid-at takes an instant before the end of"
          + " time, #inst \"9999-12-31T23:59:59.999-00:00\" (where open intervals end)",
          "instant", inst);
    }
    if (validBase != null) {
      return validBase.validAt(d);
    }
    if (history || sinceT != NO_SINCE) {
      throw Errors.error("db/valid-at-view", "valid-at takes a value without a since or history"
          + " view", "db", toString());
    }
    return ValidTime.view(this, new Date(d.getTime()));
  }

  /** The instant of this valid-at view, or null when it is none. */
  public Date validAtInstant() {
    return validAt == null ? null : new Date(validAt.getTime());
  }

  /**
   * The valid-at view of this value at {@code tv} (its as-of point) at instant {@code inst},
   * its scans hiding the pairs of {@code lines} and showing their keys that hold at {@code inst}
   * (null: no tracked pair).
   */
  Db validView(long tv, Date inst, ValidTime.Lines lines) {
    return new Db(source, schema, basisT, storeT, Math.min(asOfT, tv), sinceT, history, overlay,
        nextEid, stats, filter, inst, this, lines);
  }

  /**
   * This value's valid-time lines ({@link ValidTime#lines}), replayed on the first call, or
   * taken from its source's {@link ValidCache} when another value with the same store state and
   * as-of point (no overlay, no filter, same schema) replayed them already; else from the
   * cache's lines of an earlier point, replaying only the pairs changed since
   * ({@link ValidTime#after}).
   */
  ValidTime.Lines validLines() {
    ValidTime.Lines l = validLines;
    if (l == null) {
      ValidCache cache = overlay == null && filter == null ? source.validCache() : null;
      long point = Math.min(basisT, asOfT);
      l = cache == null ? null : cache.get(point, schema);
      ValidTime.Lines prev = l == null && cache != null ? cache.before(point, schema) : null;
      if (prev != null) {
        l = ValidTime.after(this, prev);
      }
      if (l == null) {
        l = ValidTime.lines(this);
        if (cache != null) {
          cache.put(point, schema, l);
        }
      }
      validLines = l;
    }
    return l;
  }

  /** Refuses a since or history view of a valid-at view. */
  private void refuseValidView(String view) {
    if (validBase != null) {
      throw Errors.error("db/valid-at-view", "A valid-at view has no " + view + " view",
          "view", view);
    }
  }

  /**
   * This value, current, with a transaction's {@code changes} laid over it in memory: the value
   * after {@code with}. Nothing is written; the result reads the same store, through the overlay.
   *
   * @param schema the schema after the transaction
   * @param t the transaction's t, above this value's basis t
   * @param nextEid the next entity id after the transaction
   */
  public Db withChanges(List<TxChange> changes, Schema schema, long t, long nextEid) {
    Db before = current();
    Overlay ov = Overlay.copyOf(before.overlay);
    Writes.toOverlay(ov, changes, t);
    return new Db(source, schema, t, before.storeT, NO_AS_OF, NO_SINCE, false, ov, nextEid,
        before.stats.with(changes));
  }

  /** The first t at {@code point}: a t, a tx id, or the first transaction at or after a Date. */
  private long firstTFrom(Object point) {
    return point instanceof Date d ? tAtInstant(new Date(d.getTime() - 1)) + 1 : toT(point);
  }

  /** The t of a point in time: a t, a tx id, or the last transaction at or before a Date. */
  public long toT(Object point) {
    if (point instanceof Date d) {
      return tAtInstant(d);
    }
    if (point instanceof Number n) {
      long x = n.longValue();
      return x >= TX0 ? txToT(x) : x;
    }
    throw Errors.error("db/invalid-point", "Expected a t, a transaction id or a java.util.Date",
        "point", point);
  }

  private long tAtInstant(Date d) {
    KeyBuilder lo = new KeyBuilder().putLong(Schema.TX_INSTANT);
    KeyBuilder hi = new KeyBuilder().putLong(Schema.TX_INSTANT)
        .put(Codec.keyPart(Codec.encode(new Date(d.getTime() + 1), Codec.T_INSTANT)));
    // txInstants never go back (TxInstant refuses an older one), so the last transaction at or
    // before d is among the last AVET keys below hi: read the chunk of about 64 keys there
    // (whole instants: Reverse cuts at a value's boundary). When the chunk shows none (every
    // key in it past this value's basis), read them all.
    byte[] chunk = Reverse.chunkStart(this, Index.AVET, hi.toBytes(), 64);
    byte[] prefix = lo.toBytes();
    long t = chunk == null || Arrays.compare(chunk, prefix) <= 0 ? -1
        : maxT(lo.view(), direct(chunk), hi.view());
    return t >= 0 ? t : maxT(lo.view(), null, hi.view());
  }

  /** The largest t of the txInstant keys from {@code seek} (null: the first) up to {@code hi}. */
  private long maxT(ByteBuffer prefix, ByteBuffer seek, ByteBuffer hi) {
    long t = -1;
    try (Snapshot s = snapshot()) {
      IndexScan scan = current().scan(s, Index.AVET, prefix, seek, hi, null);
      while (scan.next()) {
        t = Math.max(t, txToT(scan.e()));
      }
      scan.close();
    }
    return t;
  }

  // ---- reading

  /** Opens a short read; close it before returning to the caller. */
  public Snapshot snapshot() {
    return new Snapshot(source.store().beginRead(), overlay, validShown,
        validAt == null ? 0 : validAt.getTime());
  }

  /**
   * Like {@link #scanRange}, continuing strictly after {@code resumeAfter} (a key from
   * {@link IndexScan#lastKey()} of an earlier scan of the same range; null: from the start), so
   * that a long scan can go on in short reads.
   */
  public IndexScan scan(Snapshot s, Index index, ByteBuffer prefix, ByteBuffer seek,
      ByteBuffer upper, byte[] resumeAfter) {
    return new IndexScan(this, s, index, prefix, seek, upper, resumeAfter);
  }

  /**
   * Datoms of {@code index} whose key starts with {@code prefix}, from
   * {@code seek} (null = the prefix) up to {@code upper} exclusive (null = no bound).
   */
  public IndexScan scanRange(Snapshot s, Index index, ByteBuffer prefix, ByteBuffer seek,
      ByteBuffer upper) {
    return new IndexScan(this, s, index, prefix, seek, upper, null);
  }

  /** Datoms of {@code index} whose key starts with {@code prefix}. */
  public IndexScan scan(Snapshot s, Index index, ByteBuffer prefix) {
    return new IndexScan(this, s, index, prefix, null, null, null);
  }

  /** Decodes the value whose key part starts at {@code off} of {@code key}. */
  Object decodeValue(Snapshot s, ByteBuffer key, int off) {
    if (!Codec.isOverflow(key, off)) {
      return Codec.decode(key, off);
    }
    int h = Codec.overflowHashOffset(key, off);
    ByteBuffer hash = ByteBuffer.allocateDirect(16);
    hash.put(0, key, h, 16);
    ByteBuffer full = s.get(SubDb.BLOBS, hash);
    if (full == null) {
      throw Errors.error("store/corrupt", "A long value's bytes are missing from the store");
    }
    return Codec.decode(full, 0);
  }

  /**
   * A chunk of up to {@code n} datoms: {@code [datoms resumeKey]}, resumeKey null
   * when the scan is exhausted. Each chunk is one short read.
   */
  public Object[] chunk(Index index, byte[] prefix, byte[] seek, byte[] upper, byte[] resumeAfter,
      int n) {
    List<Datom> out = new ArrayList<>(Math.min(n, 1024));
    try (Snapshot s = snapshot()) {
      IndexScan scan = scan(s, index, direct(prefix), seek == null ? null : direct(seek),
          upper == null ? null : direct(upper), resumeAfter);
      while (out.size() < n && scan.next()) {
        out.add(scan.datom());
      }
      // never resume inside one key's datoms or a sorted run
      while (scan.hasPending() && scan.next()) {
        out.add(scan.datom());
      }
      byte[] resume = out.size() >= n ? scan.lastKey() : null;
      scan.close();
      return new Object[] {out, resume};
    }
  }

  static ByteBuffer direct(byte[] b) {
    return ByteBuffer.allocateDirect(b.length).put(b).flip();
  }

  // ---- entity resolution

  /**
   * The entity id named by {@code ref}: an id, an ident keyword, or a lookup ref
   * {@code [unique-attr value]}; -1 when it names no entity.
   */
  public long entid(Snapshot s, Object ref) {
    if (ref instanceof Long || ref instanceof Integer || ref instanceof Short) {
      long e = ((Number) ref).longValue();
      if (e < 0) {
        throw Errors.error("db/invalid-entity", "An entity id must not be negative", "entity", ref);
      }
      return e;
    }
    if (ref instanceof Keyword k) {
      Long e = schema.entid(k);
      return e == null ? -1 : e;
    }
    if (ref instanceof List<?> l && !(ref instanceof clojure.lang.ISeq)) {
      if (l.size() != 2 || !(l.get(0) instanceof Keyword)) {
        throw Errors.error("db/invalid-lookup-ref",
            "A lookup ref is [unique-attribute value]", "lookup-ref", ref);
      }
      Attr a = schema.attr((Keyword) l.get(0));
      if (a == null || !a.isUnique()) {
        throw Errors.error("db/invalid-lookup-ref",
            "A lookup ref's attribute must be :db/unique", "lookup-ref", ref, "attribute", l.get(0));
      }
      Object v = l.get(1);
      if (v == null) {
        return -1;
      }
      return lookup(s, a, a.isRef() ? entid(s, v) : v);
    }
    throw Errors.error("db/invalid-entity",
        "Expected an entity id, an ident or a lookup ref", "entity", ref);
  }

  /** The entity whose unique attribute {@code a} has value {@code v}, or -1. */
  public long lookup(Snapshot s, Attr a, Object v) {
    byte[] vpart = valuePart(a, v);
    if (vpart == null) {
      return -1;
    }
    KeyBuilder kb = new KeyBuilder().putLong(a.id).put(vpart);
    IndexScan scan = scan(s, Index.AVET, kb.view());
    long e = scan.next() ? scan.datom().e : -1;
    scan.close();
    return e;
  }

  /**
   * The key part of value {@code v} of attribute {@code a} (refs must already be
   * entity ids), or null when {@code v} is not of the attribute's type.
   */
  public static byte[] valuePart(Attr a, Object v) {
    int tag = a.valueType == Codec.T_ANY ? Codec.inferTag(v) : a.valueType;
    Object c = Codec.coerce(v, tag);
    return c == null ? null : Codec.keyPart(Codec.encode(c, tag));
  }

  // ---- index components (the datoms API)

  /**
   * The key prefix for {@code components} (in the index's order: e a v tx for
   * EAVT, a e v tx for AEVT, a v e tx for AVET, v a e tx for VAET), or null
   * when they cannot match any datom (an unknown ident, a missing lookup ref).
   */
  public byte[] keyFor(Index index, Object[] components) {
    KeyBuilder kb = new KeyBuilder(false);
    Attr attr = null;
    try (Snapshot s = snapshot()) {
      for (int i = 0; i < components.length; i++) {
        Object c = components[i];
        if (c == null) {
          break;
        }
        if (i > 3) {
          throw Errors.error("db/invalid-components", "At most four index components",
              "components", java.util.Arrays.asList(components));
        }
        char role = index.name().toLowerCase(java.util.Locale.ROOT).charAt(i);
        switch (role) {
          case 'e' -> {
            long e = entid(s, c);
            if (e < 0) {
              return null;
            }
            kb.putLong(e);
          }
          case 'a' -> {
            attr = c instanceof Keyword k ? schema.attr(k)
                : c instanceof Number n ? schema.attr(n.longValue()) : null;
            if (attr == null) {
              if (!(c instanceof Keyword) && !(c instanceof Number)) {
                throw Errors.error("db/invalid-attribute", "Expected an attribute ident",
                    "attribute", c);
              }
              return null;
            }
            kb.putLong(attr.id);
          }
          case 'v' -> {
            if (index == Index.VAET) {
              long e = entid(s, c);
              if (e < 0) {
                return null;
              }
              kb.putLong(e);
            } else {
              Object v = c;
              if (attr.isRef()) {
                long e = entid(s, c);
                if (e < 0) {
                  return null;
                }
                v = e;
              }
              byte[] vpart = valuePart(attr, v);
              if (vpart == null) {
                return null;
              }
              kb.put(vpart);
            }
          }
          default -> {
            if (!(c instanceof Number n)) {
              throw Errors.error("db/invalid-components", "The tx component is a transaction id",
                  "tx", c);
            }
            kb.putLong(n.longValue() >= TX0 ? n.longValue() : tToTx(n.longValue()));
          }
        }
      }
    }
    return kb.toBytes();
  }

  /** The key of value {@code v} of attribute {@code attr} in AVET ({@code [aid vpart]}), or null. */
  public byte[] avetKey(Keyword attr, Object v) {
    Attr a = schema.attr(attr);
    if (a == null) {
      return null;
    }
    KeyBuilder kb = new KeyBuilder(false).putLong(a.id);
    if (v != null) {
      Object x = v;
      if (a.isRef()) {
        try (Snapshot s = snapshot()) {
          long e = entid(s, v);
          if (e < 0) {
            return null;
          }
          x = e;
        }
      }
      byte[] vpart = valuePart(a, x);
      if (vpart == null) {
        throw Errors.error("db/value-type", "The bound is not a value of " + attr,
            "attribute", attr, "value", v);
      }
      kb.put(vpart);
    }
    return kb.toBytes();
  }

  /**
   * An AVET bound ({@link #avetKey}) widened to take in every long value that
   * shares its key prefix, whose keys sort by hash: the start of that run for a
   * lower bound, past its end for an upper one. The bound itself when its value
   * is short. Callers compare values at the edges.
   */
  public static byte[] widenBound(byte[] bound, boolean upper) {
    if (bound == null || bound.length <= 8 || !Codec.isOverflow(ByteBuffer.wrap(bound), 8)) {
      return bound;
    }
    int hashOff = Codec.overflowHashOffset(ByteBuffer.wrap(bound), 8);
    byte[] out = java.util.Arrays.copyOf(bound, hashOff + (upper ? 17 : 0));
    java.util.Arrays.fill(out, hashOff, out.length, (byte) 0xFF);
    return out;
  }

  // ---- the log

  /**
   * The transactions with {@code start <= t < end} (each a t, a tx id or a
   * Date; nulls for open ends), as
   * {@code [t tx datoms]} arrays in t order.
   */
  public List<Object[]> txRange(Object start, Object end) {
    List<Object[]> out = new ArrayList<>();
    long from = start == null ? 0 : firstTFrom(start);
    long to = Math.min(end == null ? Long.MAX_VALUE : firstTFrom(end), basisT + 1);
    try (Snapshot s = snapshot()) {
      datalith.store.Cursor c = s.cursor(SubDb.LOG);
      ByteBuffer k = ByteBuffer.allocateDirect(8).putLong(0, Math.max(0, from));
      for (boolean ok = c.seek(k); ok; ok = c.next()) {
        long t = LogRecord.t(c.key());
        if (t >= to) {
          break;
        }
        long tx = tToTx(t);
        List<LogRecord.Entry> entries = LogRecord.read(t, c.val(), Meta.FORMAT_VERSION);
        List<Datom> datoms = new ArrayList<>(entries.size());
        for (LogRecord.Entry d : entries) {
          datoms.add(new Datom(d.e(), d.aid(), schema.ident(d.aid()), LogRecord.value(t, d), tx,
              d.added()));
        }
        out.add(new Object[] {t, tx, datoms});
      }
      c.close();
    }
    return out;
  }

  @Override
  public String toString() {
    Long asOf = asOfT();
    return "#datalith/db {:basis-t " + basisT + (asOf == null ? "" : " :as-of " + asOf)
        + (sinceT == NO_SINCE ? "" : " :since " + sinceT) + (history ? " :history true" : "")
        + (filter == null ? "" : " :filtered true")
        + (validAt == null ? "" : " :valid-at " + validAt.toInstant()) + "}";
  }
}
