package datalith.store;

import clojure.lang.Keyword;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.lmdbjava.Env;
import org.lmdbjava.LmdbException;

/**
 * The memory map of an {@link LmdbStore} and its growth. Resizing the map needs a moment with no
 * read transaction open in this process: the map lock is shared by every open read transaction
 * and taken exclusively to resize (or close). A growth is asked for ({@code growTo}) and done by
 * whoever finds the way clear: the commit that needs it, the commit that finds the map half
 * used, or the end of the last read transaction in the way; meanwhile new read transactions wait
 * for it briefly (a thread that holds one already never waits). Thread-safe.
 */
final class LmdbMapGrowth {
  private static final long GATE_WAIT_MS = 100; // longest wait of a new reader for a resize
  private static final long GROW_WAIT_S = 30; // longest wait of a commit for readers to finish

  private final Env<ByteBuffer> env;
  private final int pageSize;
  private final long envAddress; // of LMDB's MDB_env, 0 when unknown
  private final String where; // the directory, for messages
  private final LmdbWriterLock writer;
  private final LmdbReadParking reads; // each thread's, and those of threads waiting to write
  // Shared while a read transaction is open; exclusive while the map is resized or closed.
  private final LmdbMapLock mapLock = new LmdbMapLock();
  private final Object gate = new Object(); // notified when a pending growth is done
  private volatile boolean closing;
  private volatile long growTo; // the map size wanted, 0 when no growth is pending
  private volatile long mapSize;
  private volatile long mapAddress; // where the map starts in this process, 0 until read again

  LmdbMapGrowth(Env<ByteBuffer> env, int pageSize, long envAddress, String where,
      LmdbWriterLock writer, LmdbReadParking reads) {
    this.env = env;
    this.pageSize = pageSize;
    this.envAddress = envAddress;
    this.where = where;
    this.writer = writer;
    this.reads = reads;
    this.mapSize = env.info().mapSize;
  }

  long mapSize() {
    return mapSize;
  }

  /**
   * The map's address, read from LMDB's MDB_env (lmdbjava's EnvInfo does not give it), or 0
   * when that does not read as {@link LmdbLayout} says; stable while a read transaction is open,
   * as it holds the map lock.
   */
  long mapAddress() {
    long m = mapAddress;
    if (m == 0) {
      m = LmdbLayout.mapOf(envAddress, pageSize, SubDb.values().length, mapSize);
      mapAddress = m;
    }
    return m;
  }

  /** The bytes the last commit of any process uses (from the newest meta page). */
  long dataSize() {
    return (env.info().lastPageNumber + 1) * pageSize;
  }

  /** The map size after growth for {@code needed} bytes: the current one doubled until they fit. */
  long grownSize(long needed) {
    long size = 2 * mapSize;
    while (size < needed) {
      size *= 2;
    }
    return size;
  }

  /**
   * Takes the map lock shared, for a read transaction; waits briefly for a pending growth unless
   * {@code nested} (the thread holds a read transaction already, which would be in its way);
   * 0, without waiting, when the store is closing and the lock is the close's.
   */
  long lockShared(boolean nested) {
    long stamp = mapLock.tryShared(); // fails only while a resize or close runs
    if (stamp != 0 && (growTo == 0 || nested)) {
      return stamp;
    }
    if (stamp == 0 && closing) {
      // the close waits for the open reads, so a thread holding one must not wait for it
      // (a read begun inside a read hung CI's store-test); nor need any other: it is closed
      return 0;
    }
    if (stamp != 0) {
      mapLock.unlockShared(stamp); // let the open readers drain so that the map can grow
    }
    maybeGrow();
    awaitGrowth();
    return mapLock.shared();
  }

  /** Ends a read transaction's hold on the map. */
  void unlockShared(long stamp) {
    mapLock.unlockShared(stamp);
  }

  /** Stops growth, the store closing: readers waiting for one stop waiting. */
  void close() {
    closing = true;
    synchronized (gate) {
      gate.notifyAll();
    }
  }

  /** Waits for every read transaction to end, the store closing; the map stays locked. */
  long lockForClose() {
    return mapLock.exclusive();
  }

  void unlockAfterClose(long stamp) {
    mapLock.unlockExclusive(stamp);
  }

  private void awaitGrowth() {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(GATE_WAIT_MS);
    synchronized (gate) {
      long left;
      while (growTo != 0 && !closing && (left = deadline - System.nanoTime()) > 0) {
        try {
          TimeUnit.NANOSECONDS.timedWait(gate, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** Asks for the map to grow to {@code size} bytes, if it is smaller and none bigger is asked. */
  void request(long size) {
    synchronized (gate) {
      if (size > mapSize && size > growTo) {
        growTo = size;
      }
    }
  }

  /**
   * Grows the map if a growth is pending and nothing is in the way now; never waits. The thread
   * of the open write transaction may grow it too (outside its commit: the LMDB write
   * transaction is open only there).
   */
  void maybeGrow() {
    if (growTo == 0 || closing) {
      return;
    }
    boolean mine = writer.heldByCurrentThread();
    if (!mine && !writer.tryAcquire()) {
      return;
    }
    try {
      long stamp = mapLock.tryExclusive();
      if (stamp != 0) {
        try {
          resize(growTo);
        } catch (LmdbException e) {
          // Leave it to the next commit that needs the room: it reports the failure.
          synchronized (gate) {
            growTo = 0;
            gate.notifyAll();
          }
        } finally {
          mapLock.unlockExclusive(stamp);
        }
      }
    } finally {
      if (!mine) {
        writer.release();
      }
    }
  }

  /**
   * Grows the map for the writer: closes the read transactions that would wait for this commit
   * (see {@link LmdbStore}), then waits for the others to finish.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/map-full} when they stay open for 30
   *     seconds; {@code :store/lmdb} when LMDB cannot grow the map
   */
  void growForCommit(long size) {
    closeForGrowth(reads.opened());
    closeParked();
    request(size);
    long stamp;
    try {
      // a thread that comes to wait to write meanwhile (at write-behind's bound, say, for the
      // write-back that this growth is for) has its reads closed too
      stamp = mapLock.tryExclusive(GROW_WAIT_S, TimeUnit.SECONDS, this::closeParked);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stamp = 0;
    }
    if (stamp == 0) {
      throw Errors.error(Errors.MAP_FULL, where, "The LMDB map (" + mapSize
          + " bytes) is full and cannot grow while read transactions stay open (waited "
          + GROW_WAIT_S + " s)", null, Keyword.intern("map-size"), mapSize);
    }
    try {
      resize(Math.max(size, growTo));
    } catch (LmdbException e) {
      throw Errors.lmdb(where, "Cannot grow the map to " + size + " bytes", e);
    } finally {
      mapLock.unlockExclusive(stamp);
    }
  }

  private void closeParked() {
    for (LmdbReadTxn.Opened waiting : reads.parked()) {
      closeForGrowth(waiting);
    }
  }

  private static void closeForGrowth(LmdbReadTxn.Opened opened) {
    for (LmdbReadTxn txn : opened.snapshot()) {
      txn.closeForGrowth();
    }
  }

  /**
   * Caller holds the writer permit and the exclusive map lock. LMDB makes the map at least as
   * big as the data any process committed.
   */
  private void resize(long size) {
    if (size > mapSize) {
      env.setMapSize(size);
      mapSize = env.info().mapSize;
      mapAddress = 0; // a resize may move the map
    }
    synchronized (gate) {
      if (growTo <= mapSize) {
        growTo = 0;
      }
      gate.notifyAll();
    }
  }

  /**
   * After a commit that leaves {@code usedPages} pages in the file's data (its last page number
   * plus one): once the map is half used, asks for a growth, done now if the open read
   * transactions finish soon (the writer holding none), otherwise by whoever ends the last of
   * them. Costs a comparison while the map is less than half used.
   */
  void growAheadOfNeed(long usedPages) throws InterruptedException {
    long size = mapSize;
    if (usedPages * pageSize <= size / 2) {
      return;
    }
    request(2 * size);
    if (reads.opened().count() == 0) {
      long stamp = mapLock.tryExclusive(GATE_WAIT_MS, TimeUnit.MILLISECONDS);
      if (stamp != 0) {
        try {
          resize(growTo);
        } finally {
          mapLock.unlockExclusive(stamp);
        }
      }
    }
  }
}
