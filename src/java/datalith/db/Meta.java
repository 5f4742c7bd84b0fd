package datalith.db;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/** Keys of the META sub-database. */
final class Meta {
  /** The basis t of the last commit (8 bytes). */
  static final ByteBuffer T = key("t");
  /** The next entity id to hand out (8 bytes). */
  static final ByteBuffer NEXT_EID = key("next-eid");
  /** Datom counts per attribute, for the planner ({@link Stats}). */
  static final ByteBuffer STATS = key("stats");
  /** The on-disk format version (8 bytes). */
  static final ByteBuffer FORMAT = key("format");
  static final long FORMAT_VERSION = 1;

  private Meta() {}

  private static ByteBuffer key(String name) {
    byte[] b = name.getBytes(StandardCharsets.US_ASCII);
    ByteBuffer buf = ByteBuffer.allocateDirect(b.length);
    buf.put(b).flip();
    return buf.asReadOnlyBuffer();
  }

  static ByteBuffer longVal(long x) {
    ByteBuffer b = ByteBuffer.allocateDirect(8);
    b.putLong(0, x);
    return b;
  }
}
