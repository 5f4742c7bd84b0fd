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
  private long mapAddress; // the map's place (0 until known) and size while this is open
  final long mapSize;
  final int pageSize;
  private final long pages; // the map's size in pages
  /** log2 of the page size (a power of two, as every system's is), or -1 when it is not one. */
  final int pageShift;

  LmdbReadTxn(LmdbStore store, LmdbReader reader, long stamp, Opened opened) {
    this.store = store;
    this.mapAddress = store.mapAddress();
    this.mapSize = store.mapSize();
    this.pageSize = store.pageSize();
    this.pages = mapSize / pageSize;
    this.pageShift = Integer.bitCount(pageSize) == 1 ? Integer.numberOfTrailingZeros(pageSize) : -1;
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

  /**
   * The address of the map, given that {@code page} is the address of page number {@code pgno}
   * as read there; 0 when that is not where the map starts.
   */
  long mapAddress(long page, long pgno) {
    long m = mapAddress;
    if (m == 0 && pgno >= 0 && pgno * pageSize < mapSize) {
      m = page - pgno * pageSize;
      mapAddress = m;
      store.mapAddress(m);
    }
    return m;
  }

  /**
   * The address of page {@code pgno} in the map, once the map's place is known (from a page
   * LMDB gave, see {@link #mapAddress}); 0 when it is not, or the page lies outside the map.
   */
  long pageAddress(long pgno) {
    long m = mapAddress;
    if (m == 0 || pgno < 0 || pgno >= pages) {
      return 0;
    }
    return m + pgno * pageSize;
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
    return store.failure(what, e);
  }

  @Override
  public Cursor cursor(SubDb db) {
    LmdbReader r = reader();
    try {
      return new LmdbCursor(this, r.lend(db));
    } catch (LmdbException e) {
      throw failure("Cannot open a cursor", e);
    }
  }

  @Override
  public ByteBuffer get(SubDb db, ByteBuffer key) {
    LmdbReader r = reader();
    try {
      return r.get(db, key);
    } catch (LmdbException e) {
      throw failure("Cannot read", e);
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
