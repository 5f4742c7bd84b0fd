package datalith.store;

import java.io.IOException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.FileLockInterruptionException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.Semaphore;

/**
 * The writer lock of an {@link LmdbStore}: a permit that the open write transaction holds in
 * this process, and the directory's lock file ({@value #FILE}), an advisory lock of the
 * operating system that ends with its process, that it holds across processes. The permit is
 * fair, so that writers take turns in the order they came; it is also taken, without waiting,
 * by a map growth that runs outside a write transaction, and by close.
 */
final class LmdbWriterLock {
  /** The file in the store's directory that the open write transaction of any process locks. */
  static final String FILE = "writer.lock";

  private final Path dir;
  private final String where; // the directory, for messages
  private final Semaphore permit = new Semaphore(1, true); // held by the open write transaction
  private FileChannel file; // opened by the first write; used under the permit
  private volatile Thread writer; // the thread that began the open write transaction

  LmdbWriterLock(Path dir, String where) {
    this.dir = dir;
    this.where = where;
  }

  /** Whether the calling thread holds the open write transaction. */
  boolean heldByCurrentThread() {
    return writer == Thread.currentThread();
  }

  /** Waits for the permit, without interruption. */
  void acquire() {
    permit.acquireUninterruptibly();
  }

  /** Takes the permit if it is free now. */
  boolean tryAcquire() {
    return permit.tryAcquire();
  }

  void release() {
    permit.release();
  }

  /**
   * Takes the directory's lock for the calling thread, which holds the permit, waiting for
   * another process's write transaction to end, and releases the permit when that fails: the
   * calling thread then holds the open write transaction. Not interruptible: an interrupt closes
   * a channel blocked in {@link FileChannel#lock()}, so one that comes meanwhile reopens it, and
   * is kept for later.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/lmdb} when the lock file cannot be opened
   *     or locked
   */
  FileLock lockDirectory() {
    FileLock lock;
    try {
      lock = lockFile();
    } catch (RuntimeException e) {
      permit.release();
      throw e;
    }
    writer = Thread.currentThread();
    return lock;
  }

  private FileLock lockFile() {
    boolean interrupted = Thread.interrupted(); // with the flag set, lock() would close the channel
    try {
      while (true) {
        try {
          if (file == null || !file.isOpen()) {
            file = FileChannel.open(dir.resolve(FILE),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE);
          }
          return file.lock();
        } catch (FileLockInterruptionException | ClosedByInterruptException e) {
          interrupted |= Thread.interrupted(); // the channel is closed: reopen it
        } catch (IOException e) {
          throw Errors.error(Errors.LMDB, where,
              "Cannot lock " + dir.resolve(FILE) + ": " + e.getMessage(), e);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Ends the open write transaction: releases the directory's lock, then the permit. */
  void unlock(FileLock lock) {
    try {
      lock.release();
    } catch (IOException e) {
      closeQuietly(); // which releases the lock; the next write opens the file again
    } finally {
      writer = null;
      permit.release();
    }
  }

  private void closeQuietly() {
    try {
      file.close();
    } catch (IOException e) {
      // closing releases the lock whatever else failed
    }
  }

  /**
   * Waits for the open write transaction to end, once the store is closing, so that no other
   * can begin; the close's own work under the lock ({@code runLocked}) may follow.
   */
  void drain() {
    permit.acquireUninterruptibly(); // the open write transaction is done
    permit.release(); // beginWrite callers queued behind close see it closing
  }

  /**
   * Closes the lock file, last of a store's close, once no thread of it locks it again. Every
   * channel this opened is closed here and nowhere later: the operating system's locks on a
   * file belong to the process, and closing any of its descriptors of the file drops them all,
   * so a channel left to the garbage collector would drop the writer lock of the next store
   * this process opens on the directory, whenever it is collected.
   *
   * @throws IOException when closing fails (the descriptor is released all the same)
   */
  void closeFile() throws IOException {
    FileChannel f = file;
    file = null;
    if (f != null) {
      f.close();
    }
  }
}
