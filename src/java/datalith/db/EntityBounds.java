package datalith.db;

import datalith.index.Index;
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
 * later views at that t, and a bound is read on from the nearest earlier point's. Reading is
 * paid for by the scans that need it: each asks with an allowance of log datoms (in proportion
 * to the keys it stepped over meanwhile), and the reading goes on from where the last ask left
 * it, so a point late in a long log costs each scan at most a few times its own steps until its
 * bound is read. {@link #NONE} when the log does not hold each of those records. Thread-safe.
 */
public final class EntityBounds {
  /** No bound: a scan tests every key. */
  static final long NONE = Long.MAX_VALUE;
  /** Not read yet: ask again with a larger allowance. */
  static final long UNKNOWN = Long.MIN_VALUE;
  /** How many points are kept. */
  private static final int SIZE = 16;

  /**
   * The reading of the bound at a point: records 1 to {@code next - 1} read, their largest user
   * entity {@code max}; {@code mark} identifies the record of the point (its length and checksum)
   * so that a store whose content was replaced reads again.
   */
  private record Reading(long mark, long next, long max) {
    boolean done(long t) {
      return next > t;
    }
  }

  private final Map<Long, Reading> byT = new LinkedHashMap<>(32, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Reading> eldest) {
      return size() > SIZE;
    }
  };

  /**
   * The bound of the store {@code s} reads at {@code t} (an as-of point), reading at most
   * {@code allowance} more datoms of the log for it; {@link #UNKNOWN} while not all read.
   */
  long at(Snapshot s, long t, long allowance) {
    long mark = mark(s, t);
    if (mark == -1) {
      return t < 1 ? Schema.FIRST_USER_ID : NONE;
    }
    Reading r;
    long from = -1; // the earlier point whose reading r starts from
    long fromMark = 0;
    synchronized (this) {
      r = byT.get(t);
      if (r == null || r.mark != mark) {
        r = new Reading(mark, 1, Schema.FIRST_USER_ID - 1);
        for (Map.Entry<Long, Reading> en : byT.entrySet()) {
          Reading x = en.getValue();
          // an earlier point's reading (done up to it, or part of the way) is this one's start
          if (en.getKey() < t && x.next > r.next) {
            r = new Reading(mark, x.next, x.max);
            from = en.getKey();
            fromMark = x.mark;
          }
        }
      }
    }
    if (from >= 0 && mark(s, from) != fromMark) {
      r = new Reading(mark, 1, Schema.FIRST_USER_ID - 1); // the store was replaced since
    }
    if (!r.done(t) && allowance > 0) {
      r = read(s, t, r, allowance);
      synchronized (this) {
        Reading kept = byT.get(t);
        if (kept == null || kept.mark != mark || kept.next < r.next) {
          byT.put(t, r);
        }
      }
    }
    if (r.next == NONE) {
      return NONE;
    }
    return r.done(t) ? r.max + 1 : UNKNOWN;
  }

  /**
   * Where a scan of {@code index} passes to from key {@code k} ({@code len} bytes without a
   * history suffix) of a later entity: the run's bytes before the entity, then, for a user
   * entity, the first transaction entity (the user entities after it in the run are later too);
   * for a transaction entity, the next run (the entities after it are later transactions).
   * Written into {@code spare} (direct; reallocated when too small) and returned; empty when no
   * key follows the run's.
   */
  static ByteBuffer passTo(Index index, ByteBuffer k, int len, boolean txEntity,
      ByteBuffer spare) {
    int runEnd = switch (index) { // where the key's entity starts
      case EAVT -> 0;
      case AEVT -> 8;
      case AVET -> len - 16;
      case VAET -> 16;
    };
    int n = txEntity ? runEnd : runEnd + 8;
    ByteBuffer to = spare != null && spare.capacity() >= n ? spare
        : ByteBuffer.allocateDirect(Math.max(n, 64));
    to.clear().limit(n);
    to.put(0, k, 0, runEnd);
    if (!txEntity) {
      to.putLong(runEnd, Db.TX0);
      return to;
    }
    for (int i = n - 1; i >= 0; i--) { // the next byte string of length n
      byte x = to.get(i);
      if (x != (byte) 0xFF) {
        to.put(i, (byte) (x + 1));
        return to;
      }
      to.put(i, (byte) 0);
    }
    return to.limit(0);
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

  /**
   * {@code r} read on, record by record up to {@code t}, until {@code allowance} datoms are read;
   * {@code next} {@link #NONE} when a record is missing.
   */
  private static Reading read(Snapshot s, long t, Reading r, long allowance) {
    long max = r.max;
    long expect = r.next;
    long read = 0;
    Cursor c = s.cursor(SubDb.LOG);
    try {
      for (boolean ok = c.seek(LogRecord.key(expect)); ok && expect <= t && read < allowance;
          ok = c.next()) {
        long rt = LogRecord.t(c.key());
        if (rt != expect) {
          return new Reading(r.mark, NONE, max);
        }
        for (LogRecord.Entry d : LogRecord.read(rt, c.val(), Meta.FORMAT_VERSION)) {
          read++;
          if (d.e() < Db.TX0 && d.e() > max) {
            max = d.e();
          }
        }
        expect++;
      }
    } finally {
      c.close();
    }
    return new Reading(r.mark, expect, max);
  }
}
