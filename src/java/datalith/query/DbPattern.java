package datalith.query;

import clojure.lang.Keyword;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.IndexScan;
import datalith.db.Reverse;
import datalith.db.Snapshot;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import datalith.query.parser.Constant;
import datalith.query.parser.Pattern;
import datalith.query.parser.Placeholder;
import datalith.query.parser.Term;
import datalith.query.parser.Variable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A data pattern bound to one database: constants resolved once (idents, lookup
 * refs, attribute types), then matched by index scans whose prefix holds every
 * position that is known, with the others checked per datom.
 */
final class DbPattern {
  private static final int E = 0;
  private static final int A = 1;
  private static final int V = 2;
  private static final int TX = 3;
  private static final int ADDED = 4;

  /** Receives each match: values for {@link #vars}, valid only during the call. */
  interface Sink {
    void accept(Object[] values);
  }

  /** Receives the entity id of each match, for a pattern whose one variable is the entity. */
  interface IdSink extends Sink {
    void acceptId(long e);

    @Override
    default void accept(Object[] values) {
      acceptId((Long) values[0]);
    }
  }

  final Pattern pattern;
  final Db db;
  /** The pattern's distinct variables, in position order. */
  final Variable[] vars;
  /** For each position, the index into {@link #vars} of its variable, or -1. */
  private final int[] varAt = {-1, -1, -1, -1, -1};
  /** For each position, its resolved constant, or null. */
  private final Object[] constAt = new Object[5];
  /** A constant that can match nothing (unknown ident, missing lookup ref, wrong type). */
  private boolean impossible;
  private Attr constAttr;
  private boolean valueOrder; // see preferValueOrder
  /** Whether a variable occurs at two positions, which a match must then agree on. */
  private final boolean repeatsVar;

  /** The index the last scan used, for explain. */
  private Index lastIndex;
  private long estimate = -1;
  private static final long ESTIMATE_CAP = 4096;

  DbPattern(Pattern pattern, Db db, Snapshot s) {
    this.pattern = pattern;
    this.db = db;
    List<Variable> vs = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Term t = termAt(i);
      if (t instanceof Variable v) {
        int idx = vs.indexOf(v);
        if (idx < 0) {
          idx = vs.size();
          vs.add(v);
        }
        varAt[i] = idx;
      }
    }
    this.vars = vs.toArray(new Variable[0]);
    int positions = 0;
    for (int at : varAt) {
      positions += at >= 0 ? 1 : 0;
    }
    this.repeatsVar = positions > vars.length;
    if (termAt(A) instanceof Constant c) {
      constAttr = attrOf(c.value());
      if (constAttr == null && db.isStrict() && c.value() instanceof Keyword k) {
        throw Errors.error("query/unknown-attribute", "No attribute " + k + " is installed (the"
            + " connection is strict)", "attribute", k, "form", pattern.toString());
      }
      if (constAttr == null) {
        impossible = true;
      } else {
        constAt[A] = constAttr;
      }
    }
    if (termAt(E) instanceof Constant c) {
      long e = entid(s, c.value());
      if (e < 0) {
        impossible = true;
      } else {
        constAt[E] = e;
      }
    }
    if (termAt(V) instanceof Constant c) {
      Object v = c.value();
      if (constAttr != null && constAttr.isRef()) {
        long e = entid(s, v);
        if (e < 0) {
          impossible = true;
        }
        v = e;
      } else if (constAttr != null && Db.valuePart(constAttr, v) == null) {
        impossible = true;
      }
      constAt[V] = v;
    }
    if (termAt(TX) instanceof Constant c) {
      if (c.value() instanceof Number n) {
        long x = n.longValue();
        constAt[TX] = x >= Db.TX0 ? x : Db.tToTx(x);
      } else {
        impossible = true;
      }
    }
    if (termAt(ADDED) instanceof Constant c) {
      constAt[ADDED] = c.value();
    }
  }

  private Term termAt(int i) {
    switch (i) {
      case E: return pattern.e();
      case A: return pattern.a();
      case V: return pattern.v();
      case TX: return pattern.tx();
      default: return pattern.added();
    }
  }

  private Attr attrOf(Object x) {
    if (x instanceof Keyword k) {
      return db.schema().attr(k);
    }
    if (x instanceof Number n) {
      return db.schema().attr(n.longValue());
    }
    return null;
  }

  private long entid(Snapshot s, Object x) {
    if (x instanceof Keyword || x instanceof Number || x instanceof List) {
      try {
        return db.entid(s, x);
      } catch (clojure.lang.ExceptionInfo ex) {
        return -1;
      }
    }
    return -1;
  }

  /** The name of the index the last scan used ("none" before any). */
  String lastIndexName() {
    return lastIndex == null ? "none" : lastIndex.name().toLowerCase(java.util.Locale.ROOT);
  }

  /**
   * About how many datoms match with only the pattern's constants (and
   * {@code range}) bound: counted when the answer is small, else taken from the
   * attribute's statistics. Computed once per pattern and database.
   */
  long estimate(Snapshot s, ValueRange range) {
    if (estimate < 0) {
      if (impossible) {
        estimate = 0;
      } else if (constAt[E] != null || constAttr != null && (constAt[V] != null || range != null)) {
        long n = scan(s, null, null, ESTIMATE_CAP, range);
        long all = constAttr == null ? n : db.stats().count(constAttr.id);
        // past the cap, a range is taken as half the attribute's datoms, and one
        // value as the geometric mean of the cap and them (neither end is likely)
        estimate = n < ESTIMATE_CAP || constAttr == null ? n
            : range != null && constAt[V] == null ? Math.max(n, all / 2)
            : Math.max(n, (long) Math.sqrt((double) n * all));
      } else if (constAttr != null) {
        estimate = db.stats().count(constAttr.id);
      } else {
        estimate = db.stats().total();
      }
    }
    return estimate;
  }

  /**
   * Whether the matches are distinct datoms told apart by the pattern's terms:
   * entity, attribute and value are each a constant or a variable, and the view
   * is not a history (which repeats an entity, attribute and value across transactions).
   */
  boolean distinctRows() {
    for (int i = E; i <= V; i++) {
      if (constAt[i] == null && varAt[i] < 0) {
        return false;
      }
    }
    return !db.isHistory();
  }

  /** A capacity for the matches of a scan, without reading anything: an estimate if one was made. */
  int sizeHint() {
    long n = estimate >= 0 ? estimate
        : constAttr != null && constAt[E] == null && constAt[V] == null ? db.stats().count(constAttr.id)
        : 16;
    return (int) Math.min(n + 1, 1 << 20);
  }

  /** Whether the pattern's one variable is its entity: its matches are ids, see {@link IdSink}. */
  boolean bindsOnlyEntity() {
    return vars.length == 1 && varAt[E] == 0 && varAt[A] < 0 && varAt[V] < 0 && varAt[TX] < 0
        && varAt[ADDED] < 0;
  }

  /**
   * Whether the pattern is {@code [?e attr ?v]}: a known attribute, distinct entity and value
   * variables ({@link #vars} in that order), no transaction or added term.
   */
  boolean isEntityValue() {
    return constAttr != null && !impossible && vars.length == 2 && varAt[E] == 0 && varAt[V] == 1
        && varAt[TX] < 0 && varAt[ADDED] < 0 && constAt[TX] == null && constAt[ADDED] == null;
  }

  /** Records that a join reading the pattern's datoms itself used {@code index}, for explain. */
  void ranOn(Index index) {
    lastIndex = index;
  }

  /** The pattern's attribute when it is a constant, else null. */
  Attr constAttr() {
    return constAttr;
  }

  /** The position of variable {@code v} in this pattern (0 e, 1 a, 2 v, 3 tx, 4 added), or -1. */
  int positionOf(Variable v) {
    for (int i = 0; i < 5; i++) {
      if (varAt[i] >= 0 && vars[varAt[i]] == v) {
        return i;
      }
    }
    return -1;
  }

  /**
   * Calls {@code sink} for every datom matching the pattern, with the variables
   * whose {@code given} value is non-null fixed to it; at most {@code limit} matches.
   * Without a sink it only counts, as an estimate: it stops after {@code limit}
   * index entries, visible or not, and then answers {@code limit}.
   *
   * @return the number of matches
   */
  long scan(Snapshot s, Object[] given, Sink sink, long limit, ValueRange range) {
    return scan(s, given, sink, limit, range, null);
  }

  /**
   * Like {@link #scan(Snapshot, Object[], Sink, long, ValueRange)}, skipping (before
   * reading anything else of them) the datoms whose entity is not in
   * {@code entities} (null: no such filter).
   */
  long scan(Snapshot s, Object[] given, Sink sink, long limit, ValueRange range,
      IdSet entities) {
    return scan(s, given, sink, limit, range, entities, null);
  }

  /**
   * The index scans of an index-lookup join, kept open across its many small
   * scans and moved on to each next prefix; close it when the join is done.
   */
  static final class Reuse implements AutoCloseable {
    /**
     * A direct key builder per thread that no open Reuse holds: making direct memory costs more
     * than the few lookups of a point query's join. A Reuse takes it (or makes one when a Reuse
     * of the same thread holds it) and puts its own back when closed.
     */
    private static final ThreadLocal<KeyBuilder[]> SPARE =
        ThreadLocal.withInitial(() -> new KeyBuilder[1]);

    private final java.util.EnumMap<Index, IndexScan> scans = new java.util.EnumMap<>(Index.class);
    private final KeyBuilder kb;
    private Object[] known; // scan()'s arrays, made once for all the join's scans
    private Object[] out;
    /**
     * Whether a bound entity and attribute are looked up in EAVT rather than AEVT: for lookups
     * too sparse to share AEVT's pages, where an entity's datoms lie together, so the lookups
     * of the next clauses on the same entities read pages the first one brought into the cache.
     */
    final boolean entityFirst;

    /** Reuse for lookups dense enough to share AEVT's pages. */
    Reuse() {
      this(false);
    }

    Reuse(boolean entityFirst) {
      this.entityFirst = entityFirst;
      KeyBuilder[] spare = SPARE.get();
      KeyBuilder k = spare[0];
      spare[0] = null;
      this.kb = k != null ? k : new KeyBuilder(true);
    }

    /** Closes the scans and gives the key builder back to the thread; call once. */
    @Override
    public void close() {
      for (IndexScan scan : scans.values()) {
        scan.close();
      }
      scans.clear();
      SPARE.get()[0] = kb;
    }
  }

  /** Like the other scans, reusing {@code reuse}'s open scans when it is not null. */
  long scan(Snapshot s, Object[] given, Sink sink, long limit, ValueRange range,
      IdSet entities, Reuse reuse) {
    return scan(s, given, sink, limit, range, entities, reuse, null);
  }

  /**
   * Where a scan read in chunks ({@link #scanChunk}) goes on: strictly after {@code after}
   * (null: from the start), unless {@code done}.
   */
  static final class Resume {
    byte[] after;
    boolean done;
  }

  /**
   * Calls {@code sink} for about the next {@code n} matches of the pattern with nothing bound
   * (kept to {@code range}), from where {@code resume} says, and moves {@code resume} past them:
   * one chunk of a scan read in short reads. A chunk never ends inside one key's datoms.
   *
   * @return the number of matches
   */
  long scanChunk(Snapshot s, Sink sink, long n, ValueRange range, Resume resume) {
    return scan(s, null, sink, n, range, null, null, resume);
  }

  private long scan(Snapshot s, Object[] given, Sink sink, long limit, ValueRange range,
      IdSet entities, Reuse reuse, Resume resume) {
    if (resume != null) {
      resume.done = true; // until a scan finds more: every early return finds nothing
    }
    if (impossible) {
      return 0;
    }
    // effective known values per position
    Object[] known;
    if (reuse == null) {
      known = constAt.clone();
    } else {
      if (reuse.known == null) {
        reuse.known = new Object[constAt.length];
      }
      known = reuse.known;
      System.arraycopy(constAt, 0, known, 0, constAt.length);
    }
    if (given != null) {
      for (int i = 0; i < 5; i++) {
        if (varAt[i] >= 0 && given[varAt[i]] != null) {
          known[i] = given[varAt[i]];
        }
      }
    }
    if (known[E] instanceof Keyword || known[E] instanceof List) {
      long id = entid(s, known[E]); // a bound ident or lookup ref names its entity
      if (id < 0) {
        return 0;
      }
      known[E] = id;
    }
    Long e = null;
    if (known[E] != null) {
      if (!(known[E] instanceof Long l)) {
        return 0;
      }
      e = l;
    }
    Attr attr = null;
    if (known[A] != null) {
      attr = known[A] instanceof Attr a ? a : attrOf(known[A]);
      if (attr == null) {
        return 0;
      }
    }
    byte[] vpart = null;
    Object vref = null;
    if (known[V] != null && attr != null) {
      if (attr.isRef() && (known[V] instanceof Keyword || known[V] instanceof List)) {
        long id = entid(s, known[V]);
        if (id < 0) {
          return 0;
        }
        known[V] = id;
      }
      if (attr.isRef()) {
        if (!(known[V] instanceof Long)) {
          return 0;
        }
        vref = known[V];
      }
      vpart = Db.valuePart(attr, known[V]);
      if (vpart == null) {
        return 0;
      }
    }
    KeyBuilder kb = reuse != null ? reuse.kb.reset() : new KeyBuilder();
    Index index;
    boolean eInKey = false;
    boolean aInKey = false;
    boolean vInKey = false;
    ByteBuffer seek = null;
    ByteBuffer upper = null;
    if (e != null && attr != null && reuse != null && reuse.entityFirst) {
      index = Index.EAVT;
      kb.putLong(e).putLong(attr.id);
      eInKey = true;
      aInKey = true;
      if (vpart != null) {
        kb.put(vpart);
        vInKey = true;
      }
    } else if (e != null && attr != null) {
      // AEVT rather than EAVT: an attribute's datoms lie together there, so the
      // ascending entities of a lookup join seek within the pages at hand
      index = Index.AEVT;
      kb.putLong(attr.id).putLong(e);
      eInKey = true;
      aInKey = true;
      if (vpart != null) {
        kb.put(vpart);
        vInKey = true;
      }
    } else if (e != null) {
      index = Index.EAVT;
      kb.putLong(e);
      eInKey = true;
    } else if (attr != null && vref != null) {
      index = Index.VAET;
      kb.putLong((Long) vref).putLong(attr.id);
      aInKey = true;
      vInKey = true;
    } else if (attr != null && vpart != null) {
      index = Index.AVET;
      kb.putLong(attr.id).put(vpart);
      aInKey = true;
      vInKey = true;
    } else if (attr != null && range != null) {
      index = Index.AVET;
      kb.putLong(attr.id);
      aInKey = true;
      byte[] lo = range.lower == null ? null : Db.valuePart(attr, range.lower);
      byte[] hi = range.upper == null ? null : Db.valuePart(attr, range.upper);
      if (lo != null) {
        seek = new KeyBuilder().putLong(attr.id).put(lo).view();
      }
      if (hi != null) {
        // past every key whose value equals the upper bound: the bound's bytes then 0xFF...
        upper = new KeyBuilder().putLong(attr.id).put(hi).put(MAX_SUFFIX).view();
      }
    } else if (attr != null) {
      index = valueOrder ? Index.AVET : Index.AEVT;
      kb.putLong(attr.id);
      aInKey = true;
    } else {
      index = Index.EAVT;
    }
    lastIndex = index;
    Object vWanted = vInKey ? null : known[V];
    Object txWanted = known[TX];
    Object addedWanted = known[ADDED];
    Object[] out;
    if (reuse == null) {
      out = new Object[vars.length];
    } else {
      if (reuse.out == null || reuse.out.length != vars.length) {
        reuse.out = new Object[vars.length];
      }
      out = reuse.out;
    }
    long n = 0;
    IndexScan scan;
    boolean reused = reuse != null && seek == null && upper == null;
    if (resume != null) {
      scan = db.scan(s, index, kb.view(), seek, upper, resume.after);
    } else if (reused) {
      scan = reuse.scans.get(index);
      if (scan == null) {
        scan = db.scan(s, index, kb.view());
        if (reuse.entityFirst) {
          scan.seekOnRestart(); // the next entity's keys lie pages away
        }
        reuse.scans.put(index, scan);
      } else {
        scan.restart(kb.sharedView());
      }
    } else {
      scan = db.scanRange(s, index, kb.view(), seek, upper);
    }
    if (sink == null) {
      scan.limitEntries(limit); // a count: as-of and since views may hide most entries
    }
    IdSink idSink = sink instanceof IdSink ids && bindsOnlyEntity() ? ids : null;
    try {
      n = drain(scan, limit, sink, idSink, out, entities, eInKey ? e : null, eInKey ? null : e,
          aInKey ? null : attr, vWanted, txWanted, addedWanted, range);
      if (scan.overBudget()) {
        n = limit;
      }
      if (resume != null) {
        // a chunk ends after a whole key: the rest of the current one is read first
        while (n >= limit && scan.hasPending()) {
          n += drain(scan, 1, sink, idSink, out, entities, eInKey ? e : null,
              eInKey ? null : e, aInKey ? null : attr, vWanted, txWanted, addedWanted, range);
        }
        resume.done = n < limit;
        resume.after = resume.done ? null : scan.lastKey();
      }
    } finally {
      if (!reused) {
        scan.close();
      }
    }
    return n;
  }

  private static final byte[] MAX_SUFFIX = {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF,
      (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF,
      (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF};

  /** Variables whose values scans leave null (by index into {@link #vars}), or null. */
  private boolean[] unread;

  /**
   * The matches of {@code scan}, given to the sinks: the scan loop on its own, small enough for
   * the JIT to compile with the scan's steps inlined. {@code keyE} is the entity every key holds;
   * {@code e}, {@code attr} and the wanted values (each null when not wanted) are checked.
   */
  private long drain(IndexScan scan, long limit, Sink sink, IdSink idSink, Object[] out,
      IdSet entities, Long keyE, Long e, Attr attr, Object vWanted, Object txWanted,
      Object addedWanted, ValueRange range) {
    long n = 0;
    while (n < limit && (entities == null ? scan.next() : scan.next(entities))) {
      if (e != null && scan.e() != e) {
        continue;
      }
      if (attr != null && scan.aid() != attr.id) {
        continue;
      }
      if (vWanted != null && !Tuple.same(scan.v(), vWanted)) {
        continue;
      }
      if (txWanted != null && !(txWanted instanceof Number t && t.longValue() == scan.tx())) {
        continue;
      }
      if (addedWanted != null && !addedWanted.equals(scan.added())) {
        continue;
      }
      if (range != null && !range.contains(scan.v())) {
        continue;
      }
      if (idSink != null) {
        n++;
        idSink.acceptId(scan.e());
        continue;
      }
      if (sink == null && !repeatsVar) {
        n++; // a count, for an estimate: nothing to read
        continue;
      }
      if (!fill(scan, out, keyE)) {
        continue;
      }
      n++;
      if (sink != null) {
        sink.accept(out);
      }
    }
    return n;
  }

  /**
   * For a walk of the pattern's attribute in AVET order: the key where the datoms of
   * {@code value} start (null: the attribute's first key), or, with {@code past}, a key past
   * every datom of the value (null value: past the attribute). Only for a pattern whose
   * attribute is a constant.
   */
  byte[] avetKey(Object value, boolean past) {
    KeyBuilder kb = new KeyBuilder().putLong(constAttr.id);
    if (value != null) {
      kb.put(Db.valuePart(constAttr, value));
    }
    ByteBuffer k = kb.view();
    byte[] out = new byte[k.remaining()];
    k.get(k.position(), out);
    return !past ? out : value != null ? concat(out, MAX_SUFFIX) : Reverse.after(out);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /**
   * Calls {@code sink} for each match among the AVET keys from {@code seek} up to
   * {@code upper} (exclusive) of a pattern {@code [?e attr ?v]} (its entity and value distinct
   * variables, nothing else), kept to {@code range}: one chunk of a walk in value order.
   */
  void scanAvet(Snapshot s, byte[] seek, byte[] upper, Sink sink, ValueRange range) {
    ByteBuffer prefix = new KeyBuilder().putLong(constAttr.id).view();
    Object[] out = new Object[vars.length];
    IndexScan scan = db.scanRange(s, Index.AVET, prefix, new KeyBuilder().put(seek).view(),
        new KeyBuilder().put(upper).view());
    try {
      drain(scan, Long.MAX_VALUE, sink, null, out, null, null, null, null, null, null, null,
          range);
    } finally {
      scan.close();
    }
  }

  /** Receives the counts of {@link #countByValue}. */
  interface ValueCounts {
    void accept(Object value, long count);
  }

  /**
   * For a pattern {@code [?e a ?v]} (an attribute, two distinct variables, ?e left unread, nothing
   * else): gives {@code counts} each value of the attribute with its number of datoms, in value
   * order, counting runs of AVET keys rather than reading each datom (a whole LMDB leaf page of
   * one value at a time). False, having given nothing, when the pattern or the view (as-of,
   * since, history) does not allow it.
   */
  boolean countByValue(Snapshot s, ValueCounts counts) {
    if (impossible || constAttr == null || varAt[E] < 0 || varAt[V] < 0 || varAt[E] == varAt[V]
        || unread == null || !unread[varAt[E]] || !(termAt(TX) instanceof Placeholder)
        || !(termAt(ADDED) instanceof Placeholder)) {
      return false;
    }
    IndexScan scan = db.scan(s, Index.AVET, new KeyBuilder().putLong(constAttr.id).view());
    try {
      if (!scan.runsCountable()) {
        return false;
      }
      lastIndex = Index.AVET;
      while (scan.next()) {
        int n = scan.valueEnd();
        Object v = scan.v();
        counts.accept(v, n < 0 ? 1 : scan.countRun(n));
      }
      return true;
    } finally {
      scan.close();
    }
  }

  /**
   * Makes a scan of the whole attribute (nothing else bound) run in value order (AVET) rather
   * than entity order (AEVT): each value's datoms then come together, as grouping by it wants.
   */
  void preferValueOrder() {
    valueOrder = true;
  }

  /**
   * Makes later scans leave {@code vs}' values null, unread, where the caller
   * needs only that the matches are distinct; a variable that occurs twice in
   * the pattern is read all the same.
   */
  void leaveUnread(java.util.Collection<Variable> vs) {
    unread = new boolean[vars.length];
    for (int i = 0; i < vars.length; i++) {
      int occurrences = 0;
      for (int at : varAt) {
        occurrences += at == i ? 1 : 0;
      }
      unread[i] = vs.contains(vars[i]) && occurrences == 1;
    }
  }

  /**
   * Writes the datom's values into {@code out}; false when a repeated variable disagrees. {@code e}
   * is the entity every key of the scan holds (its boxed id, reused), or null.
   */
  private boolean fill(IndexScan scan, Object[] out, Long e) {
    java.util.Arrays.fill(out, null);
    for (int i = 0; i < 5; i++) {
      int idx = varAt[i];
      if (idx < 0 || unread != null && unread[idx]) {
        continue;
      }
      Object val;
      switch (i) {
        case E: val = e != null ? e : (Object) scan.e(); break; // e: the id every key holds
        case A: val = scan.aid(); break;
        case V: val = scan.v(); break;
        case TX: val = scan.tx(); break;
        default: val = scan.added(); break;
      }
      if (out[idx] != null) {
        if (!Tuple.same(out[idx], val)) {
          return false;
        }
      } else {
        out[idx] = val;
      }
    }
    return true;
  }
}
