package datalith.db;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import datalith.codec.Bytes;
import datalith.codec.Codec;
import datalith.store.Cursor;
import datalith.store.ReadTxn;
import datalith.store.Store;
import datalith.store.SubDb;
import datalith.store.WriteTxn;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Rebuilds a database from its transaction log into an empty store: the repair of a store whose
 * indexes are damaged, and the way a store of an older on-disk format is brought to the current
 * one. The whole log is checked before anything is written (every record's checksum and
 * framing, no gap in its t); then each record is replayed in t order, its datoms written to
 * every index as a transaction writes them and the record itself in the current format. META
 * is derived from the log: t its last t, the statistics its datoms' counts, next-eid above every
 * entity id it uses (and not below the source's, when that one is plausible); a node's offset
 * in its replicated log ({@link LogOffset}) is kept when the source's META t is its log's last
 * (the datoms and the offset committed together). The source is only read, in one read
 * transaction.
 *
 * <p>Memory stays bounded: the replay finds the tx that asserted each retracted datom in the
 * target itself, keeping only the datoms of the write transaction not yet committed.
 */
public final class Rebuild {
  /** Records, and datoms, replayed in one write transaction at most. */
  private static final int BATCH_RECORDS = 1000;
  private static final int BATCH_DATOMS = 100_000;
  private static final long RETRACTED = -1; // a pending datom retracted in this batch

  private Rebuild() {}

  /**
   * Rebuilds the database of {@code source} into {@code target}, which must hold nothing, and
   * returns {@code {:t :records :datoms :next-eid :source-format :checksums}}
   * ({@code :checksums} is {@code :checked}, or {@code :absent} for a format-1 source).
   *
   * @param trustLogEnd rebuild even when the source's META t is not the log's last t (the log
   *     may have lost its last records, which would then be missing from the result)
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} naming the first t whose record
   *     fails (with {@code :problem} {@code :checksum}, {@code :malformed}, {@code :gap},
   *     {@code :inconsistent} or {@code :log-end}), before anything is written but for
   *     {@code :inconsistent}; {@code :store/not-empty} when the target holds data
   */
  public static IPersistentMap run(Store source, Store target, boolean trustLogEnd) {
    try (ReadTxn src = source.beginRead()) {
      long format = sourceFormat(src);
      Long metaT = metaLong(src, Meta.T);
      long lastT = checkLog(src, format);
      if (metaT != null && metaT != lastT && !trustLogEnd) {
        throw Errors.error("store/corrupt", "The source's META says t " + metaT
            + " but its log ends at t " + lastT + ": records may be lost from its end",
            "problem", Keyword.intern("log-end"), "meta-t", metaT, "log-t", lastT);
      }
      checkEmpty(target);
      Long sourceNext = metaLong(src, Meta.NEXT_EID);
      // a node's position in its replicated log holds for the copy when its datoms are all there
      long logOffset = metaT != null && metaT == lastT ? LogOffset.read(src) : -1;
      return new Rebuild().replay(src, format, target, lastT, sourceNext, logOffset);
    }
  }

  private static long sourceFormat(ReadTxn src) {
    ByteBuffer f = src.get(SubDb.META, Meta.FORMAT.duplicate());
    long format = f == null || f.limit() != 8 ? Meta.FORMAT_VERSION : f.getLong(0);
    if (format != Meta.FORMAT_VERSION && format != Meta.FORMAT_NO_CHECKSUMS) {
      throw Errors.error("store/format", "The source has on-disk format " + format
          + ", which this version cannot read", "format", format);
    }
    return format;
  }

  private static Long metaLong(ReadTxn rt, ByteBuffer key) {
    ByteBuffer b = rt.get(SubDb.META, key.duplicate());
    return b == null || b.limit() != 8 ? null : b.getLong(0);
  }

  /** Reads every record once; the last t. */
  private static long checkLog(ReadTxn src, long format) {
    long expect = 0;
    try (Cursor c = src.cursor(SubDb.LOG)) {
      for (boolean ok = c.first(); ok; ok = c.next()) {
        long t = logT(c.key(), expect);
        for (LogRecord.Entry d : LogRecord.read(t, c.val(), format)) {
          LogRecord.value(t, d);
        }
        expect = t + 1;
      }
    }
    if (expect == 0) {
      throw Errors.error("store/corrupt", "The source has no transaction log",
          "problem", Keyword.intern("empty"));
    }
    return expect - 1;
  }

  /** The t of log key {@code k}, which must be {@code expect}. */
  private static long logT(ByteBuffer k, long expect) {
    if (k.limit() != 8) {
      throw Errors.error("store/corrupt", "The log has a key that is not a t, after t "
          + (expect - 1), "t", expect, "problem", LogRecord.MALFORMED);
    }
    long t = k.getLong(0);
    if (t != expect) {
      throw Errors.error("store/corrupt", "The log has no record for t " + expect
          + " (the next is t " + t + ")", "t", expect, "problem", Keyword.intern("gap"));
    }
    return t;
  }

  private static void checkEmpty(Store target) {
    try (ReadTxn rt = target.beginRead(); Cursor c = rt.cursor(SubDb.LOG)) {
      if (c.first() || rt.get(SubDb.META, Meta.T.duplicate()) != null) {
        throw Errors.error("store/not-empty", "The target of a rebuild must hold no database");
      }
    }
  }

  // ---- the replay

  private final Map<ByteBuffer, Long> pending = new HashMap<>(); // datom -> asserting tx
  private final LongMap<long[]> counts = new LongMap<>(64);
  private long maxUserId = -1;
  private long datoms;

  private IPersistentMap replay(ReadTxn src, long format, Store target, long lastT,
      Long sourceNext, long logOffset) {
    long records = 0;
    WriteTxn wt = target.beginWrite();
    try {
      int batchRecords = 0;
      int batchDatoms = 0;
      try (Cursor c = src.cursor(SubDb.LOG)) {
        for (boolean ok = c.first(); ok; ok = c.next()) {
          long t = LogRecord.t(c.key());
          List<LogRecord.Entry> entries = LogRecord.read(t, c.val(), format);
          Writes.replay(wt, t, entries, assertedTxs(target, t, entries));
          records++;
          batchRecords++;
          batchDatoms += entries.size();
          if (batchRecords >= BATCH_RECORDS || batchDatoms >= BATCH_DATOMS) {
            wt.commit();
            wt.close();
            pending.clear();
            wt = target.beginWrite();
            batchRecords = 0;
            batchDatoms = 0;
          }
        }
      }
      long next = Math.max(Schema.FIRST_USER_ID, maxUserId + 1);
      if (sourceNext != null && sourceNext > next && sourceNext < Db.TX0) {
        next = sourceNext; // ids handed out but never used in a datom stay handed out
      }
      Writes.meta(wt, lastT, next, Stats.of(counts), lastT); // the schema may have changed up to lastT
      wt.put(SubDb.META, Meta.FORMAT.duplicate(), Meta.longVal(Meta.FORMAT_VERSION));
      if (logOffset >= 0) {
        LogOffset.stage(wt, logOffset);
      }
      wt.commit();
      return Verify.map("t", lastT, "records", records, "datoms", datoms, "next-eid", next,
          "source-format", format,
          "checksums", Keyword.intern(format >= 2 ? "checked" : "absent"));
    } finally {
      wt.close();
    }
  }

  /**
   * For each retraction of record {@code t}, the tx that asserted the datom: from this batch's
   * pending writes, else from the target's EAVT. Registers the record's datoms as pending.
   */
  private long[] assertedTxs(Store target, long t, List<LogRecord.Entry> entries) {
    long tx = Db.tToTx(t);
    long[] out = new long[entries.size()];
    ByteBuffer[] keys = new ByteBuffer[entries.size()];
    try (ReadTxn rt = target.beginRead(); Cursor c = rt.cursor(SubDb.EAVT)) {
      for (int i = 0; i < entries.size(); i++) {
        LogRecord.Entry d = entries.get(i);
        byte[] vpart = Codec.keyPart(d.encoded());
        keys[i] = ByteBuffer.allocate(16 + vpart.length).putLong(d.e()).putLong(d.aid()).put(vpart)
            .flip();
        if (!d.added()) {
          Long at = pending.get(keys[i]);
          out[i] = at != null ? at : current(c, keys[i]);
          if (out[i] == RETRACTED) {
            throw Errors.error("store/corrupt", "The log record of t " + t
                + " retracts a datom that is not current", "t", t,
                "problem", Verify.INCONSISTENT, "e", d.e(), "aid", d.aid());
          }
        }
      }
    }
    for (int i = 0; i < entries.size(); i++) {
      LogRecord.Entry d = entries.get(i);
      pending.put(keys[i], d.added() ? tx : RETRACTED);
      long[] n = counts.get(d.aid());
      if (n == null) {
        counts.put(d.aid(), n = new long[1]);
      }
      n[0] += d.added() ? 1 : -1;
      note(d.e());
      if (d.encoded()[0] == Codec.T_REF) {
        note(Bytes.longAt(d.encoded(), 1));
      }
    }
    datoms += entries.size();
    return out;
  }

  /** The tx of the current EAVT datom {@code prefix} names, or RETRACTED when there is none. */
  private static long current(Cursor c, ByteBuffer prefix) {
    if (!c.seek(prefix)) {
      return RETRACTED;
    }
    ByteBuffer k = c.key();
    int n = prefix.limit();
    boolean same = k.limit() == n + 8 && Codec.compareBytes(k, 0, n, prefix, 0, n) == 0;
    return same ? k.getLong(n) : RETRACTED;
  }

  private void note(long id) {
    if (id < Db.TX0) {
      maxUserId = Math.max(maxUserId, id);
    }
  }
}
