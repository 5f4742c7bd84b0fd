package datalith.query;

import clojure.lang.BigInt;
import clojure.lang.Keyword;
import clojure.lang.Util;
import java.math.BigInteger;
import java.util.Arrays;

/** A tuple of values compared with Clojure's {@code =} (byte arrays by content): a hash key. */
final class Tuple {
  final Object[] vals;
  private final int hash;

  Tuple(Object[] vals) {
    this.vals = vals;
    int h = 1;
    for (Object v : vals) {
      h = 31 * h + (v instanceof byte[] b ? Arrays.hashCode(b) : Util.hasheq(v));
    }
    this.hash = h;
  }

  /** The values of {@code row} at {@code cols}. */
  static Tuple of(Object[] row, int[] cols) {
    return new Tuple(Rel.values(row, cols));
  }

  /**
   * A hash key for the values of {@code row} at {@code cols}, equal for rows whose
   * values are Clojure-equal: for one column the value itself when Java's equality
   * agrees with Clojure's on it (ids, strings, keywords), which saves the tuple.
   */
  static Object key(Object[] row, int[] cols) {
    return cols.length == 1 ? key(row[cols[0]]) : of(row, cols);
  }

  /** The hash key of one value (see {@link #key(Object[], int[])}). */
  static Object key(Object v) {
    if (v instanceof Long || v instanceof String || v instanceof Keyword || v instanceof Boolean) {
      return v;
    }
    // integers Clojure holds equal to a long hash as that long
    if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
      return ((Number) v).longValue();
    }
    if (v instanceof BigInt b && b.bipart == null) {
      return b.lpart;
    }
    if (v instanceof BigInteger b && b.bitLength() < 64) {
      return b.longValue();
    }
    return new Tuple(new Object[] {v});
  }

  static boolean same(Object a, Object b) {
    if (a instanceof byte[] x && b instanceof byte[] y) {
      return Arrays.equals(x, y);
    }
    return Util.equiv(a, b);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Tuple t) || t.hash != hash || t.vals.length != vals.length) {
      return false;
    }
    for (int i = 0; i < vals.length; i++) {
      if (!same(vals[i], t.vals[i])) {
        return false;
      }
    }
    return true;
  }

  @Override
  public int hashCode() {
    return hash;
  }
}
