package datalith.conn;

import clojure.lang.ExceptionInfo;
import clojure.lang.IFn;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import datalith.db.Errors;
import datalith.db.Latest;
import datalith.db.Snapshot;
import datalith.store.LmdbStore;
import datalith.store.Store;
import datalith.store.WriteTxn;
import datalith.tx.LookupCache;
import datalith.tx.Transactor;
import java.util.Iterator;
import java.util.Map;

/**
 * Bulk import: a sequence of chunks of tx-data, each committed as its own transaction (its own
 * t, {@code :db/txInstant} and log record, with {@code transact}'s semantics), holding the
 * connection's transaction lock throughout and with the store's fsync paused until the end
 * ({@link Store#pauseSync}): the import's commits reach the disk once, when it ends, whether
 * it ends well or not.
 *
 * <p>The entities the chunks' lookup refs find are kept for the later chunks ({@link LookupCache}:
 * an import names the same entities in chunk after chunk), as long as no chunk changes their
 * attribute.
 *
 * <p>A chunk is a tx-data, or a record {@code {:t t :tx-data tx-data}} as {@code export} writes
 * them: a record imports only as transaction {@code t} (the next one of the database), so that
 * its explicit entity ids mean what they meant in the database it came from; with
 * {@code resume} the records already imported (t up to the database's basis t) are skipped.
 * {@code skip} skips the source's first chunks (a rerun of a tx-data source that stopped).
 *
 * <p>A chunk that fails stops the import: the ex-info {@code transact} gives, with
 * {@code :import/chunk} (its index in the source, from 0) and {@code :import/report} (what was
 * imported before it, committed) added to its data. The progress function is called with a map
 * after every committed (or staged) chunk; when it returns {@code :stop}, the import stops there
 * and its report says where ({@code :stopped-at}, the index of the next chunk).
 *
 * <p>Staging: into an LMDB store, whatever it holds already, or whenever {@link Staging} says
 * so, the import lays a store in memory over a snapshot of the database ({@code Staged}, a
 * {@code LayeredStore}: nothing is copied), commits its chunks there exactly as above (each its
 * own transaction), and at the end writes what they changed into the store in one commit; also
 * when a chunk or the source fails, or the progress function stops it (what was staged before
 * is written, then the error thrown or the report returned). Past its budget of staged datoms
 * it writes what it staged and commits the rest chunk by chunk into the store. While it
 * stages, the connection's {@code db} (and every other reader of the store) sees the database
 * as it was before the import; the database values of the staged chunks' reports (for the
 * listeners) stay valid afterwards. Another writer committing to the store meanwhile (another
 * process) makes the final write refuse ({@code :import/conflict}) rather than lose that
 * commit: the import then commits nothing.
 *
 * <p>Durability: while chunks commit into the store, a crash of the JVM loses nothing committed,
 * and one of the operating system may lose the chunks committed since the import began (LMDB's
 * MDB_NOSYNC; every commit is whole, so what survives is a prefix of the chunks, which a rerun
 * with {@code resume}/{@code skip} completes). A staged import's chunks reach the store only
 * with its final write: a crash of the JVM (or of the system) before it loses every staged
 * chunk, and the store holds the database as it was before the import (or, after a budget's
 * write, as that write left it), which a rerun with {@code resume}/{@code skip} completes. When
 * the import returns or throws, every chunk its report counts is on disk.
 */
public final class Import {
  private static final Keyword T = Keyword.intern("t");
  private static final Keyword TX_DATA = Keyword.intern("tx-data");
  private static final Keyword STOP = Keyword.intern("stop");
  private static final Keyword CHUNK = Keyword.intern("chunk");
  private static final Keyword TRANSACTIONS = Keyword.intern("transactions");
  private static final Keyword DATOMS = Keyword.intern("datoms");
  private static final Keyword ELAPSED = Keyword.intern("elapsed-ms");
  private static final Keyword BASIS_T = Keyword.intern("basis-t");
  private static final Keyword T_FIRST = Keyword.intern("t-first");
  private static final Keyword T_LAST = Keyword.intern("t-last");
  private static final Keyword SKIPPED = Keyword.intern("skipped");
  private static final Keyword STOPPED_AT = Keyword.intern("stopped-at");
  private static final Keyword IMPORT_CHUNK = Keyword.intern("import", "chunk");
  private static final Keyword IMPORT_REPORT = Keyword.intern("import", "report");

  private final Conn conn;
  private final IFn progress; // may be null
  private final long start = System.nanoTime();
  private long chunk; // index in the source of the chunk at hand
  private long transactions;
  private long datoms;
  private long skipped;
  private long tFirst = -1;
  private long tLast = -1;
  private long stoppedAt = -1;
  private final LookupCache lookups = new LookupCache(); // lookup refs found, across chunks
  private long lastT = -1; // the t of the chunk committed last, as the lookups know
  private Staged staged; // null: each chunk commits into the store

  private Import(Conn conn, IFn progress) {
    this.conn = conn;
    this.progress = progress;
  }

  /**
   * Whether an import stages its chunks in memory: {@code staged} true always, false never,
   * null (auto) into an LMDB store (a {@code MemStore}'s puts are what staging would do); once
   * {@code budget} datoms are staged, they are written and the rest of the import commits chunk
   * by chunk into the store.
   */
  public record Staging(Boolean staged, long budget) {
    /** Auto, with {@link #defaultBudget}. */
    public static final Staging AUTO = new Staging(null, defaultBudget());
  }

  /**
   * The heap a staged datom takes, rounded up: its index entries and log bytes in the staging's
   * delta, a {@code MemStore} (the 1M tracker import: 442 bytes a datom retained).
   */
  static final long STAGED_BYTES_PER_DATOM = 500;

  /**
   * The default staging budget: 16M datoms, or fewer so that the staged datoms take at most a
   * third of the JVM's largest heap (the import's source and its garbage need the rest): with
   * 8 GB, 5.7M datoms; with 1 GB, 715K.
   */
  public static long defaultBudget() {
    return Math.min(16_000_000L, Runtime.getRuntime().maxMemory() / 3 / STAGED_BYTES_PER_DATOM);
  }

  /**
   * Imports {@code chunks} into {@code conn}; returns the report {@code {:transactions
   * :datoms :t-first :t-last :skipped :stopped-at :elapsed-ms}} (t-first and t-last nil when
   * nothing was imported, stopped-at nil unless the progress function stopped it).
   *
   * @param progress called with {@code {:chunk :transactions :datoms :basis-t :elapsed-ms}}
   *     after each committed chunk, or null
   * @param skip how many chunks to skip at the source's start
   * @param resume whether to skip the records whose t the database has
   * @throws ExceptionInfo the failing chunk's error with {@code :import/chunk} and
   *     {@code :import/report}; {@code :import/record-t} for a record out of its place;
   *     {@code :tx/reentrant} from a transaction function of this connection
   */
  public static IPersistentMap run(Conn conn, Iterator<?> chunks, IFn progress, long skip,
      boolean resume) {
    return run(conn, chunks, progress, skip, resume, Staging.AUTO);
  }

  /**
   * As {@link #run(Conn, Iterator, IFn, long, boolean)}, staged as {@code staging} says.
   *
   * @throws ExceptionInfo besides those of the other {@code run}: {@code :import/conflict}
   *     when another writer committed to the store during a staged import, which then writes
   *     nothing of what it staged
   */
  public static IPersistentMap run(Conn conn, Iterator<?> chunks, IFn progress, long skip,
      boolean resume, Staging staging) {
    Import im = new Import(conn, progress);
    Store store = conn.store();
    conn.lockForImport();
    try (Store.SyncPause pause = store.pauseSync()) {
      if (staging.staged() != null ? staging.staged() : store instanceof LmdbStore) {
        im.staged = Staged.begin(conn, store);
      }
      try {
        im.each(store, chunks, skip, resume, staging.budget());
      } catch (Throwable e) { // what was staged before the failure is committed, as it would be
        im.writeStaged(e);
        throw e;
      }
      im.writeStaged(null);
    } finally {
      conn.unlockAfterImport();
    }
    return im.report();
  }

  /**
   * Writes what is staged, if anything, into the store; then the import goes on chunk by
   * chunk. When that fails, nothing of the import is committed: throws the failure with
   * {@code :import/report} saying so ({@code failed}, the error the import was stopping with,
   * suppressed in it).
   */
  private void writeStaged(Throwable failed) {
    if (staged == null) {
      return;
    }
    Staged st = staged;
    staged = null;
    try {
      st.write();
    } catch (RuntimeException e) {
      transactions = 0; // a staging begins with the import: nothing of it is committed
      datoms = 0;
      tFirst = -1;
      tLast = -1;
      ExceptionInfo x = e instanceof ExceptionInfo i && i.getData() != null ? i
          : Errors.errorWithCause(e, "import/failed", "The import failed: " + e);
      ExceptionInfo out = new ExceptionInfo(x.getMessage(),
          x.getData().assoc(IMPORT_REPORT, report()), x.getCause());
      out.setStackTrace(x.getStackTrace());
      if (failed != null) {
        out.addSuppressed(failed);
      }
      throw out;
    }
  }

  private void each(Store store, Iterator<?> chunks, long skip, boolean resume, long budget) {
    for (chunk = 0; hasNext(chunks); chunk++) {
      Object c = next(chunks);
      if (chunk < skip) {
        skipped++;
        continue;
      }
      Object data = c;
      long recordT = -1;
      if (c instanceof Map<?, ?> m && m.containsKey(TX_DATA)) {
        data = m.get(TX_DATA);
        recordT = m.get(T) instanceof Number n ? n.longValue() : -1;
        if (m.get(T) != null && !(m.get(T) instanceof Long || m.get(T) instanceof Integer)) {
          throw withChunk(Errors.error("import/record-t", "A record's :t is a t (a long)",
              "t", m.get(T)));
        }
      }
      try {
        if (!one(store, data, recordT, resume)) {
          skipped++;
          continue;
        }
      } catch (RuntimeException e) {
        throw withChunk(e);
      }
      if (staged != null && staged.datoms() >= budget) {
        writeStaged(null);
      }
      if (progress != null && STOP.equals(progress())) {
        stoppedAt = chunk + 1;
        return;
      }
    }
  }

  /**
   * What the progress function returns for the chunk just committed; its failure stops the
   * import as a failing chunk does (the chunk committed stays so, and the ex-info says how far
   * the import got).
   */
  private Object progress() {
    try {
      return progress.invoke(progressMap());
    } catch (RuntimeException e) {
      throw withChunk(e);
    }
  }

  private boolean hasNext(Iterator<?> chunks) {
    try {
      return chunks.hasNext();
    } catch (RuntimeException e) {
      throw withChunk(e); // the source failed (an EDN reader, say)
    }
  }

  private Object next(Iterator<?> chunks) {
    try {
      return chunks.next();
    } catch (RuntimeException e) {
      throw withChunk(e);
    }
  }

  /**
   * Commits one chunk, into the staging when there is one; false when it is a record the
   * database has (skipped).
   */
  private boolean one(Store store, Object data, long recordT, boolean resume) {
    Staged st = staged;
    Store into = st != null ? st.staging() : store;
    try (WriteTxn wt = into.beginWrite()) {
      Latest base;
      Transactor.Result r;
      try (Snapshot s = Snapshot.of(into)) {
        base = st != null ? st.latest() : conn.refreshForImport(s);
        long next = base.db().basisT() + 1;
        if (recordT >= 0 && recordT != next) {
          if (resume && recordT < next) {
            return false;
          }
          throw Errors.error("import/record-t", "The exported record of t " + recordT
              + " imports only as transaction " + recordT + ", and the database's next is "
              + next + (recordT < next ? " (rerun with :resume? true to skip the records it has)"
              : ""), "t", recordT, "next-t", next);
        }
        lookups.continues(base.db(), lastT);
        r = Transactor.run(base.db(), s, data, base.instant(), lookups);
      }
      Latest after = base.commit(wt, r.changes, r.schema, r.t, r.nextEid);
      lookups.committed(r.changes, base.db().schema(), r.schema);
      lastT = r.t;
      TxReport report = new TxReport(base.db(), after.db(), r.changes, r.tempids);
      if (st != null) {
        st.staged(report, after, r.changes.size());
      } else {
        conn.committedByImport(report, after);
      }
      transactions++;
      datoms += r.changes.size();
      tFirst = tFirst < 0 ? r.t : tFirst;
      tLast = r.t;
      return true;
    }
  }

  /** {@code e}, an error of the chunk at hand, with {@code :import/chunk} and the report. */
  private ExceptionInfo withChunk(RuntimeException e) {
    ExceptionInfo info = e instanceof ExceptionInfo x && x.getData() != null ? x
        : Errors.errorWithCause(e, "import/failed", "The import failed: " + e);
    IPersistentMap data = info.getData().assoc(IMPORT_CHUNK, chunk).assoc(IMPORT_REPORT, report());
    return new ExceptionInfo(info.getMessage() + " (import chunk " + chunk + ")", data, info);
  }

  private long elapsedMs() {
    return (System.nanoTime() - start) / 1_000_000;
  }

  private IPersistentMap progressMap() {
    return PersistentArrayMap.createAsIfByAssoc(new Object[] {CHUNK, chunk, TRANSACTIONS,
        transactions, DATOMS, datoms, BASIS_T, tLast, ELAPSED, elapsedMs()});
  }

  private IPersistentMap report() {
    return PersistentArrayMap.createAsIfByAssoc(new Object[] {TRANSACTIONS, transactions,
        DATOMS, datoms, T_FIRST, tFirst < 0 ? null : tFirst, T_LAST, tLast < 0 ? null : tLast,
        SKIPPED, skipped, STOPPED_AT, stoppedAt < 0 ? null : stoppedAt, ELAPSED, elapsedMs()});
  }
}
