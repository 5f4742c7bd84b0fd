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
  /**
   * The format this code writes: 2, log records carry a CRC32C ({@link LogRecord}). Format 1
   * (no checksums) is read only by {@link Verify} and {@link Rebuild}, which copies such a store
   * into the current format.
   */
  static final long FORMAT_VERSION = 2;
  /** The format before log records had checksums. */
  static final long FORMAT_NO_CHECKSUMS = 1;

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
