package datalith.store;

import clojure.lang.Keyword;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.lmdbjava.Dbi;
import org.lmdbjava.LmdbException;
import org.lmdbjava.Stat;
import org.lmdbjava.Txn;

/**
 * A read transaction of an {@link LmdbStore}: a handle on a pooled {@link LmdbReader}, created
 * per {@link LmdbStore#beginRead()} so that a handle used after close fails instead of reading
 * another transaction's snapshot. One thread at a time; any thread may close it.
 */
final class LmdbReadTxn implements ReadTxn {

  /** The open read transactions that one thread began. */
  static final class Opened {
    final Thread thread;
    private final ArrayList<LmdbReadTxn> txns = new ArrayList<>(); // guarded by this
    private volatile int count; // txns.size()

    Opened(Thread thread) {
      this.thread = thread;
    }

    int count() {
      return count;
    }

    synchronized void add(LmdbReadTxn txn) {
      txns.add(txn);
      count = txns.size();
    }

    synchronized void remove(LmdbReadTxn txn) {
      txns.remove(txn);
      count = txns.size();
    }

    synchronized LmdbReadTxn[] snapshot() {
      return txns.toArray(new LmdbReadTxn[0]);
    }
  }

  private final LmdbStore store;
  private final long stamp; // the store's shared map lock, held while open
  private final Opened opened; // of the thread that began this transaction
  private LmdbReader reader; // null once closed
  private Thread user; // the thread of the last operation
  private boolean closedForGrowth;
  /** The pages of this transaction's snapshot (its reader's, taken anew when this began). */
  final LmdbSnapshot pages;
  /**
   * Whether cursors and gets read the pages in Java (the store's option, and
   * LMDB's structs as {@link LmdbLayout} says), so that LMDB reads no page of this transaction;
   * else LMDB does all the reading.
   */
  final boolean javaPages;

  LmdbReadTxn(LmdbStore store, LmdbReader reader, long stamp, Opened opened) {
    this.store = store;
    int pageShift = Integer.numberOfTrailingZeros(store.pageSize());
    long m = store.mapAddress();
    long n = m == 0 ? 0
        : Math.min(reader.nextPage(store.envAddress()), store.mapSize() >> pageShift);
    this.pages = reader.snapshot;
    pages.reset(n > LmdbLayout.NUM_METAS ? m : 0, n, reader.records());
    this.javaPages = pages.hasRecords() && store.javaPages;
    this.reader = reader;
    this.stamp = stamp;
    this.opened = opened;
    this.user = opened.thread;
  }

  /** The reader, for an operation on the calling thread; throws when this is closed. */
  LmdbReader reader() {
    LmdbReader r = reader;
    if (r == null) {
      throw closed(closedForGrowth
          ? "The read transaction (closed to grow the map while its thread was committing or"
              + " waiting in beginWrite)"
          : "The read transaction");
    }
    Thread t = Thread.currentThread();
    if (user != t) { // a store only when the thread changes: this runs on every cursor move
      user = t;
    }
    return r;
  }

  /** {@code b}, a key or value LMDB returned, once checked (see {@link LmdbSnapshot#check}). */
  ByteBuffer check(ByteBuffer b, SubDb db, String what) {
    return pages.check(b, db, what);
  }

  /** The exception for damage found in {@code db} at page {@code pgno} (-1: unknown). */
  RuntimeException corrupt(SubDb db, long pgno, String message) {
    return pages.corrupt(db, pgno, message);
  }

  boolean isOpen() {
    return reader != null;
  }

  /** The exception for use of {@code what} after close. */
  IllegalStateException closed(String what) {
    return Errors.closed(store.where(), what);
  }

  /**
   * An LMDB failure as the store reports it; MDB_BAD_TXN is damage: LMDB fails a read
   * transaction so only once it has met a damaged page in it (a page number past the snapshot,
   * a page of the wrong kind, a path deeper than a cursor holds), which it may not have reported
   * (opening a cursor does not).
   */
  RuntimeException failure(String what, LmdbException e) {
    if (e instanceof Txn.BadException) {
      return Errors.error(Errors.CORRUPT, store.where(), what + ": LMDB met a damaged page"
          + " earlier in this read transaction (" + e.getMessage() + ")", e);
    }
    return Errors.lmdb(store.where(), what, e);
  }

  @Override
  public Cursor cursor(SubDb db) {
    LmdbReader r = reader();
    return javaPages ? new LmdbCursor(this, db, r.lend(db))
        : new LmdbPlainCursor(this, db, r.lend(db));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Read in Java, as a cursor's seek reads (see {@link LmdbTree}), unless this transaction
   * leaves the reading to LMDB ({@link #javaPages}).
   */
  @Override
  public ByteBuffer get(SubDb db, ByteBuffer key) {
    LmdbReader r = reader();
    if (javaPages) {
      return r.find(db, key);
    }
    try {
      ByteBuffer v = r.get(db, key);
      return v == null ? null : check(v, db, "value");
    } catch (LmdbException e) {
      throw failure("Cannot read " + db, e);
    }
  }

  /**
   * The MDB_db record fields of {@code db} in this snapshot: {@code :entries}, {@code :depth},
   * {@code :leaf-pages}, {@code :branch-pages} and {@code :overflow-pages}.
   */
  Map<Keyword, Long> stats(SubDb db, List<Dbi<ByteBuffer>> dbis) {
    reader();
    if (javaPages) {
      long r = pages.record(db);
      return stats(ReadOnlyBufferProxy.nativeLong(r + LmdbLayout.MD_ENTRIES),
          LmdbSnapshot.depth(r), ReadOnlyBufferProxy.nativeLong(r + LmdbLayout.MD_LEAF_PAGES),
          ReadOnlyBufferProxy.nativeLong(r + LmdbLayout.MD_BRANCH_PAGES),
          ReadOnlyBufferProxy.nativeLong(r + LmdbLayout.MD_OVERFLOW_PAGES));
    }
    try {
      Stat s = dbis.get(db.ordinal()).stat(reader.txn);
      return stats(s.entries, s.depth, s.leafPages, s.branchPages, s.overflowPages);
    } catch (LmdbException e) {
      throw failure("Cannot read the statistics of " + db, e);
    }
  }

  private static Map<Keyword, Long> stats(long entries, long depth, long leaf, long branch,
      long overflow) {
    return Map.of(Keyword.intern("entries"), entries, Keyword.intern("depth"), depth,
        Keyword.intern("leaf-pages"), leaf, Keyword.intern("branch-pages"), branch,
        Keyword.intern("overflow-pages"), overflow);
  }

  @Override
  public synchronized void close() {
    if (reader != null) {
      end();
    }
  }

  /**
   * Closes this transaction for a map growth when its last operation ran on the thread that
   * began it: that thread is blocked in the store, so nothing reads the map through it now.
   */
  synchronized void closeForGrowth() {
    if (reader != null && user == opened.thread) {
      closedForGrowth = true;
      end();
    }
  }

  private void end() {
    LmdbReader r = reader;
    reader = null;
    store.release(this, r, stamp, opened);
  }
}
