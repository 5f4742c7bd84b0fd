package datalith.query;

import clojure.lang.Keyword;
import datalith.db.LongMap;
import java.util.Arrays;
import java.util.List;

/**
 * The entity ids a hash join keeps its scan to: a bitmap over the ids' span when they lie close
 * together, as the ids of one kind of entity do, otherwise a hash set. A scan asks it once per
 * datom, before decoding anything else of the datom.
 */
final class IdSet implements java.util.function.LongPredicate {
  private final long min;
  private final long[] bits; // bit (id - min) of the span, or null when sparse
  private final LongMap<Boolean> sparse;
  private final int size;
  private int[] before; // per word of bits, the ids in the words before it; made on first use

  private IdSet(long min, long[] bits, LongMap<Boolean> sparse) {
    this.min = min;
    this.bits = bits;
    this.sparse = sparse;
    int n = 0;
    if (bits != null) {
      for (long w : bits) {
        n += Long.bitCount(w);
      }
    } else {
      n = sparse.size();
    }
    this.size = n;
  }

  /** How many distinct ids the set holds. */
  int size() {
    return size;
  }

  /**
   * The ids in column {@code col} of {@code rows}; values that name no entity (strings,
   * negative numbers, ...) are left out, integers of any width are ids. Null when a value is an
   * ident or lookup ref, which only an index-lookup join resolves.
   */
  static IdSet ofColumn(List<Object[]> rows, int col) {
    if (rows instanceof Rel.IdRows idRows) {
      return of(idRows.ids(), idRows.size());
    }
    long[] ids = new long[Math.max(16, rows.size())];
    int n = 0;
    for (Object[] row : rows) {
      Object x = row[col];
      long id;
      if (x instanceof Long l) {
        id = l;
      } else if (x instanceof Keyword || x instanceof List) {
        return null;
      } else if (Tuple.key(x) instanceof Long l) {
        id = l;
      } else {
        continue;
      }
      if (id >= 0) {
        ids[n++] = id;
      }
    }
    return of(ids, n);
  }

  /** The first {@code n} of {@code ids}, which are not negative. */
  private static IdSet of(long[] ids, int n) {
    long lo = Long.MAX_VALUE;
    long hi = Long.MIN_VALUE;
    for (int i = 0; i < n; i++) {
      lo = Math.min(lo, ids[i]);
      hi = Math.max(hi, ids[i]);
    }
    if (n == 0) {
      return new IdSet(0, new long[0], null);
    }
    long words = ((hi - lo) >>> 6) + 1;
    if (words <= 4L * n + 64) { // at most 32 bytes per id, less than the hash set takes
      long[] bits = new long[(int) words];
      for (int i = 0; i < n; i++) {
        long d = ids[i] - lo;
        bits[(int) (d >>> 6)] |= 1L << d;
      }
      return new IdSet(lo, bits, null);
    }
    LongMap<Boolean> set = new LongMap<>(n);
    for (int i = 0; i < n; i++) {
      set.put(ids[i], Boolean.TRUE);
    }
    return new IdSet(0, null, set);
  }

  /**
   * Sorts {@code ids}, which are distinct: through a bitmap when they lie close together (a
   * pass over the bitmap's words costs less than comparing them), else by comparison.
   */
  static void sortDistinct(long[] ids) {
    int n = ids.length;
    if (n < 64) {
      Arrays.sort(ids);
      return;
    }
    long lo = Long.MAX_VALUE;
    long hi = Long.MIN_VALUE;
    for (long id : ids) {
      lo = Math.min(lo, id);
      hi = Math.max(hi, id);
    }
    long span = hi - lo; // may overflow to negative for ids far apart
    if (span < 0 || (span >>> 6) + 1 > 4L * n) {
      Arrays.sort(ids);
      return;
    }
    long[] bits = new long[(int) (span >>> 6) + 1];
    for (long id : ids) {
      long d = id - lo;
      bits[(int) (d >>> 6)] |= 1L << d;
    }
    int k = 0;
    for (int w = 0; w < bits.length; w++) {
      for (long b = bits[w]; b != 0; b &= b - 1) {
        ids[k++] = lo + ((long) w << 6) + Long.numberOfTrailingZeros(b);
      }
    }
  }

  /**
   * The rows of {@code rows} by the rank among this set's ids of their id in column {@code col}
   * (one row, or a {@link Rel.RowList}); rows whose value is no id of the set are left out. Null
   * when the set is not a bitmap, or a value is no integer: the caller joins another way.
   */
  Object[] rowsByRank(List<Object[]> rows, int col) {
    if (bits == null) {
      return null;
    }
    Object[] out = new Object[size];
    for (Object[] row : rows) {
      Object x = row[col];
      long id;
      if (x instanceof Long l) {
        id = l;
      } else if (Tuple.key(x) instanceof Long l) {
        id = l;
      } else {
        return null;
      }
      if (test(id)) {
        int at = rank(id);
        Object old = out[at];
        out[at] = old == null ? row : Rel.addRow(old, row);
      }
    }
    return out;
  }

  /** How many of the set's ids are below {@code id}, which is one of them; bitmap sets only. */
  int rank(long id) {
    int[] b = before;
    if (b == null) {
      b = new int[bits.length];
      int n = 0;
      for (int w = 0; w < bits.length; w++) {
        b[w] = n;
        n += Long.bitCount(bits[w]);
      }
      before = b;
    }
    long d = id - min;
    int w = (int) (d >>> 6);
    return b[w] + Long.bitCount(bits[w] & ((1L << d) - 1));
  }

  /** Whether {@code id} is in the set. */
  @Override
  public boolean test(long id) {
    long[] b = bits;
    if (b == null) {
      return sparse.get(id) != null;
    }
    long d = id - min;
    return d >= 0 && (d >>> 6) < b.length && (b[(int) (d >>> 6)] & 1L << d) != 0;
  }
}
