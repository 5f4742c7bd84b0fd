package datalith.store;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.channels.FileLock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.lmdbjava.Dbi;
import org.lmdbjava.Dbi.MapResizedException;
import org.lmdbjava.Env;
import org.lmdbjava.LmdbException;
import org.lmdbjava.Txn;

/**
 * The write transaction of an {@link LmdbStore}: buffers its writes in the store's
 * {@link WriteLog} (copying the caller's buffers) and applies them all in one LMDB write
 * transaction at {@link #commit()}. When LMDB reports its map full, or another process filled
 * the file past it, the commit aborts, grows the map and replays the writes; after a commit the
 * map grows ahead of need once it is half used. Holds the writer permit and the directory's
 * writer lock until closed. Used by the thread that began it.
 */
final class LmdbWrite implements WriteTxn {
  /**
   * A commit whose writes take this many bytes of the log has its record written to the
   * write-ahead log by a helper thread while LMDB puts them: the append's copy, write and
   * fdatasync overlap the puts rather than follow them. Below it, handing the record over would
   * cost about what the overlap saves.
   */
  static final long LOG_AHEAD_BYTES = 64L << 10;
  private static final ExecutorService LOGGERS = PlatformThreads.daemons("datalith-lmdb-log");

  private final Env<ByteBuffer> env;
  private final List<Dbi<ByteBuffer>> dbis; // by SubDb ordinal
  private final WriteLog log; // the store's, cleared when this began
  private final LmdbMapGrowth map;
  private final LmdbWriterLock writer;
  private final FileLock lock; // the directory's, held until close
  private final long envAddress; // of LMDB's MDB_env, 0 when unknown
  private final int pageSize;
  private final boolean javaPages;
  private final String where;
  private final LmdbWal wal; // null: LMDB syncs its own commits (or none)
  private final Runnable checkPages; // LmdbPagesCheck.beforeWrites, before LMDB's first write
  private final List<Expected> expected = new ArrayList<>();
  private LayerReplay layer; // written instead of the log, when set (a write-back)
  private boolean open = true;
  private boolean committed;

  LmdbWrite(Env<ByteBuffer> env, List<Dbi<ByteBuffer>> dbis, WriteLog log, LmdbMapGrowth map,
      LmdbWriterLock writer, FileLock lock, long envAddress, int pageSize, boolean javaPages,
      String where, LmdbWal wal, Runnable checkPages) {
    this.env = env;
    this.wal = wal;
    this.checkPages = checkPages;
    this.dbis = dbis;
    this.log = log;
    this.map = map;
    this.writer = writer;
    this.lock = lock;
    this.envAddress = envAddress;
    this.pageSize = pageSize;
    this.javaPages = javaPages;
    this.where = where;
  }

  private void checkWritable() {
    Errors.checkWritable(where, open, committed);
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

  /**
   * Commits the entries of write-behind's {@code layer} ({@link LmdbBehind}) rather than the
   * log's, which stays empty: written in key order as they are, with no log record.
   */
  void commitLayer(LayerReplay layer) {
    this.layer = layer;
    commit();
  }

  @Override
  public void commit() {
    checkWritable();
    checkPages.run(); // LMDB's C code reads the pages it writes as they are
    long usedPages;
    while ((usedPages = PlatformThreads.callLong(this::apply)) < 0) {
      // the map is full, or another process filled the file past it
      map.growForCommit(map.grownSize(Math.max(map.mapSize(), map.dataSize())
          + 4 * (layer != null ? layer.bytes() : log.bytes())));
    }
    committed = true;
    if (wal != null && wal.due()) {
      try {
        wal.checkpoint();
      } catch (RuntimeException e) {
        // The commit stands, in the log; the next commit's own() takes the checkpoint again.
      }
    }
    try {
      map.growAheadOfNeed(usedPages);
    } catch (LmdbException e) {
      // The commit stands; a growth put off now happens when a commit needs the room.
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Applies the log in one LMDB write transaction; returns the pages the data uses once it is
   * committed (its last page number plus one), or -1 when the map must grow first.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/conflict} when an {@link #expect} fails
   */
  private long apply() {
    try {
      Txn<ByteBuffer> txn;
      try {
        txn = env.txnWrite();
      } catch (MapResizedException e) {
        return -1;
      }
      try {
        for (Expected x : expected) {
          ByteBuffer key = x.directKey();
          try {
            x.check(where, dbis.get(x.db.ordinal()).get(txn, key));
          } finally {
            Reference.reachabilityFence(key); // LMDB reads it where it lies
          }
        }
        Future<?> record = logAhead(txn.getId());
        long usedPages;
        try {
          try (LmdbReplay replay = new LmdbReplay(dbis, txn, pageSize, javaPages, where)) {
            if (layer != null) {
              layer.replay(replay);
            } else {
              log.replay(replay);
            }
          } // its cursors closed before the commit, or before the abort
          usedPages = nextPage(txn);
        } catch (RuntimeException | Error e) {
          unlog(record, txn.getId());
          throw e;
        }
        commit(txn, record);
        return usedPages > 0 ? usedPages : map.dataSize() / pageSize;
      } catch (Env.MapFullException e) {
        return -1;
      } finally {
        txn.close(); // aborts unless committed
      }
    } catch (LmdbException e) {
      throw Errors.lmdb(where, "Cannot commit", e);
    }
  }

  /**
   * The record of a commit of {@link #LOG_AHEAD_BYTES} or more, which LMDB numbers
   * {@code txnid}, appended to the write-ahead log by a helper thread as this one puts the
   * writes; null for a smaller commit, or without the log, or while a pause skips it. The log
   * is read by both threads meanwhile, and changed by neither.
   */
  private Future<?> logAhead(long txnid) {
    if (wal == null || wal.paused() || log.bytes() < LOG_AHEAD_BYTES) {
      return null;
    }
    return LOGGERS.submit(() -> wal.append(log, txnid));
  }

  /**
   * The puts failed (the map is full, say): waits for {@code record} and cancels it when it was
   * written, so that recovery never replays a commit that did not happen.
   */
  private void unlog(Future<?> record, long txnid) {
    if (record == null) {
      return;
    }
    try {
      PlatformThreads.join(record);
    } catch (RuntimeException e) {
      return; // the append failed, and cancelled what it wrote
    }
    wal.cancel(txnid);
  }

  /**
   * Commits {@code txn}: with the log, only once its record is durable (appended now, or by
   * {@code record} of {@link #logAhead}), so that a commit seen is a commit kept; a commit that
   * fails after that cancels the record.
   */
  private void commit(Txn<ByteBuffer> txn, Future<?> record) {
    if (wal == null) {
      txn.commit();
      return;
    }
    long txnid = txn.getId();
    if (record == null) {
      wal.append(log, txnid);
    } else {
      PlatformThreads.join(record); // its failure thrown here: the append cancelled its record
    }
    try {
      txn.commit();
    } catch (RuntimeException e) {
      wal.cancel(txnid);
      throw e;
    }
    if (env.info().lastTransactionId != txnid) {
      wal.cancel(txnid); // LMDB wrote nothing (no page changed): the txnid is the next one's
    }
  }

  /**
   * The first page number past the pages that the open write transaction {@code txn} uses
   * (LMDB's mt_next_pgno, which its commit writes to the meta page as the last page plus one),
   * or 0 when its MDB_txn does not read as {@link LmdbLayout} says (its mt_env is not the
   * store's environment). Read before the commit, it leaves out the few pages that the commit
   * takes to save the free list: well within the half of the map that growth keeps ahead.
   */
  private long nextPage(Txn<ByteBuffer> txn) {
    long address = LmdbPointers.txn(txn);
    return address != 0 && envAddress != 0 && LmdbLayout.txnEnv(address) == envAddress
        ? LmdbLayout.txnNextPage(address) : 0;
  }

  @Override
  public void close() {
    if (open) {
      open = false;
      log.clear();
      writer.unlock(lock);
      map.maybeGrow();
    }
  }
}
