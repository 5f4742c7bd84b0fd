package datalith.store;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The read transactions that each thread of an {@link LmdbStore} holds open, and those parked:
 * held by a thread that waits to write (for the writer permit, or in write-behind's
 * {@code beginWrite}). A commit that must grow the map closes the parked ones, as it closes
 * those of its own thread, rather than wait for them to finish ({@link LmdbMapGrowth}): the
 * waiting thread cannot close them, since it waits, maybe for that commit. Thread-safe.
 */
final class LmdbReadParking {
  private final ThreadLocal<LmdbReadTxn.Opened> openReads =
      ThreadLocal.withInitial(() -> new LmdbReadTxn.Opened(Thread.currentThread()));
  private final Set<LmdbReadTxn.Opened> parked = ConcurrentHashMap.newKeySet(); // in beginWrite

  /** The calling thread's open read transactions. */
  LmdbReadTxn.Opened opened() {
    return openReads.get();
  }

  /** The read transactions of the threads parked now, each thread's as one. */
  Iterable<LmdbReadTxn.Opened> parked() {
    return parked;
  }

  /**
   * Marks the calling thread's open read transactions as those of a thread waiting to write;
   * returns them for {@link #unpark}, or null when it has none.
   */
  LmdbReadTxn.Opened park() {
    LmdbReadTxn.Opened opened = openReads.get();
    if (opened.count() == 0) {
      return null;
    }
    parked.add(opened);
    return opened;
  }

  /** Ends {@link #park}'s mark. */
  void unpark(LmdbReadTxn.Opened opened) {
    if (opened != null) {
      parked.remove(opened);
    }
  }

  /** Takes {@code writer}'s permit, waiting for it with the calling thread's reads parked. */
  void acquireParked(LmdbWriterLock writer) {
    LmdbReadTxn.Opened opened = park();
    try {
      writer.acquire();
    } finally {
      unpark(opened);
    }
  }
}
