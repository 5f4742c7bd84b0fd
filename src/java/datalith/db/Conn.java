package datalith.db;

import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import datalith.store.Store;
import datalith.store.SubDb;
import datalith.store.WriteTxn;
import datalith.tx.Transactor;
import datalith.tx.TxChange;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A connection to one database: owns its {@link Store}, serialises transactions, and holds the
 * latest database value. Thread-safe.
 *
 * <p>Several processes may connect to one LMDB directory (the store lets one write transaction
 * of one process run at a time). A transaction takes the store's write transaction first, then
 * reads the last commit, whichever process made it: its t, the next entity id, the statistics
 * and, when it changed, the schema. It builds on that, and commits only if the store's t is
 * still the one it built on. {@link #db()} reads the store's t on each call, so it returns
 * other processes' commits too.
 *
 * <p>The thread running a transaction (its transaction functions, and whatever they call) may
 * neither transact on this connection nor close it: both throw. A transaction function must not
 * wait for another thread's transaction on this connection either: that one waits for it.
 */
public final class Conn implements AutoCloseable {
  private final Store store;
  private final ReentrantLock txLock = new ReentrantLock(); // held by the running transaction
  private final Object publishLock = new Object();
  private volatile Latest latest; // never null once open; its t only grows
  private volatile boolean closed;

  /**
   * The newest database value this connection knows, and the t of the last transaction that
   * changed the schema, or a later one up to {@code db.basisT}.
   */
  private record Latest(Db db, long schemaT) {}

  private Conn(Store store) {
    this.store = store;
  }

  /**
   * Opens a connection over {@code store}, writing the bootstrap schema into an empty one.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/format} for a store of another format
   */
  public static Conn open(Store store) {
    Conn c = new Conn(store);
    Latest l;
    try (Snapshot s = c.snapshot()) {
      l = c.load(s, null);
    }
    if (l == null) {
      try (WriteTxn wt = store.beginWrite()) {
        try (Snapshot s = c.snapshot()) {
          l = c.load(s, null); // another process may have bootstrapped it meanwhile
        }
        if (l == null) {
          l = c.bootstrap(wt);
        }
      }
    }
    c.latest = l;
    return c;
  }

  /**
   * The latest value as {@code s} reads the store, with {@code known}'s schema when the store
   * records no schema change since {@code known}; null when the store is empty.
   */
  private Latest load(Snapshot s, Latest known) {
    ByteBuffer fb = s.rt.get(SubDb.META, Meta.FORMAT.duplicate());
    if (fb != null && fb.getLong(0) != Meta.FORMAT_VERSION) {
      throw formatError(fb.getLong(0));
    }
    long t = s.storeLatestT;
    if (t < 0) {
      return null;
    }
    ByteBuffer nb = s.rt.get(SubDb.META, Meta.NEXT_EID.duplicate());
    if (nb == null) {
      throw Errors.error("store/corrupt", "The store has a basis t but no next entity id", "t", t);
    }
    long nextEid = nb.getLong(0);
    ByteBuffer sb = s.rt.get(SubDb.META, Meta.STATS.duplicate());
    Stats stats = sb == null ? Stats.EMPTY : Stats.decode(sb);
    long schemaT = Meta.schemaT(s.rt.get(SubDb.META, Meta.SCHEMA_T.duplicate()), t);
    Schema schema;
    if (known != null && schemaT <= known.db.basisT) {
      schema = known.db.schema; // holds from schemaT on
    } else {
      Db boot = new Db(this, Schema.initial(), t, t, Db.NO_AS_OF, Db.NO_SINCE, false, null,
          nextEid, stats);
      schema = loadSchema(boot, s);
    }
    return new Latest(new Db(this, schema, t, t, Db.NO_AS_OF, Db.NO_SINCE, false, null, nextEid,
        stats), schemaT);
  }

  private static RuntimeException formatError(long format) {
    String how = format == Meta.FORMAT_NO_CHECKSUMS
        ? ": it was written before log records had checksums. Copy it into the current format"
          + " with `datalith repair DIR NEWDIR` (d/rebuild-indexes), which leaves it untouched"
        : ", not " + Meta.FORMAT_VERSION + ": written by another version of datalith";
    return Errors.error("store/format", "The store has on-disk format " + format + how,
        "format", format, "supported", Meta.FORMAT_VERSION);
  }

  private Latest bootstrap(WriteTxn wt) {
    Schema schema = Schema.initial();
    long tx = Db.tToTx(0);
    List<TxChange> changes = new ArrayList<>();
    for (Object[] d : Schema.bootstrap()) {
      long e = (Long) d[0];
      long aid = (Long) d[1];
      Attr a = schema.attr(aid);
      Object v = d[2];
      changes.add(new TxChange(new Datom(e, aid, a.ident, v, tx, true), a,
          datalith.codec.Codec.encode(v, a.valueType), tx));
    }
    Attr inst = schema.attr(Schema.TX_INSTANT);
    java.util.Date epoch = new java.util.Date(0);
    changes.add(new TxChange(new Datom(tx, inst.id, inst.ident, epoch, tx, true), inst,
        datalith.codec.Codec.encode(epoch, inst.valueType), tx));
    Stats stats = Stats.EMPTY.with(changes);
    wt.expect(SubDb.META, Meta.T.duplicate(), null);
    Writes.toStore(wt, changes, 0, Schema.FIRST_USER_ID, stats, 0);
    wt.put(SubDb.META, Meta.FORMAT.duplicate(), Meta.longVal(Meta.FORMAT_VERSION));
    wt.commit();
    return new Latest(new Db(this, schema, 0, 0, Db.NO_AS_OF, Db.NO_SINCE, false, null,
        Schema.FIRST_USER_ID, stats), 0);
  }

  /** The schema that {@code boot} (with the initial schema) reads through {@code s}. */
  private static Schema loadSchema(Db boot, Snapshot s) {
    List<Object[]> triples = new ArrayList<>();
    for (long aid = Schema.IDENT; aid <= Schema.TUPLE_TYPES; aid++) {
      if (!Schema.isSchemaAttr(aid)) {
        continue;
      }
      IndexScan scan = boot.scan(s, Index.AEVT, new KeyBuilder().putLong(aid).view());
      while (scan.next()) {
        Datom d = scan.datom();
        triples.add(new Object[] {d.e, d.aid, d.v});
      }
      scan.close();
    }
    return Schema.fromTriples(triples);
  }

  Store store() {
    if (closed) {
      throw Errors.error("db/closed", "The connection is closed");
    }
    return store;
  }

  /** A read of the store's last commit (of any process). */
  private Snapshot snapshot() {
    return new Snapshot(store().beginRead(), null);
  }

  /**
   * The latest database value: the last commit of any process. Reads the store's t to know
   * (one short read); loads the new t's metadata, and its schema if that changed, when another
   * process committed since.
   */
  public Db db() {
    Latest known = latest;
    try (Snapshot s = snapshot()) {
      return s.storeLatestT == known.db.basisT ? known.db : publish(reload(s, known)).db;
    }
  }

  /** {@link #load} from a store this connection has opened, whose basis t cannot be missing. */
  private Latest reload(Snapshot s, Latest known) {
    Latest l = load(s, known);
    if (l == null) {
      throw Errors.error("store/corrupt", "The store has lost its basis t");
    }
    return l;
  }

  /** Makes {@code l} the latest value unless a newer one is; returns the latest. */
  private Latest publish(Latest l) {
    synchronized (publishLock) {
      if (l.db.basisT > latest.db.basisT) {
        latest = l;
      }
      return latest;
    }
  }

  /**
   * Runs one transaction: all of it is committed (durably, unless the store relaxes fsync) or,
   * on any error, nothing. It is built on the last commit of any process, read after the store's
   * write transaction is taken (so nothing commits in between).
   *
   * @throws clojure.lang.ExceptionInfo {@code :tx/reentrant} from the thread running a
   *     transaction of this connection (a transaction function), besides the transaction's own
   *     errors
   */
  public TxReport transact(Object txData) {
    if (txLock.isHeldByCurrentThread()) {
      throw Errors.error("tx/reentrant", "Cannot transact on a connection from inside one of its"
          + " transactions (a transaction function, or code it calls): return the tx-data from"
          + " the function instead", "tx-data", txData);
    }
    txLock.lock();
    try (WriteTxn wt = store().beginWrite()) {
      Latest base;
      Transactor.Result r;
      try (Snapshot s = snapshot()) {
        Latest known = latest;
        base = s.storeLatestT == known.db.basisT ? known : reload(s, known);
        r = Transactor.run(base.db, s, txData);
      }
      Db before = base.db;
      Stats stats = before.stats.with(r.changes);
      long schemaT = r.schema == before.schema ? base.schemaT : r.t;
      wt.expect(SubDb.META, Meta.T.duplicate(), Meta.longVal(before.basisT));
      Writes.toStore(wt, r.changes, r.t, r.nextEid, stats, schemaT);
      wt.commit();
      Db after = new Db(this, r.schema, r.t, r.t, Db.NO_AS_OF, Db.NO_SINCE, false, null, r.nextEid,
          stats);
      publish(new Latest(after, schemaT));
      return new TxReport(before, after, datoms(r.changes), r.tempids);
    } finally {
      txLock.unlock();
    }
  }

  /** The transaction applied to {@code base} in memory only: nothing is written. */
  public TxReport with(Db base, Object txData) {
    if (base.history) { // Datomic: with is not for history databases
      throw Errors.error("db/history", "Cannot apply with to a history database", "db", base);
    }
    Db before = base.current();
    Transactor.Result r;
    try (Snapshot s = before.snapshot()) {
      r = Transactor.run(before, s, txData);
    }
    Overlay ov = Overlay.copyOf(before.overlay);
    Writes.toOverlay(ov, r.changes, r.t);
    Db after = new Db(this, r.schema, r.t, before.storeT, Db.NO_AS_OF, Db.NO_SINCE, false, ov,
        r.nextEid, before.stats.with(r.changes));
    return new TxReport(before, after, datoms(r.changes), r.tempids);
  }

  private static List<Datom> datoms(List<TxChange> changes) {
    List<Datom> out = new ArrayList<>(changes.size());
    for (TxChange c : changes) {
      out.add(c.datom);
    }
    return out;
  }

  public boolean isClosed() {
    return closed;
  }

  /**
   * Closes the store, after a transaction running on another thread ends. All or nothing: when
   * it throws, the connection stays open. Idempotent.
   *
   * @throws clojure.lang.ExceptionInfo {@code :db/close-in-tx} from the thread running a
   *     transaction of this connection (a transaction function)
   * @throws IllegalStateException when this thread holds a read of the store (a function called
   *     by a query of this connection)
   */
  @Override
  public void close() {
    if (txLock.isHeldByCurrentThread()) {
      throw Errors.error("db/close-in-tx", "Cannot close a connection from inside one of its"
          + " transactions (a transaction function, or code it calls)");
    }
    txLock.lock();
    try {
      if (!closed) {
        closed = true;
        try {
          store.close();
        } catch (RuntimeException e) {
          closed = false; // the store refused before closing anything
          throw e;
        }
      }
    } finally {
      txLock.unlock();
    }
  }
}
