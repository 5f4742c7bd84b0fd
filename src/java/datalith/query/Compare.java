package datalith.query;

import clojure.lang.Numbers;
import clojure.lang.Util;

/**
 * The order of query comparisons ({@code <}, {@code >}, ranges, {@code min},
 * {@code max}): numbers numerically whatever their class, values of one
 * comparable class by their natural order, and values of different types by
 * type name, so that comparing any two values never throws.
 */
final class Compare {
  private Compare() {}

  static int compare(Object a, Object b) {
    if (a == b) {
      return 0;
    }
    if (a == null) {
      return -1;
    }
    if (b == null) {
      return 1;
    }
    if (a instanceof Number x && b instanceof Number y) {
      return Numbers.compare(x, y);
    }
    if (a.getClass() == b.getClass() && a instanceof Comparable) {
      return Util.compare(a, b);
    }
    if (a instanceof byte[] x && b instanceof byte[] y) {
      return java.util.Arrays.compareUnsigned(x, y);
    }
    int c = a.getClass().getName().compareTo(b.getClass().getName());
    if (c != 0) {
      return c;
    }
    try {
      return Util.compare(a, b);
    } catch (RuntimeException ex) {
      return Integer.compare(Util.hasheq(a), Util.hasheq(b));
    }
  }
}
