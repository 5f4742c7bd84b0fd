package datalith.db;

import clojure.lang.Keyword;
import datalith.codec.Bytes;
import datalith.codec.Codec;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import datalith.store.Cursor;
import datalith.store.SubDb;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Date;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Valid time: the values each (entity, attribute) pair has on a valid-time line, as known at a
 * database value's basis or as-of point.
 *
 * <p>Events are datoms {@code [tx :db.valid/event [aid e v added from to]]} on the transaction
 * entity (the transactor's {@code ValidEvents} writes them), so the log, the indexes, as-of,
 * backups, export and import carry them like any datom. A pair is tracked when it has an event
 * visible in the value. For an untracked pair the value valid at instant {@code i} is the value
 * as of the last transaction whose txInstant is {@code <= i} (a fact asserted by T1 and
 * retracted by T2 is valid over {@code [txInstant T1, txInstant T2)}). A tracked pair's events
 * are replayed in transaction order on its valid-time line: an assertion over {@code [f, t)}
 * replaces every value over {@code [f, t)} (cardinality one: the later transaction wins where
 * intervals overlap) or adds its value there (cardinality many); a retraction over
 * {@code [f, t)} removes its value there (within one transaction, retractions first, then
 * assertions by valid-from); a plain assertion or retraction is an event over
 * {@code [txInstant, forever)}, except a cardinality-one value's retraction by the assertion
 * that replaces it, which is none.
 *
 * <p>{@link #view} is the as-of view at that last transaction, whose scans hide every datom of
 * the tracked pairs, and whose cursors ({@link ValidCursor}) merge in the keys of the values
 * valid at the instant, each under the transaction that asserted it: {@link IndexScan} shows
 * those keys whatever their transaction, and only they escape the view's as-of point and the
 * hiding. The pairs' lines are replayed once per point ({@link Db#validLines}, shared through
 * the connection's {@link ValidCache}) into sorted keys with the intervals they hold over
 * ({@link ValidKeys}); the first view at a later point replays only the pairs that the
 * transactions since an earlier cached point touched ({@link #after}). A view costs nothing
 * more, and a scan meets only the keys in its range; a datom its as-of point hides is passed
 * before any lookup among the tracked pairs.
 * A value without valid-at reads no event.
 */
public final class ValidTime {
  /** The entity id of {@code :db.valid/event}: fixed, below the user ids, installed on first use. */
  public static final long EVENT = 13;
  public static final Keyword K_EVENT = Keyword.intern("db.valid", "event");
  /** The value of a key of a view's lines (what {@link ValidCursor#val} gives). */
  static final ByteBuffer MARK = ByteBuffer.wrap(new byte[] {1}).asReadOnlyBuffer();
  /**
   * The end of valid time, {@code #inst "9999-12-31T23:59:59.999-00:00"} in epoch milliseconds
   * (XTDB's {@code end-of-time}): the {@code to} every open-ended interval is handed out with,
   * the last instant an {@code #inst} prints and reads back. A {@code :db/valid-to} at or after
   * it is open-ended; a valid-from and a valid-at instant are before it.
   */
  public static final long END_OF_TIME = 253402300799999L;
  /** An open end on a replayed line (an event's {@code to} of nil); handed out as the end. */
  private static final long OPEN = Long.MAX_VALUE;

  private ValidTime() {}

  /** One piece of a pair's valid-time line: value {@code v} over [from, to), asserted by tx. */
  private record Seg(byte[] key, byte[] enc, long from, long to, long tx) {}

  /** An event of a pair: the value's encoding and key part, over [from, to), by tx. */
  private record Event(long tx, boolean added, byte[] enc, byte[] key, long from, long to,
      boolean interval) {}

  /**
   * The replayed valid-time lines of every tracked pair of a value (they do not depend on the
   * instant: a value computes them once, see {@link Db#validLines}), as the index keys of every
   * piece's value by sub-database, each with the intervals over which it holds
   * ({@code [from0, to0, from1, ...]}: a value cut in two keeps one key), the overflow values of
   * those keys by hash, and the tracked pairs by entity ({@code e -> aids}), which a valid-at
   * view's scans hide. A view's scans merge the keys in their range that hold at its instant
   * ({@link ValidCursor}). {@code point} is the t they were replayed at, {@code events} every
   * tracked pair's interval events (never changed once made): the lines of a later point start
   * from them ({@link #after}).
   */
  record Lines(LongMap<long[]> hidden, Map<SubDb, ValidKeys> keys,
      TreeMap<ByteBuffer, ByteBuffer> blobs, long point, Map<List<Long>, List<Event>> events) {
    boolean isEmpty() {
      return hidden.size() == 0;
    }
  }

  /** The point {@code base}'s lines are replayed at: its basis t or as-of point, the smaller. */
  static long point(Db base) {
    return Math.min(base.basisT, base.asOfT);
  }

  /** The lines of {@code base}: its tracked pairs' events, replayed. */
  static Lines lines(Db base) {
    try (Snapshot s = base.snapshot()) {
      Map<List<Long>, List<Event>> tracked = events(base, s);
      return replayAll(base, s, tracked, tracked.keySet(), null);
    }
  }

  /**
   * The lines of {@code base} from {@code prev}, the lines of the same store at an earlier point
   * with the same schema: replays only the pairs that the transactions after {@code prev.point}
   * gave an event or a plain datom (a pair tracked by then), read from the log, and keeps every
   * other pair's keys. Null when the log does not hold each of those transactions (the caller
   * replays all) or one of them retracts an event.
   */
  static Lines after(Db base, Lines prev) {
    long to = point(base);
    Map<List<Long>, List<Event>> tracked = new HashMap<>(prev.events);
    Set<List<Long>> changed = new HashSet<>();
    List<List<Long>> plain = new ArrayList<>();
    try (Snapshot s = base.snapshot()) {
      Cursor c = s.cursor(SubDb.LOG);
      long expect = prev.point + 1;
      try {
        for (boolean ok = c.seek(LogRecord.key(expect)); ok; ok = c.next()) {
          long t = LogRecord.t(c.key());
          if (t > to) {
            break;
          }
          if (t != expect++) {
            return null;
          }
          for (LogRecord.Entry d : LogRecord.read(t, c.val(), Meta.FORMAT_VERSION)) {
            if (d.aid() != EVENT) {
              plain.add(List.of(d.e(), d.aid()));
              continue;
            }
            if (!d.added()) {
              return null;
            }
            List<?> ev = (List<?>) LogRecord.value(t, d);
            Event x = event(base, d.e(), ev);
            if (x == null) {
              continue;
            }
            List<Long> pair = List.of((Long) ev.get(1), (Long) ev.get(0));
            List<Event> evs = new ArrayList<>(tracked.getOrDefault(pair, List.of()));
            evs.add(x);
            tracked.put(pair, evs); // a copy: prev's lists stay as they were
            changed.add(pair);
          }
        }
      } finally {
        c.close();
      }
      if (expect != to + 1) {
        return null;
      }
      for (List<Long> pair : plain) {
        if (tracked.containsKey(pair)) {
          changed.add(pair);
        }
      }
      return replayAll(base, s, tracked, changed, prev);
    }
  }

  /**
   * The lines of {@code tracked} (every tracked pair's interval events), replaying the pairs of
   * {@code replay} and, with a {@code prev}, keeping prev's keys of every other pair.
   */
  private static Lines replayAll(Db base, Snapshot s, Map<List<Long>, List<Event>> tracked,
      Set<List<Long>> replay, Lines prev) {
    LongMap<long[]> hidden = prev == null ? new LongMap<>(16) : prev.hidden.copy();
    LongMap<long[]> replayed = new LongMap<>(16); // the pairs of replay, e -> aids
    Map<SubDb, TreeMap<ByteBuffer, long[]>> keys = new EnumMap<>(SubDb.class);
    TreeMap<ByteBuffer, ByteBuffer> blobs = prev == null ? new TreeMap<>(Overlay::compare)
        : new TreeMap<>(prev.blobs);
    KeyBuilder kb = new KeyBuilder();
    Map<Long, Long> instants = new HashMap<>();
    for (List<Long> pair : replay) {
      long e = pair.get(0);
      Attr a = base.schema.attr(pair.get(1)); // there: every event's attribute is
      List<Event> evs = new ArrayList<>(tracked.get(pair));
      evs.addAll(plainEvents(base, s, e, a, instants));
      for (Seg g : replay(evs, a)) {
        add(keys, blobs, kb, e, a.id, g);
      }
      addPair(replayed, e, a.id);
      if (prev == null || !prev.events.containsKey(pair)) {
        addPair(hidden, e, a.id);
      }
    }
    Map<SubDb, ValidKeys> sorted = new EnumMap<>(SubDb.class);
    for (SubDb db : SubDb.values()) {
      TreeMap<ByteBuffer, long[]> more = keys.get(db);
      ValidKeys old = prev == null ? null : prev.keys.get(db);
      if (old != null) {
        sorted.put(db, old.merge(db, replayed, more));
      } else if (more != null) {
        sorted.put(db, new ValidKeys(more));
      }
    }
    return new Lines(hidden, sorted, blobs, point(base), tracked);
  }

  private static void addPair(LongMap<long[]> pairs, long e, long aid) {
    long[] aids = pairs.get(e);
    long[] more = aids == null ? new long[1] : Arrays.copyOf(aids, aids.length + 1);
    more[more.length - 1] = aid;
    pairs.put(e, more);
  }

  /** {@code base} (no valid-at view itself) as the values valid at {@code inst} show it. */
  static Db view(Db base, Date inst) {
    long tv = Math.min(point(base), base.toT(inst));
    Lines lines = base.validLines();
    return base.validView(tv, inst, lines.isEmpty() ? null : lines);
  }

  /** Whether {@code hidden} (e -> aids) holds the pair {@code (e, aid)}. */
  static boolean hides(LongMap<long[]> hidden, long e, long aid) {
    long[] aids = hidden.get(e);
    if (aids != null) {
      for (long x : aids) {
        if (x == aid) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * Every valid-time version of attribute {@code a} in {@code db} (as known at its basis or
   * as-of point), of entity {@code e} or of every entity when {@code e < 0}: one
   * {@code [e v from to tx]} per piece of each pair's valid-time line before {@link #END_OF_TIME},
   * in entity order, {@code to} the instant {@link #END_OF_TIME} when open-ended (so that
   * intervals compare as instants, and print and read back), {@code tx} the transaction that
   * asserted the value. A piece from the end of time on (only a txInstant or a bound written
   * before the end was refused can start there) is left out.
   */
  public static List<Object[]> intervals(Db db, long e, Attr a) {
    if (db.validBase != null || db.history || db.sinceT != Db.NO_SINCE) {
      throw Errors.error("db/valid-at-view", "valid-intervals reads a value without valid-at,"
          + " since or history views", "db", db.toString());
    }
    List<Object[]> out = new ArrayList<>();
    try (Snapshot s = db.snapshot()) {
      Map<List<Long>, List<Event>> tracked = events(db, s);
      Map<Long, Long> instants = new HashMap<>();
      KeyBuilder prefix = new KeyBuilder().putLong(a.id);
      if (e >= 0) {
        prefix.putLong(e);
      }
      // the entities of a's plain history, each once, in order
      IndexScan scan = db.historyView().scan(s, Index.AEVT, prefix.view());
      java.util.TreeSet<Long> entities = new java.util.TreeSet<>();
      while (scan.next()) {
        entities.add(scan.datom().e);
      }
      scan.close();
      for (List<Long> pair : tracked.keySet()) {
        if (pair.get(1) == a.id && (e < 0 || pair.get(0) == e)) {
          entities.add(pair.get(0));
        }
      }
      for (long x : entities) {
        List<Event> evs = new ArrayList<>(tracked.getOrDefault(List.of(x, a.id), List.of()));
        evs.addAll(plainEvents(db, s, x, a, instants));
        List<Seg> line = replay(evs, a);
        line.sort(Comparator.comparingLong(Seg::from));
        for (Seg g : line) {
          if (g.from < END_OF_TIME) {
            out.add(new Object[] {x, Codec.decode(ByteBuffer.wrap(g.enc), 0), new Date(g.from),
                new Date(Math.min(g.to, END_OF_TIME)), g.tx});
          }
        }
      }
    }
    return out;
  }

  /** The interval events visible in {@code db}, by pair {@code [e aid]}. */
  private static Map<List<Long>, List<Event>> events(Db db, Snapshot s) {
    Map<List<Long>, List<Event>> out = new HashMap<>();
    if (db.schema.attr(EVENT) == null) {
      return out;
    }
    KeyBuilder prefix = new KeyBuilder().putLong(EVENT);
    IndexScan scan = db.scan(s, Index.AEVT, prefix.view());
    while (scan.next()) {
      Datom d = scan.datom();
      List<?> ev = (List<?>) d.v;
      Event x = event(db, d.e, ev);
      if (x != null) {
        out.computeIfAbsent(List.of((Long) ev.get(1), (Long) ev.get(0)), k -> new ArrayList<>())
            .add(x);
      }
    }
    scan.close();
    return out;
  }

  /**
   * The event of value {@code ev} ({@code [aid e v added from to]}) on transaction {@code tx};
   * null when {@code db}'s schema has no attribute {@code aid}.
   */
  private static Event event(Db db, long tx, List<?> ev) {
    Attr a = db.schema.attr((Long) ev.get(0));
    if (a == null) {
      return null;
    }
    byte[] enc = encode(a, ev.get(2));
    Date to = (Date) ev.get(5);
    return new Event(tx, (Boolean) ev.get(3), enc, Codec.keyPart(enc),
        ((Date) ev.get(4)).getTime(), to == null ? OPEN : to.getTime(), true);
  }

  /** The plain assertions and retractions of {@code (e, a)}, as events over [txInstant, forever). */
  private static List<Event> plainEvents(Db db, Snapshot s, long e, Attr a,
      Map<Long, Long> instants) {
    List<Event> out = new ArrayList<>();
    IndexScan scan = db.historyView().scan(s, Index.EAVT,
        new KeyBuilder().putLong(e).putLong(a.id).view());
    while (scan.next()) {
      Datom d = scan.datom();
      byte[] enc = encode(a, d.v);
      long from = instants.computeIfAbsent(d.tx, tx -> txInstant(db, s, tx));
      out.add(new Event(d.tx, d.added, enc, Codec.keyPart(enc), from, OPEN, false));
    }
    scan.close();
    return out;
  }

  private static long txInstant(Db db, Snapshot s, long tx) {
    IndexScan scan = db.scan(s, Index.EAVT,
        new KeyBuilder().putLong(tx).putLong(Schema.TX_INSTANT).view());
    long ms = scan.next() ? ((Date) scan.datom().v).getTime() : 0;
    scan.close();
    return ms;
  }

  static byte[] encode(Attr a, Object v) {
    int tag = a.valueType == Codec.T_ANY ? Codec.inferTag(v) : a.valueType;
    return Codec.encode(Codec.coerce(v, tag), tag);
  }

  /** The valid-time line of one pair after its events, replayed in transaction order. */
  private static List<Seg> replay(List<Event> evs, Attr a) {
    // within a transaction, by valid-from: where one transaction's intervals of a
    // cardinality-one pair overlap, the later valid-from wins
    evs.sort(Comparator.comparingLong(Event::tx).thenComparingLong(Event::from));
    List<Seg> line = new ArrayList<>();
    for (int i = 0; i < evs.size(); ) {
      int j = i;
      boolean asserts = false;
      while (j < evs.size() && evs.get(j).tx == evs.get(i).tx) {
        asserts |= evs.get(j).added;
        j++;
      }
      List<Event> tx = evs.subList(i, j);
      for (Event r : tx) {
        if (!r.added && (r.interval || a.many || !asserts)) {
          cut(line, r.key, r.from, r.to);
        }
      }
      for (Event x : tx) {
        if (x.added && (x.interval || !assertedWithInterval(tx, x.key))) {
          cut(line, a.many ? x.key : null, x.from, x.to);
          line.add(new Seg(x.key, x.enc, x.from, x.to, x.tx));
        }
      }
      i = j;
    }
    return line;
  }

  private static boolean assertedWithInterval(List<Event> tx, byte[] key) {
    for (Event x : tx) {
      if (x.interval && x.added && Arrays.equals(x.key, key)) {
        return true;
      }
    }
    return false;
  }

  /** Removes [from, to) from the pieces of {@code line} with value {@code key} (null: all). */
  private static void cut(List<Seg> line, byte[] key, long from, long to) {
    for (int i = line.size() - 1; i >= 0; i--) {
      Seg g = line.get(i);
      if (g.to <= from || to <= g.from || key != null && !Arrays.equals(key, g.key)) {
        continue;
      }
      line.remove(i);
      if (g.from < from) {
        line.add(new Seg(g.key, g.enc, g.from, from, g.tx));
      }
      if (to < g.to) {
        line.add(new Seg(g.key, g.enc, to, g.to, g.tx));
      }
    }
  }

  /** Adds the keys of the value of piece {@code g} of the pair {@code (e, aid)}, over its interval. */
  private static void add(Map<SubDb, TreeMap<ByteBuffer, long[]>> keys,
      TreeMap<ByteBuffer, ByteBuffer> blobs, KeyBuilder kb, long e, long aid, Seg g) {
    if (g.key != g.enc) { // keyPart returns its argument when the value fits inline
      blobs.put(copy(Db.direct(Codec.overflowHash(g.enc))), copy(Db.direct(g.enc)));
    }
    put(keys, SubDb.EAVT, kb.reset().putLong(e).putLong(aid).put(g.key).putLong(g.tx).view(), g);
    put(keys, SubDb.AEVT, kb.reset().putLong(aid).putLong(e).put(g.key).putLong(g.tx).view(), g);
    put(keys, SubDb.AVET, kb.reset().putLong(aid).put(g.key).putLong(e).putLong(g.tx).view(), g);
    if (g.enc[0] == Codec.T_REF) {
      put(keys, SubDb.VAET, kb.reset().putLong(Bytes.longAt(g.enc, 1)).putLong(aid).putLong(e)
          .putLong(g.tx).view(), g);
    }
  }

  private static void put(Map<SubDb, TreeMap<ByteBuffer, long[]>> keys, SubDb db, ByteBuffer key,
      Seg g) {
    keys.computeIfAbsent(db, k -> new TreeMap<>(Overlay::compare)).merge(copy(key),
        new long[] {g.from, g.to}, (x, y) -> {
          long[] both = Arrays.copyOf(x, x.length + y.length);
          System.arraycopy(y, 0, both, x.length, y.length);
          return both;
        });
  }

  private static ByteBuffer copy(ByteBuffer b) {
    ByteBuffer c = ByteBuffer.allocate(b.remaining());
    c.put(b.duplicate()).flip();
    return c.asReadOnlyBuffer();
  }

  /** Whether the key {@code src} is on is one of a valid-at view's lines. */
  static boolean added(Cursor src) {
    return src instanceof ValidCursor vc && vc.onValid();
  }
}
