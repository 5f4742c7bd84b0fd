package datalith.store;

import clojure.lang.ExceptionInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The check of an {@link LmdbStore}'s pages before its first write: LMDB's C code reads the
 * pages a write descends, splits, merges or takes from the free list as it finds them, so a
 * damaged node there is a read out of bounds that stops the process (the flip test's seed 987,
 * in mdb_page_split). {@link #problem} reads every page of the last commit's trees, and its
 * free list, as LMDB's writes would ({@code LmdbOldPages.accountingProblem}). Once they pass,
 * every later page is one that a write of a checked store wrote, so the check runs once an
 * open store, and not at all for a data file its open made ({@link #writtenHere}).
 *
 * <p>A {@code replaceAll} written directly does not check first: it writes its trees in Java,
 * reads the old ones through the checked Java reader and leaves the pages of damaged ones
 * behind (so it replaces a damaged store's trees), and its LMDB transaction writes nothing;
 * the next write checks what it left. Thread-safe.
 */
final class LmdbPagesCheck {
  private final LmdbStore store;
  private final Path dataFile;
  private final String where;
  private volatile boolean passed;

  LmdbPagesCheck(LmdbStore store, Path dataFile, String where) {
    this.store = store;
    this.dataFile = dataFile;
    this.where = where;
  }

  /**
   * What is wrong with the last commit's pages and how it accounts for them, or null when
   * nothing is: every page of its trees read as LMDB's writes read it, each page in at most
   * one place, a tree or the free list (see {@code LmdbOldPages#accountingProblem}), read where
   * they lie in the map (from the file when its address is unknown) under a read transaction
   * that keeps the commit's pages as they are and the map in place. A page both in a tree and
   * in the free list would be written over by a later commit. Null also when the last commit's
   * meta page does not read as {@link LmdbLayout} says (which the open checked), or other
   * processes' commits took it ten times over while this read it.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the file cannot be read
   */
  String problem() {
    for (int attempt = 1; ; attempt++) {
      try (LmdbReadTxn r = (LmdbReadTxn) store.beginLmdbRead();
          FileChannel data = FileChannel.open(dataFile, StandardOpenOption.READ)) {
        long t = r.reader().txn.getId();
        ByteBuffer meta = LmdbDirectCommit.readMeta(data, t, store.pageSize());
        if (meta != null) {
          long at = store.mapAddress(); // in place while the read is open
          return at != 0 ? LmdbOldPages.accountingProblem(at, store.refreshFilePages(), meta)
              : LmdbOldPages.accountingProblem(data, meta);
        }
        // another process's commit t + 2 may have taken the meta page of t since the read began
        if (attempt == 10 || store.lastTxnid() == t) {
          return null;
        }
      } catch (IOException e) {
        throw Errors.error(Errors.IO, where, "Cannot read the store's pages: " + e, e);
      }
    }
  }

  /**
   * Marks the pages checked: the store's data file was made by its open, so its every page is
   * one that LMDB's writes (or a direct commit's) wrote here, from checked pages.
   */
  void writtenHere() {
    passed = true;
  }

  /**
   * Checks the pages, unless that passed already: before a write of LMDB's (a commit, a
   * write-back, the log's replay at open) or a compacting backup, whose walk of the trees is
   * LMDB's too. Ends the check of a damaged store with the damage, and writes nothing.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} naming what does not read soundly
   */
  void beforeWrites() {
    if (passed) {
      return;
    }
    synchronized (this) {
      if (passed) {
        return;
      }
      String problem = problem();
      if (problem != null) {
        throw Errors.corrupt(where, null, -1, "The store's pages do not read as LMDB's writes "
            + "need (" + problem + "), so nothing is written: LMDB's code would read them as "
            + "they are. Verify names the damage; a rebuild from the log or a backup mends it");
      }
      passed = true;
    }
  }

  /**
   * With write-behind, whose commits reach LMDB by write-backs (each of which checks, in
   * {@link LmdbWrite#commit}): {@link #beforeWrites} before the first commit is laid, so that a
   * damaged store refuses it rather than take commits it cannot write back; a file that cannot
   * be read now ({@code :store/io}) is left to the write-backs, which try again.
   */
  void beforeLaying() {
    try {
      beforeWrites();
    } catch (ExceptionInfo e) {
      if (!Errors.IO.equals(e.getData().valAt(Errors.ERROR))) {
        throw e;
      }
    }
  }
}
