package datalith.db;

import java.util.Arrays;

/**
 * An open-addressing map from long keys to objects; no boxing on lookup. Not thread-safe while
 * written. Long.MIN_VALUE marks empty slots and is no key. Internal: public for the query
 * engine's entity filters.
 */
public final class LongMap<V> {
  private static final long EMPTY = Long.MIN_VALUE;
  private long[] keys;
  private Object[] vals;
  private int size;

  public LongMap() {
    this(16);
  }

  public LongMap(int capacity) {
    int cap = Integer.highestOneBit(Math.max(4, capacity * 2 - 1)) << 1;
    keys = new long[cap];
    Arrays.fill(keys, EMPTY);
    vals = new Object[cap];
  }

  private static int mix(long k) {
    long h = k * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32));
  }

  @SuppressWarnings("unchecked")
  public V get(long k) {
    int mask = keys.length - 1;
    for (int i = mix(k) & mask; ; i = (i + 1) & mask) {
      long key = keys[i];
      if (key == k) {
        return (V) vals[i];
      }
      if (key == EMPTY) {
        return null;
      }
    }
  }

  public void put(long k, V v) {
    if ((size + 1) * 2 > keys.length) {
      grow();
    }
    int mask = keys.length - 1;
    for (int i = mix(k) & mask; ; i = (i + 1) & mask) {
      if (keys[i] == k) {
        vals[i] = v;
        return;
      }
      if (keys[i] == EMPTY) {
        keys[i] = k;
        vals[i] = v;
        size++;
        return;
      }
    }
  }

  public int size() {
    return size;
  }

  /** The keys, in no particular order. */
  public long[] keys() {
    long[] out = new long[size];
    int n = 0;
    for (long k : keys) {
      if (k != EMPTY) {
        out[n++] = k;
      }
    }
    return out;
  }

  LongMap<V> copy() {
    LongMap<V> m = new LongMap<>(4);
    m.keys = keys.clone();
    m.vals = vals.clone();
    m.size = size;
    return m;
  }

  @SuppressWarnings("unchecked")
  void forEach(java.util.function.BiConsumer<Long, V> f) {
    for (int i = 0; i < keys.length; i++) {
      if (keys[i] != EMPTY) {
        f.accept(keys[i], (V) vals[i]);
      }
    }
  }

  @SuppressWarnings("unchecked")
  private void grow() {
    long[] oldKeys = keys;
    Object[] oldVals = vals;
    keys = new long[oldKeys.length * 2];
    Arrays.fill(keys, EMPTY);
    vals = new Object[keys.length];
    size = 0;
    for (int i = 0; i < oldKeys.length; i++) {
      if (oldKeys[i] != EMPTY) {
        put(oldKeys[i], (V) oldVals[i]);
      }
    }
  }
}
