package datalith.db;

import datalith.store.Cursor;
import datalith.store.SubDb;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The first user entity id that no transaction up to a t used, by t, for the as-of views of one
 * store: every datom of a user entity at or above it, and of a transaction entity after
 * {@code TX0 + t}, was asserted after t, so such a view's scans pass the rest of a run of keys
 * from the first such entity on ({@link IndexScan}) instead of testing each key's transaction.
 * Where a scan of a view at an early point meets mostly later keys (Q3's count per value at an
 * instant before most of the data), that is one seek a run.
 *
 * <p>A bound is one more than the largest user entity of a datom in the transaction log's records
 * 1 to t: the log holds every datom of the indexes (they are rebuilt from it), so a datom of a
 * larger entity was asserted after t. (A transaction entity is only named from its own
 * transaction on.) The datoms a store holds up to a t never change, so a bound is kept for the
 * later views at that t.
 * {@link #NONE} (no passing) when the log does not hold each of those records, or they hold more
 * than {@link #BUDGET} datoms (a late point, where few keys are later). Thread-safe.
 */
public final class EntityBounds {
  /** No bound: a scan tests every key. */
  static final long NONE = Long.MAX_VALUE;
  /** The most datoms of the log one bound reads. */
  static final long BUDGET = 1L << 17;
  /** How many points are kept. */
  private static final int SIZE = 16;

  /** A bound, and the record of its t it was read with (its first bytes and length). */
  private record Bound(long bound, long mark) {}

  private final Map<Long, Bound> byT = new LinkedHashMap<>(32, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Bound> eldest) {
      return size() > SIZE;
    }
  };

  /**
   * The bound of the store {@code s} reads at {@code t} (an as-of point); a kept
   * one serves while the log's record of t is the one it was read with (a store whose content
   * was replaced reads again).
   */
  long at(Snapshot s, long t) {
    long mark = mark(s, t);
    synchronized (this) {
      Bound b = byT.get(t);
      if (b != null && b.mark == mark) {
        return b.bound;
      }
    }
    long b = read(s, t);
    synchronized (this) {
      byT.put(t, new Bound(b, mark));
    }
    return b;
  }

  /** The record of {@code t}: its length and first 4 bytes (its checksum), or -1 when absent. */
  private static long mark(Snapshot s, long t) {
    ByteBuffer v = t < 1 ? null : s.get(SubDb.LOG, LogRecord.key(t));
    if (v == null) {
      return -1;
    }
    long head = v.remaining() >= 4 ? v.getInt(v.position()) & 0xFFFFFFFFL : 0;
    return (long) v.remaining() << 32 | head;
  }

  /** The bound at {@code t} from the log's records 1 to t, or {@link #NONE}. */
  private static long read(Snapshot s, long t) {
    long max = Schema.FIRST_USER_ID - 1;
    long read = 0;
    Cursor c = s.cursor(SubDb.LOG);
    try {
      long expect = 1;
      for (boolean ok = t >= 1 && c.seek(LogRecord.key(1)); ok; ok = c.next()) {
        long rt = LogRecord.t(c.key());
        if (rt > t) {
          break;
        }
        if (rt != expect++) {
          return NONE;
        }
        for (LogRecord.Entry d : LogRecord.read(rt, c.val(), Meta.FORMAT_VERSION)) {
          if (++read > BUDGET) {
            return NONE;
          }
          if (d.e() < Db.TX0 && d.e() > max) {
            max = d.e();
          }
        }
      }
      return expect == t + 1 || t < 1 ? max + 1 : NONE;
    } finally {
      c.close();
    }
  }
}
