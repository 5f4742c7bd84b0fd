package datalith.store;

import java.util.Arrays;

/**
 * The replay order of a write transaction's logged writes: by sub-database, then by
 * {@link #compare} (key order, then the order the writes were made in, so that one key's writes
 * keep theirs). A stable merge sort of entry numbers, runs of {@code RUN} sorted by insertion
 * first. {@link WriteLog} (LMDB) and {@link MemWrites} (MemStore) replay their writes in it.
 */
abstract class EntrySort {
  private static final int DBS = SubDb.values().length;
  private static final int RUN = 16; // sorted by insertion, then merged

  /** The order of entries {@code x} and {@code y} of one sub-database; 0 only when x == y. */
  abstract int compare(int x, int y);

  /**
   * The order of entries {@code x} and {@code y} by their key prefixes, {@code longs} numbers an
   * entry in {@code prefixes} (compared unsigned); 0 when they tie.
   */
  static int comparePrefixes(long[] prefixes, int longs, int x, int y) {
    int px = longs * x;
    int py = longs * y;
    for (int i = 0; i < longs; i++) {
      if (prefixes[px + i] != prefixes[py + i]) {
        return Long.compareUnsigned(prefixes[px + i], prefixes[py + i]);
      }
    }
    return 0;
  }

  /**
   * Fills {@code order[0..count)} with the entries' numbers by sub-database ({@code dbs[i]} of
   * entry i), each's in the order made; returns where each sub-database's begin, by ordinal,
   * and their end last.
   */
  static int[] bucket(byte[] dbs, int count, int[] order) {
    int[] starts = new int[DBS + 1];
    for (int i = 0; i < count; i++) {
      starts[dbs[i] + 1]++;
    }
    for (int d = 0; d < DBS; d++) {
      starts[d + 1] += starts[d];
    }
    int[] fill = Arrays.copyOf(starts, DBS);
    for (int i = 0; i < count; i++) {
      order[fill[dbs[i]]++] = i;
    }
    return starts;
  }

  /**
   * Sorts {@code order[from..to)} by {@link #compare}, {@code other[from..to)} scratch: calls on
   * ranges apart may run on threads apart.
   */
  final void sortBucket(int[] order, int[] other, int from, int to) {
    if (sort(order, other, from, to) != order) {
      System.arraycopy(other, from, order, from, to - from);
    }
  }

  /**
   * Sorts {@code order[from..to)} by {@link #compare}: runs of {@code RUN} by insertion, then
   * merges between {@code order} and {@code other}; returns the array that holds the result.
   */
  private int[] sort(int[] order, int[] other, int from, int to) {
    for (int lo = from; lo < to; lo += RUN) {
      int hi = Math.min(lo + RUN, to);
      for (int i = lo + 1; i < hi; i++) {
        int x = order[i];
        int j = i - 1;
        for (; j >= lo && compare(order[j], x) > 0; j--) {
          order[j + 1] = order[j];
        }
        order[j + 1] = x;
      }
    }
    int[] in = order;
    int[] out = other;
    for (int width = RUN; width < to - from; width *= 2) {
      for (int lo = from; lo < to; lo += 2 * width) {
        int mid = Math.min(lo + width, to);
        int hi = Math.min(lo + 2 * width, to);
        if (mid == hi || compare(in[mid - 1], in[mid]) <= 0) {
          System.arraycopy(in, lo, out, lo, hi - lo); // already in order
          continue;
        }
        int i = lo;
        int j = mid;
        int k = lo;
        while (i < mid && j < hi) {
          out[k++] = compare(in[i], in[j]) <= 0 ? in[i++] : in[j++];
        }
        System.arraycopy(in, i, out, k, mid - i);
        System.arraycopy(in, j, out, k + mid - i, hi - j);
      }
      int[] t = in;
      in = out;
      out = t;
    }
    return in;
  }
}
