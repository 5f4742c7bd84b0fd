package datalith.store;

import java.nio.file.Path;
import org.lmdbjava.CopyFlags;
import org.lmdbjava.LmdbException;

/**
 * Backs up an open {@link LmdbStore}: LMDB's own copy ({@code mdb_env_copy2}) of the last
 * commit into an empty directory, as one data file that opens like any store. LMDB copies from
 * one read snapshot, so the copy is consistent while this and other processes go on reading and
 * writing; writers are not held up (a page-for-page copy takes LMDB's writer mutex only while it
 * reads the meta pages; a {@code replaceAll} holds that mutex while it writes, so such a copy
 * begins before it or after it, never with its meta page and without its pages).
 *
 * <p>A page-for-page copy writes the snapshot's pages as they are and interprets none but the
 * meta pages, which {@link LmdbFiles} checked at open: a damaged page is copied, never read, so
 * it cannot stop the process. A compacting copy leaves the free pages out and renumbers the
 * rest, walking every tree through LMDB's own page reading, which does not check pages for
 * damage: so it copies only a store whose pages passed the check before writes
 * ({@link LmdbPagesCheck}, which reads every page of the trees as that walk
 * does), and a damaged one is {@code :store/corrupt}, nothing copied.
 *
 * <p>While LMDB copies, a read transaction of the store stays open, so that the map is neither
 * resized nor closed under the copy; a commit that must grow the map meanwhile waits for it (at
 * most 30 seconds, as for any reader).
 */
public final class LmdbBackup {
  private LmdbBackup() {}

  /**
   * Writes {@code store}'s last commit into {@code dest}, an existing empty directory.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/lmdb} (or {@code :store/corrupt}) when LMDB
   *     cannot copy, e.g. when {@code dest} is not an empty directory or the disk is full;
   *     {@code :store/corrupt} for a compacting copy of a store whose pages are damaged
   * @throws IllegalStateException when the store is closed
   */
  public static void copy(LmdbStore store, Path dest, boolean compact) {
    store.writeBehindCatchUp(); // the commits laid over LMDB's, with write-behind, into it
    if (compact) {
      store.pages.beforeWrites(); // LMDB's walk of the trees reads every page in C
    }
    try (ReadTxn pin = store.beginLmdbRead()) { // the map stays in place while LMDB copies
      store.env().copy(dest.toFile(),
          compact ? new CopyFlags[] {CopyFlags.MDB_CP_COMPACT} : new CopyFlags[0]);
    } catch (LmdbException e) {
      throw store.failure("Cannot copy the store to " + dest, e);
    }
  }
}
