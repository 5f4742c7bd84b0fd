package datalith.db;

import datalith.codec.Bytes;
import datalith.store.SubDb;
import java.nio.ByteBuffer;
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
  // each key's first three 8-byte words, sign-flipped so that signed order is unsigned byte
  // order (every index key has at least 24 bytes): most comparisons end on them (an AVET key's
  // third word holds the end of a short value or the start of the entity)
  private final long[] w0;
  private final long[] w1;
  private final long[] w2;
  // the first from and last to of each key's intervals, side by side: most keys of a scan hold
  // at other instants, and a cursor passes them on these alone
  private final long[] lo;
  private final long[] hi;

  /** The entries of {@code sorted} (ordered by {@link Overlay#compare}), in that order. */
  ValidKeys(TreeMap<ByteBuffer, long[]> sorted) {
    this(bytesOf(sorted), sorted.values().toArray(new long[0][]));
  }

  private static byte[][] bytesOf(TreeMap<ByteBuffer, long[]> sorted) {
    byte[][] out = new byte[sorted.size()][];
    int i = 0;
    for (ByteBuffer k : sorted.keySet()) {
      out[i] = new byte[k.remaining()];
      k.duplicate().get(out[i++]);
    }
    return out;
  }

  /** {@code keys} (sorted, unsigned byte order) with their {@code intervals}. */
  private ValidKeys(byte[][] keys, long[][] intervals) {
    int n = keys.length;
    this.keys = keys;
    this.intervals = intervals;
    views = new ByteBuffer[n];
    w0 = new long[n];
    w1 = new long[n];
    w2 = new long[n];
    lo = new long[n];
    hi = new long[n];
    for (int i = 0; i < n; i++) {
      views[i] = ByteBuffer.wrap(keys[i]).asReadOnlyBuffer();
      w0[i] = Bytes.longAt(keys[i], 0) ^ Long.MIN_VALUE;
      w1[i] = Bytes.longAt(keys[i], 8) ^ Long.MIN_VALUE;
      w2[i] = Bytes.longAt(keys[i], 16) ^ Long.MIN_VALUE;
      lo[i] = Long.MAX_VALUE;
      hi[i] = Long.MIN_VALUE;
      for (int j = 0; j < intervals[i].length; j += 2) {
        lo[i] = Math.min(lo[i], intervals[i][j]);
        hi[i] = Math.max(hi[i], intervals[i][j + 1]);
      }
    }
  }

  /**
   * These keys of sub-database {@code db} without those of the pairs in {@code drop}
   * ({@code e -> aids}), merged with {@code more} (null: none; no key of a kept pair): the keys
   * of a value's lines after some pairs are replayed again.
   */
  ValidKeys merge(SubDb db, LongMap<long[]> drop, TreeMap<ByteBuffer, long[]> more) {
    byte[][] add = more == null ? new byte[0][] : bytesOf(more);
    long[][] addIv = more == null ? new long[0][] : more.values().toArray(new long[0][]);
    int n = 0;
    boolean[] kept = new boolean[keys.length];
    for (int i = 0; i < keys.length; i++) {
      byte[] k = keys[i];
      long e;
      long aid;
      switch (db) {
        case EAVT -> { e = Bytes.longAt(k, 0); aid = Bytes.longAt(k, 8); }
        case AEVT -> { e = Bytes.longAt(k, 8); aid = Bytes.longAt(k, 0); }
        case AVET -> { e = Bytes.longAt(k, k.length - 16); aid = Bytes.longAt(k, 0); }
        default -> { e = Bytes.longAt(k, 16); aid = Bytes.longAt(k, 8); } // VAET
      }
      kept[i] = !ValidTime.hides(drop, e, aid);
      n += kept[i] ? 1 : 0;
    }
    byte[][] outKeys = new byte[n + add.length][];
    long[][] outIv = new long[n + add.length][];
    int i = 0;
    int j = 0;
    for (int o = 0; o < outKeys.length; o++) {
      while (i < keys.length && !kept[i]) {
        i++;
      }
      boolean old = i < keys.length
          && (j == add.length || java.util.Arrays.compareUnsigned(keys[i], add[j]) < 0);
      outKeys[o] = old ? keys[i] : add[j];
      outIv[o] = old ? intervals[i++] : addIv[j++];
    }
    return new ValidKeys(outKeys, outIv);
  }

  int size() {
    return keys.length;
  }

  /** Whether key {@code i} holds at instant {@code at}. */
  boolean shown(int i, long at) {
    if (at < lo[i] || at >= hi[i]) {
      return false;
    }
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
    // k's first two words, zero-padded: a key that ties with them is compared in full
    long p0 = word(k, 0);
    long p1 = word(k, 8);
    int lo = 0;
    int hi = keys.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      int c = Long.compare(w0[mid], p0);
      if (c == 0) {
        c = Long.compare(w1[mid], p1);
        if (c == 0) {
          c = compare(keys[mid], k, 0);
        }
      }
      if (c < 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /** The sign of comparing key {@code i} with {@code k}, a store key. */
  int compareTo(int i, ByteBuffer k) {
    if (k.limit() >= 16) {
      long x = Bytes.longAt(k, 0) ^ Long.MIN_VALUE;
      if (w0[i] != x) {
        return Long.compare(w0[i], x);
      }
      long y = Bytes.longAt(k, 8) ^ Long.MIN_VALUE;
      if (w1[i] != y) {
        return Long.compare(w1[i], y);
      }
      if (k.limit() < 24) {
        return compare(keys[i], k, 16); // the first two words are equal
      }
      long z = Bytes.longAt(k, 16) ^ Long.MIN_VALUE;
      if (w2[i] != z) {
        return Long.compare(w2[i], z);
      }
      return compare(keys[i], k, 24); // the first three words are equal
    }
    return compare(keys[i], k, 0);
  }

  /** The 8 bytes of {@code k} from {@code off}, zero-padded past its limit, sign-flipped. */
  private static long word(ByteBuffer k, int off) {
    int n = k.limit() - off;
    if (n >= 8) {
      return Bytes.longAt(k, off) ^ Long.MIN_VALUE;
    }
    long w = 0;
    for (int i = 0; i < 8; i++) {
      w = w << 8 | (i < n ? k.get(off + i) & 0xFF : 0);
    }
    return w ^ Long.MIN_VALUE;
  }

  /**
   * The sign of comparing {@code a} with bytes 0 to limit of {@code b}, unsigned, whose first
   * {@code from} bytes are known equal (both have that many).
   */
  static int compare(byte[] a, ByteBuffer b, int from) {
    int bl = b.limit();
    int n = Math.min(a.length, bl);
    int i = from;
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
