package datalith.store;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.lmdbjava.Dbi;
import org.lmdbjava.Dbi.MapResizedException;
import org.lmdbjava.Env;

/**
 * The pooled read transactions of an {@link LmdbStore}, with their cursors: one ended is reset
 * and kept, and renewed by the next {@link #take()}, so that a read allocates no LMDB
 * transaction. A thread starts looking at a slot of its own (by its hash), so that threads
 * rarely contend for one. Thread-safe.
 */
final class LmdbReaderPool {
  private static final int SIZE = 64; // a power of two

  private final LmdbStore store;
  private final Env<ByteBuffer> env;
  private final List<Dbi<ByteBuffer>> dbis;
  private final AtomicReferenceArray<LmdbReader> pool = new AtomicReferenceArray<>(SIZE);

  LmdbReaderPool(LmdbStore store, Env<ByteBuffer> env, List<Dbi<ByteBuffer>> dbis) {
    this.store = store;
    this.env = env;
    this.dbis = dbis;
  }

  private static int home() {
    return Thread.currentThread().hashCode() & (SIZE - 1);
  }

  /**
   * A reader on a fresh snapshot: a pooled one renewed, or a new one. Caller holds the shared
   * map lock.
   *
   * @throws MapResizedException when another process grew the map past this process's
   */
  LmdbReader take() {
    int home = home();
    for (int i = 0; i < SIZE; i++) {
      int at = (home + i) & (SIZE - 1);
      LmdbReader reader = pool.get(at);
      if (reader != null && pool.compareAndSet(at, reader, null)) {
        try {
          reader.renew();
        } catch (MapResizedException e) {
          reader.txn.reset(); // LMDB has ended it; lmdbjava wants it reset before a renew
          if (!giveBack(reader)) {
            reader.txn.close();
          }
          throw e;
        } catch (RuntimeException e) {
          reader.txn.close();
          throw e;
        }
        return reader;
      }
    }
    return new LmdbReader(store, env.txnRead(), dbis);
  }

  /** Resets {@code reader} and keeps it, or disposes of it when the pool is full. */
  void end(LmdbReader reader) {
    reader.reset();
    if (!giveBack(reader)) {
      reader.dispose();
    }
  }

  private boolean giveBack(LmdbReader reader) {
    int home = home();
    for (int i = 0; i < SIZE; i++) {
      int at = (home + i) & (SIZE - 1);
      if (pool.get(at) == null && pool.compareAndSet(at, null, reader)) {
        return true;
      }
    }
    return false;
  }

  /** Disposes of the pooled readers; caller holds the exclusive map lock, closing the store. */
  void disposeAll() {
    for (int i = 0; i < SIZE; i++) {
      LmdbReader reader = pool.getAndSet(i, null);
      if (reader != null) {
        reader.dispose();
      }
    }
  }
}
