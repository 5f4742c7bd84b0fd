package datalith.codec;

import clojure.lang.BigInt;
import clojure.lang.ExceptionInfo;
import clojure.lang.Keyword;
import clojure.lang.PersistentVector;
import clojure.lang.Symbol;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Date;
import java.util.List;
import java.util.UUID;

/**
 * Order-preserving, self-delimiting byte encoding of datom values. An encoding
 * is a tag byte (which orders values of different types) and a body:
 *
 * <pre>
 * nil      (tuples only)  -
 * boolean  1 byte         00 false, 01 true
 * long     8 bytes        big-endian, sign bit flipped
 * double   8 bytes        IEEE bits, all flipped if negative else sign flipped
 *                         (-Inf &lt; ... &lt; -0.0 &lt; 0.0 &lt; ... &lt; +Inf &lt; NaN)
 * float    4 bytes        as double
 * instant  8 bytes        epoch millis as long
 * uuid     16 bytes       both halves as long (UUID.compareTo order)
 * ref      8 bytes        entity id big-endian (ids are &gt;= 0)
 * string   escaped        one UTF-16 code unit in 1-3 bytes (CESU-8 style)
 * keyword, symbol         01 name, or 02 namespace 00-01 name (escaped)
 * bytes    escaped        the bytes
 * bigint   escaped        sign, magnitude length, magnitude (see Numeric)
 * bigdec   escaped        sign, exponent, digit pairs, scale (see Numeric)
 * tuple    escaped        the elements' full encodings, one after another
 * edn      escaped        canonical form, equality only (see Edn)
 * uri      escaped        its string form, as a string
 * </pre>
 *
 * Escaped bodies write a content zero as {@code 00 FF} and end with
 * {@code 00 00}, which sorts below any continuation, so a value sorts before
 * the longer values it is a prefix of. Within one type, unsigned byte order is
 * {@code clojure.core/compare} order, except: doubles and floats use the total
 * order of {@link Double#compare}; bigdecs that are numerically equal sort by
 * scale; tuples compare element by element, nil first and values of different
 * types by tag; EDN values have no order; URIs sort by their string forms, not by
 * {@link URI#compareTo}, and two URIs equal by {@link URI#equals} but spelled apart (a
 * scheme or host in other case) are two values.
 *
 * <p>Threading: all methods are static and stateless; any thread may call them.
 * Byte arrays returned are new and owned by the caller; buffers passed in are
 * read by absolute index only, their position and limit untouched.
 */
public final class Codec {

  /** Tag of nil, which appears only as a tuple element. */
  public static final int T_NIL = 1;
  /** Tag of {@link Boolean}. */
  public static final int T_BOOLEAN = 2;
  /** Tag of {@link Long}. */
  public static final int T_LONG = 3;
  /** Tag of {@link Double}. */
  public static final int T_DOUBLE = 4;
  /** Tag of {@link Float}. */
  public static final int T_FLOAT = 5;
  /** Tag of {@link BigInt}. */
  public static final int T_BIGINT = 6;
  /** Tag of {@link BigDecimal}. */
  public static final int T_BIGDEC = 7;
  /** Tag of {@link Date}. */
  public static final int T_INSTANT = 8;
  /** Tag of {@link UUID}. */
  public static final int T_UUID = 9;
  /** Tag of {@link String}. */
  public static final int T_STRING = 10;
  /** Tag of {@link Keyword}. */
  public static final int T_KEYWORD = 11;
  /** Tag of {@link Symbol}. */
  public static final int T_SYMBOL = 12;
  /** Tag of an entity id ({@link Long}, &gt;= 0). */
  public static final int T_REF = 13;
  /** Tag of {@code byte[]}. */
  public static final int T_BYTES = 14;
  /** Tag of a tuple ({@link PersistentVector} of scalars and nils). */
  public static final int T_TUPLE = 15;
  /** Tag of any other value, stored in canonical form. */
  public static final int T_EDN = 16;
  /**
   * Tag of {@link URI}, the values of {@code :db.type/uri} attributes. {@link #inferTag} gives a
   * URI {@link #T_EDN}, as it did before this tag: a URI of an attribute of no declared type, or
   * in a tuple, is stored as it always was, so it is found by the same encoding.
   */
  public static final int T_URI = 17;
  /** No declared type: {@link #coerce} infers the tag from the Java class. */
  public static final int T_ANY = 0;
  /** Longest key part {@link #keyPart} returns, in bytes. */
  public static final int MAX_INLINE = 400;
  /**
   * Deepest nesting of collections in a stored value: a value is at depth 1,
   * the elements of a collection one deeper. Keeps every recursive walk of a
   * value (encoding, decoding, printing, comparing) far from the stack's end.
   */
  public static final int MAX_NESTING = 256;

  // bytes of full encoding an overflow key part keeps, leaving room for marker and hash
  private static final int OVERFLOW_PREFIX = MAX_INLINE - 20;
  private static final byte[] NIL = {T_NIL};
  // the shortest overflow form: a prefix cut at most one byte short, the marker, the hash
  private static final int MIN_OVERFLOW_PART = OVERFLOW_PREFIX - 1 + 2 + Escaping.HASH_LENGTH;

  private Codec() {}

  /**
   * The tag of v when its attribute declares no type: Boolean, Long (and
   * Integer, Short, Byte), Double, Float, BigInt (and BigInteger), BigDecimal,
   * Date, UUID, String, Keyword, Symbol and byte[] get their own tag, anything
   * else (maps, vectors, sets, lists, ratios, chars...) {@link #T_EDN}; never
   * {@link #T_REF}, {@link #T_TUPLE} or {@link #T_URI} (a URI is an EDN value here).
   *
   * @throws IllegalArgumentException when v is null
   */
  public static int inferTag(Object v) {
    if (v instanceof String) {
      return T_STRING;
    } else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
      return T_LONG;
    } else if (v instanceof Keyword) {
      return T_KEYWORD;
    } else if (v instanceof Double) {
      return T_DOUBLE;
    } else if (v instanceof Boolean) {
      return T_BOOLEAN;
    } else if (v instanceof UUID) {
      return T_UUID;
    } else if (v instanceof Date) {
      return T_INSTANT;
    } else if (v instanceof Float) {
      return T_FLOAT;
    } else if (v instanceof BigInt || v instanceof BigInteger) {
      return T_BIGINT;
    } else if (v instanceof BigDecimal) {
      return T_BIGDEC;
    } else if (v instanceof Symbol) {
      return T_SYMBOL;
    } else if (v instanceof byte[]) {
      return T_BYTES;
    } else if (v == null) {
      throw new IllegalArgumentException("nil has no type");
    }
    return T_EDN;
  }

  /**
   * v as the canonical Java class of {@code tag}, or null when v (or null) is
   * not a value of that type. Integer, Short and Byte become Long (for
   * {@link #T_LONG}, and for {@link #T_BIGINT} as a BigInt, like Long and
   * BigInteger); a Float becomes a Double (exact), a Double a Float only when
   * exact; integers are not doubles. {@link #T_REF} takes a Long or Integer
   * &gt;= 0. {@link #T_TUPLE} takes any {@link List} and returns a
   * {@link PersistentVector} of its elements coerced as {@link #T_ANY}, nils
   * kept. {@link #T_EDN} takes any value nippy can freeze and returns its
   * canonical form, {@code =} to v (lists and seqs become vectors, sorted
   * collections plain ones, metadata is dropped...). {@link #T_ANY} is
   * {@code coerce(v, inferTag(v))}.
   *
   * @throws IllegalArgumentException when tag is not a type tag
   */
  public static Object coerce(Object v, int tag) {
    if (v == null) {
      return null;
    }
    switch (tag) {
      case T_ANY:
        return coerce(v, inferTag(v));
      case T_NIL:
        return null;
      case T_BOOLEAN:
        return v instanceof Boolean ? Boolean.valueOf((Boolean) v) : null;
      case T_LONG:
        if (v instanceof Long) {
          return v;
        }
        return isSmallIntegral(v) ? (Object) ((Number) v).longValue() : null;
      case T_DOUBLE:
        if (v instanceof Double) {
          return v;
        }
        return v instanceof Float ? (Object) ((Float) v).doubleValue() : null;
      case T_FLOAT:
        return coerceFloat(v);
      case T_BIGINT:
        return coerceBigInt(v);
      case T_BIGDEC:
        return v instanceof BigDecimal ? v : null;
      case T_INSTANT:
        if (!(v instanceof Date)) {
          return null;
        }
        return v.getClass() == Date.class ? v : new Date(((Date) v).getTime());
      case T_UUID:
        return v instanceof UUID ? v : null;
      case T_STRING:
        return v instanceof String ? v : null;
      case T_KEYWORD:
        return v instanceof Keyword ? v : null;
      case T_SYMBOL:
        return v instanceof Symbol ? v : null;
      case T_URI:
        return v instanceof URI ? v : null;
      case T_REF: // a Long as it is (boxing its long again allocates a Long for most ids)
        if (v instanceof Long l) {
          return l >= 0 ? l : null;
        }
        return v instanceof Integer i && i >= 0 ? (Object) i.longValue() : null;
      case T_BYTES:
        return v instanceof byte[] ? v : null;
      case T_TUPLE:
        return v instanceof List ? coerceTuple((List<?>) v) : null;
      case T_EDN:
        try {
          return decode(ByteBuffer.wrap(Edn.encode(T_EDN, v)), 0);
        } catch (RuntimeException e) {
          // unstorable, or nippy cannot freeze or thaw it, or a lazy seq in it threw
          return null;
        }
      default:
        throw new IllegalArgumentException("not a type tag: " + tag);
    }
  }

  /**
   * Why no tag can store {@code v}, as a phrase ("is a Java array ..."), or
   * null: v holds a Java array other than {@code byte[]} (arrays compare by
   * identity, so no stored value could equal one), collections nested
   * deeper than {@link #MAX_NESTING}, or a Java set or map with two members
   * that are {@code =} to each other. Walks v without recursion and reads at
   * most {@code MAX_NESTING} levels of it, so cyclic Java collections end.
   */
  public static String unstorable(Object v) {
    return Edn.unstorable(v);
  }

  private static boolean isSmallIntegral(Object v) {
    return v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte;
  }

  private static Object coerceFloat(Object v) {
    if (v instanceof Float) {
      return v;
    }
    if (v instanceof Double) {
      double d = (Double) v;
      float f = (float) d;
      return f == d || Double.isNaN(d) ? (Object) f : null;
    }
    return null;
  }

  private static Object coerceBigInt(Object v) {
    if (v instanceof BigInt) {
      return v;
    } else if (v instanceof BigInteger) {
      return BigInt.fromBigInteger((BigInteger) v);
    } else if (isSmallIntegral(v)) {
      return BigInt.fromLong(((Number) v).longValue());
    }
    return null;
  }

  private static Object coerceTuple(List<?> xs) {
    Object[] out = new Object[xs.size()];
    int i = 0;
    for (Object x : xs) {
      Object y = coerce(x, T_ANY);
      if (y == null && x != null) {
        return null;
      }
      out[i++] = y;
    }
    return PersistentVector.create(out);
  }

  /**
   * The full encoding of v as {@code tag}: the tag byte, then the body, never
   * truncated. v must be what {@link #coerce} returns for tag ({@link #T_EDN}
   * also takes values not yet in canonical form).
   *
   * @throws ClassCastException when v is not of the class of tag
   * @throws IllegalArgumentException when tag is {@link #T_ANY} or unknown, or
   *     v is null or a negative entity id
   */
  public static byte[] encode(Object v, int tag) {
    if (v == null && tag != T_NIL) {
      throw new IllegalArgumentException("nil can only be a tuple element");
    }
    switch (tag) {
      case T_NIL:
        if (v != null) {
          throw new IllegalArgumentException("not nil: " + v);
        }
        return NIL.clone();
      case T_BOOLEAN:
        return new byte[] {T_BOOLEAN, (byte) ((Boolean) v ? 1 : 0)};
      case T_LONG:
        return fixed(T_LONG, (Long) v ^ Long.MIN_VALUE, 8);
      case T_DOUBLE:
        return fixed(T_DOUBLE, orderedBits((Double) v), 8);
      case T_FLOAT:
        return fixed(T_FLOAT, orderedBits((Float) v), 4);
      case T_BIGINT:
        return Numeric.encodeBigInt(T_BIGINT, (BigInt) v);
      case T_BIGDEC:
        return Numeric.encodeBigDec(T_BIGDEC, (BigDecimal) v);
      case T_INSTANT:
        return fixed(T_INSTANT, ((Date) v).getTime() ^ Long.MIN_VALUE, 8);
      case T_UUID:
        return encodeUuid((UUID) v);
      case T_STRING:
        return Text.encodeString(T_STRING, (String) v);
      case T_KEYWORD:
        Keyword k = (Keyword) v;
        return Text.encodeNamed(T_KEYWORD, k.getNamespace(), k.getName());
      case T_SYMBOL:
        Symbol s = (Symbol) v;
        return Text.encodeNamed(T_SYMBOL, s.getNamespace(), s.getName());
      case T_REF:
        long id = (Long) v;
        if (id < 0) {
          throw new IllegalArgumentException("negative entity id: " + id);
        }
        return fixed(T_REF, id, 8);
      case T_BYTES:
        byte[] bytes = (byte[]) v;
        return Escaping.wrap(T_BYTES, bytes, bytes.length);
      case T_TUPLE:
        return encodeTuple((List<?>) v);
      case T_EDN:
        return Edn.encode(T_EDN, v);
      case T_URI:
        return Text.encodeString(T_URI, v.toString());
      default:
        throw new IllegalArgumentException("not a concrete type tag: " + tag);
    }
  }

  // tag, then the low width bytes of bits big-endian
  private static byte[] fixed(int tag, long bits, int width) {
    byte[] out = new byte[1 + width];
    out[0] = (byte) tag;
    putBigEndian(out, 1, bits, width);
    return out;
  }

  private static void putBigEndian(byte[] out, int at, long bits, int width) {
    for (int i = at + width - 1; i >= at; i--) {
      out[i] = (byte) bits;
      bits >>>= 8;
    }
  }

  // unsigned order of the result is Double.compare order; NaNs collapse to one
  private static long orderedBits(double d) {
    long bits = Double.doubleToLongBits(d);
    return bits < 0 ? ~bits : bits ^ Long.MIN_VALUE;
  }

  private static long orderedBits(float f) {
    int bits = Float.floatToIntBits(f);
    return bits < 0 ? ~bits : bits ^ Integer.MIN_VALUE;
  }

  private static byte[] encodeUuid(UUID u) {
    byte[] out = new byte[17];
    out[0] = T_UUID;
    putBigEndian(out, 1, u.getMostSignificantBits() ^ Long.MIN_VALUE, 8);
    putBigEndian(out, 9, u.getLeastSignificantBits() ^ Long.MIN_VALUE, 8);
    return out;
  }

  private static byte[] encodeTuple(List<?> xs) {
    ByteSink raw = new ByteSink(16 * xs.size());
    for (Object x : xs) {
      raw.put(x == null ? NIL : encode(x, inferTag(x)));
    }
    return Escaping.wrap(T_TUPLE, raw.array(), raw.length());
  }

  /**
   * The value whose full encoding starts at absolute index {@code off} of b,
   * which may be big- or little-endian. Returns a new object (or a cached
   * immutable one) owned by the caller.
   *
   * @throws ExceptionInfo {@code :store/corrupt} when the bytes at off are an
   *     overflow key part (decode the full encoding stored under its hash) or
   *     malformed, such as bytes of a damaged store
   */
  public static Object decode(ByteBuffer b, int off) {
    try {
      return decodeValue(b, off);
    } catch (RuntimeException e) {
      throw malformed("value", b, off, e);
    }
  }

  /**
   * The exception for malformed bytes at {@code off} of b, where a {@code what}
   * was expected: {@code :store/corrupt}, for decoding reads only what a store
   * holds; its data holds the offset and the first bytes from there.
   */
  private static final Keyword ERROR = Keyword.intern("error");
  private static final Keyword STORE_CORRUPT = Keyword.intern("store", "corrupt");

  private static RuntimeException malformed(String what, ByteBuffer b, int off,
      RuntimeException e) {
    if (e instanceof ExceptionInfo info
        && STORE_CORRUPT.equals(info.getData().valAt(ERROR))) {
      return e; // already says so; any other ex-info (nippy's thaw of damaged bytes) is wrapped
    }
    StringBuilder hex = new StringBuilder();
    for (int i = Math.max(off, 0); i < Math.min(b.limit(), Math.max(off, 0) + 32); i++) {
      hex.append(String.format("%02x", b.get(i)));
    }
    return new ExceptionInfo("Malformed " + what + " encoding at index " + off + " of "
        + b.limit() + " bytes: " + e.getMessage(),
        clojure.lang.PersistentArrayMap.create(java.util.Map.of(
            ERROR, STORE_CORRUPT,
            Keyword.intern("offset"), off,
            Keyword.intern("bytes"), hex.toString())), e);
  }

  private static Object decodeValue(ByteBuffer b, int off) {
    int tag = b.get(off);
    switch (tag) {
      case T_NIL:
        return null;
      case T_BOOLEAN:
        return b.get(off + 1) != 0;
      case T_LONG:
        return Bytes.longAt(b, off + 1) ^ Long.MIN_VALUE;
      case T_DOUBLE:
        long bits = Bytes.longAt(b, off + 1);
        return Double.longBitsToDouble(bits < 0 ? bits ^ Long.MIN_VALUE : ~bits);
      case T_FLOAT:
        int fbits = intAt(b, off + 1);
        return Float.intBitsToFloat(fbits < 0 ? fbits ^ Integer.MIN_VALUE : ~fbits);
      case T_BIGINT:
        return Numeric.decodeBigInt(b, off);
      case T_BIGDEC:
        return Numeric.decodeBigDec(b, off);
      case T_INSTANT:
        return new Date(Bytes.longAt(b, off + 1) ^ Long.MIN_VALUE);
      case T_UUID:
        return new UUID(Bytes.longAt(b, off + 1) ^ Long.MIN_VALUE, Bytes.longAt(b, off + 9) ^ Long.MIN_VALUE);
      case T_STRING:
        return Text.decodeString(b, off);
      case T_KEYWORD:
        return Text.decodeKeyword(b, off);
      case T_SYMBOL:
        return Text.decodeSymbol(b, off);
      case T_REF:
        return Bytes.longAt(b, off + 1);
      case T_BYTES:
        return Escaping.body(b, off + 1);
      case T_TUPLE:
        return decodeTuple(b, off);
      case T_EDN:
        return Edn.decode(b, off);
      case T_URI:
        return URI.create(Text.decodeString(b, off));
      default:
        throw new IllegalArgumentException("malformed encoding: tag " + tag + " at index " + off);
    }
  }

  private static PersistentVector decodeTuple(ByteBuffer b, int off) {
    ByteBuffer raw = ByteBuffer.wrap(Escaping.body(b, off + 1));
    PersistentVector out = PersistentVector.EMPTY;
    for (int i = 0; i < raw.limit(); i = skipPart(raw, i)) {
      out = out.cons(decodeValue(raw, i));
    }
    return out;
  }

  /**
   * The key form of a full encoding: {@code full} itself (the same array) when
   * it is at most {@code MAX_INLINE - 20} bytes long, else a new overflow form
   * of at most {@code MAX_INLINE} bytes: a prefix of full (at most
   * {@code MAX_INLINE - 20} bytes, never splitting a two-byte unit), the
   * overflow marker {@code 00 02} and {@link #overflowHash}{@code (full)}.
   * Key parts sort like their values, except two overflow forms with the same
   * prefix, which sort by hash; callers that need value order there compare
   * the full values.
   */
  public static byte[] keyPart(byte[] full) {
    if (full.length <= OVERFLOW_PREFIX) {
      return full;
    }
    int cut = Escaping.cut(full, OVERFLOW_PREFIX);
    byte[] out = Arrays.copyOf(full, cut + 2 + Escaping.HASH_LENGTH);
    out[cut] = 0;
    out[cut + 1] = (byte) Escaping.OVF;
    System.arraycopy(overflowHash(full), 0, out, cut + 2, Escaping.HASH_LENGTH);
    return out;
  }

  /** The first 16 bytes of the SHA-256 digest of {@code full}, in a new array. */
  public static byte[] overflowHash(byte[] full) {
    try {
      return Arrays.copyOf(MessageDigest.getInstance("SHA-256").digest(full), Escaping.HASH_LENGTH);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM provides SHA-256", e);
    }
  }

  /**
   * The absolute index just past the key part (full encoding, or overflow
   * form) starting at {@code off} of b. Allocates nothing.
   */
  public static int skipKeyPart(ByteBuffer b, int off) {
    try {
      return skipPart(b, off);
    } catch (RuntimeException e) {
      throw malformed("key part", b, off, e);
    }
  }

  private static int skipPart(ByteBuffer b, int off) {
    int width = width(b.get(off));
    return width > 0 ? off + width : Escaping.pastTerminal(b, Escaping.terminal(b, off + 1));
  }

  /**
   * Whether the key part starting at {@code off} of b is an overflow form.
   *
   * @throws ExceptionInfo {@code :store/corrupt} when it is malformed
   */
  public static boolean isOverflow(ByteBuffer b, int off) {
    try {
      // an overflow form is never shorter than MIN_OVERFLOW_PART: most keys are told at once
      return b.limit() - off >= MIN_OVERFLOW_PART && width(b.get(off)) == 0
          && b.get(Escaping.terminal(b, off + 1) + 1) == Escaping.OVF;
    } catch (RuntimeException e) {
      throw malformed("key part", b, off, e);
    }
  }

  /**
   * The absolute index of the 16-byte hash in the overflow key part starting
   * at {@code off} of b.
   *
   * @throws ExceptionInfo {@code :store/corrupt} when that key part is not an
   *     overflow form
   */
  public static int overflowHashOffset(ByteBuffer b, int off) {
    try {
      if (width(b.get(off)) == 0) {
        int m = Escaping.terminal(b, off + 1);
        if (b.get(m + 1) == Escaping.OVF) {
          return m + 2;
        }
      }
    } catch (RuntimeException e) {
      throw malformed("overflow key part", b, off, e);
    }
    throw malformed("overflow key part", b, off,
        new IllegalArgumentException("not an overflow key part"));
  }

  // length of the full encoding of a fixed-width type, 0 for variable-length ones
  private static int width(int tag) {
    switch (tag) {
      case T_NIL:
        return 1;
      case T_BOOLEAN:
        return 2;
      case T_FLOAT:
        return 5;
      case T_LONG:
      case T_DOUBLE:
      case T_INSTANT:
      case T_REF:
        return 9;
      case T_UUID:
        return 17;
      case T_BIGINT:
      case T_BIGDEC:
      case T_STRING:
      case T_KEYWORD:
      case T_SYMBOL:
      case T_BYTES:
      case T_TUPLE:
      case T_EDN:
      case T_URI:
        return 0;
      default:
        throw new IllegalArgumentException("malformed encoding: tag " + tag);
    }
  }

  /**
   * Unsigned lexicographic comparison of {@code b[aOff, aOff + aLen)} with
   * {@code c[cOff, cOff + cLen)}, a proper prefix first: negative, zero or
   * positive. Allocates nothing; either buffer may be big- or little-endian.
   */
  public static int compareBytes(ByteBuffer b, int aOff, int aLen, ByteBuffer c, int cOff, int cLen) {
    int n = Math.min(aLen, cLen);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
      long x = Bytes.longAt(b, aOff + i);
      long y = Bytes.longAt(c, cOff + i);
      if (x != y) {
        return Long.compareUnsigned(x, y);
      }
    }
    for (; i < n; i++) {
      int x = b.get(aOff + i) & 0xFF;
      int y = c.get(cOff + i) & 0xFF;
      if (x != y) {
        return x - y;
      }
    }
    return aLen - cLen;
  }

  private static int intAt(ByteBuffer b, int i) {
    int v = b.getInt(i);
    return b.order() == ByteOrder.BIG_ENDIAN ? v : Integer.reverseBytes(v);
  }
}
