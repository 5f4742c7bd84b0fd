package datalith.query;

import clojure.lang.Numbers;
import clojure.lang.Sequential;
import clojure.lang.Util;
import datalith.codec.Codec;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The one order of query values, Datomic's: the comparison predicates ({@code <}, {@code >},
 * {@code <=}, {@code >=}), value ranges pushed into index scans, {@code min}, {@code max},
 * {@code (min n ?x)}, {@code (max n ?x)} and {@code median}. It orders any two values and never
 * throws.
 *
 * <p>Values of different kinds order by kind:
 *
 * <pre>
 * nil &lt; numbers &lt; lists and vectors &lt; maps &lt; sets &lt; byte arrays &lt; every other class
 * </pre>
 *
 * and the other classes by their names, so that of the database's types
 *
 * <pre>
 * keyword &lt; symbol &lt; boolean &lt; string &lt; instant (java.util.Date) &lt; uuid
 * </pre>
 *
 * (a number is thus below every keyword: {@code (< :k 2.5)} is false). Within a kind: numbers
 * numerically whatever their class ({@code 1 = 1.0 = 1N}, {@code -0.0 = 0.0}, NaN above every
 * other number); lists and vectors element by element in this order, a prefix first; byte arrays
 * by unsigned bytes, a prefix first; maps and sets (which Datomic leaves unordered) by size, then
 * by hash; any other class by its natural order ({@link Comparable}), else by hash. This is
 * Datomic Local 1.0.291's order of query values, except NaN (Datomic holds it equal to every
 * number, which is no order) and byte arrays (Datomic compares their bytes signed).
 *
 * <p>Within one scalar value type the index orders values as this order does (see
 * {@link #ordersLikeIndex(int)}), but for the values this order holds equal that the index
 * keeps apart (-0.0 and 0.0, 1.0M and 1.00M); across types it does not (the codec orders types
 * by tag). So a range is pushed into an index scan only on an attribute of one such type, with
 * bounds that take in every value equal to them ({@link #indexBound(Object, boolean)}).
 */
final class Compare {
  // the kinds, in order; every class not named here is OTHER
  private static final int NIL = 0;
  private static final int NUMBER = 1;
  private static final int SEQUENTIAL = 2;
  private static final int MAP = 3;
  private static final int SET = 4;
  private static final int BYTES = 5;
  private static final int OTHER = 6;

  private Compare() {}

  /** Negative, zero or positive as {@code a} orders before, with or after {@code b}. */
  static int compare(Object a, Object b) {
    if (a == b) {
      return 0;
    }
    if (a instanceof Long x && b instanceof Long y) {
      return Long.compare(x, y);
    }
    int ka = kind(a);
    int kb = kind(b);
    if (ka != kb) {
      return ka < kb ? -1 : 1;
    }
    switch (ka) {
      case NUMBER:
        return compareNumbers((Number) a, (Number) b);
      case SEQUENTIAL:
        return compareSequential(a, b);
      case MAP:
      case SET:
        return compareUnordered(a, b);
      case BYTES:
        return Arrays.compareUnsigned((byte[]) a, (byte[]) b);
      case OTHER:
        return compareOther(a, b);
      default:
        return 0; // both nil
    }
  }

  /**
   * Whether an index keeps the values of declared type {@code valueType} (a {@link Codec} tag)
   * in this order, so that a range of such values, coerced to the type, is one run of index keys
   * holding exactly the values the comparisons accept, once its bounds are
   * {@link #indexBound(Object, boolean)}. True for the scalar types; false for attributes of no
   * declared type (values of several types, ordered by tag), tuples (elements of several types
   * ordered by tag), EDN values (unordered), refs, and BigDecimals (the index orders numerically
   * equal ones, 1.0 and 1.00, by scale, so no one key bounds all of them).
   */
  static boolean ordersLikeIndex(int valueType) {
    switch (valueType) {
      case Codec.T_BOOLEAN:
      case Codec.T_LONG:
      case Codec.T_FLOAT:
      case Codec.T_DOUBLE:
      case Codec.T_BIGINT:
      case Codec.T_INSTANT:
      case Codec.T_UUID:
      case Codec.T_STRING:
      case Codec.T_KEYWORD:
      case Codec.T_SYMBOL:
      case Codec.T_BYTES:
        return true;
      default:
        return false;
    }
  }

  /**
   * The bound an index range seeks from ({@code lower}) or ends at, for a range bounded by
   * {@code bound}, so that its keys hold every value this order holds equal to the bound: the
   * index keeps -0.0 before 0.0, which this order holds equal, so a zero lower bound is -0.0
   * and a zero upper bound 0.0 (of the bound's class); any other bound is itself.
   */
  static Object indexBound(Object bound, boolean lower) {
    if (bound instanceof Double d && d == 0.0) {
      return lower ? -0.0 : 0.0;
    } else if (bound instanceof Float f && f == 0.0f) {
      return lower ? -0.0f : 0.0f;
    }
    return bound;
  }

  private static int kind(Object x) {
    if (x == null) {
      return NIL;
    } else if (x instanceof Number) {
      return NUMBER;
    } else if (x instanceof List || x instanceof Sequential) {
      return SEQUENTIAL;
    } else if (x instanceof Map) {
      return MAP;
    } else if (x instanceof Set) {
      return SET;
    } else if (x instanceof byte[]) {
      return BYTES;
    }
    return OTHER;
  }

  private static int compareNumbers(Number x, Number y) {
    boolean xNaN = isNaN(x);
    if (xNaN || isNaN(y)) {
      return xNaN == isNaN(y) ? 0 : xNaN ? 1 : -1;
    }
    try {
      return Numbers.compare(x, y);
    } catch (ArithmeticException e) {
      // a ratio with no exact decimal against a BigDecimal: compared as doubles
      return Double.compare(x.doubleValue(), y.doubleValue());
    }
  }

  private static boolean isNaN(Number x) {
    return x instanceof Double d && d.isNaN() || x instanceof Float f && f.isNaN();
  }

  private static int compareSequential(Object a, Object b) {
    Iterator<?> i = ((Iterable<?>) a).iterator();
    Iterator<?> j = ((Iterable<?>) b).iterator();
    while (i.hasNext() && j.hasNext()) {
      int c = compare(i.next(), j.next());
      if (c != 0) {
        return c;
      }
    }
    return i.hasNext() ? 1 : j.hasNext() ? -1 : 0;
  }

  private static int compareUnordered(Object a, Object b) {
    int sa = a instanceof Map<?, ?> m ? m.size() : ((Set<?>) a).size();
    int sb = b instanceof Map<?, ?> m ? m.size() : ((Set<?>) b).size();
    if (sa != sb) {
      return sa < sb ? -1 : 1;
    }
    return Integer.compare(Util.hasheq(a), Util.hasheq(b));
  }

  @SuppressWarnings("unchecked") // same class, Comparable: compareTo takes its own class
  private static int compareOther(Object a, Object b) {
    if (a.getClass() != b.getClass()) {
      return a.getClass().getName().compareTo(b.getClass().getName());
    }
    if (a instanceof Comparable) {
      try {
        return ((Comparable<Object>) a).compareTo(b);
      } catch (RuntimeException e) {
        // a class whose order does not cover every pair: by hash, as the unordered ones
      }
    }
    return Integer.compare(Util.hasheq(a), Util.hasheq(b));
  }
}
