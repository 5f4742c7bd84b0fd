package datalith.tx;

import java.util.Arrays;

/** A byte array as a map key: equal when the bytes are (for encoded values and index keys). */
record Bytes(byte[] b) {
  @Override
  public boolean equals(Object o) {
    return o instanceof Bytes x && Arrays.equals(b, x.b);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(b);
  }
}
