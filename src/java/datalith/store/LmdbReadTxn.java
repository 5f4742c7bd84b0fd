package datalith.store;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import org.lmdbjava.LmdbException;

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
  final int pageSize;
  /** log2 of the page size (a power of two, as every system's is). */
  final int pageShift;
  /**
   * The address of the map, 0 when LMDB's structs do not read as {@link LmdbLayout} says: then
   * nothing LMDB returns is checked, and nothing is read in Java.
   */
  final long map;
  /** The snapshot's pages are 0 to next - 1 (from its MDB_txn), all of them in the map. */
  private final long next;
  /**
   * Those of them the file holds, as last seen: LMDB does not write a page that a transaction
   * allocated and freed again, so the file may end before the snapshot's last page, and it grows
   * with later commits.
   */
  private long pages;
  private long dataStart; // the address of page 2, the first past the metas
  private long dataEnd; // the address just past page pages - 1
  /** Whether cursors read leaf pages in Java (the store's option, and pages of 4 KiB). */
  final boolean javaPages;

  LmdbReadTxn(LmdbStore store, LmdbReader reader, long stamp, Opened opened) {
    this.store = store;
    this.pageSize = store.pageSize();
    this.pageShift = Integer.numberOfTrailingZeros(pageSize);
    long m = store.mapAddress();
    long n = m == 0 ? 0
        : Math.min(reader.nextPage(store.envAddress()), store.mapSize() >> pageShift);
    this.next = n;
    this.map = n > LmdbLayout.NUM_METAS ? m : 0;
    this.dataStart = map + ((long) LmdbLayout.NUM_METAS << pageShift);
    bound(Math.min(n, store.filePages()));
    this.javaPages = map != 0 && store.javaPages && pageSize == LmdbCursor.PAGE_SIZE;
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

  /** Whether page {@code pgno} is one of the snapshot's, other than the meta pages. */
  boolean isDataPage(long pgno) {
    return pgno >= LmdbLayout.NUM_METAS && (pgno < pages || pgno < next && grown() > pgno);
  }

  /** The snapshot's pages that the file holds now (a commit since the last look may add some). */
  private long grown() {
    return bound(Math.min(next, store.refreshFilePages()));
  }

  private long bound(long filePages) {
    pages = filePages;
    dataEnd = map + (filePages << pageShift);
    return filePages;
  }

  /**
   * {@code b}, a key or value LMDB returned, once checked to lie in the snapshot's pages past the
   * meta pages (LMDB takes a node's place and sizes from the page as they are, so a damaged page
   * points anywhere); {@code what} and {@code db} name it in the exception.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when it does not
   */
  ByteBuffer check(ByteBuffer b, SubDb db, String what) {
    long at = ReadOnlyBufferProxy.base(b);
    if (map != 0 && (at < dataStart || at > dataEnd - b.capacity())) {
      if (pages < next) {
        grown();
      }
      if (at < dataStart || at > dataEnd - b.capacity()) {
        throw corrupt(db, at < map || at >= dataEnd ? -1 : (at - map) >> pageShift, at == 0
            ? "LMDB read a " + what + " of 2 GiB or more, which no page holds" // see the proxy
            : "LMDB read a " + what + " of " + b.capacity() + " bytes outside the file's pages");
      }
    }
    return b;
  }

  /** The exception for damage found in {@code db} at page {@code pgno} (-1: unknown). */
  RuntimeException corrupt(SubDb db, long pgno, String message) {
    return Errors.corrupt(store.where(), db, pgno, message);
  }

  boolean isOpen() {
    return reader != null;
  }

  /** The exception for use of {@code what} after close. */
  IllegalStateException closed(String what) {
    return Errors.closed(store.where(), what);
  }

  /** An LMDB failure as the store reports it. */
  RuntimeException failure(String what, LmdbException e) {
    return Errors.lmdb(store.where(), what, e);
  }

  @Override
  public Cursor cursor(SubDb db) {
    LmdbReader r = reader();
    try {
      return new LmdbCursor(this, db, r.lend(db));
    } catch (LmdbException e) {
      throw failure("Cannot open a cursor in " + db, e);
    }
  }

  @Override
  public ByteBuffer get(SubDb db, ByteBuffer key) {
    LmdbReader r = reader();
    try {
      ByteBuffer v = r.get(db, key);
      return v == null ? null : check(v, db, "value");
    } catch (LmdbException e) {
      throw failure("Cannot read " + db, e);
    }
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
