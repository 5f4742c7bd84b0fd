package datalith.codec;

import clojure.lang.Keyword;
import clojure.lang.Symbol;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Strings, keywords and symbols. Each UTF-16 code unit is written on its own in
 * 1 to 3 bytes, UTF-8 style (surrogates too, as in CESU-8), so unsigned byte
 * order equals {@link String#compareTo} order; the code unit 0 is the escaped
 * zero {@code 00 FF}.
 */
final class Text {

  private Text() {}

  /** Number of escaped bytes s takes. */
  static int escapedLength(String s) {
    int n = s.length();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == 0 || c >= 0x80) {
        n += c >= 0x800 ? 2 : 1;
      }
    }
    return n;
  }

  /** Writes s escaped at {@code out[p]}; returns the index past it. */
  static int put(String s, byte[] out, int p) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == 0) {
        out[p++] = 0;
        out[p++] = (byte) Escaping.ESC;
      } else if (c < 0x80) {
        out[p++] = (byte) c;
      } else if (c < 0x800) {
        out[p++] = (byte) (0xC0 | (c >>> 6));
        out[p++] = (byte) (0x80 | (c & 0x3F));
      } else {
        out[p++] = (byte) (0xE0 | (c >>> 12));
        out[p++] = (byte) (0x80 | ((c >>> 6) & 0x3F));
        out[p++] = (byte) (0x80 | (c & 0x3F));
      }
    }
    return p;
  }

  // the bytes of a string being decoded, copied out of the index: one array per thread
  private static final int SCRATCH_MAX = 1024;
  private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[256]);

  /** The string whose escaped bytes are {@code [from, to)} of b. */
  static String get(ByteBuffer b, int from, int to) {
    int len = to - from;
    byte[] bytes = len <= SCRATCH_MAX ? scratch(len) : new byte[len];
    b.get(from, bytes, 0, len);
    // Without escaped zeros (00) and surrogates (lead byte ED, which U+D000-U+D7FF share),
    // the bytes are standard UTF-8, which the JDK decodes fastest (ASCII at memory speed).
    boolean utf8 = true;
    for (int i = 0; i < len; i++) {
      byte x = bytes[i];
      if (x == 0 || x == (byte) 0xED) {
        utf8 = false;
        break;
      }
    }
    if (utf8) {
      return new String(bytes, 0, len, StandardCharsets.UTF_8);
    }
    char[] cs = new char[len];
    int n = 0;
    int i = 0;
    while (i < len) {
      int x = bytes[i] & 0xFF;
      if (x == 0) {
        cs[n++] = 0;
        i += 2;
      } else if (x < 0x80) {
        cs[n++] = (char) x;
        i += 1;
      } else if (x < 0xE0) {
        cs[n++] = (char) (((x & 0x1F) << 6) | (bytes[i + 1] & 0x3F));
        i += 2;
      } else {
        cs[n++] = (char) (((x & 0x0F) << 12) | ((bytes[i + 1] & 0x3F) << 6) | (bytes[i + 2] & 0x3F));
        i += 3;
      }
    }
    return new String(cs, 0, n);
  }

  /** This thread's scratch array, of at least {@code len} bytes. */
  private static byte[] scratch(int len) {
    byte[] s = SCRATCH.get();
    if (s.length < len) {
      s = new byte[Math.max(len, 2 * s.length)];
      SCRATCH.set(s);
    }
    return s;
  }

  /** {@code tag | s | 00 00}. */
  static byte[] encodeString(int tag, String s) {
    byte[] out = new byte[1 + escapedLength(s) + 2];
    out[0] = (byte) tag;
    put(s, out, 1);
    return out;
  }

  static String decodeString(ByteBuffer b, int off) {
    return get(b, off + 1, Escaping.expect(b, off + 1, Escaping.END));
  }

  /**
   * {@code tag | 01 | name | 00 00} without a namespace, {@code tag | 02 | ns |
   * 00 01 | name | 00 00} with one: no namespace first, then by namespace,
   * then by name, as {@link Symbol#compareTo}.
   */
  static byte[] encodeNamed(int tag, String ns, String name) {
    int len = 2 + escapedLength(name) + 2 + (ns == null ? 0 : escapedLength(ns) + 2);
    byte[] out = new byte[len];
    out[0] = (byte) tag;
    out[1] = (byte) (ns == null ? 1 : 2);
    int p = 2;
    if (ns != null) {
      p = put(ns, out, p);
      out[p + 1] = (byte) Escaping.SEP;
      p += 2;
    }
    put(name, out, p);
    return out;
  }

  static Keyword decodeKeyword(ByteBuffer b, int off) {
    Symbol s = decodeSymbol(b, off);
    return Keyword.intern(s.getNamespace(), s.getName());
  }

  static Symbol decodeSymbol(ByteBuffer b, int off) {
    int from = off + 2;
    String ns = null;
    if (b.get(off + 1) == 2) {
      int sep = Escaping.expect(b, from, Escaping.SEP);
      ns = get(b, from, sep);
      from = sep + 2;
    }
    return Symbol.intern(ns, get(b, from, Escaping.expect(b, from, Escaping.END)));
  }
}
