package datalith.store;

import clojure.lang.Keyword;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link Store} laid over a snapshot of another (the base): its writes go to a delta in
 * memory, and its reads merge the delta with the snapshot in key order. The delta is two
 * {@link MemStore}s: {@code puts}, the entries written, and {@code gone}, the keys of the
 * snapshot deleted (an index's values are empty, so a deletion cannot be a value of
 * {@code puts}); the two hold no key in common. A write transaction writes both and its
 * commit publishes both at once; a read transaction takes both stores' roots of one commit,
 * so it is an MVCC snapshot as a {@code MemStore}'s is, over the fixed base snapshot.
 *
 * <p>A staged import ({@code datalith.conn.Staged}) commits its chunks here, then writes the
 * delta into the base store in one commit: the merged entries through {@link Store#replaceAll}
 * when the delta is large against the base ({@link #replacesAll}), else its puts and deletes
 * through one write transaction ({@link #writeDelta}); either way only while the base store
 * still holds the snapshot, which the caller checks.
 *
 * <p>Threading: the base snapshot is one read transaction of the base store, which one thread
 * at a time may use, so this store's transactions (reads and writes) are for one thread at a
 * time too: the one that opened it, or one that took it over. {@link #close} closes the
 * snapshot; the delta stays readable by nothing after that.
 */
public final class LayeredStore implements Store {

  /**
   * The delta's entries (its puts and deletes, overwrites counted again) from which
   * {@link #replacesAll} rewrites every tree rather than put the delta's keys into the base's:
   * one in this many of the base's entries. Putting costs per key of the delta, rewriting per
   * entry of both, and they cost alike at a delta of half to all of the base: {@code lein
   * with-profile +bench run -m datalith.bench.layered-write --base 500000} (a base of 1M keys,
   * the delta's keys spread over it; CPU of the writing thread, load 25-45 on 2 cores): a delta
   * of 1/1 of the base, puts 0.80 s, rewrite 0.81 s; 1/2, 0.39 and 0.38 s (0.53 and 0.73 in
   * another run); 1/4, 0.32 and 0.58 s; 1/8, 0.18 and 0.58 s. At a tie, rewriting wins: it
   * leaves the trees' pages full, where puts into the middle of a tree split them.
   */
  public static final long REPLACE_RATIO = 2;

  /**
   * A base of at most this many entries is copied into the delta, so that no read merges: a
   * new database's (its bootstrap, a few hundred), and others small enough that the copy costs
   * less than a millisecond or two. The delta's cursors then go to {@code replaceAll} as
   * {@code MemStore}'s own, which it may read leaf by leaf.
   */
  public static final long ABSORB_ENTRIES = 10_000;

  private static final Keyword ENTRIES = Keyword.intern("entries");

  private final ReadTxn snapshot; // of the base, open until close
  private final Store base;
  private final boolean absorbed; // the snapshot's entries were copied into the delta
  private final boolean[] baseEmpty; // by SubDb ordinal: reads need not look at the snapshot
  private final boolean[] deletes; // by SubDb ordinal: gone may hold keys of it (a hint)
  private final MemStore puts = MemStore.openInPlace(); // commits between reads edit in place
  private final MemStore gone = MemStore.openInPlace(); // keys deleted from the snapshot
  private final Object publish = new Object(); // commits of the two, and reads of both roots
  private long written; // puts and deletes committed (a key written twice counts twice)
  private volatile boolean closed;

  private LayeredStore(Store base, ReadTxn snapshot, long absorb) {
    this.base = base;
    this.snapshot = snapshot;
    SubDb[] dbs = SubDb.values();
    this.baseEmpty = new boolean[dbs.length];
    this.deletes = new boolean[dbs.length];
    this.absorbed = absorb > 0 && baseEntries(absorb + 1) <= absorb;
    if (absorbed) {
      try (WriteTxn w = puts.beginWrite()) {
        for (SubDb db : dbs) {
          try (Cursor c = snapshot.cursor(db)) {
            for (boolean more = c.first(); more; more = c.next()) {
              w.put(db, c.key(), c.val());
            }
          }
        }
        w.commit();
      }
    }
    for (SubDb db : dbs) {
      try (Cursor c = snapshot.cursor(db)) {
        baseEmpty[db.ordinal()] = absorbed || !c.first();
      }
    }
  }

  /**
   * A new store over the last commit of {@code base}, with an empty delta, or with the base's
   * entries in it when there are at most {@code absorb} (then no read merges); holds a read
   * transaction of {@code base} until closed. Staged imports absorb {@link #ABSORB_ENTRIES}.
   */
  public static LayeredStore over(Store base, long absorb) {
    ReadTxn snapshot = base.beginRead();
    try {
      return new LayeredStore(base, snapshot, absorb);
    } catch (RuntimeException | Error e) {
      snapshot.close();
      throw e;
    }
  }

  private void checkOpen() {
    if (closed) {
      throw Errors.closed("layered", "The store");
    }
  }

  /** {@inheritDoc} The delta's snapshot as of its last commit, over the base snapshot. */
  @Override
  public ReadTxn beginRead() {
    checkOpen();
    synchronized (publish) {
      ReadTxn p = puts.beginRead();
      return new Read((MemReadTxn) p, (MemReadTxn) gone.beginRead());
    }
  }

  /** {@inheritDoc} The delta's one write transaction. */
  @Override
  public WriteTxn beginWrite() {
    checkOpen();
    WriteTxn p = puts.beginWrite();
    try {
      return new Write(p, gone.beginWrite()); // gone's writer is only ever taken after puts'
    } catch (RuntimeException | Error e) {
      p.close();
      throw e;
    }
  }

  @Override
  public boolean durable() {
    return false;
  }

  /**
   * Whether the delta is large enough against the base ({@link #REPLACE_RATIO}) that writing
   * it back should rewrite every tree ({@link Store#replaceAll} of {@link #beginRead()}) rather
   * than put its keys ({@link #writeDelta}); always when the base was absorbed (the delta
   * holds no deletion of its keys). Counts the base's entries (LMDB: from its trees' records;
   * another store: by walking its snapshot).
   */
  public boolean replacesAll() {
    checkOpen();
    return absorbed || written * REPLACE_RATIO >= baseEntries(written * REPLACE_RATIO);
  }

  /** The base's entries, or any count of at least {@code enough} once that many are seen. */
  private long baseEntries(long enough) {
    long n = 0;
    for (SubDb db : SubDb.values()) {
      if (base instanceof LmdbStore lmdb) {
        n += lmdb.pageStats(db).get(ENTRIES);
        continue;
      }
      try (Cursor c = snapshot.cursor(db)) {
        for (boolean more = c.first(); more && n < enough; more = c.next()) {
          n++;
        }
      }
    }
    return n;
  }

  /**
   * Writes the delta as of its last commit into {@code w}, a write transaction of a store that
   * holds the base snapshot (the caller checks it): per sub-database, its puts and deletes in
   * key order. Commits nothing.
   *
   * @throws IllegalStateException when the base was absorbed: only {@code replaceAll} writes it
   */
  public void writeDelta(WriteTxn w) {
    if (absorbed) {
      throw new IllegalStateException("The base was copied into the delta: replace it all");
    }
    try (Read r = (Read) beginRead()) {
      for (SubDb db : SubDb.values()) {
        try (Cursor p = r.puts.cursor(db); Cursor g = r.gone.cursor(db)) {
          boolean pv = p.first();
          boolean gv = g.first();
          while (pv || gv) {
            if (gv && (!pv || MergedCursor.compare(g.key(), p.key()) < 0)) {
              w.delete(db, g.key());
              gv = g.next();
            } else {
              w.put(db, p.key(), p.val());
              pv = p.next();
            }
          }
        }
      }
    }
  }

  /**
   * {@inheritDoc} Closes the base snapshot; the delta is dropped. Idempotent. The caller holds
   * no transaction of this store.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      snapshot.close();
    } finally {
      puts.close();
      gone.close();
    }
  }

  /** A read: the delta's two snapshots of one commit, over the base snapshot. */
  private final class Read implements ReadTxn {
    final MemReadTxn puts;
    final MemReadTxn gone;

    Read(MemReadTxn puts, MemReadTxn gone) {
      this.puts = puts;
      this.gone = gone;
    }

    /**
     * {@inheritDoc} The delta's own cursor when the base holds nothing of {@code db} and no key
     * of it was deleted (a {@code MemStore} cursor, which {@code replaceAll} may read whole
     * leaves of); the base's when the delta holds nothing of it; else the merge of the three.
     */
    @Override
    public Cursor cursor(SubDb db) {
      checkOpen();
      boolean noDeletes = gone.isEmpty(db);
      if (noDeletes && baseEmpty[db.ordinal()]) {
        return puts.cursor(db);
      }
      if (noDeletes && puts.isEmpty(db)) {
        return snapshot.cursor(db);
      }
      return new MergedCursor(snapshot.cursor(db), puts.cursor(db), gone.cursor(db));
    }

    @Override
    public ByteBuffer get(SubDb db, ByteBuffer key) {
      checkOpen();
      ByteBuffer v = puts.get(db, key);
      if (v != null || baseEmpty[db.ordinal()] || gone.get(db, key) != null) {
        return v;
      }
      return snapshot.get(db, key);
    }

    @Override
    public void close() {
      try {
        puts.close();
      } finally {
        gone.close();
      }
    }
  }

  /** The write: the delta's two write transactions, committed together. */
  private final class Write implements WriteTxn {
    private final WriteTxn puts;
    private final WriteTxn gone;
    private final List<Expected> expected = new ArrayList<>();
    private long writes;

    Write(WriteTxn puts, WriteTxn gone) {
      this.puts = puts;
      this.gone = gone;
    }

    @Override
    public void put(SubDb db, ByteBuffer key, ByteBuffer val) {
      puts.put(db, key, val);
      if (deletes[db.ordinal()]) {
        gone.delete(db, key);
      }
      writes++;
    }

    /** {@inheritDoc} Marks the key deleted from the base when the base holds it. */
    @Override
    public void delete(SubDb db, ByteBuffer key) {
      puts.delete(db, key);
      if (!baseEmpty[db.ordinal()] && snapshot.get(db, key) != null) {
        deletes[db.ordinal()] = true;
        gone.put(db, key, BTree.EMPTY);
      }
      writes++;
    }

    @Override
    public void expect(SubDb db, ByteBuffer key, ByteBuffer val) {
      expected.add(new Expected("layered", db, key, val));
    }

    /** {@inheritDoc} Checks the expected values against the last commit, then publishes. */
    @Override
    public void commit() {
      checkOpen();
      if (!expected.isEmpty()) {
        try (ReadTxn r = beginRead()) {
          for (Expected x : expected) {
            x.check("layered", r.get(x.db, x.directKey()));
          }
        }
      }
      synchronized (publish) {
        puts.commit();
        gone.commit();
      }
      written += writes;
    }

    @Override
    public void close() {
      try {
        gone.close();
      } finally {
        puts.close();
      }
    }
  }
}
