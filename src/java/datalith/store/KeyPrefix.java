package datalith.store;

import java.nio.ByteBuffer;

/** Prefix tests on keys, for the cursors' bulk moves over runs of keys ({@link Cursor#skipRun}). */
final class KeyPrefix {
  private KeyPrefix() {}

  /**
   * Whether the {@code len} bytes of {@code b} from {@code off} start with {@code prefix} (its
   * bytes 0 to limit), whatever the buffers' byte orders.
   */
  static boolean at(ByteBuffer b, int off, int len, ByteBuffer prefix) {
    int n = prefix.limit();
    return len >= n && b.slice(off, n).mismatch(prefix) < 0;
  }

  /**
   * The last index in {@code [from, last]} whose key has {@code prefix}, given that key
   * {@code from} has it and the keys with it from {@code from} on are a run.
   */
  static int lastOfRun(int from, int last, java.util.function.IntPredicate has) {
    if (has.test(last)) {
      return last;
    }
    int lo = from; // has the prefix
    int hi = last; // has not
    while (hi - lo > 1) {
      int mid = (lo + hi) >>> 1;
      if (has.test(mid)) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
}
