package datalith.codec;

import clojure.lang.BigInt;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;

/**
 * Bigints and bigdecs as escaped bodies ordered by numeric value. Both start
 * with a sign byte (01 negative, 02 zero, 03 positive); the magnitude part
 * that follows is bit-flipped for negatives, so that a larger magnitude sorts
 * first among them.
 */
final class Numeric {

  private static final int NEGATIVE = 1;
  private static final int ZERO = 2;
  private static final int POSITIVE = 3;
  // ends the digit pairs of a bigdec: below every pair byte (1..100)
  private static final int DIGITS_END = 0;

  private Numeric() {}

  private static int signByte(int signum) {
    return signum < 0 ? NEGATIVE : signum == 0 ? ZERO : POSITIVE;
  }

  /**
   * Raw body: sign, then for nonzero values the magnitude's byte count as an
   * ordered long and the magnitude big-endian without leading zero bytes.
   */
  static byte[] encodeBigInt(int tag, BigInt v) {
    BigInteger x = v.toBigInteger();
    ByteSink out = new ByteSink(16);
    out.put(signByte(x.signum()));
    if (x.signum() != 0) {
      byte[] mag = x.abs().toByteArray();
      int lead = mag[0] == 0 ? 1 : 0;
      out.putOrderedLong(mag.length - lead);
      out.put(mag, lead, mag.length - lead);
      if (x.signum() < 0) {
        out.invertFrom(1);
      }
    }
    return Escaping.wrap(tag, out.array(), out.length());
  }

  static BigInt decodeBigInt(ByteBuffer b, int off) {
    ByteSource in = new ByteSource(Escaping.body(b, off + 1));
    int sign = in.u8();
    if (sign == ZERO) {
      return BigInt.fromLong(0);
    }
    in.inverted(sign == NEGATIVE);
    byte[] mag = in.bytes((int) in.orderedLong());
    return BigInt.fromBigInteger(new BigInteger(sign == NEGATIVE ? -1 : 1, mag));
  }

  /**
   * Raw body: sign; for nonzero values the value is 0.d1d2... * 10^E with
   * d1 != 0 and no trailing zero digit, written as E (ordered long), the
   * digits two per byte ({@code 1 + 10 * d1 + d2}, a last lone digit as if
   * followed by 0) and {@link #DIGITS_END}; then, for every value, the scale
   * (ordered long), which orders numerically equal values (1.0 before 1.00)
   * and lets them round-trip.
   */
  static byte[] encodeBigDec(int tag, BigDecimal v) {
    ByteSink out = new ByteSink(16);
    out.put(signByte(v.signum()));
    if (v.signum() != 0) {
      BigDecimal stripped = v.stripTrailingZeros();
      String digits = stripped.unscaledValue().abs().toString();
      out.putOrderedLong((long) digits.length() - stripped.scale());
      for (int i = 0; i < digits.length(); i += 2) {
        int hi = digits.charAt(i) - '0';
        int lo = i + 1 < digits.length() ? digits.charAt(i + 1) - '0' : 0;
        out.put(1 + 10 * hi + lo);
      }
      out.put(DIGITS_END);
      if (v.signum() < 0) {
        out.invertFrom(1);
      }
    }
    out.putOrderedLong(v.scale());
    return Escaping.wrap(tag, out.array(), out.length());
  }

  static BigDecimal decodeBigDec(ByteBuffer b, int off) {
    ByteSource in = new ByteSource(Escaping.body(b, off + 1));
    int sign = in.u8();
    if (sign == ZERO) {
      return BigDecimal.valueOf(0, (int) in.orderedLong());
    }
    in.inverted(sign == NEGATIVE);
    long exponent = in.orderedLong();
    StringBuilder digits = new StringBuilder();
    for (int pair = in.u8(); pair != DIGITS_END; pair = in.u8()) {
      digits.append((char) ('0' + (pair - 1) / 10)).append((char) ('0' + (pair - 1) % 10));
    }
    if (digits.charAt(digits.length() - 1) == '0') {
      digits.setLength(digits.length() - 1);
    }
    in.inverted(false);
    int scale = (int) in.orderedLong();
    BigInteger unscaled = new BigInteger(digits.toString());
    BigDecimal stripped = new BigDecimal(sign == NEGATIVE ? unscaled.negate() : unscaled,
        (int) (digits.length() - exponent));
    return stripped.setScale(scale);
  }
}
