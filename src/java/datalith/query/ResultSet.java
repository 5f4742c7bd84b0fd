package datalith.query;

import clojure.lang.AFn;
import clojure.lang.ArraySeq;
import clojure.lang.Counted;
import clojure.lang.IEditableCollection;
import clojure.lang.IHashEq;
import clojure.lang.IObj;
import clojure.lang.IPersistentCollection;
import clojure.lang.IPersistentMap;
import clojure.lang.IPersistentSet;
import clojure.lang.ISeq;
import clojure.lang.ITransientCollection;
import clojure.lang.Murmur3;
import clojure.lang.PersistentHashSet;
import clojure.lang.PersistentVector;
import clojure.lang.Util;
import java.util.Arrays;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * The set a relation query returns: an immutable Clojure set of distinct
 * tuples, held as an array until a caller asks what only a hash set answers
 * ({@code contains?}, {@code conj}, {@code disj}, equality with another set),
 * when it builds one. Counting, iterating, {@code seq}, {@code map} and
 * {@code into} a vector never pay for hashing every tuple.
 */
final class ResultSet extends AFn
    implements IPersistentSet, Set<Object>, IHashEq, IObj, Counted, IEditableCollection {
  private final Object[] items; // distinct
  private final IPersistentMap meta;
  private volatile PersistentHashSet set;
  private int hasheq;
  private boolean hasheqDone;
  private int hash;
  private boolean hashDone;

  /** @param items distinct elements, owned by the set from now on */
  ResultSet(Object[] items) {
    this(items, null);
  }

  private ResultSet(Object[] items, IPersistentMap meta) {
    this.items = items;
    this.meta = meta;
  }

  private PersistentHashSet hashed() {
    PersistentHashSet s = set;
    if (s == null) {
      ITransientCollection t = PersistentHashSet.EMPTY.asTransient();
      for (Object x : items) {
        t = t.conj(x);
      }
      s = (PersistentHashSet) t.persistent();
      set = s;
    }
    return s;
  }

  // ---------------------------------------------------------------- Clojure

  @Override
  public IPersistentSet disjoin(Object key) {
    return hashed().withMeta(meta).disjoin(key);
  }

  /**
   * Whether the set holds {@code key}. A row asked for as a plain {@code java.util.List} (a Java
   * caller's {@code List.of(id, "Ada")}) is found as the vector it equals: Clojure's hash of a
   * vector is not {@code List.hashCode}, so the hashed lookup alone would miss it.
   */
  @Override
  public boolean contains(Object key) {
    PersistentHashSet s = hashed();
    return s.contains(key)
        || key instanceof List<?> l && !(key instanceof IPersistentCollection)
            && s.contains(PersistentVector.create(l));
  }

  @Override
  public Object get(Object key) {
    return hashed().get(key);
  }

  @Override
  public int count() {
    return items.length;
  }

  @Override
  public IPersistentCollection cons(Object o) {
    return hashed().withMeta(meta).cons(o);
  }

  @Override
  public IPersistentCollection empty() {
    return PersistentHashSet.EMPTY.withMeta(meta);
  }

  @Override
  public boolean equiv(Object o) {
    return setEquals(o);
  }

  @Override
  public ISeq seq() {
    return ArraySeq.create(items);
  }

  @Override
  public Object invoke(Object key) {
    return get(key);
  }

  @Override
  public Object invoke(Object key, Object notFound) {
    return contains(key) ? get(key) : notFound;
  }

  @Override
  public int hasheq() {
    if (!hasheqDone) {
      hasheq = Murmur3.hashUnordered(this);
      hasheqDone = true;
    }
    return hasheq;
  }

  @Override
  public IPersistentMap meta() {
    return meta;
  }

  @Override
  public ResultSet withMeta(IPersistentMap m) {
    if (m == meta) {
      return this;
    }
    ResultSet r = new ResultSet(items, m);
    r.set = set;
    return r;
  }

  @Override
  public ITransientCollection asTransient() {
    return hashed().asTransient();
  }

  // ---------------------------------------------------------------- java.util.Set

  private boolean setEquals(Object o) {
    if (o == this) {
      return true;
    }
    return o instanceof Set<?> other && other.size() == items.length && containsAll(other);
  }

  @Override
  public boolean equals(Object o) {
    return setEquals(o);
  }

  @Override
  public int hashCode() {
    if (!hashDone) {
      int h = 0;
      for (Object x : items) {
        h += Util.hash(x);
      }
      hash = h;
      hashDone = true;
    }
    return hash;
  }

  @Override
  public int size() {
    return items.length;
  }

  @Override
  public boolean isEmpty() {
    return items.length == 0;
  }

  @Override
  public Iterator<Object> iterator() {
    return Arrays.asList(items).iterator();
  }

  @Override
  public Object[] toArray() {
    return items.clone();
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T> T[] toArray(T[] a) {
    return Arrays.asList(items).toArray(a);
  }

  @Override
  public boolean containsAll(Collection<?> c) {
    for (Object x : c) {
      if (!contains(x)) {
        return false;
      }
    }
    return true;
  }

  @Override
  public boolean add(Object o) {
    throw new UnsupportedOperationException();
  }

  @Override
  public boolean remove(Object o) {
    throw new UnsupportedOperationException();
  }

  @Override
  public boolean addAll(Collection<?> c) {
    throw new UnsupportedOperationException();
  }

  @Override
  public boolean retainAll(Collection<?> c) {
    throw new UnsupportedOperationException();
  }

  @Override
  public boolean removeAll(Collection<?> c) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void clear() {
    throw new UnsupportedOperationException();
  }

  @Override
  public String toString() {
    return clojure.lang.RT.printString(this);
  }
}
