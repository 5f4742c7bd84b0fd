package datalith.db;

import clojure.lang.AFn;
import clojure.lang.Associative;
import clojure.lang.IPersistentCollection;
import clojure.lang.Counted;
import clojure.lang.IPersistentMap;
import clojure.lang.ISeq;
import clojure.lang.ITransientMap;
import clojure.lang.ITransientSet;
import clojure.lang.Keyword;
import clojure.lang.MapEntry;
import clojure.lang.PersistentHashMap;
import clojure.lang.PersistentHashSet;
import clojure.lang.RT;
import clojure.lang.Seqable;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.ArrayList;
import java.util.List;

/**
 * A lazy, read-only view of one entity in one database value, navigable across
 * refs ({@code (:issue/assignee e)} is an entity) and reverse refs
 * ({@code (:issue/_assignee user)} is a set of entities). Attribute values are
 * read on first access and cached. Thread-safe (the cache is published safely).
 */
public final class Entity extends AFn implements Associative, Seqable, Counted {
  private static final Keyword DB_ID = Keyword.intern("db", "id");

  private final Db db;
  private final long eid;
  private volatile IPersistentMap cache = PersistentHashMap.EMPTY;
  private volatile IPersistentMap touched; // every attribute, once loaded

  /** Throws {@code :db/history} for a history view: Datomic has no entities there either. */
  public Entity(Db db, long eid) {
    if (db.history) {
      throw Errors.error("db/history", "Cannot make an entity of a history database", "db", db);
    }
    this.db = db;
    this.eid = eid;
  }

  public long eid() {
    return eid;
  }

  public Db db() {
    return db;
  }

  @Override
  public Object valAt(Object key) {
    return valAt(key, null);
  }

  @Override
  public Object valAt(Object key, Object notFound) {
    if (key == DB_ID) {
      return eid;
    }
    if (!(key instanceof Keyword k)) {
      return notFound;
    }
    IPersistentMap t = touched;
    if (t != null && t.containsKey(k)) {
      return t.valAt(k);
    }
    Object hit = cache.valAt(k, this);
    if (hit != this) {
      return hit == null ? notFound : hit;
    }
    Object v = load(k);
    cache = cache.assoc(k, v);
    return v == null ? notFound : v;
  }

  private Object load(Keyword k) {
    Attr a = db.schema.attr(k);
    if (a != null) {
      return forward(a);
    }
    if (k.getName().startsWith("_")) {
      Attr fwd = db.schema.attr(Keyword.intern(k.getNamespace(), k.getName().substring(1)));
      if (fwd != null && fwd.isRef()) {
        return reverse(fwd);
      }
    }
    return null;
  }

  private Object forward(Attr a) {
    List<Object> vals = new ArrayList<>(a.many ? 8 : 1);
    try (Snapshot s = db.snapshot()) {
      IndexScan scan = db.scan(s, Index.EAVT, new KeyBuilder().putLong(eid).putLong(a.id).view());
      while (scan.next()) {
        vals.add(wrap(a, scan.datom().v));
      }
      scan.close();
    }
    if (vals.isEmpty()) {
      return null;
    }
    return a.many ? PersistentHashSet.create(vals) : vals.get(0);
  }

  private Object reverse(Attr fwd) {
    List<Object> vals = new ArrayList<>();
    try (Snapshot s = db.snapshot()) {
      IndexScan scan = db.scan(s, Index.VAET, new KeyBuilder().putLong(eid).putLong(fwd.id).view());
      while (scan.next()) {
        vals.add(new Entity(db, scan.datom().e));
      }
      scan.close();
    }
    if (vals.isEmpty()) {
      return null;
    }
    return fwd.component ? vals.get(0) : PersistentHashSet.create(vals);
  }

  /** A ref value as an entity, or as its ident keyword when it has one (Datomic's enums). */
  private Object wrap(Attr a, Object v) {
    if (!a.isRef()) {
      return v;
    }
    Keyword ident = db.schema.ident((Long) v);
    return ident != null ? ident : new Entity(db, (Long) v);
  }

  /** Loads every attribute; returns this entity. */
  public Entity touch() {
    if (touched != null) {
      return this;
    }
    ITransientMap m = PersistentHashMap.EMPTY.asTransient();
    java.util.Map<Keyword, ITransientSet> many = new java.util.LinkedHashMap<>();
    try (Snapshot s = db.snapshot()) {
      IndexScan scan = db.scan(s, Index.EAVT, new KeyBuilder().putLong(eid).view());
      while (scan.next()) {
        Datom d = scan.datom();
        Attr a = db.schema.attr(d.aid);
        if (a == null) {
          continue;
        }
        if (a.many) {
          many.computeIfAbsent(a.ident, x -> (ITransientSet) PersistentHashSet.EMPTY.asTransient())
              .conj(touchComponent(a, wrap(a, d.v)));
        } else {
          m = m.assoc(a.ident, touchComponent(a, wrap(a, d.v)));
        }
      }
      scan.close();
    }
    for (java.util.Map.Entry<Keyword, ITransientSet> en : many.entrySet()) {
      m = m.assoc(en.getKey(), en.getValue().persistent());
    }
    touched = m.persistent();
    return this;
  }

  private static Object touchComponent(Attr a, Object v) {
    return a.component && v instanceof Entity e ? e.touch() : v;
  }

  @Override
  public Associative assoc(Object key, Object val) {
    throw new UnsupportedOperationException("An entity is read-only: transact to change it");
  }

  @Override
  public IPersistentCollection cons(Object o) {
    throw new UnsupportedOperationException("An entity is read-only: transact to change it");
  }

  @Override
  public IPersistentCollection empty() {
    throw new UnsupportedOperationException("An entity has no empty value");
  }

  @Override
  public boolean equiv(Object o) {
    return equals(o);
  }

  /** Every attribute and value: refs as entities. */
  public IPersistentMap toMap() {
    return touch().touched;
  }

  @Override
  public ISeq seq() {
    return RT.seq(toMap());
  }

  @Override
  public int count() {
    return toMap().count();
  }

  @Override
  public Object invoke(Object key) {
    return valAt(key);
  }

  @Override
  public Object invoke(Object key, Object notFound) {
    return valAt(key, notFound);
  }

  /** Whether {@code k} has a value. */
  @Override
  public boolean containsKey(Object k) {
    return valAt(k, this) != this;
  }

  @Override
  public MapEntry entryAt(Object k) {
    Object v = valAt(k, this);
    return v == this ? null : MapEntry.create(k, v);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Entity x && x.eid == eid && x.db == db;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(eid);
  }

  @Override
  public String toString() {
    return "#datalith/entity {:db/id " + eid + "}";
  }
}
