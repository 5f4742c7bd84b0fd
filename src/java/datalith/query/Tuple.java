package datalith.query;

import clojure.lang.Util;
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
    Object[] k = new Object[cols.length];
    for (int i = 0; i < cols.length; i++) {
      k[i] = row[cols[i]];
    }
    return new Tuple(k);
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
