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
  /**
   * The t of the last transaction that changed the schema, or a later one, and the t of the
   * commit that wrote this record (8 + 8 bytes). Every commit writes it; a record whose second
   * half is not the store's t was left by a commit that did not (an older datalith), and does
   * not count.
   */
  static final ByteBuffer SCHEMA_T = key("schema-t");
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

  /**
   * The number a META record of 8 bytes holds: {@code b}, the value of key {@code name}.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when it is not 8 bytes long
   */
  static long longOf(ByteBuffer b, String name) {
    if (b.limit() != Long.BYTES) {
      throw Errors.error("store/corrupt", "The META record " + name + " is " + b.limit()
          + " bytes long, not 8", "record", name, "size", b.limit());
    }
    return b.getLong(0);
  }

  /** The {@link #SCHEMA_T} record of commit {@code t}. */
  static ByteBuffer schemaTVal(long schemaT, long t) {
    ByteBuffer b = ByteBuffer.allocateDirect(16);
    b.putLong(0, schemaT).putLong(8, t);
    return b;
  }

  /**
   * The t of the last schema change at or before commit {@code t}, from its {@link #SCHEMA_T}
   * record ({@code recorded}, may be null); {@code t} itself when the record is not commit t's.
   */
  static long schemaT(ByteBuffer recorded, long t) {
    return recorded != null && recorded.limit() == 16 && recorded.getLong(8) == t
        ? Math.min(recorded.getLong(0), t) : t;
  }
}
