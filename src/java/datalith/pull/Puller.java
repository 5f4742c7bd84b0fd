package datalith.pull;

import clojure.lang.IPersistentMap;
import clojure.lang.ITransientMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.IndexScan;
import datalith.db.Snapshot;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Pulls entities straight from the indexes into nested Clojure maps, with
 * Datomic's semantics: wildcard, components expanded, other refs as
 * {@code {:db/id n}}, reverse refs, limits, defaults, xforms, renames and
 * (cycle-safe) recursion. One puller reads through one snapshot.
 */
public final class Puller {
  private static final Keyword DB_ID = Keyword.intern("db", "id");

  private final Db db;
  private final Snapshot snap;

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
      throw Errors.errorWithCause(ex, "pull/entity", "Cannot pull " + RT.printString(eid)
          + ": " + ex.getMessage(), "entity", eid);
    }
    if (e < 0) {
      return null;
    }
    return entity(p, e, new HashSet<>(), p);
  }

  /**
   * The map of entity {@code e}, or null when it has nothing the pattern asks
   * for. {@code path} holds the entities being pulled above this one (for
   * cycles); {@code self} is the pattern recursion repeats.
   */
  private IPersistentMap entity(PullPattern p, long e, Set<Long> path, PullPattern self) {
    Map<Object, Object> out = new LinkedHashMap<>();
    path.add(e);
    try {
      if (p.wildcard) {
        Set<Keyword> explicit = new HashSet<>();
        for (PullPattern.AttrSpec spec : p.attrs) {
          explicit.add(spec.name);
        }
        out.put(DB_ID, e); // Datomic: [*] gives {:db/id e} even for an entity with no datoms
        wildcard(e, out, explicit, path);
      }
      for (PullPattern.AttrSpec spec : p.attrs) {
        if (spec.name == DB_ID) {
          out.put(spec.as, spec.xform == null ? (Object) e : spec.xform.invoke(e));
          continue;
        }
        Object v = attribute(spec, e, path, self == null ? p : self);
        // Datomic: :xform sees the value, nil when missing; :default (not transformed)
        // stands in when the result is nil
        if (spec.xform != null) {
          v = spec.xform.invoke(v);
        }
        if (v != null) {
          out.put(spec.as, v);
        } else if (spec.hasDefault) {
          out.put(spec.as, spec.defaultValue);
        }
      }
    } finally {
      path.remove(e);
    }
    return out.isEmpty() ? null : toMap(out);
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

  /** Every attribute of {@code e} not named explicitly; components expanded with {@code [*]}. */
  private void wildcard(long e, Map<Object, Object> out, Set<Keyword> explicit, Set<Long> path) {
    IndexScan scan = db.scan(snap, Index.EAVT, new KeyBuilder().putLong(e).view());
    long lastAid = -1;
    Attr a = null;
    List<Object> many = null;
    try {
      while (scan.next()) {
        long aid = scan.aid();
        if (aid != lastAid) {
          if (many != null) {
            out.put(a.ident, PersistentVector.create(many));
            many = null;
          }
          a = db.schema().attr(aid);
          lastAid = aid;
        }
        if (a == null || explicit.contains(a.ident)) {
          continue;
        }
        Object v = scan.v();
        if (a.isRef()) {
          long ref = (Long) v;
          v = a.component && !path.contains(ref)
              ? entityOrId(PullPattern.ALL, ref, path, null) : idMap(ref);
        }
        if (a.many) {
          if (many == null) {
            many = new ArrayList<>();
          }
          many.add(v);
        } else {
          out.put(a.ident, v);
        }
      }
      if (many != null) {
        out.put(a.ident, PersistentVector.create(many));
      }
    } finally {
      scan.close();
    }
  }

  private Object entityOrId(PullPattern p, long e, Set<Long> path, PullPattern self) {
    IPersistentMap m = entity(p, e, path, self);
    return m == null ? idMap(e) : m;
  }

  private static IPersistentMap idMap(long e) {
    return new PersistentArrayMap(new Object[] {DB_ID, e});
  }

  /** The value of one attribute spec for {@code e}, or null when it has none. */
  private Object attribute(PullPattern.AttrSpec spec, long e, Set<Long> path, PullPattern self) {
    Attr a = db.schema().attr(spec.attr);
    if (a == null) {
      return null;
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
    if (vals.isEmpty()) {
      return null;
    }
    if (a.isRef()) {
      List<Object> refs = new ArrayList<>(vals.size());
      for (Object target : vals) {
        Object m = ref(spec, a, (Long) target, path, self);
        if (m != null) {
          refs.add(m);
        }
      }
      vals = refs;
      if (vals.isEmpty()) {
        return null;
      }
    }
    return many ? PersistentVector.create(vals) : vals.get(0);
  }

  /**
   * What a ref to {@code target} pulls as: a map, or null when a sub-pattern
   * matches nothing of it (Datomic drops such entities from the result).
   */
  private Object ref(PullPattern.AttrSpec spec, Attr a, long target, Set<Long> path,
      PullPattern self) {
    if (spec.sub != null) {
      return entity(spec.sub, target, path, spec.sub);
    }
    if (spec.recursion != 0) {
      if (path.contains(target)) {
        return idMap(target); // a cycle: stop here
      }
      PullPattern next = spec.recursion < 0 ? self : deeper(self, spec);
      return entity(next, target, path, next);
    }
    if (!spec.reverse && a.component && !path.contains(target)) {
      return entityOrId(PullPattern.ALL, target, path, null);
    }
    return idMap(target);
  }

  /** {@code self} with the recursion limit of {@code spec} one lower (0: no more recursion). */
  private static PullPattern deeper(PullPattern self, PullPattern.AttrSpec spec) {
    List<PullPattern.AttrSpec> attrs = new ArrayList<>(self.attrs.size());
    for (PullPattern.AttrSpec s : self.attrs) {
      if (s == spec) {
        attrs.add(s.withSub(null, s.recursion - 1)); // at 0, refs come back as {:db/id n}
      } else {
        attrs.add(s);
      }
    }
    return PullPattern.of(self.wildcard, attrs, self.form);
  }
}
