package datalith.pull;

import clojure.lang.IPersistentMap;
import clojure.lang.ITransientMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
import clojure.lang.PersistentVector;
import clojure.lang.Util;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.IndexScan;
import datalith.db.Snapshot;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Pulls entities straight from the indexes into nested Clojure maps, with
 * Datomic's semantics: wildcard, components expanded, other refs as
 * {@code {:db/id n}}, reverse refs, limits, defaults, xforms, renames and
 * recursion. Nested entities are pulled from an explicit stack, so a deep
 * recursion (a long chain of refs) does not overflow the Java stack.
 * One puller reads through one snapshot, on one thread.
 *
 * <p>Recursion, as Datomic does it (checked against Datomic Local 1.0.291):
 * {@code {:attr n}} pulls the entities {@code :attr} leads to with the same
 * pattern, n levels deep, each recursive attribute counting its own levels
 * down. An entity past the limit is <em>cut</em>: it gives only what the
 * pattern asks of {@code :db/id} (nothing, and so it is left out, when the
 * pattern does not name {@code :db/id}). An entity that recursion reaches
 * while it is already on the path from the root (the root itself not
 * counted) is pulled once more, with every recursion limit at 0: cycles end
 * one entity after their first repetition. Component expansion, which
 * Datomic does not stop on a cycle, stops at an entity already on the path
 * (the root counted) with {@code {:db/id n}}.
 */
public final class Puller {
  private static final Keyword DB_ID = Keyword.intern("db", "id");
  /**
   * A map finished this many frames deep or deeper has its hash computed as it is built:
   * children before parents, so hashing a whole result (a set of pulls in :find) never
   * recurses more than this many maps deep, however deep the data.
   */
  private static final int HASHED_DEPTH = 64;

  private final Db db;
  private final Snapshot snap;
  /** The entities being pulled (on the stack), with their counts: for cycles. */
  private final Map<Long, Integer> path = new HashMap<>();
  /** The entity the current pull started from. */
  private long root;

  /** Throws {@code :pull/history} for a history view, which Datomic does not pull either. */
  public Puller(Db db, Snapshot snap) {
    if (db.isHistory()) {
      throw Errors.error("pull/history",
          "Cannot pull from a history database: pull the as-of or since view instead", "db", db);
    }
    this.db = db;
    this.snap = snap;
  }

  /** {@code (d/pull db pattern eid)}: the map, or null when the entity has nothing to show. */
  public static Object pull(Db db, Object pattern, Object eid) {
    PullPattern p = pattern instanceof PullPattern pp ? pp : PullPattern.parse(pattern);
    try (Snapshot s = db.snapshot()) {
      return new Puller(db, s).pullOne(p, eid);
    }
  }

  /** {@code (d/pull-many db pattern eids)}: one read for all of them, results in order. */
  public static Object pullMany(Db db, Object pattern, List<?> eids) {
    PullPattern p = pattern instanceof PullPattern pp ? pp : PullPattern.parse(pattern);
    List<Object> out = new ArrayList<>(eids.size());
    try (Snapshot s = db.snapshot()) {
      Puller puller = new Puller(db, s);
      for (Object e : eids) {
        out.add(puller.pullOne(p, e));
      }
    }
    return PersistentVector.create(out);
  }

  /** Pulls {@code eid} (an id, ident or lookup ref); null when it names no entity. */
  public Object pullOne(PullPattern p, Object eid) {
    long e;
    try {
      e = db.entid(snap, eid);
    } catch (clojure.lang.ExceptionInfo ex) {
      throw Errors.errorWithCause(ex, "pull/entity", "Cannot pull "
          + PullPattern.shortString(eid) + ": " + ex.getMessage(), "entity", eid);
    }
    if (e < 0) {
      return null;
    }
    return run(p, e);
  }

  /**
   * The map of entity {@code e}, or null when it has nothing the pattern asks
   * for: a depth-first walk where each frame is one entity being pulled and
   * waits, on the stack, for the nested entities it refers to.
   */
  private IPersistentMap run(PullPattern p, long e) {
    ArrayDeque<Frame> stack = new ArrayDeque<>();
    path.clear();
    root = e;
    stack.push(frame(p, e, p.depths));
    while (true) {
      Frame f = stack.peek();
      Request child = f.next();
      if (child != null) {
        stack.push(frame(child.pattern, child.e, child.depths));
        continue;
      }
      stack.pop();
      leave(f.e);
      IPersistentMap m = f.finish();
      if (m != null && stack.size() >= HASHED_DEPTH) {
        Util.hasheq(m); // cached in the map
      }
      if (stack.isEmpty()) {
        return m;
      }
      stack.peek().deliver(m);
    }
  }

  private void enter(long e) {
    path.merge(e, 1, Integer::sum);
  }

  private void leave(long e) {
    path.computeIfPresent(e, (k, n) -> n == 1 ? null : n - 1);
  }

  /** Whether {@code e} is on the path from the root, the root counted. */
  private boolean onPath(long e) {
    return path.containsKey(e);
  }

  /** Whether a ref already led to {@code e} on the path from the root. */
  private boolean seen(long e) {
    Integer n = path.get(e);
    return n != null && n > (e == root ? 1 : 0);
  }

  /**
   * A nested entity to pull before the current frame can go on, with the
   * recursion limits left for the attributes of {@code pattern}.
   */
  private record Request(PullPattern pattern, long e, int[] depths) {}

  /** One key of an entity's map: the values read for it, and what they became. */
  private static final class Slot {
    final Object key;
    final PullPattern.AttrSpec spec; // null for an attribute the wildcard found
    final int index; // of spec in its pattern's attrs; -1 without a spec
    final Attr attr; // null for :db/id
    final boolean many;
    final List<Object> raw; // as read: refs are Long ids
    final List<Object> done = new ArrayList<>();
    int next;

    Slot(Object key, PullPattern.AttrSpec spec, int index, Attr attr, boolean many,
        List<Object> raw) {
      this.key = key;
      this.spec = spec;
      this.index = index;
      this.attr = attr;
      this.many = many;
      this.raw = raw;
    }
  }

  /**
   * Entity {@code e} pulled with pattern {@code p}, which its recursive
   * attributes repeat; {@code depths} holds the levels each has left.
   */
  private final class Frame {
    final long e;
    final PullPattern p;
    final int[] depths; // never written: shared with the frames that have the same limits
    final Map<Object, Object> out = new LinkedHashMap<>();
    final List<Slot> slots = new ArrayList<>();
    int slot;

    Frame(long e, PullPattern p, int[] depths) {
      this.e = e;
      this.p = p;
      this.depths = depths;
    }

    /** The next nested entity to pull, or null when every slot is filled. */
    Request next() {
      while (slot < slots.size()) {
        Slot s = slots.get(slot);
        while (s.next < s.raw.size()) {
          Object v = s.raw.get(s.next++);
          if (s.attr == null || !s.attr.isRef()) {
            s.done.add(v);
            continue;
          }
          long target = (Long) v;
          if (s.spec != null && s.spec.recursion != 0 && depths[s.index] == 0) {
            IPersistentMap m = cut(p, target); // past the recursion limit
            if (m != null) {
              s.done.add(m);
            }
            continue;
          }
          Request r = refRequest(s, target);
          if (r != null) {
            return r; // its map comes back through deliver
          }
          s.done.add(idMap(target));
        }
        close(s);
        slot++;
      }
      return null;
    }

    /** The map of the nested entity last requested; null drops it (its sub-pattern matched nothing). */
    void deliver(IPersistentMap m) {
      if (m != null) {
        slots.get(slot).done.add(m);
      }
    }

    /**
     * The request that pulls ref {@code target} of slot {@code s}, or null when
     * it comes back as {@code {:db/id n}}.
     */
    private Request refRequest(Slot s, long target) {
      PullPattern.AttrSpec spec = s.spec;
      if (spec != null && spec.sub != null) {
        return new Request(spec.sub, target, spec.sub.depths);
      }
      if (spec != null && spec.recursion != 0) {
        int left = depths[s.index];
        int[] next;
        if (seen(target)) {
          next = new int[depths.length]; // a cycle: once more, with no recursion
        } else if (left < 0) {
          next = depths;
        } else {
          next = depths.clone();
          next[s.index] = left - 1;
        }
        return new Request(p, target, next);
      }
      if ((spec == null || !spec.reverse) && s.attr.component && !onPath(target)) {
        return new Request(PullPattern.ALL, target, PullPattern.ALL.depths);
      }
      return null;
    }

    /** Puts slot {@code s} into the map, with Datomic's :xform and :default rules. */
    private void close(Slot s) {
      Object v = s.done.isEmpty() ? null
          : s.many ? PersistentVector.create(s.done) : s.done.get(0);
      PullPattern.AttrSpec spec = s.spec;
      if (spec == null) {
        out.put(s.key, v); // the wildcard found values: never empty
        return;
      }
      // :xform sees the value, nil when missing; :default (not transformed) stands in for nil
      if (spec.xform != null) {
        v = xform(spec, v);
      }
      if (v != null) {
        out.put(s.key, v);
      } else if (spec.hasDefault) {
        out.put(s.key, spec.defaultValue);
      }
    }

    /** The :xform of {@code spec} applied to {@code v}; what it throws is {@code :pull/xform}. */
    private Object xform(PullPattern.AttrSpec spec, Object v) {
      try {
        return spec.xform.invoke(v);
      } catch (RuntimeException ex) {
        throw Errors.errorWithCause(ex, "pull/xform", "The :xform of " + spec.name + " failed on "
            + PullPattern.shortString(v) + ": " + ex, "attribute", spec.name, "value", v);
      }
    }

    IPersistentMap finish() {
      return out.isEmpty() ? null : toMap(out);
    }
  }

  /**
   * Entity {@code e} cut by a recursion limit: only what {@code p} asks of
   * {@code :db/id}; null when it asks nothing of it.
   */
  private IPersistentMap cut(PullPattern p, long e) {
    Frame f = new Frame(e, p, p.depths);
    if (p.wildcard) {
      f.out.put(DB_ID, e);
    }
    for (int i = 0; i < p.attrs.size(); i++) {
      PullPattern.AttrSpec spec = p.attrs.get(i);
      if (spec.name == DB_ID) {
        f.slots.add(new Slot(spec.as, spec, i, null, false, List.of(e)));
      }
    }
    f.next(); // no refs to follow: fills and closes the slots
    return f.finish();
  }

  /** A frame for entity {@code e}: reads every value the pattern asks for. */
  private Frame frame(PullPattern p, long e, int[] depths) {
    enter(e);
    Frame f = new Frame(e, p, depths);
    if (p.wildcard) {
      Set<Keyword> explicit = new HashSet<>();
      for (PullPattern.AttrSpec spec : p.attrs) {
        explicit.add(spec.name);
      }
      f.out.put(DB_ID, e); // Datomic: [*] gives {:db/id e} even for an entity with no datoms
      wildcard(f, explicit);
    }
    for (int i = 0; i < p.attrs.size(); i++) {
      PullPattern.AttrSpec spec = p.attrs.get(i);
      f.slots.add(spec.name == DB_ID ? new Slot(spec.as, spec, i, null, false, List.of(e))
          : attribute(spec, i, e));
    }
    return f;
  }

  /** Slots for every attribute of {@code e} not named explicitly, in EAVT order. */
  private void wildcard(Frame f, Set<Keyword> explicit) {
    IndexScan scan = db.scan(snap, Index.EAVT, new KeyBuilder().putLong(f.e).view());
    long lastAid = -1;
    List<Object> vals = null;
    try {
      while (scan.next()) {
        long aid = scan.aid();
        if (aid != lastAid) {
          lastAid = aid;
          Attr a = db.schema().attr(aid);
          vals = null;
          if (a != null && !explicit.contains(a.ident)) {
            vals = new ArrayList<>();
            f.slots.add(new Slot(a.ident, null, -1, a, a.many, vals));
          }
        }
        if (vals != null) {
          vals.add(scan.v());
        }
      }
    } finally {
      scan.close();
    }
  }

  /**
   * The slot of one attribute spec for {@code e}: its values as read (at most
   * its limit), none when the attribute is unknown.
   */
  private Slot attribute(PullPattern.AttrSpec spec, int index, long e) {
    Attr a = db.schema().attr(spec.attr);
    if (a == null && db.isStrict()) {
      throw Errors.error("pull/unknown-attribute", "No attribute " + spec.attr + " is installed"
          + " (the connection is strict)", "attribute", spec.attr, "element", spec.name);
    }
    if (a == null) {
      return new Slot(spec.as, spec, index, null, false, List.of());
    }
    if (spec.reverse && !a.isRef()) {
      throw Errors.error("pull/pattern", "A reverse attribute must name a ref attribute: "
          + spec.name, "element", spec.name);
    }
    List<Object> vals = new ArrayList<>();
    boolean many = spec.reverse ? !a.component : a.many;
    long limit = many ? spec.limit : 1;
    IndexScan scan = spec.reverse
        ? db.scan(snap, Index.VAET, new KeyBuilder().putLong(e).putLong(a.id).view())
        : db.scan(snap, Index.EAVT, new KeyBuilder().putLong(e).putLong(a.id).view());
    try {
      while ((limit < 0 || vals.size() < limit) && scan.next()) {
        vals.add(spec.reverse ? scan.e() : scan.v());
      }
    } finally {
      scan.close();
    }
    return new Slot(spec.as, spec, index, a, many, vals);
  }

  private static IPersistentMap toMap(Map<Object, Object> m) {
    if (m.size() <= 8) {
      Object[] kvs = new Object[m.size() * 2];
      int i = 0;
      for (Map.Entry<Object, Object> en : m.entrySet()) {
        kvs[i++] = en.getKey();
        kvs[i++] = en.getValue();
      }
      return new PersistentArrayMap(kvs);
    }
    ITransientMap t = PersistentHashMap.EMPTY.asTransient();
    for (Map.Entry<Object, Object> en : m.entrySet()) {
      t = t.assoc(en.getKey(), en.getValue());
    }
    return t.persistent();
  }

  private static IPersistentMap idMap(long e) {
    return new PersistentArrayMap(new Object[] {DB_ID, e});
  }
}
