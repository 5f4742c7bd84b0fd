package datalith.codec;

import java.util.Arrays;

/** A growable byte array for building raw (unescaped) bodies; one thread. */
final class ByteSink {

  private byte[] buf;
  // bytes [0, len) of buf are written
  private int len;

  ByteSink(int capacity) {
    buf = new byte[Math.max(capacity, 8)];
  }

  private void reserve(int n) {
    if (len + n > buf.length) {
      buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
    }
  }

  void put(int b) {
    reserve(1);
    buf[len++] = (byte) b;
  }

  void put(byte[] a) {
    put(a, 0, a.length);
  }

  void put(byte[] a, int off, int n) {
    reserve(n);
    System.arraycopy(a, off, buf, len, n);
    len += n;
  }

  /**
   * Writes v so that unsigned byte order equals signed numeric order and no
   * encoding is a prefix of another: a header byte {@code 0x80 + k} (v >= 0)
   * or {@code 0x7F - k} (v < 0), then the low k bytes of v big-endian, k the
   * fewest bytes that hold v (for v < 0: that hold ~v).
   */
  void putOrderedLong(long v) {
    long magnitude = v < 0 ? ~v : v;
    int k = (71 - Long.numberOfLeadingZeros(magnitude)) >>> 3;
    put(v < 0 ? 0x7F - k : 0x80 + k);
    for (int s = (k - 1) * 8; s >= 0; s -= 8) {
      put((int) (v >>> s));
    }
  }

  /** Flips every bit of bytes {@code [from, length())}, reversing their order. */
  void invertFrom(int from) {
    for (int i = from; i < len; i++) {
      buf[i] = (byte) ~buf[i];
    }
  }

  int length() {
    return len;
  }

  /** The internal array; bytes {@code [0, length())} are valid until the next write. */
  byte[] array() {
    return buf;
  }

  byte[] toArray() {
    return Arrays.copyOf(buf, len);
  }
}
