package datalith.store;

import clojure.lang.Keyword;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.lmdbjava.Dbi;
import org.lmdbjava.Dbi.MapResizedException;
import org.lmdbjava.Env;
import org.lmdbjava.LmdbException;
import org.lmdbjava.Txn;

/**
 * The durable {@link Store}: one LMDB environment per directory, one named sub-database per
 * {@link SubDb} (named after the constant).
 *
 * <p>Reads are zero-copy: buffers returned by read transactions and cursors are read-only views
 * into LMDB's memory map, valid while the transaction is open (a cursor's until it moves). Read
 * transactions are pooled (reset, then renewed) together with their cursors, so opening one,
 * reading and closing it allocates two small handles.
 *
 * <p>A write transaction ({@link LmdbWrite}) buffers its writes (copying the caller's buffers)
 * and applies them in one LMDB write transaction at {@link WriteTxn#commit()}. When LMDB reports
 * its map full, the commit aborts, grows the map and replays the writes; the map also grows ahead
 * of need, once it is half used, whenever no read transaction is open ({@link LmdbMapGrowth}).
 *
 * <p>Resizing the map needs a moment with no read transaction open in this process: new read
 * transactions wait for it (briefly; a thread that already holds one never waits) while the open
 * ones finish. Read transactions that can never finish first, because their thread is the one
 * committing or is waiting in {@link #beginWrite()} ({@link LmdbReadParking}), are closed by
 * the commit that must grow: later use throws {@link IllegalStateException}. So read what you need before
 * {@code commit()}, and begin reads after {@code beginWrite()} returns. A commit fails with
 * {@code :store/map-full} only when other read transactions stay open for 30 seconds.
 *
 * <p>Opening a directory is {@link LmdbOpen}'s job, its options checked by
 * {@link LmdbOptions}.
 *
 * <p>Several processes may open one directory, as LMDB allows: readers anywhere, one write
 * transaction at a time in all of them. {@link #beginWrite()} takes the directory's writer lock
 * ({@code writer.lock}, an advisory lock of the operating system that ends with its process)
 * and holds it until the write transaction closes, so a transaction that reads after
 * {@code beginWrite()} returns reads the last commit of any process and nothing else commits
 * before it. When another process has grown the map and filled the file past this process's
 * map, a new read transaction grows this process's map to take it in (LMDB's
 * {@code MDB_MAP_RESIZED}), waiting like any growth for this process's read transactions to
 * finish; a thread that holds a read transaction already cannot wait for that, and gets
 * {@code :store/map-resized}. The writer lock is {@link LmdbWriterLock}, its file kept open
 * until the close with LMDB's lock file ({@link LmdbLockFiles}); read transactions are pooled in
 * {@link LmdbReaderPool}.
 *
 * <p>Durability: by default (option {@code "commit"} {@code "wal"}) LMDB runs with MDB_NOSYNC
 * and a commit is durable once its record is fdatasynced in the write-ahead log
 * ({@link LmdbWal}), before LMDB's commit makes it visible; checkpoints sync the map and pin the
 * synced commit, and an open that is alone on the directory recovers from the log
 * ({@link LmdbWalRecovery}). {@code "lmdb-sync"} leaves each commit's sync to LMDB. With
 * {@code "write-behind"}, commits durable in the log are laid in memory over LMDB's last
 * commit and written into LMDB in batches ({@link LmdbBehind}).
 *
 * <p>Thread-safe. Each transaction is used by one thread at a time.
 */
public final class LmdbStore implements Store {

  /** Default initial map size: 64 MiB. */
  public static final long DEFAULT_MAP_SIZE = 64L << 20;

  /** The default of the option "commit". */
  static final String DEFAULT_COMMIT = "wal";

  /** Default maximum number of read transactions open at once. */
  public static final int DEFAULT_MAX_READERS = 1024;
  /**
   * The most readers a store may be opened for: LMDB's lock file holds a 64-byte slot for each,
   * written out in full before LMDB maps it (so 4 MiB here), and a larger count is a mistake
   * that would fill the disk.
   */
  public static final int MAX_MAX_READERS = 65_536;

  /** The system property that sets the default of the option "write-behind" (true). */
  public static final String WRITE_BEHIND_PROPERTY = "datalith.write-behind";

  /** The system property that sets the default of the option "commit". */
  public static final String COMMIT_PROPERTY = "datalith.commit";

  /** The system property that sets the default of the option "page-reader". */
  public static final String PAGE_READER_PROPERTY = "datalith.page-reader";

  private static final long GROW_WAIT_S = 30; // longest wait of a reader for another's growth
  private static final int OPEN = 0;
  private static final int CLOSING = 1;
  private static final int CLOSED = 2;

  // LMDB forbids opening one environment twice in a process: closing either breaks its locks.

  private final Path dir; // real path
  private final String where; // the directory, for messages
  private final boolean sync;
  private final Env<ByteBuffer> env;
  private final List<Dbi<ByteBuffer>> dbis; // by SubDb ordinal
  private final int pageSize;
  private final long envAddress; // of LMDB's MDB_env, 0 when unknown
  /** Whether reads read the pages in Java and commits fill pages (option "page-reader"). */
  final boolean javaPages;
  private final Path dataFile;
  private volatile long filePages; // whole pages in the data file, as last seen

  /** The read transactions each thread holds, parked while it waits to write. */
  final LmdbReadParking reads = new LmdbReadParking();
  private final LmdbWriterLock writer;
  private final LmdbLockFiles lockFiles; // writer.lock's and LMDB's, closed after the environment
  private final LmdbMapGrowth map;
  private final LmdbReaderPool readers;
  private final WriteLog log = new WriteLog(); // the open write transaction's writes
  final LmdbWal wal; // null unless the option "commit" is "wal" and "sync" true
  private final LmdbWalRecovery.OpenLock openLock; // held shared while open
  LmdbBehind behind; // null unless the option "write-behind" is true; set by the open
  private int replayed; // commits the open replayed from the log
  private volatile boolean syncPaused; // LMDB's own sync paused (LmdbSyncPause), no log
  private volatile int directReplaces; // replaceAll calls that wrote their trees as pages
  private volatile long takenPages; // pages of old trees those calls kept as they were
  private volatile int state = OPEN;
  final LmdbPagesCheck pages; // of the pages LMDB's writes read, before the first

  LmdbStore(Path dir, String where, boolean sync, Env<ByteBuffer> env,
      List<Dbi<ByteBuffer>> dbis, boolean javaPages, boolean walCommits,
      LmdbWalRecovery.OpenLock openLock) {
    this.dir = dir;
    this.where = where;
    this.sync = sync;
    this.env = env;
    this.dbis = dbis;
    this.pageSize = env.stat().pageSize;
    this.envAddress = LmdbPointers.env(env);
    this.javaPages = javaPages;
    this.dataFile = dir.resolve(LmdbFiles.DATA);
    this.filePages = refreshFilePages();
    this.writer = new LmdbWriterLock(dir, where);
    this.lockFiles = new LmdbLockFiles(dir, where, writer);
    this.map = new LmdbMapGrowth(env, pageSize, envAddress, where, writer, reads);
    this.readers = new LmdbReaderPool(this, env, dbis);
    this.openLock = openLock;
    this.wal = walCommits ? new LmdbWal(env, dir, where) : null;
    this.pages = new LmdbPagesCheck(this, dataFile, where);
  }

  /** The map's address, or 0 (see {@link LmdbMapGrowth#mapAddress()}). */
  long mapAddress() {
    return map.mapAddress();
  }

  long envAddress() {
    return envAddress;
  }

  /** The whole pages in the data file, as last seen: commits only ever add to them. */
  long filePages() {
    return filePages;
  }

  /** The whole pages in the data file now. */
  long refreshFilePages() {
    try {
      long n = Files.size(dataFile) / pageSize;
      filePages = n;
      return n;
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot read the size of " + LmdbFiles.DATA, e);
    }
  }

  long mapSize() {
    return map.mapSize();
  }

  int pageSize() {
    return pageSize;
  }

  /**
   * Opens (creating if needed) the store in directory {@code dir}. Options, all optional:
   * {@code "map-size"} (Number, initial map size in bytes, default 64 MiB; the map grows by
   * itself), {@code "sync"} (Boolean, default true: each commit is on disk before
   * {@code commit()} returns; false uses MDB_NOSYNC for bulk loads: an operating system crash
   * may then lose the last commits, and on a file system that does not keep the order of writes,
   * damage the store), {@code "max-readers"} (a whole number from 1 to
   * {@value #MAX_MAX_READERS}, default 1024), {@code "page-reader"} ({@code "java"}, the
   * default, or {@code "lmdb"}: whether reads read LMDB's pages in Java, and commits fill pages,
   * or every read and write is LMDB's own; the system property
   * {@value #PAGE_READER_PROPERTY} sets the default), {@code "commit"} ({@code "wal"} or
   * {@code "lmdb-sync"}: how a durable commit gets to disk, through the write-ahead log
   * ({@link LmdbWal}: one fdatasync of one record) or by LMDB's own sync of its pages; the
   * system property {@value #COMMIT_PROPERTY} sets the default, {@value #DEFAULT_COMMIT}
   * otherwise; ignored when "sync" is false), {@code "write-behind"} (Boolean, default true:
   * with "commit" {@code "wal"}, a commit durable in the log is laid in memory over LMDB's last
   * commit and written into LMDB later, many at once, by a thread of the store, while the store
   * is the only one open on the directory: opened beside another process, it commits into LMDB
   * directly, and another process's open makes it write every commit back and do so too, until
   * it is alone again (see {@link LmdbBehind}); the system property
   * {@value #WRITE_BEHIND_PROPERTY} sets the default),
   * {@code "write-back-commits"} (with write-behind, how many commits start a write-back at
   * the latest, from 1 to 2^20, default {@value LmdbBehind#WRITE_BACK_COMMITS}),
   * {@code "write-back-ms"} (with write-behind, how many milliseconds after a commit its
   * write-back starts at the latest, from 1 to 3600000, default
   * {@value LmdbBehind#WRITE_BACK_MS}). Other keys are ignored.
   *
   * <p>An open that is the only one on the directory first recovers what the log holds (see
   * {@link LmdbWalRecovery}), whichever "commit" it asks for.
   *
   * <p>Before LMDB maps the files, the data file's meta pages are read and checked against its
   * size, and the lock file is written to its full size (see {@link LmdbFiles}); the files are
   * left as they were when that fails, and a data file created by a failed open is removed.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when the data file is empty, not
   *     LMDB's, has a damaged meta page or is shorter than its last commit; {@code :store/io}
   *     when a file cannot be read or written (a full disk); {@code :store/lmdb} when LMDB
   *     cannot open the directory or this process has it open already; {@code :store/option}
   *     for an option of the wrong type or value
   */
  public static LmdbStore open(Path dir, Map<String, Object> opts) {
    return LmdbOpen.open(dir, opts);
  }

  /**
   * Replays the commits of {@code plan} (null: none) after the open wrote the log's checkpoint
   * back; then, when this process is alone on the directory, takes a checkpoint (commits through
   * the log), or retires the log (commits without it).
   */
  void recover(LmdbWalRecovery.Plan plan, boolean alone) {
    // While the records replay (unsynced: MDB_NOSYNC, or LMDB's sync after the log's commit
    // records), a read transaction pins the checkpoint X that the open wrote back, as the
    // writer's pin did: LMDB reuses none of X's pages, so that a crash before the checkpoint
    // below finds X whole, to go back to again.
    Txn<ByteBuffer> pin = plan == null ? null : env.txnRead();
    try {
      if (plan != null) {
        for (LmdbWalRecovery.Commit c : plan.commits) {
          replay(c);
        }
      }
      if (alone) {
        runLocked(wal != null ? wal::checkpoint : () -> LmdbWalRecovery.retire(dir, env, where));
      }
    } finally {
      if (pin != null) {
        pin.close();
      }
    }
  }

  /**
   * Commits one record of the log again, without writing it to the log: LMDB's next commit
   * (whose txnid is the record's own, unless a write-back left the record after a checkpoint),
   * or none when the record changes nothing (a write-behind commit of deletes of absent keys).
   */
  private void replay(LmdbWalRecovery.Commit c) {
    long before = lastTxnid();
    try (LmdbWrite w = unloggedWrite()) {
      if (!log.copyFrom(c.payload)) {
        throw Errors.error(Errors.CORRUPT, where, "The write-ahead log's record of transaction "
            + c.txnid + " does not parse", null, Keyword.intern("txnid"), c.txnid);
      }
      w.commit();
    }
    long now = lastTxnid();
    if (now != before + 1 && now != before) {
      throw Errors.error(Errors.CORRUPT, where, "Replaying the write-ahead log's transaction "
          + c.txnid + " made LMDB's transaction " + now + " after " + before, null,
          Keyword.intern("txnid"), c.txnid);
    }
    replayed++;
  }

  /**
   * A write transaction whose commit writes no record to the log, whose writes are there
   * already (a record replayed at open, a write-behind layer written back), holding the writer
   * permit and the directory's writer lock until closed.
   */
  LmdbWrite unloggedWrite() {
    reads.acquireParked(writer);
    FileLock lock = writer.lockDirectory();
    log.clear();
    return new LmdbWrite(env, dbis, log, map, writer, lock, envAddress, pageSize, javaPages,
        where, null, pages::beforeWrites);
  }

  /** Syncs LMDB's file, after a write-back ({@link LmdbBehind}). */
  void syncMap() {
    try {
      env.sync(true);
    } catch (LmdbException e) {
      throw failure("Cannot sync the store after a write-back", e);
    }
  }

  /**
   * The commits that opening this store replayed from the write-ahead log (0 after a clean
   * close).
   */
  public int replayedAtOpen() {
    return replayed;
  }

  /**
   * The background flushes of the data file that this store's commits began ahead of the
   * write-ahead log's checkpoints (0 without the log): for the tests.
   */
  public long flushesAhead() {
    return wal == null ? 0 : wal.flushesAhead();
  }

  /** LMDB's last commit. */
  long lastTxnid() {
    return env.info().lastTransactionId;
  }

  /** Takes the log's checkpoint when this process does not own it ({@link LmdbWal#own}). */
  void ownLog() {
    runLocked(wal::own);
  }

  /**
   * Whether this store's commits are laid in memory over LMDB's file (the option
   * "write-behind", while the store is alone on its directory: from the open, or from when the
   * other processes that had it open closed it).
   */
  public boolean writingBehind() {
    return behind != null && behind.layering();
  }

  /** The write-backs of write-behind since the open (0 without it): for the tests. */
  public long writeBacks() {
    return behind == null ? 0 : behind.writeBacks();
  }

  /** Writes every commit back into LMDB's file, with write-behind; else nothing. */
  public void writeBehindCatchUp() {
    if (behind != null) {
      behind.drained(() -> null);
    }
  }

  /** Runs {@code job} holding the writer permit and the directory's writer lock. */
  private void runLocked(Runnable job) {
    reads.acquireParked(writer);
    FileLock lock = writer.lockDirectory();
    try {
      job.run();
    } finally {
      writer.unlock(lock);
    }
  }

  /** Releases what the constructor took, when the open fails after it. */
  void closeAfterFailedOpen() {
    if (wal != null) {
      wal.close(false);
    }
    readers.disposeAll();
    env.close();
    writer.drain();
    lockFiles.close();
  }

  String where() {
    return where;
  }

  Env<ByteBuffer> env() { // for LmdbBackup
    return env;
  }

  RuntimeException failure(String what, LmdbException e) {
    return Errors.lmdb(where, what, e);
  }

  private void checkOpen() {
    if (state != OPEN) {
      throw Errors.closed(where, "The store");
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Waits only while the map is being resized (at most briefly, and never when this thread
   * already holds a read transaction), or while it must grow to take in what another process
   * wrote (until this process's read transactions finish, at most 30 seconds).
   *
   * @throws IllegalStateException when the store is closed
   * @throws clojure.lang.ExceptionInfo {@code :store/lmdb}, e.g. when more than "max-readers"
   *     read transactions are open; {@code :store/map-resized} when another process filled the
   *     file past this process's map while this thread holds a read transaction, or while other
   *     threads' read transactions stay open for 30 seconds
   */
  @Override
  public ReadTxn beginRead() {
    checkOpen();
    return behind != null ? behind.beginRead() : beginLmdbRead();
  }

  /** A read transaction of LMDB's last commit (with write-behind, under the layers). */
  ReadTxn beginLmdbRead() {
    checkOpen();
    LmdbReadTxn.Opened opened = reads.opened();
    long deadline = 0;
    while (true) {
      long stamp = map.lockShared(opened.count() > 0);
      if (stamp == 0) {
        throw Errors.closed(where, "The store"); // closing: the close waits for open reads
      }
      try {
        checkOpen();
        LmdbReadTxn txn = new LmdbReadTxn(this, readers.take(), stamp, opened);
        opened.add(txn);
        return txn;
      } catch (MapResizedException e) {
        long needed = map.dataSize(); // the shared map lock keeps the map in place
        map.unlockShared(stamp);
        if (deadline == 0) {
          deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(GROW_WAIT_S);
        }
        adoptGrownMap(opened, needed, deadline);
      } catch (LmdbException e) {
        map.unlockShared(stamp);
        throw failure("Cannot begin a read transaction", e);
      } catch (RuntimeException e) {
        map.unlockShared(stamp);
        throw e;
      }
    }
  }

  /**
   * Another process filled the file to {@code needed} bytes, past this process's map: asks for
   * the growth that takes it in, which the caller's next {@link LmdbMapGrowth#lockShared} helps
   * along.
   */
  private void adoptGrownMap(LmdbReadTxn.Opened opened, long needed, long deadline) {
    if (opened.count() > 0) {
      throw Errors.error(Errors.MAP_RESIZED, where, "Another process filled the store past this"
          + " process's map (" + map.mapSize() + " bytes), which cannot grow while this thread"
          + " holds a read transaction: close it and read again", null,
          Keyword.intern("map-size"), map.mapSize(), Keyword.intern("needed"), needed);
    }
    if (System.nanoTime() - deadline > 0) {
      throw Errors.error(Errors.MAP_RESIZED, where, "Another process filled the store past this"
          + " process's map (" + map.mapSize() + " bytes), which cannot grow while read"
          + " transactions stay open (waited " + GROW_WAIT_S + " s)", null,
          Keyword.intern("map-size"), map.mapSize(), Keyword.intern("needed"), needed);
    }
    map.request(map.grownSize(needed));
  }

  /** Ends a read transaction: called once by its handle. */
  void release(LmdbReadTxn txn, LmdbReader reader, long stamp, LmdbReadTxn.Opened opened) {
    try {
      readers.end(reader);
    } catch (LmdbException e) {
      throw failure("Cannot end a read transaction", e);
    } finally {
      opened.remove(txn);
      map.unlockShared(stamp);
    }
    map.maybeGrow();
  }

  /**
   * {@inheritDoc}
   *
   * <p>Also waits for the write transaction of any other process on this directory: the one
   * returned holds the directory's writer lock until it closes.
   *
   * @throws IllegalStateException when the store is closed, or when this thread already holds
   *     the open write transaction (waiting would never end)
   * @throws clojure.lang.ExceptionInfo {@code :store/lmdb} when the writer lock file cannot be
   *     opened or locked
   */
  @Override
  public WriteTxn beginWrite() {
    checkOpen();
    if (behind == null) {
      pages.beforeWrites();
    } else {
      pages.beforeLaying();
    }
    return behind != null ? behind.beginWrite() : beginLmdbWrite();
  }

  /** A write transaction of LMDB's own, through the log (with write-behind: during a pause). */
  WriteTxn beginLmdbWrite() {
    FileLock lock = lockWriter();
    log.clear();
    return new LmdbWrite(env, dbis, log, map, writer, lock, envAddress, pageSize, javaPages,
        where, wal, pages::beforeWrites);
  }

  /**
   * Takes the writer lock as every write does: this process's writer (parking this thread's
   * read transactions meanwhile, which a commit growing the map may close), the directory's
   * lock file, then the write-ahead log's ownership (or the log retired, without it).
   * Returns the lock file's lock, for {@link LmdbWriterLock#unlock}.
   */
  private FileLock lockWriter() {
    checkOpen();
    if (writer.heldByCurrentThread()) {
      throw new IllegalStateException(
          "This thread already holds the write transaction (" + where + ")");
    }
    reads.acquireParked(writer);
    if (state != OPEN) {
      writer.release();
      throw Errors.closed(where, "The store");
    }
    FileLock lock = writer.lockDirectory();
    try {
      if (wal != null) {
        wal.own();
      } else {
        LmdbWalRecovery.retire(dir, env, where);
      }
    } catch (RuntimeException e) {
      writer.unlock(lock);
      throw e;
    }
    return lock;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Writes the new trees directly as pages, in key order, and commits them with one meta
   * page ({@link LmdbDirectCommit}); durable as a commit is (see {@link #pauseSync}). The old
   * trees' pages go to the free list, for later commits (this one writes past the last page).
   * Falls back to the generic way (deletes and puts through a write transaction) when
   * LMDB's files do not read as {@link LmdbLayout} says, or its
   * main database holds sub-databases that are not {@link SubDb}s. Waits for the writer lock as
   * {@link #beginWrite()} does; may close this thread's read transactions to grow the map, as a
   * commit does. Read transactions begun before it keep reading the old contents.
   *
   * @throws IllegalStateException when the store is closed, or this thread holds the write
   *     transaction
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the files cannot be written,
   *     {@code :store/key-size} or {@code :store/order} for a source whose keys are not 1 to 511
   *     bytes in ascending order (nothing is then committed), {@code :store/map-full} when the
   *     map must grow and other read transactions stay open for 30 seconds; {@code :store/io}
   *     also when the log's checkpoint after the commit fails: the commit is then visible, and
   *     durable once the next write takes the checkpoint
   */
  @Override
  public void replaceAll(ReadTxn source) {
    if (behind != null) {
      behind.replaceAll(() -> replaceLmdb(source));
    } else {
      replaceLmdb(source);
    }
  }

  private void replaceLmdb(ReadTxn source) {
    if (directCommit(source)) {
      return;
    }
    if (behind == null) {
      Store.super.replaceAll(source);
      return;
    }
    // inside the write-behind's drained hold of its commits, which its own write transaction
    // would wait for (and refused to: this thread holds it): one of LMDB's own, as a pause's
    try (WriteTxn w = beginLmdbWrite()) {
      Store.replaceAll(this, w, source);
    }
  }

  /**
   * The {@link #replaceAll} calls since the open that wrote their trees directly as pages
   * rather than falling back to the generic way.
   */
  public int directReplaces() {
    return directReplaces;
  }

  /**
   * How many pages of the trees they replaced the {@link #directReplaces} since the open kept as
   * they were: leaf pages their source passed whole, and those pages' overflow pages.
   */
  public long takenPages() {
    return takenPages;
  }

  private boolean directCommit(ReadTxn source) {
    FileLock lock = lockWriter();
    try {
      LmdbDirectCommit.Durability durability = !sync || syncPaused
          ? LmdbDirectCommit.Durability.NONE
          : wal == null ? LmdbDirectCommit.Durability.LMDB_SYNC
          : wal.paused() ? LmdbDirectCommit.Durability.NONE
          : LmdbDirectCommit.Durability.WAL;
      LmdbDirectCommit.LockPage lockPage = lockFiles.lmdbLock(); // kept until the close
      long taken = PlatformThreads.call(() ->
          LmdbDirectCommit.commit(env, pageSize, dir, where, map, wal, durability, source,
              lockPage));
      if (taken < 0) {
        return false;
      }
      directReplaces++; // under the writer lock
      takenPages += taken;
      return true;
    } finally {
      writer.unlock(lock);
      map.maybeGrow();
    }
  }

  /**
   * How {@code db} lies in the file, from its tree's record, as of LMDB's last commit (with
   * write-behind, the commits not yet written back are not in it):
   * {@code :entries}, {@code :depth}, {@code :leaf-pages}, {@code :branch-pages} and
   * {@code :overflow-pages}.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when the record is damaged
   */
  public Map<Keyword, Long> pageStats(SubDb db) {
    try (LmdbReadTxn r = (LmdbReadTxn) beginLmdbRead()) {
      return r.stats(db, dbis);
    }
  }

  /**
   * What is wrong with the last commit's pages and how it accounts for them, or null when
   * nothing is (see {@link LmdbPagesCheck#problem}).
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the file cannot be read
   */
  public String pageAccountingProblem() {
    return pages.problem();
  }

  @Override
  public String directory() {
    return dir.toString();
  }

  @Override
  public boolean durable() {
    return sync;
  }

  /** {@inheritDoc} Sets LMDB's MDB_NOSYNC on the environment; ends with mdb_env_sync. */
  @Override
  public SyncPause pauseSync() {
    return behind != null ? behind.pauseSync(this::pauseLmdb) : pauseLmdb();
  }

  private SyncPause pauseLmdb() {
    if (wal == null) {
      if (!sync) {
        return () -> {};
      }
      Store.SyncPause pause = LmdbSyncPause.begin(env, where);
      if (!(pause instanceof LmdbSyncPause)) {
        return pause; // commits stay durable
      }
      syncPaused = true;
      return () -> {
        try {
          pause.close();
        } finally {
          syncPaused = false;
        }
      };
    }
    checkOpen();
    runLocked(wal::pause);
    return new SyncPause() {
      private boolean closed;

      @Override
      public void close() {
        if (!closed) {
          closed = true;
          runLocked(wal::resume);
        }
      }
    };
  }

  /**
   * {@inheritDoc}
   *
   * <p>Waits for the open write transaction and the open read transactions of other threads to
   * close; new ones are refused from the start. Idempotent.
   *
   * @throws IllegalStateException when this thread holds an open transaction of this store
   */
  @Override
  public void close() {
    int held = reads.opened().count();
    if (held > 0 || writer.heldByCurrentThread() || behind != null && behind.writing()) {
      throw new IllegalStateException("Cannot close the store while this thread holds "
          + (held > 0 ? held + " open read transaction(s)" : "the write transaction")
          + " (" + where + ")");
    }
    synchronized (this) {
      if (state != OPEN) {
        return;
      }
      state = CLOSING;
    }
    boolean caughtUp = behind == null || behind.close(); // before the map stops growing
    map.close();
    writer.drain();
    RuntimeException checkpoint = null;
    if (wal != null) {
      try {
        runLocked(() -> wal.close(caughtUp)); // a clean reopen replays nothing
      } catch (RuntimeException e) {
        checkpoint = e; // the records stay in the log: the next open replays them
        wal.close(false);
      }
    }
    long stamp = map.lockForClose(); // every read transaction is closed
    try {
      readers.disposeAll();
      env.close();
    } catch (LmdbException e) {
      throw failure("Cannot close the LMDB store", e);
    } finally {
      lockFiles.close(); // before the directory is free for another open of this process
      openLock.close();
      LmdbOpen.OPEN_DIRS.remove(dir);
      state = CLOSED;
      map.unlockAfterClose(stamp);
    }
    if (checkpoint != null) {
      throw checkpoint;
    }
  }
}
