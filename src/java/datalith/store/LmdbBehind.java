package datalith.store;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Write-behind for an {@link LmdbStore} opened with the option {@code "write-behind"}: a commit
 * is durable once its record is in the write-ahead log ({@link LmdbWal}) and fdatasynced, as
 * with the log alone, but it is then laid in memory over LMDB's last commit (a layer of two
 * {@link MemStore}s, the entries put and the keys deleted, as {@link LayeredStore}'s delta)
 * rather than put into LMDB's B-trees; a thread of the store writes the layer back into LMDB
 * later, many commits in one LMDB commit. A durable commit of the log alone writes every page
 * its keys' paths touch, some 28 pages (115 KB) for a one-datom transaction, and the next
 * checkpoint syncs them all; written back together, commits share those pages, and the copy,
 * the sync and the puts run on the other core, beside the next commits.
 *
 * <p>Layers: the active layer takes the commits; a write-back freezes it (a new active layer
 * takes the commits from then on), writes the frozen layer's puts and deletes into LMDB in key
 * order in one write transaction that writes no record (the records are in the log already),
 * syncs LMDB's file, and takes a checkpoint of that commit that says where the records made
 * meanwhile begin in the other segment ({@link LmdbWal#checkpointWriteBack}); then the frozen
 * layer is dropped. A read takes the layers of the last publish, then a read transaction of LMDB:
 * LMDB's commit is then the one the layers lie over or a later write-back's, which holds some
 * of the layers already, and reads the same once the layers lie over it (each key is the last
 * layer's that writes it). A read with no layer is LMDB's own read transaction, so a store at
 * rest reads as one without write-behind.
 *
 * <p>A write-back starts once the active layer holds {@link #WRITE_BACK_BYTES} of records or
 * {@link #WRITE_BACK_COMMITS} commits (the option {@code "write-back-commits"}), or
 * {@link #WRITE_BACK_MS} ms (the option {@code "write-back-ms"}) after its first
 * commit; while one runs, a write waits once the active layer holds {@link #MAX_BEHIND_BYTES}.
 * A write-back that fails (a full disk) keeps its layer, is tried again, and fails the writes
 * that wait for it. Recovery is the log's: the records after the last checkpoint are replayed
 * into LMDB, one commit each (their txnids are consecutive after it, as LMDB's would be).
 *
 * <p>A store lays its commits over LMDB's file only while it is the only one on its directory
 * (they are not in LMDB's file, where another process would read them): alone, it holds a byte
 * of {@code open.lock} that tells other processes' opens to ask it for a hand-off (see
 * {@code LmdbWalRecovery.OpenLock}) and wait. The write-back thread looks for a request every
 * {@link #HAND_OFF_POLL_MS} ms (and after each write-back); it then writes every commit back,
 * makes every write from then on one of LMDB's own (through the log, as a store without
 * write-behind writes, taking the directory's writer lock), and lets the byte go: the directory
 * is shared. A store opened beside another process starts so. While the directory is shared,
 * the thread looks every {@link #RETAKE_POLL_MS} ms whether the others closed it; once alone,
 * it takes the byte back and lays commits over LMDB's file again. Operations on LMDB's file
 * itself (a pause of the sync, {@code replaceAll}, a backup, closing) first write every commit
 * back; during a pause commits go into LMDB directly.
 *
 * <p>Locks, taken in this order: {@code writeBacks} (a write-back runs), {@code commits} (the
 * open write transaction, and the log), LMDB's writer lock (an LMDB write transaction), and
 * {@code publish} (the layers).
 */
final class LmdbBehind {
  /**
   * The log's bytes in the active layer from which a write-back starts: 16 MiB, or a 64th of
   * the heap when that is less. The layers hold about what their records hold, so that the
   * active and the frozen one stay within a small heap's means (with write-behind the default,
   * a JVM of -Xmx256m loads through it).
   */
  static final long WRITE_BACK_BYTES = Math.min(16L << 20, Runtime.getRuntime().maxMemory() / 64);
  /** The commits in the active layer from which a write-back starts, by default. */
  static final int WRITE_BACK_COMMITS = 1024;
  /** How long after a layer's first commit its write-back starts, at the latest, by default. */
  static final long WRITE_BACK_MS = 50;
  /**
   * The log's bytes in the active layer beyond which a write waits for the write-back: 64 MiB,
   * or a 16th of the heap when that is less.
   */
  static final long MAX_BEHIND_BYTES = Math.min(64L << 20, Runtime.getRuntime().maxMemory() / 16);
  private static final long RETRY_MS = 100;
  /** How often an idle write-back thread looks for another process's request to hand off. */
  static final long HAND_OFF_POLL_MS = 20;
  /** How often, while the directory is shared, the thread looks whether it is alone again. */
  static final long RETAKE_POLL_MS = 250;

  private final LmdbStore lmdb;
  private final LmdbWal wal;
  private final LmdbWalRecovery.OpenLock openLock; // the store's: hand-off requests, retakes
  private final String where;
  private final ReentrantLock writeBacks = new ReentrantLock();
  private final ReentrantLock commits = new ReentrantLock();
  private final Object publish = new Object();
  private final WriteLog record = new WriteLog(); // the open write transaction's
  private final Thread thread;
  private final int writeBackCommits; // a write-back starts once the active layer holds these
  private final long writeBackMs; // or once its first commit is this old
  private Layer active = new Layer(); // under publish; replaced under commits too
  private Layer frozen; // under publish: being written back, or null
  private RuntimeException failure; // under publish: the last write-back's, until one succeeds
  private long carryFrom; // under commits: where the frozen layer's records end in the log
  private long carryFirst; // under commits: the txnid of the record that follows them
  private long nextTxnid; // under commits: the next record's
  private int direct; // under writeBacks and commits: pauses running on LMDB directly
  /** Another process may have the directory open: commits go into LMDB directly. */
  private volatile boolean shared; // set under writeBacks and commits
  private boolean retaken; // under commits: shared until now, the next commit takes a checkpoint
  private volatile boolean closing;
  private long writtenBack; // under publish: write-backs done

  /** The layer of the commits since a write-back: its puts, and its deletes. */
  private static final class Layer {
    final MemStore puts = MemStore.openInPlace();
    final MemStore gone = MemStore.openInPlace();
    final boolean[] deletes = new boolean[SubDb.values().length]; // gone may hold keys of it
    long bytes; // of its records
    int commits;
    long since; // System.nanoTime() of its first commit

    boolean isEmpty() {
      return commits == 0;
    }
  }

  /**
   * Starts write-behind on {@code lmdb}, whose log holds no record after its checkpoint when its
   * open was alone on its directory ({@code openLock}; else the directory is {@link #shared}
   * until it is).
   */
  LmdbBehind(LmdbStore lmdb, LmdbWal wal, LmdbWalRecovery.OpenLock openLock, String where,
      int writeBackCommits, long writeBackMs) {
    this.shared = !openLock.alone;
    this.writeBackCommits = writeBackCommits;
    this.writeBackMs = writeBackMs;
    this.lmdb = lmdb;
    this.wal = wal;
    this.openLock = openLock;
    this.where = where;
    this.nextTxnid = lmdb.lastTxnid() + 1;
    this.thread = new Thread(this::run, "datalith-lmdb-behind");
    thread.setDaemon(true);
    thread.start();
  }

  /** The write-backs done since the open: for the tests. */
  long writeBacks() {
    synchronized (publish) {
      return writtenBack;
    }
  }

  // ---------------------------------------------------------------------------------------
  // reads

  /** A read of the last commit: LMDB's own when no layer holds a commit. */
  ReadTxn beginRead() {
    while (true) {
      Layer a;
      MemReadTxn fp = null;
      MemReadTxn fg = null;
      MemReadTxn ap;
      MemReadTxn ag;
      synchronized (publish) {
        Layer f = frozen;
        a = active;
        if (f == null && a.isEmpty()) {
          ap = null;
          ag = null;
        } else {
          if (f != null) {
            fp = (MemReadTxn) f.puts.beginRead();
            fg = (MemReadTxn) f.gone.beginRead();
          }
          ap = (MemReadTxn) a.puts.beginRead();
          ag = (MemReadTxn) a.gone.beginRead();
        }
      }
      ReadTxn base;
      try {
        base = lmdb.beginLmdbRead(); // after the layers: their commit, or a later write-back's
      } catch (RuntimeException | Error e) {
        LmdbBehindRead.closeAll(fp, fg, ap, ag);
        throw e;
      }
      // LMDB's read may hold the frozen layer's write-back (the same entries: harmless), but
      // not the active layer's: once frozen and written back, it holds commits made after this
      // read's view of it, which the view would then show under older layers (a value's
      // rebuild at its basis saw a key twice, once current, once from history). So the active
      // layer must still be the active one now that LMDB's read has begun; else begin again.
      synchronized (publish) {
        if (active == a) {
          return ap == null ? base : new LmdbBehindRead(base, fp, fg, ap, ag);
        }
      }
      LmdbBehindRead.closeAll(fp, fg, ap, ag, base);
    }
  }

  // ---------------------------------------------------------------------------------------
  // writes

  /**
   * The write transaction: waits for the open one to close, and, while a write-back runs and
   * the active layer holds {@link #MAX_BEHIND_BYTES}, for the write-back. During a pause, one of
   * LMDB's own.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when it waits for a write-back that
   *     fails
   */
  WriteTxn beginWrite() {
    if (commits.isHeldByCurrentThread()) {
      throw new IllegalStateException(
          "This thread already holds the write transaction (" + where + ")");
    }
    // while it waits (at the bound for the write-back, or for the commit lock), a growth of
    // the map that the write-back needs closes this thread's reads rather than wait for them
    LmdbReadTxn.Opened parked = lmdb.reads.park();
    try {
      while (true) {
        awaitRoom(); // not holding the commit lock, which the write-back's checkpoint takes
        commits.lock();
        try {
          if (closing) {
            throw Errors.closed(where, "The store");
          }
          if (direct > 0 || shared) {
            lmdb.reads.unpark(parked); // LMDB's writer lock parks them itself
            parked = null;
            return new LmdbBehindDirect(lmdb.beginLmdbWrite(), commits);
          }
          synchronized (publish) {
            if (!full()) {
              return new Write(active);
            }
          }
        } catch (RuntimeException | Error e) {
          commits.unlock();
          throw e;
        }
        commits.unlock(); // other writers filled the layer meanwhile: wait again
      }
    } finally {
      lmdb.reads.unpark(parked);
    }
  }

  /** Under publish: whether a write waits for the write-back running. */
  private boolean full() {
    return frozen != null && active.bytes >= MAX_BEHIND_BYTES;
  }

  /**
   * Waits while a write-back runs and the active layer holds {@link #MAX_BEHIND_BYTES}.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the write-back fails meanwhile
   */
  private void awaitRoom() {
    synchronized (publish) {
      while (full() && !closing) {
        if (failure != null) {
          throw failed(failure);
        }
        waitOn(publish, 0);
      }
    }
  }

  private RuntimeException failed(RuntimeException cause) {
    return Errors.error(Errors.IO, where, "Writing commits back into LMDB fails (" + cause
        + "); they are durable in the write-ahead log, and the store takes more once the"
        + " write-back succeeds", cause);
  }

  private static void waitOn(Object monitor, long ms) {
    try {
      monitor.wait(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the wait goes on; the caller sees the flag
      throw new IllegalStateException("Interrupted while waiting for the write-back", e);
    }
  }

  /** A write into the active layer: logged, and written to the layer's two stores. */
  private final class Write implements WriteTxn {
    private final Layer layer;
    private final WriteTxn puts;
    private final WriteTxn gone;
    private final List<Expected> expected = new ArrayList<>();
    private boolean open = true;
    private boolean committed;

    Write(Layer layer) {
      this.layer = layer;
      record.clear();
      WriteTxn p = layer.puts.beginWrite();
      try {
        this.gone = layer.gone.beginWrite();
      } catch (RuntimeException | Error e) {
        p.close();
        throw e;
      }
      this.puts = p;
    }

    private void checkWritable() {
      Errors.checkWritable(where, open, committed);
    }

    @Override
    public void put(SubDb db, ByteBuffer key, ByteBuffer val) {
      checkWritable();
      Errors.checkKey(where, key);
      record.put(db, key, val);
      puts.put(db, key, val);
      if (layer.deletes[db.ordinal()]) {
        gone.delete(db, key);
      }
    }

    @Override
    public void delete(SubDb db, ByteBuffer key) {
      checkWritable();
      Errors.checkKey(where, key);
      record.delete(db, key);
      puts.delete(db, key);
      layer.deletes[db.ordinal()] = true;
      gone.put(db, key, BTree.EMPTY);
    }

    @Override
    public void expect(SubDb db, ByteBuffer key, ByteBuffer val) {
      checkWritable();
      expected.add(new Expected(where, db, key, val));
    }

    /**
     * {@inheritDoc} Checks the expected values against the last commit, appends the record to
     * the log and fdatasyncs it, then publishes the writes in the active layer.
     */
    @Override
    public void commit() {
      checkWritable();
      if (!expected.isEmpty()) {
        try (ReadTxn r = beginRead()) {
          for (Expected x : expected) {
            x.check(where, r.get(x.db, ByteBuffer.wrap(x.key())));
          }
        }
      }
      if (record.bytes() == 0) {
        committed = true;
        return;
      }
      if (retaken || !wal.owned()) {
        own();
        retaken = false;
      }
      long txnid = nextTxnid;
      wal.appendBehind(record, txnid);
      boolean wake;
      try {
        synchronized (publish) {
          puts.commit();
          gone.commit();
          if (layer.commits++ == 0) {
            layer.since = System.nanoTime();
          }
          long before = layer.bytes;
          layer.bytes += record.bytes();
          wake = layer.commits == 1 || layer.commits == writeBackCommits
              || before < WRITE_BACK_BYTES && layer.bytes >= WRITE_BACK_BYTES;
          if (wake) {
            publish.notifyAll();
          }
        }
      } catch (RuntimeException | Error e) {
        wal.cancel(txnid);
        throw e;
      }
      nextTxnid = txnid + 1;
      committed = true;
    }

    @Override
    public void close() {
      if (open) {
        open = false;
        try {
          record.clear();
          try {
            gone.close();
          } finally {
            puts.close();
          }
        } finally {
          commits.unlock();
        }
      }
    }
  }

  /**
   * Takes the log's checkpoint anew, when this process no longer owns it (after a pause, a
   * {@code replaceAll} whose pin failed, or once the directory was shared): only while no layer
   * holds a commit, whose records the checkpoint would leave behind. Under the commit lock.
   */
  private void own() {
    synchronized (publish) {
      if (frozen != null || !active.isEmpty()) {
        throw Errors.error(Errors.IO, where, "The write-ahead log's checkpoint is lost while"
            + " commits wait to be written back", null);
      }
    }
    lmdb.ownLog();
    nextTxnid = lmdb.lastTxnid() + 1;
  }

  // ---------------------------------------------------------------------------------------
  // write-backs

  /**
   * The write-back thread: waits until one is due, runs it, and so on until closed; hands the
   * directory off when another process's open asks for it, and takes it back once alone.
   */
  private void run() {
    long asked = System.nanoTime(); // when it last looked for a request, or whether alone
    while (true) {
      boolean due;
      long poll = shared ? RETAKE_POLL_MS : HAND_OFF_POLL_MS;
      synchronized (publish) {
        long wait = closing ? 0 : dueIn();
        if (wait != 0) {
          try {
            publish.wait(wait < 0 ? poll : Math.min(wait, poll));
          } catch (InterruptedException e) {
            // only close stops this thread
          }
        }
        if (closing) {
          return;
        }
        due = dueIn() == 0;
      }
      if (System.nanoTime() - asked >= TimeUnit.MILLISECONDS.toNanos(poll)) {
        asked = System.nanoTime();
        if (shared) {
          retake();
        } else if (openLock.handOffRequested()) {
          handOff();
        }
      }
      if (!due) {
        continue;
      }
      boolean failed = false;
      writeBacks.lock();
      try {
        writeBack();
      } catch (RuntimeException | Error e) {
        failed = true;
        synchronized (publish) {
          failure = e instanceof RuntimeException r ? r : new IllegalStateException(e);
          publish.notifyAll();
        }
      } finally {
        writeBacks.unlock();
      }
      if (failed) {
        try {
          Thread.sleep(RETRY_MS); // not holding writeBacks: a close or a pause may drain meanwhile
        } catch (InterruptedException ie) {
          // tried again the sooner
        }
      }
    }
  }

  /**
   * Hands the directory over to another process's open: writes every commit back, makes every
   * write from then on one of LMDB's own (as during a pause, until {@link #retake}), and lets
   * the open in. When a write-back fails, the open waits on, and this is tried again.
   */
  private void handOff() {
    try {
      drained(() -> {
        shared = true;
        return null;
      });
    } catch (RuntimeException e) {
      try {
        Thread.sleep(RETRY_MS);
      } catch (InterruptedException ie) {
        // tried again the sooner
      }
      return;
    }
    try {
      openLock.handedOff(where);
    } catch (RuntimeException e) {
      // the lock would not let go: the open times out; this store goes on into LMDB directly
    }
  }

  /**
   * Takes the directory back for write-behind when no other process has it open (and no pause
   * runs): from the next commit on, commits are laid over LMDB's file again, the first one
   * taking a checkpoint of this process's (others' commits went into the log meanwhile: a
   * store that only reads writes nothing). Otherwise the directory stays shared, to be tried
   * again.
   */
  private void retake() {
    writeBacks.lock();
    try {
      commits.lock();
      try {
        if (direct > 0 || closing || !openLock.retake(where)) {
          return;
        }
        retaken = true;
        shared = false;
      } finally {
        commits.unlock();
      }
    } catch (RuntimeException e) {
      // a lock failed: tried again at the next look
    } finally {
      writeBacks.unlock();
    }
  }

  /** Whether commits are laid over LMDB's file, the directory this store's alone. */
  boolean layering() {
    return !shared;
  }

  /**
   * Under publish: 0 when a write-back is due, else how long to wait for one in ms (-1: until
   * woken). A frozen layer left by a failed write-back is due at once (the run waited already).
   */
  private long dueIn() {
    if (frozen != null) {
      return 0;
    }
    Layer a = active;
    if (a.isEmpty()) {
      return -1;
    }
    if (a.bytes >= WRITE_BACK_BYTES || a.commits >= writeBackCommits) {
      return 0;
    }
    long left = writeBackMs - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - a.since);
    return left <= 0 ? 0 : left;
  }

  /**
   * Writes the frozen layer back into LMDB, freezing the active one first when none is; returns
   * false when there was nothing to write. Holding {@code writeBacks}.
   */
  private boolean writeBack() {
    Layer f;
    commits.lock();
    try {
      synchronized (publish) {
        f = frozen;
        if (f == null) {
          if (active.isEmpty()) {
            return false;
          }
          f = active;
          frozen = f;
          active = new Layer();
          carryFrom = wal.offset(); // the active layer's records begin here
          carryFirst = nextTxnid; // numbered from here
        }
      }
    } finally {
      commits.unlock();
    }
    long x = writeBack(f);
    commits.lock();
    try {
      wal.checkpointWriteBack(carryFrom, carryFirst, x);
    } finally {
      commits.unlock();
    }
    synchronized (publish) {
      frozen = null;
      failure = null;
      writtenBack++;
      publish.notifyAll();
    }
    return true;
  }
  /**
   * Writes layer {@code f} into LMDB: its entries put and keys deleted, in key order, in one
   * LMDB commit that writes no record to the log, then syncs LMDB's file; returns LMDB's last
   * commit, which holds them.
   */
  private long writeBack(Layer f) {
    try (MemReadTxn p = (MemReadTxn) f.puts.beginRead();
        MemReadTxn g = (MemReadTxn) f.gone.beginRead();
        LmdbWrite w = lmdb.unloggedWrite()) {
      w.commitLayer(new LayerReplay(p, g));
    }
    lmdb.syncMap();
    return lmdb.lastTxnid();
  }

  // ---------------------------------------------------------------------------------------
  // operations on LMDB's file

  /**
   * Runs {@code job} once every commit is written back, holding the locks that keep commits
   * and write-backs out meanwhile (so that it may work on LMDB's file directly).
   *
   * @throws IllegalStateException when this thread holds the open write transaction
   * @throws clojure.lang.ExceptionInfo when a write-back fails (the commits stay in the log)
   */
  <T> T drained(Supplier<T> job) {
    if (commits.isHeldByCurrentThread()) {
      throw new IllegalStateException(
          "This thread holds the write transaction (" + where + ")");
    }
    writeBacks.lock();
    try {
      commits.lock();
      try {
        while (writeBack()) {
          // until no layer holds a commit
        }
        return job.get();
      } finally {
        commits.unlock();
      }
    } finally {
      writeBacks.unlock();
    }
  }

  /** After an operation on LMDB's file that took the log's checkpoint: records follow it. */
  private void resync() {
    if (wal.owned()) {
      nextTxnid = lmdb.lastTxnid() + 1;
    }
  }

  /** {@link LmdbStore#replaceAll} on LMDB's file, once every commit is written back. */
  void replaceAll(Runnable replace) {
    drained(() -> {
      try {
        replace.run();
      } finally {
        resync();
      }
      return null;
    });
  }

  /**
   * A pause of LMDB's sync ({@code pause}, LMDB's own), once every commit is written back;
   * until it ends, write transactions are LMDB's own.
   */
  Store.SyncPause pauseSync(Supplier<Store.SyncPause> pause) {
    Store.SyncPause p = drained(() -> {
      Store.SyncPause q = pause.get();
      direct++;
      return q;
    });
    return new Store.SyncPause() {
      private boolean ended;

      @Override
      public void close() {
        if (ended) {
          return;
        }
        ended = true;
        drained(() -> {
          try {
            p.close();
          } finally {
            direct--;
            resync();
          }
          return null;
        });
      }
    };
  }

  /** Whether this thread holds the open write transaction. */
  boolean writing() {
    return commits.isHeldByCurrentThread();
  }

  /**
   * Writes every commit back and stops the write-back thread; returns false when a write-back
   * failed (the commits then stay in the log, for the next open to replay). Writes are refused
   * from then on.
   */
  boolean close() {
    boolean caughtUp;
    try {
      drained(() -> {
        closing = true;
        return null;
      });
      caughtUp = true;
    } catch (RuntimeException e) {
      caughtUp = false;
    }
    closing = true;
    synchronized (publish) {
      publish.notifyAll();
    }
    boolean interrupted = false;
    while (thread.isAlive()) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return caughtUp;
  }
}
