package datalith.codec;

import java.nio.ByteBuffer;

/** A read position in a raw (unescaped) body; one thread. */
final class ByteSource {

  /** The body, big-endian, read by absolute index. */
  final ByteBuffer buf;
  /** Absolute index of the next byte to read. */
  int pos;
  // xor-ed into every byte read: 0x00, or 0xFF to undo ByteSink.invertFrom
  private int mask;

  ByteSource(byte[] raw) {
    this.buf = ByteBuffer.wrap(raw);
  }

  /** Reads the following bytes bit-flipped (or not). */
  void inverted(boolean flip) {
    mask = flip ? 0xFF : 0x00;
  }

  int u8() {
    return (buf.get(pos++) & 0xFF) ^ mask;
  }

  byte[] bytes(int n) {
    byte[] out = new byte[n];
    for (int i = 0; i < n; i++) {
      out[i] = (byte) u8();
    }
    return out;
  }

  /** Reads what {@link ByteSink#putOrderedLong} wrote. */
  long orderedLong() {
    int h = u8();
    int k = h >= 0x80 ? h - 0x80 : 0x7F - h;
    long v = h >= 0x80 ? 0 : -1;
    for (int i = 0; i < k; i++) {
      v = (v << 8) | u8();
    }
    return v;
  }
}
