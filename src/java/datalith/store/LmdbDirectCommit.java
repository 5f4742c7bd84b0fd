package datalith.store;

import static datalith.store.LmdbLayout.DB_RECORD;
import static datalith.store.LmdbLayout.F_SUBDATA;
import static datalith.store.LmdbLayout.MD_DEPTH;
import static datalith.store.LmdbLayout.META_END;
import static datalith.store.LmdbLayout.MM_FREE_DB;
import static datalith.store.LmdbLayout.MM_LAST_PG;
import static datalith.store.LmdbLayout.MM_MAIN_DB;
import static datalith.store.LmdbLayout.MM_MAPSIZE;
import static datalith.store.LmdbLayout.MM_TXNID;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.lmdbjava.Dbi.MapResizedException;
import org.lmdbjava.Env;
import org.lmdbjava.Txn;

/**
 * {@link Store#replaceAll} on an {@link LmdbStore}, written as pages rather than through LMDB's
 * B-tree puts: under the writer lock and LMDB's (see below), no other LMDB write transaction
 * open, the source's entries of each sub-database become a fresh B+tree
 * ({@link LmdbTreeWriter}) from the page past the last commit T's last page on, then a fresh
 * main database whose leaf nodes are the sub-databases' records; one new meta page
 * (transaction T + 1, in slot (T + 1) % 2) points at it, and the lock file's shared txnid
 * (MDB_txninfo's mti_txnid, which LMDB's readers and writers read to pick a meta page) makes it
 * the last commit.
 *
 * <p>Atomic: until the meta page is written, nothing refers to the new pages; read
 * transactions begun before keep reading the old trees, whose pages nothing overwrites. The
 * free list is written anew too: its entries as they were (their pages stay free: none is used
 * here), and one more under T + 1 holding the pages of the old trees and of the old free list
 * ({@link LmdbOldPages}), which LMDB's own commits reuse once no reader is older than T + 1, as
 * they would the pages a commit T + 1 freed. When the old trees do not read soundly, the free
 * list is kept as it is and their pages are left unreferenced (leaked). Later calls never reuse
 * free pages: each writes its trees past the last page.
 *
 * <p>Pages kept: a tree whose source reads the last commit's own tree (a staged import's
 * merge of it with its delta, or the old tree alone) takes each of the old leaf pages that the
 * source passes whole as it is, with the overflow pages of its values ({@link LmdbTreeWrites},
 * {@link LmdbTakenPages}): nothing of them is written again, and they are left out of the free
 * list's new entry. Only when the old trees read soundly (else nothing is taken), and the pages
 * taken must all be theirs, else nothing is committed.
 *
 * <p>Durable as the store's commits are, before any process can see it: with the option "sync"
 * and no pause, the new pages are fdatasynced before the meta page is written, and the meta
 * page before the lock file publishes it; through the write-ahead log, a checkpoint holding
 * the meta page is written and fdatasynced between the two (a crash before it is whole goes
 * back to the previous checkpoint, where LMDB's last published commit was), and pins the
 * commit after the publish. Inside a pause ({@code Store.pauseSync}) or without "sync",
 * nothing is synced here.
 *
 * <p>Writers: the caller holds datalith's writer lock, and this commit holds LMDB's own too (a
 * write transaction, begun first and aborted after the publish, writing nothing), so that
 * processes that know only LMDB's (a datalith from before writer.lock, another program) wait
 * for it rather than write over the new pages or commit T + 1 themselves. When the map must
 * grow, LMDB's lock is let go for the growth and taken again; if another commit came
 * meanwhile, nothing refers to the pages written, and the caller takes the generic way.
 *
 * <p>Checked before anything is written, else the caller falls back to the generic way: the
 * last commit's meta page as {@link LmdbLayout} reads it (pages of the store's size), and the lock
 * file as LMDB 0.9 lays it out on Linux on x86-64 with POSIX robust mutexes of 40 bytes: its magic
 * at 0 and the txnid of the last commit at {@value #LOCK_TXNID}.
 *
 * <p>The lock file is mapped once a store ({@link LockPage}), and its channel kept open until
 * after LMDB's environment closes: the locks LMDB holds on that file (the one that tells a
 * later open it is not the first, whose absence lets {@code LmdbFiles.prepareLock} and LMDB's
 * setup start the file afresh under a live environment, and those of its readers) belong to
 * the process, and closing any descriptor of the file, or an interrupt closing a channel in
 * its I/O, would drop them.
 */
final class LmdbDirectCommit {
  /** mti_txnid's offset: after mti_magic, mti_format (u32) and mti_rmutex (40 bytes). */
  static final int LOCK_TXNID = 48;
  /** The bytes of the lock file mapped: its header (LMDB's MDB_txninfo before the readers). */
  private static final int LOCK_HEADER = 4096;
  private static final VarHandle LONGS =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
  private static final SubDb[] BY_NAME = byName();

  private LmdbDirectCommit() {}

  /** The sub-databases in the main database's key order (unsigned bytes of their names). */
  private static SubDb[] byName() {
    SubDb[] all = SubDb.values().clone();
    Arrays.sort(all, Comparator.comparing(db -> name(db), Arrays::compareUnsigned));
    return all;
  }

  private static byte[] name(SubDb db) {
    return db.name().getBytes(StandardCharsets.US_ASCII);
  }

  /** How the commit reaches the disk. */
  enum Durability {
    /** Nothing synced (no "sync", or a pause). */
    NONE,
    /** Pages fdatasynced, then the meta page written and fdatasynced. */
    LMDB_SYNC,
    /** Pages fdatasynced, the meta page written and fdatasynced, a checkpoint of the log written
     * holding it, then the commit published and pinned. */
    WAL
  }

  /**
   * Replaces every sub-database of the store in directory {@code dir} by {@code source}'s
   * entries in one commit; returns how many of the last commit's pages the new trees took as
   * they are (see "Pages kept" in the class comment), or -1, having committed nothing, when the
   * checks of the class comment fail. The caller holds the writer lock (permit and the
   * directory's lock) and no LMDB write transaction is open.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the files cannot be read or
   *     written, {@code :store/key-size} or {@code :store/order} for a source whose keys are
   *     not 1 to 511 bytes in ascending order, {@code :store/map-full} when the map must grow
   *     and read transactions stay open
   */
  static long commit(Env<ByteBuffer> env, int pageSize, Path dir, String where,
      LmdbMapGrowth map, LmdbWal wal, Durability durability, ReadTxn source, LockPage lockPage) {
    // with it set, a channel's I/O closes it; set again once the commit is done
    boolean[] interrupted = {Thread.interrupted()};
    Txn<ByteBuffer> lmdbWriter = null; // holds LMDB's own write lock; aborted, writes nothing
    try (FileChannel data = FileChannel.open(dir.resolve(LmdbFiles.DATA),
            StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      try {
        lmdbWriter = env.txnWrite();
      } catch (MapResizedException e) {
        return -1; // another process grew the file past the map: the generic way adopts it
      }
      long t = lmdbWriter.getId() - 1;
      ByteBuffer meta = readMeta(data, t, pageSize);
      ByteBuffer lock = lockPage.page;
      if (meta == null || lock == null) {
        return -1;
      }
      if (lock.getInt(0) != LmdbLayout.META_MAGIC || (long) LONGS.getVolatile(lock, LOCK_TXNID)
          != t) {
        return -1;
      }
      LmdbOldPages.Found old = LmdbOldPages.read(data, meta);
      if (old != null && old.foreign) {
        return -1; // the generic way keeps the sub-databases that are not SubDbs
      }
      LmdbPageSink sink = new LmdbPageSink(data, meta.getLong(MM_LAST_PG) + 1, pageSize);
      // pages of T's trees the new ones keep: only when the free list can be made without them
      LmdbTakenPages taken = old == null ? null : new LmdbTakenPages(t);
      ByteBuffer main;
      ByteBuffer free;
      try {
        main = writeTrees(sink, source, where, taken, interrupted);
        long[] freed = old == null ? null : taken.removeFrom(old.pages);
        if (old != null && freed == null) {
          return -1; // a page taken is not one of T's trees' (cannot be): nothing refers to them
        }
        free = old == null ? null : writeFreeList(sink, old.freeEntries, freed, t + 1, where);
        sink.flush();
      } finally {
        // no write of the sink goes on once this returns or throws (the generic way, or the
        // next commit, writes those pages next)
        interrupted[0] |= sink.settle();
      }
      long pages = sink.next();
      if (pages * pageSize > map.mapSize()) {
        lmdbWriter.close(); // LMDB grows no map while a write transaction is open
        lmdbWriter = null;
        map.growForCommit(map.grownSize(pages * pageSize)); // LMDB refuses a txn past its map
        try {
          lmdbWriter = env.txnWrite();
        } catch (MapResizedException e) {
          return -1;
        }
        if (lmdbWriter.getId() != t + 1) {
          return -1; // a writer of LMDB's lock alone committed meanwhile, maybe over the pages
        }
      }
      if (durability != Durability.NONE) {
        data.force(false);
      }
      long slot = (t + 1) & 1;
      meta.putLong(0, slot).putLong(MM_MAPSIZE, Math.max(meta.getLong(MM_MAPSIZE),
          map.mapSize()));
      meta.put(MM_MAIN_DB + MD_DEPTH, main, MD_DEPTH, DB_RECORD - MD_DEPTH); // pad, flags kept
      if (free != null) {
        meta.put(MM_FREE_DB + MD_DEPTH, free, MD_DEPTH, DB_RECORD - MD_DEPTH);
      }
      meta.putLong(MM_LAST_PG, pages - 1).putLong(MM_TXNID, t + 1);
      write(data, meta.clear(), slot * pageSize);
      if (durability != Durability.NONE) {
        data.force(false);
      }
      if (durability == Durability.WAL) {
        wal.checkpointBeforeDirectCommit(meta.clear(), t + 1); // durable before it is seen
      }
      LONGS.setVolatile(lock, LOCK_TXNID, t + 1); // the commit: readers pick its meta page
      lmdbWriter.close(); // LMDB's next writer, in any process, begins from T + 1
      lmdbWriter = null;
      if (durability == Durability.WAL) {
        wal.pinAfterDirectCommit(t + 1);
      }
      try {
        map.growAheadOfNeed(pages);
      } catch (org.lmdbjava.LmdbException e) {
        // The commit stands; a growth put off now happens when a commit needs the room.
      } catch (InterruptedException e) {
        interrupted[0] = true;
      }
      return taken == null ? 0 : taken.total();
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot write the store's pages: " + e, e);
    } finally {
      if (lmdbWriter != null) {
        lmdbWriter.close();
      }
      if (interrupted[0]) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * LMDB's lock file as a store's direct commits write it: its first page mapped, and the
   * channel that mapped it, which no I/O uses again (so that no interrupt closes it) and which
   * {@link #close} closes after LMDB's environment.
   */
  static final class LockPage {
    private final FileChannel file;
    /** The first page, native order; null when the file is shorter than a page. */
    final ByteBuffer page;

    private LockPage(FileChannel file, ByteBuffer page) {
      this.file = file;
      this.page = page;
    }

    /**
     * Maps the lock file of directory {@code dir}, whose environment is open, on a pooled
     * platform thread that nothing interrupts.
     *
     * @throws clojure.lang.ExceptionInfo {@code :store/io} when it cannot be opened or mapped
     */
    static LockPage map(Path dir, String where) {
      return PlatformThreads.apart(() -> {
        FileChannel f = null;
        try {
          f = FileChannel.open(dir.resolve(LmdbFiles.LOCK),
              StandardOpenOption.READ, StandardOpenOption.WRITE);
          MappedByteBuffer page = f.size() < LOCK_HEADER ? null
              : f.map(FileChannel.MapMode.READ_WRITE, 0, LOCK_HEADER);
          return new LockPage(f, page == null ? null : page.order(ByteOrder.nativeOrder()));
        } catch (IOException e) {
          if (f != null) { // nothing mapped: no lock can be dropped that this kept
            try {
              f.close();
            } catch (IOException again) {
              e.addSuppressed(again);
            }
          }
          throw Errors.error(Errors.IO, where, "Cannot map LMDB's lock file: " + e, e);
        }
      });
    }

    /** Closes the channel: only once LMDB's environment is closed. */
    void close() throws IOException {
      file.close();
    }
  }

  /**
   * The first {@link LmdbLayout#META_END} bytes of the meta page of transaction {@code t} (in
   * slot t % 2), native order; null when it does not read as LMDB's of pages of
   * {@code pageSize} bytes.
   */
  static ByteBuffer readMeta(FileChannel data, long t, int pageSize) throws IOException {
    ByteBuffer meta = ByteBuffer.allocate(META_END).order(ByteOrder.nativeOrder());
    long at = (t & 1) * pageSize;
    while (meta.hasRemaining() && data.read(meta, at + meta.position()) > 0) {
      // reads the meta page's fields
    }
    boolean sound = !meta.hasRemaining()
        && meta.getInt(LmdbLayout.MM_MAGIC) == LmdbLayout.META_MAGIC
        && meta.getInt(LmdbLayout.MM_VERSION) == LmdbLayout.META_VERSION
        && meta.getInt(LmdbLayout.MM_PSIZE) == pageSize
        && meta.getLong(MM_TXNID) == t
        && (meta.getShort(LmdbLayout.PAGE_FLAGS) & LmdbLayout.P_META) != 0;
    return sound ? meta : null;
  }

  /**
   * Writes every sub-database's tree ({@link LmdbTreeWrites}: on two threads when the source is
   * a MemStore's), then the main database's; returns the main's record.
   */
  private static ByteBuffer writeTrees(LmdbPageSink sink, ReadTxn source, String where,
      LmdbTakenPages taken, boolean[] interrupted) throws IOException {
    ByteBuffer[] records = LmdbTreeWrites.write(sink, source, where, taken, interrupted);
    LmdbTreeWriter mainTree = new LmdbTreeWriter(sink, F_SUBDATA, false, where);
    for (SubDb db : BY_NAME) {
      mainTree.add(ByteBuffer.wrap(name(db)), records[db.ordinal()]);
    }
    return mainTree.finish();
  }

  /**
   * Writes the free list anew: its entries as they were, {@code entries}, then one under
   * {@code txnid} holding {@code pages}, those the last commit's trees leave behind (descending,
   * after their count); returns its record.
   */
  private static ByteBuffer writeFreeList(LmdbPageSink sink, List<ByteBuffer[]> entries,
      long[] pages, long txnid, String where) throws IOException {
    LmdbTreeWriter tree = new LmdbTreeWriter(sink, 0, true, where);
    for (ByteBuffer[] e : entries) {
      tree.add(e[0], e[1]);
    }
    if (pages.length > 0) {
      ByteBuffer ids = ByteBuffer.allocate(Long.BYTES * (pages.length + 1))
          .order(ByteOrder.nativeOrder());
      ids.putLong(pages.length);
      for (long n : pages) {
        ids.putLong(n);
      }
      tree.add(ByteBuffer.allocate(Long.BYTES).order(ByteOrder.nativeOrder()).putLong(0, txnid),
          ids.flip());
    }
    return tree.finish();
  }

  private static void write(FileChannel f, ByteBuffer b, long at) throws IOException {
    while (b.hasRemaining()) {
      at += f.write(b, at);
    }
  }
}
