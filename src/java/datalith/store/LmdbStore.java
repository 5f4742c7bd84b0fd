package datalith.store;

import clojure.lang.Keyword;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.FileLockInterruptionException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.StampedLock;
import org.lmdbjava.Dbi;
import org.lmdbjava.Dbi.MapResizedException;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.EnvInfo;
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
 * <p>A write transaction buffers its writes (copying the caller's buffers) and applies them in one
 * LMDB write transaction at {@link WriteTxn#commit()}. When LMDB reports its map full, the
 * commit aborts, grows the map and replays the writes; the map also grows ahead of need, once it
 * is half used, whenever no read transaction is open.
 *
 * <p>Resizing the map needs a moment with no read transaction open in this process: new read
 * transactions wait for it (briefly; a thread that already holds one never waits) while the open
 * ones finish. Read transactions that can never finish first, because their thread is the one
 * committing or is waiting in {@link #beginWrite()}, are closed by the commit that must grow:
 * later use throws {@link IllegalStateException}. So read what you need before
 * {@code commit()}, and begin reads after {@code beginWrite()} returns. A commit fails with
 * {@code :store/map-full} only when other read transactions stay open for 30 seconds.
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
 * {@code :store/map-resized}.
 *
 * <p>Thread-safe. Each transaction is used by one thread at a time.
 */
public final class LmdbStore implements Store {

  /** Default initial map size: 64 MiB. */
  public static final long DEFAULT_MAP_SIZE = 64L << 20;

  /** Default maximum number of read transactions open at once. */
  public static final int DEFAULT_MAX_READERS = 1024;
  /**
   * The most readers a store may be opened for: LMDB's lock file holds a 64-byte slot for each,
   * written out in full before LMDB maps it (so 4 MiB here), and a larger count is a mistake
   * that would fill the disk.
   */
  public static final int MAX_MAX_READERS = 65_536;

  /** The system property that sets the default of the option "page-reader". */
  public static final String PAGE_READER_PROPERTY = "datalith.page-reader";

  private static final long MAP_SIZE_UNIT = 64 << 10; // map sizes are multiples of this
  private static final int POOL_SIZE = 64; // pooled read transactions
  private static final long GATE_WAIT_MS = 100; // longest wait of a new reader for a resize
  private static final long GROW_WAIT_S = 30; // longest wait of a commit for readers to finish
  private static final int OPEN = 0;
  private static final int CLOSING = 1;
  private static final int CLOSED = 2;
  /** The file in the store's directory that the open write transaction of any process locks. */
  static final String WRITER_LOCK = "writer.lock";

  // LMDB forbids opening one environment twice in a process: closing either breaks its locks.
  private static final Set<Path> OPEN_DIRS = ConcurrentHashMap.newKeySet(); // real paths

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

  // Shared while a read transaction is open; exclusive while the map is resized or closed.
  private final StampedLock mapLock = new StampedLock();
  private final Semaphore writer = new Semaphore(1, true); // held by the open write transaction
  private final AtomicReferenceArray<LmdbReader> pool = new AtomicReferenceArray<>(POOL_SIZE);
  private final ThreadLocal<LmdbReadTxn.Opened> openReads =
      ThreadLocal.withInitial(() -> new LmdbReadTxn.Opened(Thread.currentThread()));
  private final Set<LmdbReadTxn.Opened> parked = ConcurrentHashMap.newKeySet(); // in beginWrite
  private final Object gate = new Object(); // notified when a pending growth is done
  private final WriteLog log = new WriteLog(); // the open write transaction's writes
  private FileChannel writerLockFile; // opened by the first write; used under the writer permit
  private volatile int state = OPEN;
  private volatile long growTo; // the map size wanted, 0 when no growth is pending
  private volatile long mapSize;
  private volatile long mapAddress; // where the map starts in this process, 0 until read again
  private volatile Thread writerThread; // the thread that began the open write transaction

  private LmdbStore(Path dir, String where, boolean sync, Env<ByteBuffer> env,
      List<Dbi<ByteBuffer>> dbis, boolean javaPages) {
    this.dir = dir;
    this.where = where;
    this.sync = sync;
    this.env = env;
    this.dbis = dbis;
    this.pageSize = env.stat().pageSize;
    this.mapSize = env.info().mapSize;
    this.envAddress = LmdbPointers.env(env);
    this.javaPages = javaPages;
    this.dataFile = dir.resolve(LmdbFiles.DATA);
    this.filePages = refreshFilePages();
  }

  /**
   * The map's address, read from LMDB's MDB_env (lmdbjava's EnvInfo does not give it), or 0
   * when that does not read as {@link LmdbLayout} says; stable while a read transaction is open,
   * as it holds the map lock.
   */
  long mapAddress() {
    long m = mapAddress;
    if (m == 0) {
      m = LmdbLayout.mapOf(envAddress, pageSize, SubDb.values().length, mapSize);
      mapAddress = m;
    }
    return m;
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
    return mapSize;
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
   * {@value #PAGE_READER_PROPERTY} sets the default). Other keys are ignored.
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
    String where = dir.toAbsolutePath().toString();
    Map<String, Object> options = opts == null ? Collections.emptyMap() : opts;
    long mapSize = roundUp(option(options, "map-size", Number.class, DEFAULT_MAP_SIZE, where)
        .longValue());
    boolean sync = option(options, "sync", Boolean.class, Boolean.TRUE, where);
    Number readers = option(options, "max-readers", Number.class, DEFAULT_MAX_READERS, where);
    if (!(readers instanceof Integer || readers instanceof Long || readers instanceof Short
        || readers instanceof Byte) || readers.longValue() < 1
        || readers.longValue() > MAX_MAX_READERS) {
      throw Errors.error(Errors.OPTION, where, "Option \"max-readers\" must be a whole number"
          + " from 1 to " + MAX_MAX_READERS + ", got " + readers, null,
          Keyword.intern("option"), "max-readers", Keyword.intern("value"), readers);
    }
    int maxReaders = readers.intValue();
    String reader = option(options, "page-reader", String.class,
        System.getProperty(PAGE_READER_PROPERTY, "java"), where);
    if (!reader.equals("java") && !reader.equals("lmdb")) {
      throw Errors.error(Errors.OPTION, where,
          "Option \"page-reader\" must be \"java\" or \"lmdb\", got \"" + reader + "\"", null,
          Keyword.intern("option"), "page-reader", Keyword.intern("value"), reader);
    }
    Path real;
    try {
      real = Files.createDirectories(dir).toRealPath();
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot create the store directory: " + e, e);
    }
    if (!OPEN_DIRS.add(real)) {
      throw Errors.error(Errors.LMDB, where, "The store is already open in this process", null);
    }
    boolean existed;
    boolean lockCreated;
    try {
      // only with the directory ours in this process: the lock file is written while no other
      // process uses it, and closing it must not drop an open environment's locks on it
      existed = LmdbFiles.checkData(real, where);
      lockCreated = LmdbFiles.prepareLock(real, where, maxReaders);
    } catch (RuntimeException e) {
      OPEN_DIRS.remove(real);
      throw e;
    }
    Env<ByteBuffer> env = null;
    try {
      EnvFlags[] flags = sync
          ? new EnvFlags[] {EnvFlags.MDB_NOTLS, EnvFlags.MDB_NORDAHEAD}
          : new EnvFlags[] {EnvFlags.MDB_NOTLS, EnvFlags.MDB_NORDAHEAD, EnvFlags.MDB_NOSYNC};
      env = Env.create(ReadOnlyBufferProxy.INSTANCE)
          .setMapSize(mapSize)
          .setMaxDbs(SubDb.values().length)
          .setMaxReaders(maxReaders)
          .open(dir.toFile(), flags);
      env.readerCheck(); // frees reader slots left by dead processes
      List<Dbi<ByteBuffer>> dbis = new ArrayList<>();
      for (SubDb db : SubDb.values()) {
        dbis.add(env.openDbi(db.name(), DbiFlags.MDB_CREATE));
      }
      return new LmdbStore(real, where, sync, env, List.copyOf(dbis), reader.equals("java"));
    } catch (RuntimeException e) {
      if (env != null) {
        env.close();
      }
      if (!existed && !LmdbFiles.holdsDatabase(real)) {
        deleteQuietly(real.resolve(LmdbFiles.DATA)); // a database never made: as it was
        if (lockCreated) {
          deleteQuietly(real.resolve(LmdbFiles.LOCK));
        }
      }
      OPEN_DIRS.remove(real);
      throw e instanceof LmdbException
          ? Errors.lmdb(where, "Cannot open the LMDB store", (LmdbException) e) : e;
    }
  }

  private static void deleteQuietly(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      // left as it is: the failure being reported names the cause
    }
  }

  private static <T> T option(Map<String, Object> opts, String key, Class<T> type, T otherwise,
      String where) {
    Object value = opts.get(key);
    if (value == null) {
      return otherwise;
    }
    if (!type.isInstance(value)) {
      throw Errors.error(Errors.OPTION, where,
          "Option \"" + key + "\" must be a " + type.getSimpleName() + ", got a "
              + value.getClass().getName(), null, // not the value: it may nest too deep to print
          Keyword.intern("option"), key, Keyword.intern("value"), value);
    }
    return type.cast(value);
  }

  private static long roundUp(long size) {
    return Math.max(MAP_SIZE_UNIT, (size + MAP_SIZE_UNIT - 1) / MAP_SIZE_UNIT * MAP_SIZE_UNIT);
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
    LmdbReadTxn.Opened opened = openReads.get();
    long deadline = 0;
    while (true) {
      long stamp = lockShared(opened.count() > 0);
      try {
        checkOpen();
        LmdbReadTxn txn = new LmdbReadTxn(this, takeReader(), stamp, opened);
        opened.add(txn);
        return txn;
      } catch (MapResizedException e) {
        long needed = dataSize(); // the shared map lock keeps the map in place
        mapLock.unlockRead(stamp);
        if (deadline == 0) {
          deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(GROW_WAIT_S);
        }
        adoptGrownMap(opened, needed, deadline);
      } catch (LmdbException e) {
        mapLock.unlockRead(stamp);
        throw failure("Cannot begin a read transaction", e);
      } catch (RuntimeException e) {
        mapLock.unlockRead(stamp);
        throw e;
      }
    }
  }

  /**
   * Another process filled the file to {@code needed} bytes, past this process's map: asks for
   * the growth that takes it in, which the caller's next {@link #lockShared} helps along.
   */
  private void adoptGrownMap(LmdbReadTxn.Opened opened, long needed, long deadline) {
    if (opened.count() > 0) {
      throw Errors.error(Errors.MAP_RESIZED, where, "Another process filled the store past this"
          + " process's map (" + mapSize + " bytes), which cannot grow while this thread holds a"
          + " read transaction: close it and read again", null,
          Keyword.intern("map-size"), mapSize, Keyword.intern("needed"), needed);
    }
    if (System.nanoTime() - deadline > 0) {
      throw Errors.error(Errors.MAP_RESIZED, where, "Another process filled the store past this"
          + " process's map (" + mapSize + " bytes), which cannot grow while read transactions"
          + " stay open (waited " + GROW_WAIT_S + " s)", null,
          Keyword.intern("map-size"), mapSize, Keyword.intern("needed"), needed);
    }
    requestGrowth(grownSize(needed));
  }

  /** The bytes the last commit of any process uses (from the newest meta page). */
  private long dataSize() {
    return (env.info().lastPageNumber + 1) * pageSize;
  }

  /** The map size after growth for {@code needed} bytes: the current one doubled until they fit. */
  private long grownSize(long needed) {
    long size = 2 * mapSize;
    while (size < needed) {
      size *= 2;
    }
    return size;
  }

  private long lockShared(boolean nested) {
    long stamp = mapLock.tryReadLock(); // fails only while a resize or close runs
    if (stamp != 0 && (growTo == 0 || nested)) {
      return stamp;
    }
    if (stamp != 0) {
      mapLock.unlockRead(stamp); // let the open readers drain so that the map can grow
    }
    maybeGrow();
    awaitGrowth();
    return mapLock.readLock();
  }

  private void awaitGrowth() {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(GATE_WAIT_MS);
    synchronized (gate) {
      long left;
      while (growTo != 0 && state == OPEN && (left = deadline - System.nanoTime()) > 0) {
        try {
          TimeUnit.NANOSECONDS.timedWait(gate, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  private int home() {
    return Thread.currentThread().hashCode() & (POOL_SIZE - 1);
  }

  private LmdbReader takeReader() {
    int home = home();
    for (int i = 0; i < POOL_SIZE; i++) {
      int at = (home + i) & (POOL_SIZE - 1);
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
    return new LmdbReader(this, env.txnRead(), dbis);
  }

  /** Ends a read transaction: called once by its handle. */
  void release(LmdbReadTxn txn, LmdbReader reader, long stamp, LmdbReadTxn.Opened opened) {
    try {
      reader.reset();
      if (!giveBack(reader)) {
        reader.dispose();
      }
    } catch (LmdbException e) {
      throw failure("Cannot end a read transaction", e);
    } finally {
      opened.remove(txn);
      mapLock.unlockRead(stamp);
    }
    maybeGrow();
  }

  private boolean giveBack(LmdbReader reader) {
    int home = home();
    for (int i = 0; i < POOL_SIZE; i++) {
      int at = (home + i) & (POOL_SIZE - 1);
      if (pool.get(at) == null && pool.compareAndSet(at, null, reader)) {
        return true;
      }
    }
    return false;
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
    if (writerThread == Thread.currentThread()) {
      throw new IllegalStateException(
          "This thread already holds the write transaction (" + where + ")");
    }
    LmdbReadTxn.Opened opened = openReads.get();
    if (opened.count() > 0) {
      parked.add(opened); // its reads may be closed by a commit that must grow the map
    }
    try {
      writer.acquireUninterruptibly();
    } finally {
      parked.remove(opened);
    }
    if (state != OPEN) {
      writer.release();
      throw Errors.closed(where, "The store");
    }
    FileLock lock;
    try {
      lock = lockWriters();
    } catch (RuntimeException e) {
      writer.release();
      throw e;
    }
    writerThread = Thread.currentThread();
    log.clear();
    return new Write(lock);
  }

  /**
   * Takes the directory's writer lock, waiting for another process's write transaction to end.
   * Caller holds the writer permit. Not interruptible: an interrupt closes a channel blocked in
   * {@link FileChannel#lock()}, so one that comes meanwhile reopens it, and is kept for later.
   */
  private FileLock lockWriters() {
    boolean interrupted = Thread.interrupted(); // with the flag set, lock() would close the channel
    try {
      while (true) {
        try {
          if (writerLockFile == null || !writerLockFile.isOpen()) {
            writerLockFile = FileChannel.open(dir.resolve(WRITER_LOCK),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE);
          }
          return writerLockFile.lock();
        } catch (FileLockInterruptionException | ClosedByInterruptException e) {
          interrupted |= Thread.interrupted(); // the channel is closed: reopen it
        } catch (IOException e) {
          throw Errors.error(Errors.LMDB, where,
              "Cannot lock " + dir.resolve(WRITER_LOCK) + ": " + e.getMessage(), e);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * How {@code db} lies in the file, from its tree's record, as of the last commit:
   * {@code :entries}, {@code :depth}, {@code :leaf-pages}, {@code :branch-pages} and
   * {@code :overflow-pages}.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when the record is damaged
   */
  public Map<Keyword, Long> pageStats(SubDb db) {
    try (LmdbReadTxn r = (LmdbReadTxn) beginRead()) {
      return r.stats(db, dbis);
    }
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
    return sync ? LmdbSyncPause.begin(env, where) : () -> {};
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
    int held = openReads.get().count();
    if (held > 0 || writerThread == Thread.currentThread()) {
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
    synchronized (gate) {
      gate.notifyAll();
    }
    writer.acquireUninterruptibly(); // the open write transaction is done
    FileChannel lockFile = writerLockFile; // no write uses it now or later
    writer.release(); // beginWrite callers queued behind us now see CLOSING
    long stamp = mapLock.writeLock(); // every read transaction is closed
    try {
      for (int i = 0; i < POOL_SIZE; i++) {
        LmdbReader reader = pool.getAndSet(i, null);
        if (reader != null) {
          reader.dispose();
        }
      }
      env.close();
      if (lockFile != null) {
        lockFile.close();
      }
    } catch (LmdbException e) {
      throw failure("Cannot close the LMDB store", e);
    } catch (IOException e) {
      throw Errors.error(Errors.LMDB, where, "Cannot close " + WRITER_LOCK, e);
    } finally {
      OPEN_DIRS.remove(dir);
      state = CLOSED;
      mapLock.unlockWrite(stamp);
    }
  }

  // ---- map growth ----

  private void requestGrowth(long size) {
    synchronized (gate) {
      if (size > mapSize && size > growTo) {
        growTo = size;
      }
    }
  }

  /**
   * Grows the map if a growth is pending and nothing is in the way now; never waits. The thread
   * of the open write transaction may grow it too (outside {@link Write#commit()}: the LMDB
   * write transaction is open only there).
   */
  private void maybeGrow() {
    if (growTo == 0 || state != OPEN) {
      return;
    }
    boolean mine = writerThread == Thread.currentThread();
    if (!mine && !writer.tryAcquire()) {
      return;
    }
    try {
      long stamp = mapLock.tryWriteLock();
      if (stamp != 0) {
        try {
          resize(growTo);
        } catch (LmdbException e) {
          // Leave it to the next commit that needs the room: it reports the failure.
          synchronized (gate) {
            growTo = 0;
            gate.notifyAll();
          }
        } finally {
          mapLock.unlockWrite(stamp);
        }
      }
    } finally {
      if (!mine) {
        writer.release();
      }
    }
  }

  /**
   * Grows the map for the writer: closes the read transactions that would wait for this commit
   * (see the class comment), then waits for the others to finish.
   */
  private void growForCommit(long size) {
    closeForGrowth(openReads.get());
    for (LmdbReadTxn.Opened waiting : parked) {
      closeForGrowth(waiting);
    }
    requestGrowth(size);
    long stamp;
    try {
      stamp = mapLock.tryWriteLock(GROW_WAIT_S, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stamp = 0;
    }
    if (stamp == 0) {
      throw Errors.error(Errors.MAP_FULL, where, "The LMDB map (" + mapSize
          + " bytes) is full and cannot grow while read transactions stay open (waited "
          + GROW_WAIT_S + " s)", null, Keyword.intern("map-size"), mapSize);
    }
    try {
      resize(Math.max(size, growTo));
    } catch (LmdbException e) {
      throw failure("Cannot grow the map to " + size + " bytes", e);
    } finally {
      mapLock.unlockWrite(stamp);
    }
  }

  private static void closeForGrowth(LmdbReadTxn.Opened opened) {
    for (LmdbReadTxn txn : opened.snapshot()) {
      txn.closeForGrowth();
    }
  }

  /**
   * Caller holds the writer permit and the exclusive map lock. LMDB makes the map at least as
   * big as the data any process committed.
   */
  private void resize(long size) {
    if (size > mapSize) {
      env.setMapSize(size);
      mapSize = env.info().mapSize;
      mapAddress = 0; // a resize may move the map
    }
    synchronized (gate) {
      if (growTo <= mapSize) {
        growTo = 0;
      }
      gate.notifyAll();
    }
  }

  /**
   * Once the map is half used, asks for a growth, done now if the open read transactions finish
   * soon (the writer holding none), otherwise by whoever ends the last of them.
   */
  private void growAheadOfNeed() throws InterruptedException {
    EnvInfo info = env.info();
    if ((info.lastPageNumber + 1) * pageSize <= info.mapSize / 2) {
      return;
    }
    requestGrowth(2 * info.mapSize);
    if (openReads.get().count() == 0) {
      long stamp = mapLock.tryWriteLock(GATE_WAIT_MS, TimeUnit.MILLISECONDS);
      if (stamp != 0) {
        try {
          resize(growTo);
        } finally {
          mapLock.unlockWrite(stamp);
        }
      }
    }
  }

  /**
   * The write transaction: buffers writes, applies them all in one LMDB txn on commit. Holds the
   * writer permit and the directory's writer lock until closed.
   */
  private final class Write implements WriteTxn {
    private final FileLock lock;
    private final List<Expected> expected = new ArrayList<>();
    private boolean open = true;
    private boolean committed;

    Write(FileLock lock) {
      this.lock = lock;
    }

    private void checkWritable() {
      if (!open) {
        throw Errors.closed(where, "The write transaction");
      }
      if (committed) {
        throw new IllegalStateException("The write transaction is committed (" + where + ")");
      }
    }

    @Override
    public void put(SubDb db, ByteBuffer key, ByteBuffer val) {
      checkWritable();
      Errors.checkKey(where, key);
      log.put(db, key, val);
    }

    @Override
    public void delete(SubDb db, ByteBuffer key) {
      checkWritable();
      Errors.checkKey(where, key);
      log.delete(db, key);
    }

    @Override
    public void expect(SubDb db, ByteBuffer key, ByteBuffer val) {
      checkWritable();
      expected.add(new Expected(where, db, key, val));
    }

    @Override
    public void commit() {
      checkWritable();
      while (!apply()) {
        // the map is full, or another process filled the file past it
        growForCommit(grownSize(Math.max(mapSize, dataSize()) + 4 * log.bytes()));
      }
      committed = true;
      try {
        growAheadOfNeed();
      } catch (LmdbException e) {
        // The commit stands; a growth put off now happens when a commit needs the room.
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    /**
     * Applies the log in one LMDB write transaction; false when the map must grow first.
     *
     * @throws clojure.lang.ExceptionInfo {@code :store/conflict} when an {@link #expect} fails
     */
    private boolean apply() {
      try {
        Txn<ByteBuffer> txn;
        try {
          txn = env.txnWrite();
        } catch (MapResizedException e) {
          return false;
        }
        try {
          for (Expected x : expected) {
            x.check(where, dbis.get(x.db.ordinal()).get(txn, x.directKey()));
          }
          try (LmdbReplay replay = new LmdbReplay(dbis, txn, pageSize, javaPages, where)) {
            log.replay(replay);
          } // its cursors closed before the commit, or before the abort
          txn.commit();
          return true;
        } catch (Env.MapFullException e) {
          return false;
        } finally {
          txn.close(); // aborts unless committed
        }
      } catch (LmdbException e) {
        throw failure("Cannot commit", e);
      }
    }

    @Override
    public void close() {
      if (open) {
        open = false;
        log.clear();
        try {
          lock.release();
        } catch (IOException e) {
          closeLockFile(); // which releases the lock; the next write opens the file again
        } finally {
          writerThread = null;
          writer.release();
        }
        maybeGrow();
      }
    }

    private void closeLockFile() {
      try {
        writerLockFile.close();
      } catch (IOException e) {
        // closing releases the lock whatever else failed
      }
    }
  }
}
