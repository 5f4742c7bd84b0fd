package datalith.store;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The lock files whose descriptors an {@link LmdbStore} keeps open for its process: the
 * directory's {@code writer.lock}, which every write locks ({@link LmdbWriterLock}), and LMDB's
 * lock file as direct commits write it ({@link LmdbDirectCommit.LockPage}), mapped by the
 * first. The operating system's locks on a file belong to the process, and closing any
 * descriptor of the file drops them all: both stay open until {@link #close}, after LMDB's
 * environment.
 */
final class LmdbLockFiles {
  private final Path dir;
  private final String where; // the directory, for messages
  private final LmdbWriterLock writer;
  private LmdbDirectCommit.LockPage lmdbLock; // mapped by the first direct commit, or null

  LmdbLockFiles(Path dir, String where, LmdbWriterLock writer) {
    this.dir = dir;
    this.where = where;
    this.writer = writer;
  }

  /**
   * LMDB's lock file, mapped by the first call and kept until {@link #close}. Under the writer
   * lock.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when it cannot be opened or mapped
   */
  LmdbDirectCommit.LockPage lmdbLock() {
    if (lmdbLock == null) {
      lmdbLock = LmdbDirectCommit.LockPage.map(dir, where);
    }
    return lmdbLock;
  }

  /**
   * Closes the writer lock's file and LMDB's lock file, after LMDB's environment: closing any
   * descriptor of a file drops every lock the process holds on it.
   */
  void close() {
    try {
      writer.closeFile();
    } catch (IOException e) {
      // closing releases the lock whatever else failed
    }
    if (lmdbLock != null) {
      try {
        lmdbLock.close();
      } catch (IOException e) {
        // the descriptor is released whatever else failed
      }
      lmdbLock = null;
    }
  }
}
