package datalith.conn;

import datalith.db.Errors;
import datalith.db.Latest;
import datalith.db.Snapshot;
import datalith.db.Source;
import datalith.db.ValidCache;
import datalith.store.Cursor;
import datalith.store.MemStore;
import datalith.store.ReadTxn;
import datalith.store.Store;
import datalith.store.SubDb;
import datalith.store.WriteTxn;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * An import staged in memory ({@link Import}): the connection's database copied into a fresh
 * {@link MemStore}, the import's chunks committed there one by one, each its own transaction as
 * on the store itself, then all of it written into the connection's store in one commit
 * ({@link Store#replaceAll}). LMDB's B-tree puts cost several times a MemStore's, and the
 * final write puts every key in order once.
 *
 * <p>It is the source of the values its chunks make (the database values of their reports,
 * database values read the MemStore, which is never closed: they stay valid, and immutable,
 * once the import has ended). Nothing but those values holds the MemStore: the connection's
 * latest value stays the store's until {@link #write}, which publishes the store's new one.
 *
 * <p>The import holds the connection's transaction lock throughout, so no transaction of this
 * connection commits meanwhile. Another writer of the store (another process, or another
 * connection to the directory) may: the write then refuses with {@code :import/conflict},
 * writing nothing, rather than lose that commit ({@link Guard}). Used by the import's thread
 * only. A node's catch-up run stages its log records the same way ({@link StagedLog}).
 */
final class Staged implements Source {
  private final Conn conn;
  private final Store target;
  private final Latest base; // the connection's value that was copied, read from target
  private final MemStore mem = MemStore.open(); // never closed: the staged values read it
  private final ValidCache validCache = new ValidCache();
  private final List<TxReport> reports = new ArrayList<>(); // for the listeners, commit order
  private Latest latest; // the value after the last staged chunk, read from mem
  private long chunks; // staged
  private long datoms; // of the staged chunks

  private Staged(Conn conn, Store target, Latest base) {
    this.conn = conn;
    this.target = target;
    this.base = base;
  }

  /**
   * Copies the database of {@code conn} (its store {@code target}) into a new staging; null,
   * copying nothing, when the store holds more than {@code maxEntries} entries (of every
   * sub-database). Holds the store's write transaction while it reads, so that the copy and
   * the value it is of are one commit; writes nothing there.
   */
  static Staged copy(Conn conn, Store target, long maxEntries) {
    try (WriteTxn lock = target.beginWrite()) {
      Latest base;
      try (Snapshot s = Snapshot.of(target)) {
        base = conn.refreshForImport(s);
      }
      Staged st = new Staged(conn, target, base);
      try (ReadTxn from = target.beginRead(); WriteTxn to = st.mem.beginWrite()) {
        long entries = 0;
        for (SubDb db : SubDb.values()) {
          Cursor c = from.cursor(db);
          try {
            for (boolean more = c.first(); more; more = c.next()) {
              if (++entries > maxEntries) {
                return null;
              }
              to.put(db, c.key(), c.val());
            }
          } finally {
            c.close();
          }
        }
        to.commit();
      }
      try (Snapshot s = Snapshot.of(st.mem)) {
        st.latest = Latest.load(st, s);
      }
      return st;
    }
  }

  /** The staging's store: every value of the staged chunks reads it. */
  @Override
  public Store store() {
    return mem;
  }

  @Override
  public boolean strict() {
    return conn.strict();
  }

  @Override
  public ValidCache validCache() {
    return validCache;
  }

  /** The value after the last staged chunk (the copy's, before the first). */
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
   * the connection and hands the chunks' reports to its listeners. Nothing to write when no
   * chunk was staged.
   *
   * @throws clojure.lang.ExceptionInfo {@code :import/conflict}, writing nothing, when another
   *     writer committed to the store since the copy; the store's own errors (the map full, say)
   */
  void write() {
    if (chunks == 0) {
      return;
    }
    try (ReadTxn source = new Guard(mem.beginRead())) {
      target.replaceAll(source);
    }
    conn.writtenByImport(reports);
  }

  /**
   * The staged entries as {@link Store#replaceAll} reads them, which it does holding the
   * store's writer lock: before the first read, checks that the store's last commit is still
   * the one copied, else throws (and the store writes nothing).
   */
  private final class Guard implements ReadTxn {
    private final ReadTxn staged;
    private boolean checked;

    Guard(ReadTxn staged) {
      this.staged = staged;
    }

    private void check() {
      if (checked) {
        return;
      }
      try (Snapshot s = Snapshot.of(target)) {
        long t = conn.refreshForImport(s).db().basisT();
        if (t != base.db().basisT()) {
          throw Errors.error("import/conflict", "Another writer committed to the store during"
              + " this staged import (t " + t + "), which was staged on t " + base.db().basisT()
              + ": none of the import was written. Rerun it, or import with :staged false",
              "t", t, "staged-on-t", base.db().basisT());
        }
      }
      checked = true;
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
    public void close() {
      staged.close();
    }
  }
}
