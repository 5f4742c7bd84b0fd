package datalith.conn;

import datalith.db.Latest;
import datalith.db.LogOffset;
import datalith.db.Snapshot;
import datalith.store.LmdbStore;
import datalith.store.Store;
import datalith.store.WriteTxn;
import datalith.tx.Transactor;
import java.util.List;

/**
 * A node's catch-up run staged in memory, as a staged import is ({@link Staged}): a layered
 * store over the connection's database, the log's records applied there in order, each its own
 * transaction (its t, its instant, its report, its failure, as {@link Logged#apply} gives them)
 * committed with the log offset after it ({@link LogOffset}), then all of it written into the
 * connection's store in one commit ({@link #write}): the datoms and the offset the last
 * committed record left land together, or neither does.
 *
 * <p>Holds the connection's transaction lock from {@link #begin} to {@link #close}, as
 * {@link Logged#apply} does. Until {@link #write}, the store (and the connection's
 * {@code db}) holds the database as it was before the run: a crash loses the staged records
 * and the node applies them again from the offset its store holds. Used by the node's applier
 * thread only.
 */
public final class StagedLog implements AutoCloseable {
  private final Conn conn;
  private final Staged staged;
  private long next; // the offset after the last record applied (committed or failed alone)

  private StagedLog(Conn conn, Staged staged, long next) {
    this.conn = conn;
    this.staged = staged;
    this.next = next;
  }

  /**
   * Takes the connection's transaction lock and begins a staging over its database, whatever
   * the size of its store; null, the lock released, when its store is not an LMDB store: the
   * run then applies its records into the store ({@link Logged#apply}).
   */
  public static StagedLog begin(Conn conn) {
    Store store = conn.store();
    if (!(store instanceof LmdbStore)) {
      return null;
    }
    conn.lockForLog();
    try {
      Staged st = Staged.begin(conn, store);
      try {
        return new StagedLog(conn, st, Logged.offset(conn));
      } catch (RuntimeException | Error e) {
        st.close();
        throw e;
      }
    } catch (RuntimeException | Error e) {
      conn.unlockAfterImport();
      throw e;
    }
  }

  /**
   * Applies {@code run}, records of consecutive offsets from {@link #next} on, in order into the
   * staging, each a transaction on the value after the ones before it and committed there with
   * the offset after it. A record that fails (the transactor's ex-info) stages nothing and gets
   * its error as its outcome, as in {@link Logged#apply}.
   *
   * @throws RuntimeException when staging fails (not a record): the node must stop; the records
   *     before the failing one are staged, and {@link #next} is after them
   */
  public void apply(List<Logged.Record> run) {
    for (Logged.Record rec : run) {
      one(rec);
      next = rec.offset() + 1;
    }
  }

  private void one(Logged.Record rec) {
    Store mem = staged.staging();
    try (WriteTxn wt = mem.beginWrite()) {
      Latest base = staged.latest();
      Transactor.Result r;
      try (Snapshot s = Snapshot.of(mem)) {
        r = Transactor.run(base.db(), s, rec.txData(), base.instant(), null, rec.clock());
      } catch (Throwable e) { // its own failure: it alone fails, nothing of it staged
        if (!rec.failsAlone(e, false)) {
          throw e;
        }
        rec.settle(null, e);
        return;
      }
      LogOffset.stage(wt, rec.offset() + 1);
      Latest after = base.commit(wt, r.changes, r.schema, r.t, r.nextEid);
      TxReport report = new TxReport(base.db(), after.db(), r.changes, r.tempids);
      staged.staged(report, after, r.changes.size());
      rec.settle(report, null);
    }
  }

  /** The offset after the last record applied, the next one the run is to apply. */
  public long next() {
    return next;
  }

  /** The datoms of the records staged so far. */
  public long datoms() {
    return staged.datoms();
  }

  /**
   * Writes the staged records into the store in one commit ({@link Staged#write}), with the
   * offset after the last one committed, and publishes the store's new value on the connection
   * (its listeners get the records' reports); nothing when none committed.
   *
   * @throws clojure.lang.ExceptionInfo {@code :import/conflict}, writing nothing, when another
   *     writer committed to the store since the run began; the store's own errors
   */
  public void write() {
    staged.write();
  }

  /**
   * Ends the staging (what {@link #write} did not write is dropped), releases the connection's
   * transaction lock, then delivers the reports to its listeners.
   */
  @Override
  public void close() {
    try {
      staged.close();
    } finally {
      conn.unlockAfterImport();
    }
  }
}
