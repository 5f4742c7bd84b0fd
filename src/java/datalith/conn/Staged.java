package datalith.conn;

import datalith.db.Errors;
import datalith.db.Latest;
import datalith.db.Snapshot;
import datalith.db.Source;
import datalith.db.ValidCache;
import datalith.store.Cursor;
import datalith.store.LayeredStore;
import datalith.store.ReadTxn;
import datalith.store.Store;
import datalith.store.SubDb;
import datalith.store.WriteTxn;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * An import staged in memory ({@link Import}): a {@link LayeredStore} over a snapshot of the
 * connection's store, the import's chunks committed there one by one, each its own transaction
 * as on the store itself, then the delta they made written into the connection's store in one
 * commit ({@link #write}). Nothing of the base is copied; LMDB's B-tree puts cost several times
 * a MemStore's, and the final write puts the delta's keys in order, once.
 *
 * <p>It is the source of the values its chunks make (the database values of their reports):
 * they read the layered store while the import stages, and the connection's store once the
 * write is done (it then holds everything they hold; a value reads a store that moved past it
 * as it reads any later commit), so they stay valid, and immutable, once the import has ended.
 * The connection's latest value stays the store's until {@link #write}, which publishes the
 * store's new one.
 *
 * <p>The import holds the connection's transaction lock throughout, so no transaction of this
 * connection commits meanwhile. Another writer of the store (another process, or another
 * connection to the directory) may: the write then refuses with {@code :import/conflict},
 * writing nothing, rather than lose that commit ({@link #checkUnchanged}). Used by the
 * import's thread only (the layered store's base snapshot is a read transaction of that
 * thread). A node's catch-up run stages its log records the same way ({@link StagedLog}).
 */
final class Staged implements Source {
  /**
   * The system property that sets how many entries a store may hold for a staging to copy them
   * into its delta ({@link LayeredStore#ABSORB_ENTRIES} by default): 0 makes every staging
   * merge its reads with the store's, the path of large databases, which the tests run on
   * small ones with it.
   */
  static final String ABSORB_PROPERTY = "datalith.staged.absorb";

  private final Conn conn;
  private final Store target;
  private final Latest base; // the connection's value the layered store is over
  private final LayeredStore layered;
  private volatile Store reads; // what the staged values read: layered, then target once written
  private final ValidCache validCache = new ValidCache();
  private final List<TxReport> reports = new ArrayList<>(); // for the listeners, commit order
  private Latest latest; // the value after the last staged chunk, read from layered
  private long chunks; // staged
  private long datoms; // of the staged chunks

  private Staged(Conn conn, Store target, Latest base, LayeredStore layered) {
    this.conn = conn;
    this.target = target;
    this.base = base;
    this.layered = layered;
    this.reads = layered;
  }

  /**
   * A new staging over the database of {@code conn} (its store {@code target}). Holds the
   * store's write transaction while it reads the connection's value and takes the snapshot,
   * so that the two are of one commit; writes nothing there.
   */
  static Staged begin(Conn conn, Store target) {
    Staged st;
    try (WriteTxn lock = target.beginWrite()) {
      Latest base;
      try (Snapshot s = Snapshot.of(target)) {
        base = conn.refreshForImport(s);
      }
      st = new Staged(conn, target, base, LayeredStore.over(target,
          Long.getLong(ABSORB_PROPERTY, LayeredStore.ABSORB_ENTRIES), true));
    }
    try (Snapshot s = Snapshot.of(st.layered)) {
      st.latest = Latest.load(st, s);
    } catch (RuntimeException | Error e) {
      st.layered.close();
      throw e;
    }
    return st;
  }

  /**
   * What every value of the staged chunks reads: the layered store while the import stages,
   * the connection's once the chunks are written.
   */
  @Override
  public Store store() {
    return reads;
  }

  /** The store the chunks commit into. */
  Store staging() {
    return layered;
  }

  @Override
  public boolean strict() {
    return conn.strict();
  }

  @Override
  public ValidCache validCache() {
    return validCache;
  }

  /** The value after the last staged chunk (the connection's, before the first). */
  Latest latest() {
    return latest;
  }

  /**
   * Notes a chunk committed into the staging: {@code after} is the value after it. Keeps its
   * report for the listeners when the connection has any (as its commit would).
   */
  void staged(TxReport report, Latest after, int chunkDatoms) {
    if (conn.listened()) {
      reports.add(report);
    }
    latest = after;
    chunks++;
    datoms += chunkDatoms;
  }

  /** The datoms of the staged chunks. */
  long datoms() {
    return datoms;
  }

  /**
   * Writes the staged chunks into the store in one commit, publishes the store's new value on
   * the connection and hands the chunks' reports to its listeners; then closes the layered
   * store (the staged values read the connection's store from then on). Nothing to write when
   * no chunk was staged. The delta goes in as the layered store says
   * ({@link LayeredStore#replacesAll}): every tree rewritten from the merge of the snapshot and
   * the delta ({@link Store#replaceAll}), or the delta's puts and deletes in one write
   * transaction.
   *
   * @throws clojure.lang.ExceptionInfo {@code :import/conflict}, writing nothing, when another
   *     writer committed to the store since the snapshot; the store's own errors (the map
   *     full, say)
   */
  void write() {
    try {
      if (chunks == 0) {
        return;
      }
      if (layered.replacesAll()) {
        try (ReadTxn source = new Guard(layered.beginWriteBack())) {
          target.replaceAll(source);
        }
      } else {
        try (WriteTxn w = target.beginWrite()) {
          checkUnchanged();
          layered.writeDelta(w);
          w.commit();
        }
      }
      reads = target;
      conn.writtenByImport(reports);
    } finally {
      close();
    }
  }

  /** Closes the layered store (its snapshot of the connection's store). Idempotent. */
  void close() {
    layered.close();
  }

  /**
   * Throws {@code :import/conflict} unless the store's last commit is still the one the
   * staging is over. Called holding the store's writer lock, so that none comes after it.
   */
  private void checkUnchanged() {
    try (Snapshot s = Snapshot.of(target)) {
      long t = conn.refreshForImport(s).db().basisT();
      if (t != base.db().basisT()) {
        throw Errors.error("import/conflict", "Another writer committed to the store during"
            + " this staged import (t " + t + "), which was staged on t " + base.db().basisT()
            + ": none of the import was written. Rerun it, or import with :staged false",
            "t", t, "staged-on-t", base.db().basisT());
      }
    }
  }

  /**
   * The staged entries as {@link Store#replaceAll} reads them, which it does holding the
   * store's writer lock: before every read, {@link #checkUnchanged} (a conflict throws, and
   * the store writes nothing). Every read, not only the first: a store may read the source
   * more than once, each time under a writer lock of its own (LMDB's direct commit, which
   * gives up when another writer of LMDB's lock committed while it grew the map, then the
   * generic way), and a check of an earlier pass says nothing of a later one.
   */
  private final class Guard implements ReadTxn {
    private final ReadTxn staged;

    Guard(ReadTxn staged) {
      this.staged = staged;
    }

    private void check() {
      checkUnchanged();
    }

    @Override
    public Cursor cursor(SubDb db) {
      check();
      return staged.cursor(db);
    }

    @Override
    public ByteBuffer get(SubDb db, ByteBuffer key) {
      check();
      return staged.get(db, key);
    }

    @Override
    public boolean ready(SubDb db) {
      return staged.ready(db);
    }

    @Override
    public void close() {
      staged.close();
    }
  }
}
