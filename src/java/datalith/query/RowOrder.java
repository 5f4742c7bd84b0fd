package datalith.query;

import java.util.List;

/**
 * An order of a relation's rows by some of their columns, each ascending or descending, in
 * {@link Compare}'s order, for sorting row indexes. A column whose every value is an integer
 * of at most 64 bits ({@code Long}, {@code Integer}, {@code Short}, {@code Byte}) is read once
 * into a {@code long[]} and compared as longs (as {@link Compare} orders such numbers: by
 * value), so that sorting many rows of ids and numbers neither unboxes nor dispatches on types
 * per comparison; other columns compare their values. Immutable once made.
 */
final class RowOrder {
  private final List<Object[]> rows;
  private final int[] cols;
  private final boolean[] desc;
  /** Per key, the column as longs, or null when some value is not such an integer. */
  private final long[][] longs;

  /**
   * The order of {@code rows} by {@code cols} in turn; {@code desc} (null: all ascending) says
   * which keys descend.
   */
  RowOrder(List<Object[]> rows, int[] cols, boolean[] desc) {
    this.rows = rows;
    this.cols = cols;
    this.desc = desc;
    this.longs = new long[cols.length][];
    int n = rows.size();
    for (int k = 0; k < cols.length; k++) {
      long[] column = new long[n];
      int c = cols[k];
      int i = 0;
      for (Object[] row : rows) {
        Object v = row[c];
        if (!(v instanceof Long || v instanceof Integer || v instanceof Short
            || v instanceof Byte)) {
          column = null;
          break;
        }
        column[i++] = ((Number) v).longValue();
      }
      longs[k] = column;
    }
  }

  /** The comparison of rows {@code a} and {@code b} (indexes into the rows). */
  int compare(int a, int b) {
    for (int k = 0; k < cols.length; k++) {
      long[] column = longs[k];
      int c = column != null ? Long.compare(column[a], column[b])
          : Compare.compare(rows.get(a)[cols[k]], rows.get(b)[cols[k]]);
      if (c != 0) {
        return desc != null && desc[k] ? -c : c;
      }
    }
    return 0;
  }

  /**
   * The row indexes 0..n-1 sorted by {@code first}, then {@code second}, then {@code third}
   * (a stable merge sort of ints: no boxed index per row).
   */
  static int[] sort(int n, RowOrder first, RowOrder second, RowOrder third) {
    int[] idx = new int[n];
    for (int i = 0; i < n; i++) {
      idx[i] = i;
    }
    int[] buf = new int[n];
    for (int width = 1; width < n; width *= 2) {
      for (int lo = 0; lo < n - width; lo += 2 * width) {
        int mid = lo + width;
        int hi = Math.min(lo + 2 * width, n);
        if (compare(idx[mid - 1], idx[mid], first, second, third) <= 0) {
          continue; // already in order
        }
        System.arraycopy(idx, lo, buf, lo, hi - lo);
        int i = lo;
        int j = mid;
        int k = lo;
        while (i < mid && j < hi) {
          idx[k++] = compare(buf[j], buf[i], first, second, third) < 0 ? buf[j++] : buf[i++];
        }
        while (i < mid) {
          idx[k++] = buf[i++];
        }
        while (j < hi) {
          idx[k++] = buf[j++];
        }
      }
    }
    return idx;
  }

  private static int compare(int a, int b, RowOrder first, RowOrder second, RowOrder third) {
    int c = first.compare(a, b);
    if (c == 0) {
      c = second.compare(a, b);
    }
    return c != 0 ? c : third.compare(a, b);
  }
}
