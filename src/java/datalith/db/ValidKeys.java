package datalith.db;

import datalith.codec.Bytes;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeMap;

/**
 * The index keys of one sub-database that a value's valid-time lines add, sorted (unsigned
 * byte order, the store's), each with the intervals over which it holds: {@code
 * [from0, to0, from1, to1, ...]}, ms, to exclusive. Immutable, shared by every valid-at view of
 * the value; {@link ValidCursor} walks it by position.
 */
final class ValidKeys {
  final byte[][] keys;
  /** The keys as read-only buffers, what a cursor hands out. */
  final ByteBuffer[] views;
  final long[][] intervals;

  /** The entries of {@code sorted} (ordered by {@link Overlay#compare}), in that order. */
  ValidKeys(TreeMap<ByteBuffer, long[]> sorted) {
    int n = sorted.size();
    keys = new byte[n][];
    views = new ByteBuffer[n];
    intervals = new long[n][];
    int i = 0;
    for (Map.Entry<ByteBuffer, long[]> en : sorted.entrySet()) {
      ByteBuffer k = en.getKey();
      keys[i] = new byte[k.remaining()];
      k.duplicate().get(keys[i]);
      views[i] = ByteBuffer.wrap(keys[i]).asReadOnlyBuffer();
      intervals[i] = en.getValue();
      i++;
    }
  }

  int size() {
    return keys.length;
  }

  /** Whether key {@code i} holds at instant {@code at}. */
  boolean shown(int i, long at) {
    long[] iv = intervals[i];
    for (int j = 0; j < iv.length; j += 2) {
      if (iv[j] <= at && at < iv[j + 1]) {
        return true;
      }
    }
    return false;
  }

  /** The position of the first key {@code >= k} (bytes 0 to limit), or {@link #size()}. */
  int ceiling(ByteBuffer k) {
    int lo = 0;
    int hi = keys.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (compare(keys[mid], k) < 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /** The sign of comparing {@code a} with bytes 0 to limit of {@code b}, unsigned. */
  static int compare(byte[] a, ByteBuffer b) {
    int bl = b.limit();
    int n = Math.min(a.length, bl);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
      long x = Bytes.longAt(a, i);
      long y = Bytes.longAt(b, i);
      if (x != y) {
        return Long.compareUnsigned(x, y);
      }
    }
    for (; i < n; i++) {
      int x = a[i] & 0xFF;
      int y = b.get(i) & 0xFF;
      if (x != y) {
        return x - y;
      }
    }
    return a.length - bl;
  }
}
