package datalith.store;

import java.nio.ByteBuffer;
import java.util.ArrayList;

/**
 * A durable (or in-memory) sorted key-value store with named sub-databases,
 * MVCC snapshots and one writer at a time. {@link LmdbStore} and
 * {@link MemStore} are its two implementations and behave identically.
 *
 * <p>Threading: any thread may call {@link #beginRead()} at any time; read
 * transactions never block each other or the writer. {@link #beginWrite()}
 * blocks until no other write transaction is open, in this process or (for
 * a store that processes share) another.
 */
public interface Store extends AutoCloseable {

  /**
   * Opens a read-only snapshot of the last committed state. The caller must
   * close it soon (it pins storage while open); it may be used by one thread at
   * a time, and closed by any thread.
   */
  ReadTxn beginRead();

  /**
   * Opens the single write transaction, waiting while another is open (of any
   * process). Its writes become visible to new read transactions atomically on
   * {@link WriteTxn#commit()}; closing it without commit discards them. Reads
   * begun after this returns see the last commit, and nothing commits until
   * it closes.
   */
  WriteTxn beginWrite();

  /** True when commits are fsynced before {@link WriteTxn#commit()} returns. */
  boolean durable();

  /**
   * Lets the commits until the returned pause is closed skip their fsync (bulk loads:
   * {@code datalith.conn.Import}); closing it forces everything committed to disk, then makes
   * commits durable again. A crash of the JVM during the pause loses nothing committed; one of
   * the operating system may lose the commits since the pause began, as {@code "sync" false}
   * does. A store that is not durable, or cannot switch, pauses nothing. The caller holds the
   * pause on the thread that writes, and no other thread of the process writes meanwhile.
   */
  default SyncPause pauseSync() {
    return () -> {};
  }

  /** A pause of fsync on commit ({@link #pauseSync}); closing it syncs and ends it. */
  interface SyncPause extends AutoCloseable {
    /** Forces every commit to disk, then makes commits durable again. Idempotent. */
    @Override
    void close();
  }

  /**
   * Makes every sub-database hold exactly {@code source}'s entries (of any store), in one
   * commit: a reader sees the old contents or the new, never a mix. Bulk loads build their
   * result in memory and write it with this ({@code datalith.conn.Import}). This generic way
   * deletes the old entries and puts the new ones through one write transaction; a store may
   * write its trees directly instead. Either way it reads {@code source} only while it holds
   * the store's writer lock (no other writer, of any process, commits until it is done; a read
   * of the store begun then sees the last commit), and an exception from {@code source} makes
   * it write nothing: a source may check, on its reads, that the store still holds what it
   * was built on ({@code datalith.conn.Staged}). A store may read the source more than once,
   * each time under the lock (LMDB: a direct commit that gives up, then the generic way).
   */
  default void replaceAll(ReadTxn source) {
    try (WriteTxn w = beginWrite()) {
      replaceAll(this, w, source);
    }
  }

  /**
   * The generic {@link #replaceAll(ReadTxn)} of {@code store} in {@code w}, a write
   * transaction of it, which this commits: every old entry deleted, then {@code source}'s put.
   */
  static void replaceAll(Store store, WriteTxn w, ReadTxn source) {
    try (ReadTxn old = store.beginRead()) {
      for (SubDb db : SubDb.values()) {
        Cursor c = old.cursor(db);
        ArrayList<ByteBuffer> keys = new ArrayList<>();
        for (boolean more = c.first(); more; more = c.next()) {
          ByteBuffer k = c.key();
          keys.add(ByteBuffer.allocate(k.remaining()).put(k.duplicate()).flip());
        }
        c.close();
        for (ByteBuffer k : keys) {
          w.delete(db, k);
        }
      }
    }
    for (SubDb db : SubDb.values()) {
      Cursor c = source.cursor(db);
      for (boolean more = c.first(); more; more = c.next()) {
        w.put(db, c.key(), c.val());
      }
      c.close();
    }
    w.commit();
  }

  /** The directory the store keeps its files in, or null for one in memory. */
  default String directory() {
    return null;
  }

  /** Releases every resource. Further use throws {@link IllegalStateException}. */
  @Override
  void close();
}
