package datalith.db;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * Index statistics for the query planner: the number of current datoms of
 * each attribute. Immutable; each transaction makes the next one from its
 * changes, and it is stored with the data (META), so a reopened database
 * plans as well as the one that wrote it.
 */
public final class Stats {
  static final Stats EMPTY = new Stats(new LongMap<>(16), 0);

  private final LongMap<long[]> counts; // aid -> {count}; never mutated once shared
  private final long total;

  private Stats(LongMap<long[]> counts, long total) {
    this.counts = counts;
    this.total = total;
  }

  /** Statistics of these counts (aid -> {count}), copied. */
  static Stats of(LongMap<long[]> counts) {
    LongMap<long[]> m = new LongMap<>(counts.size() + 4);
    long[] total = {0};
    counts.forEach((aid, c) -> {
      m.put(aid, new long[] {c[0]});
      total[0] += c[0];
    });
    return new Stats(m, total[0]);
  }

  /** Current datoms of attribute {@code aid}. */
  public long count(long aid) {
    long[] c = counts.get(aid);
    return c == null ? 0 : c[0];
  }

  /** Attribute id -> its current datoms, for every attribute that has had any. */
  public java.util.Map<Long, Long> counts() {
    java.util.Map<Long, Long> m = new java.util.HashMap<>();
    counts.forEach((aid, c) -> m.put(aid, c[0]));
    return m;
  }

  /** Current datoms in all. */
  public long total() {
    return total;
  }

  /** These statistics after a transaction's changes. */
  Stats with(List<TxChange> changes) {
    LongMap<long[]> next = new LongMap<>(counts.size() + 4);
    counts.forEach((aid, c) -> next.put(aid, new long[] {c[0]}));
    long t = total;
    for (TxChange c : changes) {
      long[] n = next.get(c.datom.aid);
      if (n == null) {
        n = new long[1];
        next.put(c.datom.aid, n);
      }
      long d = c.datom.added ? 1 : -1;
      n[0] += d;
      t += d;
    }
    return new Stats(next, t);
  }

  ByteBuffer encode() {
    ByteBuffer b = ByteBuffer.allocateDirect(16 * counts.size());
    counts.forEach((aid, c) -> b.putLong(aid).putLong(c[0]));
    return b.flip();
  }

  /**
   * The counts encoded in {@code b} ({@link #encode}).
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when {@code b} is not pairs of
   *     longs
   */
  static Stats decode(ByteBuffer b) {
    if (b.limit() % 16 != 0) {
      throw Errors.error("store/corrupt", "The META record stats is " + b.limit()
          + " bytes long, not pairs of 8-byte numbers", "record", "stats", "size", b.limit());
    }
    LongMap<long[]> m = new LongMap<>(Math.max(16, b.limit() / 16));
    long t = 0;
    for (int off = 0; off + 16 <= b.limit(); off += 16) {
      long n = b.getLong(off + 8);
      m.put(b.getLong(off), new long[] {n});
      t += n;
    }
    return new Stats(m, t);
  }
}
