package datalith.db;

import clojure.lang.Keyword;
import datalith.codec.Codec;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The records of the transaction log ({@link datalith.store.SubDb#LOG}), the source of truth
 * from which every index can be rebuilt. Key: t, 8 bytes big-endian. Value (format 2):
 *
 * <pre>
 * crc     4 bytes   CRC32C of the key's 8 bytes, then of every value byte after this field
 * count   4 bytes   the number of datoms
 * count times:
 *   e 8 bytes, aid 8 bytes, added 1 byte (0 or 1), len 4 bytes, the value's full encoding
 *   ({@link Codec#encode}, len bytes)
 * </pre>
 *
 * Format 1 (stores written before checksums) had no crc field: the value starts at count. A
 * record read here is checked whole before any of it is used: its checksum, then its framing
 * (every length inside the value, every encoding ending where its length says), so that a
 * damaged record is an ex-info {@code :store/corrupt} naming its t, never a wrong datom or a raw
 * exception.
 */
final class LogRecord {
  /** The {@code :problem} of a record that fails its checksum. */
  static final Keyword CHECKSUM = Keyword.intern("checksum");
  /** The {@code :problem} of a record whose framing or values do not hold together. */
  static final Keyword MALFORMED = Keyword.intern("malformed");
  /** Bytes before the first datom (format 2). */
  static final int HEADER = 8;
  /** Bytes of a datom before its value's encoding. */
  static final int DATOM_HEADER = 21;

  private LogRecord() {}

  /** One datom of a record, with its value's full encoding. */
  record Entry(long e, long aid, boolean added, byte[] encoded) {}

  /**
   * The t of log key {@code k}.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} ({@code :problem :malformed}) when
   *     it is not 8 bytes long
   */
  static long t(ByteBuffer k) {
    if (k.limit() != Long.BYTES) {
      throw Errors.error("store/corrupt", "A key of the transaction log is not a t",
          "problem", MALFORMED, "size", k.limit());
    }
    return k.getLong(0);
  }

  /** The key of the record of {@code t}: a new direct buffer. */
  static ByteBuffer key(long t) {
    return ByteBuffer.allocateDirect(8).putLong(0, t);
  }

  /** Builds one record of a known number of datoms and value bytes. */
  static final class Builder {
    private final ByteBuffer buf;

    /** Room for {@code datoms} datoms whose encodings hold {@code valueBytes} bytes in all. */
    Builder(int datoms, long valueBytes) {
      buf = ByteBuffer.allocateDirect(Math.toIntExact(HEADER + (long) DATOM_HEADER * datoms
          + valueBytes));
      buf.putInt(4, datoms).position(HEADER);
    }

    void add(long e, long aid, boolean added, byte[] encoded) {
      buf.putLong(e).putLong(aid).put((byte) (added ? 1 : 0)).putInt(encoded.length).put(encoded);
    }

    /** The record of {@code t}, checksum written; every datom must have been added. */
    ByteBuffer finish(long t) {
      if (buf.hasRemaining()) {
        throw new IllegalStateException("log record of t " + t + " not filled");
      }
      buf.putInt(0, checksum(t, buf, HEADER - 4));
      return buf.flip();
    }
  }

  /** CRC32C of the 8 bytes of key {@code t}, then of {@code val} from {@code from} to its limit. */
  private static int checksum(long t, ByteBuffer val, int from) {
    CRC32C crc = new CRC32C();
    crc.update(ByteBuffer.allocate(8).putLong(0, t));
    crc.update(val.duplicate().limit(val.limit()).position(from));
    return (int) crc.getValue();
  }

  /**
   * The datoms of the record of {@code t}, its value {@code val} (read by absolute index, left as
   * it is) written in on-disk format {@code format}.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} with {@code :t} and
   *     {@code :problem} {@code :checksum} (the bytes are not the ones written) or
   *     {@code :malformed} (a length or an encoding does not fit the record)
   */
  static List<Entry> read(long t, ByteBuffer val, long format) {
    int start = 0;
    if (format >= 2) {
      if (val.limit() < HEADER) {
        throw malformed(t, "shorter than its header (" + val.limit() + " bytes)", null);
      }
      if (val.getInt(0) != checksum(t, val, 4)) {
        throw Errors.error("store/corrupt", "The log record of t " + t
            + " fails its checksum: its bytes are not the ones written", "t", t,
            "problem", CHECKSUM);
      }
      start = 4;
    }
    try {
      int n = val.getInt(start);
      if (n < 0 || (long) n * DATOM_HEADER > val.limit()) {
        throw malformed(t, "a datom count of " + n, null);
      }
      List<Entry> out = new ArrayList<>(n);
      int off = start + 4;
      for (int i = 0; i < n; i++) {
        if (val.limit() - off < DATOM_HEADER) {
          throw malformed(t, "datom " + i + " runs past the record's end", null);
        }
        byte added = val.get(off + 16);
        int len = val.getInt(off + 17);
        int v = off + DATOM_HEADER;
        if (added != 0 && added != 1 || len < 1 || len > val.limit() - v) {
          throw malformed(t, "datom " + i + " has a bad header", null);
        }
        if (Codec.skipKeyPart(val, v) != v + len) { // where its encoding says it ends
          throw malformed(t, "the value of datom " + i + " is not " + len + " bytes", null);
        }
        byte[] enc = new byte[len];
        val.get(v, enc);
        out.add(new Entry(val.getLong(off), val.getLong(off + 8), added == 1, enc));
        off = v + len;
      }
      if (off != val.limit()) {
        throw malformed(t, (val.limit() - off) + " bytes after its last datom", null);
      }
      return out;
    } catch (IndexOutOfBoundsException | IllegalArgumentException e) {
      throw malformed(t, e.getMessage(), e);
    }
  }

  /**
   * The value of {@code entry} of the record of {@code t}.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when its encoding does not decode
   */
  static Object value(long t, Entry entry) {
    try {
      return Codec.decode(ByteBuffer.wrap(entry.encoded()), 0);
    } catch (RuntimeException e) {
      throw malformed(t, "a value does not decode: " + e.getMessage(), e);
    }
  }

  private static RuntimeException malformed(long t, String what, Throwable cause) {
    return Errors.errorWithCause(cause, "store/corrupt", "The log record of t " + t
        + " is malformed: " + what, "t", t, "problem", MALFORMED);
  }
}
