package datalith.db;

import datalith.codec.Bytes;
import datalith.codec.Codec;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The keys an {@link IndexScan} reads: those that start with a prefix and sort before an
 * optional upper bound. The prefix is copied, as bytes and as its whole 8-byte words, so that a
 * key is compared with it a word at a time. One scan's; one thread.
 */
final class ScanRange {
  // the prefix, copied: its bytes (and a spare array for the next one), its whole 8-byte words
  private static final byte[] NO_BYTES = {};
  private static final long[] NO_WORDS = {};
  private byte[] prefixBytes = NO_BYTES;
  private byte[] spareBytes = NO_BYTES;
  private long[] prefixWords = NO_WORDS;
  private long prefixLastWord; // the prefix's last 8 bytes, when it has 8 or more
  private int prefixLen;
  private ByteBuffer upper; // exclusive bound on the key, or null
  private int upperFrom; // upper starts with the prefix's first upperFrom bytes

  /**
   * Sets the prefix (bytes 0 to limit of {@code prefix}, copied) and the upper bound; the old
   * prefix's bytes are left in {@link #spareBytes}.
   */
  void set(ByteBuffer prefix, ByteBuffer upper) {
    int n = prefix.limit();
    byte[] b = spareBytes;
    if (b.length < n) {
      b = new byte[Math.max(n, 16)];
    }
    prefix.get(0, b, 0, n);
    spareBytes = prefixBytes;
    prefixBytes = b;
    prefixLen = n;
    if (prefixWords.length < n >>> 3) {
      prefixWords = new long[b.length >>> 3];
    }
    for (int i = 0; i + 8 <= n; i += 8) {
      prefixWords[i >>> 3] = Bytes.longAt(b, i);
    }
    prefixLastWord = n >= 8 ? Bytes.longAt(b, n - 8) : 0;
    this.upper = upper;
    upperFrom = upper != null && upper.limit() >= n
        && Codec.compareBytes(upper, 0, n, ByteBuffer.wrap(b), 0, n) == 0 ? n : 0;
  }

  /** The prefix's length in bytes. */
  int prefixLength() {
    return prefixLen;
  }

  /** Whether there is an upper bound. */
  boolean bounded() {
    return upper != null;
  }

  /**
   * Whether the prefix before the last {@link #set}, {@code oldLen} bytes long, sorts before
   * the prefix over the length they share.
   */
  boolean ascendsFrom(int oldLen) {
    int m = Math.min(oldLen, prefixLen);
    return Arrays.compareUnsigned(spareBytes, 0, m, prefixBytes, 0, m) < 0;
  }

  /**
   * The sign of comparing all of key {@code k} with the prefix. Kept apart from contains's
   * equality loop: a lookup join's steps mostly differ in a whole word, answered here at once.
   */
  int compareToPrefix(ByteBuffer k) {
    int kl = k.limit();
    int n = prefixLen;
    int m = Math.min(kl, n);
    int i = 0;
    for (; i + 8 <= m; i += 8) {
      long x = Bytes.longAt(k, i);
      long y = prefixWords[i >>> 3];
      if (x != y) {
        return Long.compareUnsigned(x, y);
      }
    }
    for (; i < m; i++) {
      int x = k.get(i) & 0xFF;
      int y = prefixBytes[i] & 0xFF;
      if (x != y) {
        return x - y;
      }
    }
    return kl - n;
  }

  /** Whether the first {@code len} bytes of key {@code k} are in range. */
  boolean contains(ByteBuffer k, int len) {
    int n = prefixLen;
    if (len < n) {
      return false;
    }
    // Bytes.longAt reads big-endian whatever the buffer's order, as prefixWords were made
    long[] w = prefixWords;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
      if (Bytes.longAt(k, i) != w[i >>> 3]) {
        return false;
      }
    }
    if (i < n && n >= 8) {
      // the bytes past the last whole word: the prefix's last 8 bytes, read as one word
      if (Bytes.longAt(k, n - 8) != prefixLastWord) {
        return false;
      }
    } else {
      for (; i < n; i++) {
        if (k.get(i) != prefixBytes[i]) {
          return false;
        }
      }
    }
    // the first upperFrom bytes of upper are the prefix's, which k starts with
    int f = upperFrom;
    return upper == null || Codec.compareBytes(k, f, len - f, upper, f, upper.limit() - f) < 0;
  }
}
