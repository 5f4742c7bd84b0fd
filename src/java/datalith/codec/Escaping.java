package datalith.codec;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The escaped body of the variable-length types. Content byte {@code 0x00} is
 * written {@code 00 FF}; every other content byte is written as is, so each
 * {@code 0x00} starts a two-byte unit and a marker ({@code 00 00} end,
 * {@code 00 01} separator, {@code 00 02} overflow) sorts below any content
 * that could stand in its place.
 */
final class Escaping {

  /** Second byte of the end marker. */
  static final int END = 0x00;
  /** Second byte of the separator between the two parts of a keyword or symbol. */
  static final int SEP = 0x01;
  /** Second byte of the overflow marker; the 16-byte hash follows it. */
  static final int OVF = 0x02;
  /** Second byte of an escaped content zero. */
  static final int ESC = 0xFF;
  /** Length of the overflow hash. */
  static final int HASH_LENGTH = 16;

  private static final long LOW_BITS = 0x0101010101010101L;
  private static final long HIGH_BITS = 0x8080808080808080L;

  private Escaping() {}

  /** The full encoding {@code tag | escape(raw[0, len)) | 00 00}. */
  static byte[] wrap(int tag, byte[] raw, int len) {
    int zeros = 0;
    for (int i = 0; i < len; i++) {
      if (raw[i] == 0) {
        zeros++;
      }
    }
    byte[] out = new byte[1 + len + zeros + 2];
    out[0] = (byte) tag;
    int p = 1;
    for (int i = 0; i < len; i++) {
      byte x = raw[i];
      out[p++] = x;
      if (x == 0) {
        out[p++] = (byte) ESC;
      }
    }
    // out[p] and out[p + 1] are already the end marker 00 00
    return out;
  }

  /**
   * Absolute index of the first marker at or after {@code from}: the
   * {@code 0x00} of the first two-byte unit that is not an escaped zero.
   * Reads eight bytes at a time while they hold no zero; allocates nothing.
   */
  static int marker(ByteBuffer b, int from) {
    int i = from;
    int limit = b.limit();
    while (true) {
      if (i + 8 <= limit) {
        long w = Bytes.longAt(b, i);
        // nonzero exactly when some byte of w is zero, whatever the byte order
        if (((w - LOW_BITS) & ~w & HIGH_BITS) == 0) {
          i += 8;
          continue;
        }
      }
      if (b.get(i) != 0) {
        i++;
      } else if ((b.get(i + 1) & 0xFF) == ESC) {
        i += 2;
      } else {
        return i;
      }
    }
  }

  /**
   * Absolute index of the end or overflow marker of the body starting at
   * {@code from}, passing over separators.
   */
  static int terminal(ByteBuffer b, int from) {
    int m = marker(b, from);
    while (b.get(m + 1) == SEP) {
      m = marker(b, m + 2);
    }
    return m;
  }

  /** Index just past the end of a body whose terminal marker is at {@code m}. */
  static int pastTerminal(ByteBuffer b, int m) {
    return b.get(m + 1) == OVF ? m + 2 + HASH_LENGTH : m + 2;
  }

  /**
   * The content bytes of the escaped run {@code [from, to)}, which holds no
   * marker.
   */
  static byte[] unescape(ByteBuffer b, int from, int to) {
    byte[] out = new byte[to - from];
    int n = 0;
    for (int i = from; i < to; i++) {
      byte x = b.get(i);
      out[n++] = x;
      if (x == 0) {
        i++;
      }
    }
    return n == out.length ? out : Arrays.copyOf(out, n);
  }

  /**
   * Absolute index of the first marker at or after {@code from}, which must be
   * of {@code kind} ({@link #END} or {@link #SEP}); throws when it is the
   * overflow marker (an overflow key part cannot be decoded) or another kind.
   */
  static int expect(ByteBuffer b, int from, int kind) {
    int m = marker(b, from);
    int found = b.get(m + 1);
    if (found != kind) {
      throw new IllegalArgumentException(found == OVF
          ? "overflow key part: decode the full encoding stored under its hash"
          : "malformed encoding at index " + m);
    }
    return m;
  }

  /** The content bytes of the full-form body starting at {@code from}. */
  static byte[] body(ByteBuffer b, int from) {
    return unescape(b, from, expect(b, from, END));
  }

  /**
   * The largest unit boundary of {@code full}'s body that is at most
   * {@code max}: cutting there never splits a two-byte unit.
   */
  static int cut(byte[] full, int max) {
    int i = 1;
    while (true) {
      int step = full[i] == 0 ? 2 : 1;
      if (i + step > max) {
        return i;
      }
      i += step;
    }
  }
}
