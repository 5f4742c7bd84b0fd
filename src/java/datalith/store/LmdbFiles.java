package datalith.store;

import clojure.lang.ExceptionInfo;
import clojure.lang.Keyword;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;

/**
 * Checks of an LMDB environment's two files, made before LMDB opens them. LMDB maps both files
 * and trusts what it finds there: a data file shorter than its last commit (a truncated copy)
 * makes its first read of a missing page a SIGBUS that ends the process, an empty data file is
 * taken for a new database, and a lock file whose space the file system cannot give (LMDB sizes
 * it with ftruncate, then writes it through the map) is a SIGBUS too when the disk is full.
 *
 * <p>The data file's meta pages are read as {@link LmdbLayout} describes them, and must record
 * transactions one apart (a damaged transaction id would otherwise make LMDB take the commit
 * before the last for the last, silently). The lock file is
 * written (not truncated) to its full size while no other process uses it, so that a full disk
 * is an error here rather than a signal in LMDB.
 */
final class LmdbFiles {
  static final String DATA = "data.mdb";
  static final String LOCK = "lock.mdb";

  /** The size of a reader slot in the lock file. */
  private static final int READER_SLOT = 64;
  /**
   * Room for the lock file's header (MDB_txninfo less one reader slot: 128 bytes on Linux on
   * x86-64, its size with the system's mutexes elsewhere), kept generous: a larger lock file
   * only gives LMDB room for more readers.
   */
  private static final int LOCK_HEADER = 1024;
  private static final long NO_ROOT = -1; // P_INVALID: a tree with no pages
  /** How often {@link #checkData(Path, String)} reads a data file that changes as it reads. */
  private static final int CHECK_ATTEMPTS = 50;

  private LmdbFiles() {}

  /**
   * Checks the data file of directory {@code dir} before LMDB maps it: false when there is none
   * (LMDB creates a new database), true when it holds one whose last commit lies within it.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when the file is empty, is not an
   *     LMDB data file, has a damaged meta page (meta pages whose transactions are not one
   *     apart among them) or is shorter than its last commit says;
   *     {@code :store/io} when it cannot be read
   */
  static boolean checkData(Path dir, String where) {
    Path file = dir.resolve(DATA);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      // Another process may be committing while this reads: a finding counts only when the
      // file's size and meta pages are the same when it is read again (a damaged file stays as
      // it is; a live one moves on), or when it persists through every attempt.
      long seen = -1;
      for (int attempt = 1; ; attempt++) {
        try {
          checkData(ch, file, where);
          return true;
        } catch (ExceptionInfo e) {
          long now = fingerprint(ch);
          if (now == seen || attempt == CHECK_ATTEMPTS) {
            throw e;
          }
          seen = now;
          Thread.onSpinWait();
        }
      }
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot read the data file " + DATA + ": " + e, e);
    }
  }

  /**
   * The data file's size and the bytes of the space its meta pages can occupy, hashed: what a
   * commit of another process changes.
   */
  private static long fingerprint(FileChannel ch) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(2 * LmdbLayout.MAX_PAGE_SIZE);
    while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
      // reads both meta pages' room, or up to the end of the file
    }
    CRC32C crc = new CRC32C();
    crc.update(b.flip());
    return crc.getValue() ^ (ch.size() << 32);
  }

  /** One reading of {@link #checkData(Path, String)}'s checks. */
  private static void checkData(FileChannel ch, Path file, String where) throws IOException {
    long size = ch.size();
    if (size == 0) {
      throw corrupt(where, file, "The data file " + DATA + " is empty (0 bytes), so it holds no"
          + " database: a copy cut short, or a database whose creation failed. LMDB would start"
          + " a new empty one over it; move the file away to do that", size);
    }
    Meta m0 = Meta.read(ch, 0, where, file, size);
    Meta m1 = Meta.read(ch, m0.pageSize, where, file, size);
    if (m1.pageSize != m0.pageSize) {
      throw corrupt(where, file, "The meta pages of " + DATA + " disagree on the page size ("
          + m0.pageSize + " and " + m1.pageSize + ")", size);
    }
    Meta last = m1.txnid > m0.txnid ? m1 : m0; // LMDB's choice
    Meta older = last == m1 ? m0 : m1;
    // each commit writes the older meta page, so they are one transaction apart (both 0 in a
    // database never committed to; LMDB's copies write them so too)
    if (older.txnid != last.txnid - 1 && (older.txnid != 0 || last.txnid != 0)) {
      throw corrupt(where, file, "The meta pages of " + DATA + " record transactions "
          + m0.txnid + " and " + m1.txnid + ", not one apart as LMDB writes them: one of them"
          + " is damaged, and the last commit cannot be told. Restore the whole file", size);
    }
    // the size again, after the meta pages: a commit writes its pages before its meta, so a
    // commit another process made since the first reading is within it
    size = ch.size();
    long pages = size / last.pageSize; // whole pages in the file
    boolean missing = last.lastPage >= pages && (last.freeRoot == NO_ROOT
        || !LmdbOldPages.freeListCovers(ch, last.bytes, pages));
    if (last.lastPage < LmdbLayout.NUM_METAS - 1 || missing) {
      throw corrupt(where, file, "The data file " + DATA + " is shorter than its last commit"
          + " (transaction " + last.txnid + ", meta page " + last.number + ") says: it has "
          + size + " bytes, and that commit ends with page " + last.lastPage + " of "
          + last.pageSize + " bytes. A truncated copy? Restore the whole file", size);
    }
    for (long root : new long[] {last.freeRoot, last.mainRoot}) {
      long end = Math.min(pages - 1, last.lastPage);
      if (root != NO_ROOT && (root < LmdbLayout.NUM_METAS || root > end)) {
        throw corrupt(where, file, "The last commit of " + DATA + " (transaction " + last.txnid
            + ", meta page " + last.number + ") has a root page " + root + " outside pages "
            + LmdbLayout.NUM_METAS + " to " + end, size);
      }
    }
    String problem = LmdbOldPages.mainTreeProblem(ch, last.bytes, pages);
    if (problem != null) {
      throw corrupt(where, file, "The main database of " + DATA + " (the named sub-databases,"
          + " transaction " + last.txnid + "), which LMDB's open reads in C, does not read"
          + " soundly: " + problem, size);
    }
  }

  /** Whether directory {@code dir}'s data file holds a database that LMDB can open. */
  static boolean holdsDatabase(Path dir) {
    try {
      return checkData(dir, dir.toString());
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * Gives the lock file of directory {@code dir} every byte LMDB maps for {@code maxReaders}
   * readers, by writing zeros over it, unless another process has the environment open (its
   * LMDB set the file up). LMDB initializes the file itself when it is the only user, as it is
   * then. Returns whether the file was created here.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the file cannot be written, such as
   *     on a full disk; a file created here is removed again
   */
  static boolean prepareLock(Path dir, String where, int maxReaders) {
    Path file = dir.resolve(LOCK);
    boolean created = !Files.exists(file);
    long size = (long) Math.max(maxReaders, 1) * READER_SLOT + LOCK_HEADER;
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE,
        StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      // LMDB takes this byte's lock for writing when it is the first user, and keeps it shared
      try (FileLock lock = ch.tryLock(0, 1, false)) {
        if (lock != null) {
          ByteBuffer zeros = ByteBuffer.allocate(4096);
          long end = Math.max(size, ch.size());
          for (long at = 0; at < end; ) {
            zeros.clear().limit((int) Math.min(zeros.capacity(), end - at));
            at += ch.write(zeros, at);
          }
        }
      }
      return created;
    } catch (IOException e) {
      if (created) {
        try {
          Files.deleteIfExists(file);
        } catch (IOException ignored) {
          // the error below names the cause; the file is left as it was made
        }
      }
      throw Errors.error(Errors.IO, where, "Cannot write the lock file " + LOCK + " (" + size
          + " bytes) before LMDB maps it: " + e.getMessage(), e,
          Keyword.intern("file"), file.toString());
    }
  }

  private static RuntimeException corrupt(String where, Path file, String message, long size) {
    return Errors.error(Errors.CORRUPT, where, message, null, Keyword.intern("file"),
        file.toString(), Keyword.intern("size"), size);
  }

  /** One meta page, as read from the file. */
  private static final class Meta {
    final int number; // 0 or 1
    final int pageSize;
    final long lastPage;
    final long txnid;
    final long freeRoot;
    final long mainRoot;
    final ByteBuffer bytes; // its first LmdbLayout.META_END bytes, native order

    private Meta(int number, int pageSize, long lastPage, long txnid, long freeRoot,
        long mainRoot, ByteBuffer bytes) {
      this.number = number;
      this.pageSize = pageSize;
      this.lastPage = lastPage;
      this.txnid = txnid;
      this.freeRoot = freeRoot;
      this.mainRoot = mainRoot;
      this.bytes = bytes;
    }

    /** The meta page at {@code offset} (0, or the page size for the second one). */
    static Meta read(FileChannel ch, long offset, String where, Path file, long size)
        throws IOException {
      int number = offset == 0 ? 0 : 1;
      String which = "meta page " + number + " of " + DATA;
      ByteBuffer b = ByteBuffer.allocate(LmdbLayout.META_END).order(ByteOrder.nativeOrder());
      while (b.hasRemaining() && ch.read(b, offset + b.position()) > 0) {
        // reads until the meta is read or the file ends
      }
      if (b.hasRemaining()) {
        throw corrupt(where, file, "The data file " + DATA + " (" + size + " bytes) is too short"
            + " to hold its " + which + ". A truncated copy? Restore the whole file", size);
      }
      int flags = Short.toUnsignedInt(b.getShort(LmdbLayout.PAGE_FLAGS));
      int magic = b.getInt(LmdbLayout.MM_MAGIC);
      int version = b.getInt(LmdbLayout.MM_VERSION);
      int pageSize = b.getInt(LmdbLayout.MM_PSIZE);
      if ((flags & LmdbLayout.P_META) == 0 || magic != LmdbLayout.META_MAGIC) {
        throw corrupt(where, file, "The " + which + " is damaged or not LMDB's (flags " + flags
            + ", magic " + Integer.toHexString(magic) + ")", size);
      }
      if (version != LmdbLayout.META_VERSION || !LmdbLayout.isPageSize(pageSize)) {
        throw corrupt(where, file, "The " + which + " has version " + version + " and page size "
            + pageSize + ", not LMDB 0.9's", size);
      }
      return new Meta(number, pageSize, b.getLong(LmdbLayout.MM_LAST_PG),
          b.getLong(LmdbLayout.MM_TXNID), b.getLong(LmdbLayout.MM_FREE_ROOT),
          b.getLong(LmdbLayout.MM_MAIN_ROOT), b);
    }
  }
}
