package datalith.db;

import datalith.store.ReadTxn;
import datalith.store.SubDb;
import datalith.store.WriteTxn;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The position of a node that follows a replicated transaction log: the offset of the next
 * record it is to apply, kept in META under {@code log-offset} and written in the store write
 * transaction of the record it follows, so that the datoms and the position commit together
 * (after a crash a node resumes exactly after the last record it committed).
 */
public final class LogOffset {
  private static final ByteBuffer KEY = key();

  private LogOffset() {}

  private static ByteBuffer key() {
    byte[] b = "log-offset".getBytes(StandardCharsets.US_ASCII);
    ByteBuffer buf = ByteBuffer.allocateDirect(b.length);
    buf.put(b).flip();
    return buf.asReadOnlyBuffer();
  }

  /**
   * The next offset to apply as {@code s} reads it: 0 when the store never followed a log.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when the record is not 8 bytes
   */
  public static long read(Snapshot s) {
    ByteBuffer b = s.rt.get(SubDb.META, KEY.duplicate());
    return b == null ? 0 : Meta.longOf(b, "log-offset");
  }

  /** The next offset to apply as {@code rt} reads it: -1 when the store never followed a log. */
  static long read(ReadTxn rt) {
    ByteBuffer b = rt.get(SubDb.META, KEY.duplicate());
    return b == null ? -1 : Meta.longOf(b, "log-offset");
  }

  /** Writes {@code next}, the offset after the record that {@code wt} commits, into it. */
  public static void stage(WriteTxn wt, long next) {
    wt.put(SubDb.META, KEY.duplicate(), Meta.longVal(next));
  }
}
