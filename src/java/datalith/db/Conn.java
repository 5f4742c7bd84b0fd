package datalith.db;

import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import datalith.store.ReadTxn;
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
 * A connection to one database: owns its {@link Store}, serialises
 * transactions, and holds the latest database value. Thread-safe.
 */
public final class Conn implements AutoCloseable {
  private final Store store;
  private final ReentrantLock txLock = new ReentrantLock();
  private volatile Db db;
  private volatile boolean closed;

  private Conn(Store store) {
    this.store = store;
  }

  /** Opens a connection over {@code store}, writing the bootstrap schema into an empty one. */
  public static Conn open(Store store) {
    Conn c = new Conn(store);
    Long t;
    Long nextEid;
    Stats stats;
    try (ReadTxn rt = store.beginRead()) {
      ByteBuffer tb = rt.get(SubDb.META, Meta.T.duplicate());
      ByteBuffer nb = rt.get(SubDb.META, Meta.NEXT_EID.duplicate());
      ByteBuffer fb = rt.get(SubDb.META, Meta.FORMAT.duplicate());
      if (fb != null && fb.getLong(0) != Meta.FORMAT_VERSION) {
        throw formatError(fb.getLong(0));
      }
      t = tb == null ? null : tb.getLong(0);
      nextEid = nb == null ? null : nb.getLong(0);
      ByteBuffer sb = rt.get(SubDb.META, Meta.STATS.duplicate());
      stats = sb == null ? Stats.EMPTY : Stats.decode(sb);
    }
    if (t == null) {
      c.bootstrap();
    } else {
      Db boot = new Db(c, Schema.initial(), t, t, Db.NO_AS_OF, Db.NO_SINCE, false, null, nextEid,
          stats);
      c.db = new Db(c, loadSchema(boot), t, t, Db.NO_AS_OF, Db.NO_SINCE, false, null, nextEid,
          stats);
    }
    return c;
  }

  private static RuntimeException formatError(long format) {
    String how = format == Meta.FORMAT_NO_CHECKSUMS
        ? ": it was written before log records had checksums. Copy it into the current format"
          + " with `datalith repair DIR NEWDIR` (d/rebuild-indexes), which leaves it untouched"
        : ", not " + Meta.FORMAT_VERSION + ": written by another version of datalith";
    return Errors.error("store/format", "The store has on-disk format " + format + how,
        "format", format, "supported", Meta.FORMAT_VERSION);
  }

  private void bootstrap() {
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
    try (WriteTxn wt = store.beginWrite()) {
      Writes.toStore(wt, changes, 0, Schema.FIRST_USER_ID, stats);
      wt.put(SubDb.META, Meta.FORMAT.duplicate(), Meta.longVal(Meta.FORMAT_VERSION));
      wt.commit();
    }
    db = new Db(this, schema, 0, 0, Db.NO_AS_OF, Db.NO_SINCE, false, null, Schema.FIRST_USER_ID,
        stats);
  }

  private static Schema loadSchema(Db boot) {
    List<Object[]> triples = new ArrayList<>();
    try (Snapshot s = boot.snapshot()) {
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
    }
    return Schema.fromTriples(triples);
  }

  Store store() {
    if (closed) {
      throw Errors.error("db/closed", "The connection is closed");
    }
    return store;
  }

  /** The latest database value. */
  public Db db() {
    if (closed) {
      throw Errors.error("db/closed", "The connection is closed");
    }
    return db;
  }

  /**
   * Runs one transaction: all of it is committed (durably, unless the store
   * relaxes fsync) or, on any error, nothing.
   */
  public TxReport transact(Object txData) {
    txLock.lock();
    try {
      Db before = db();
      Transactor.Result r;
      try (Snapshot s = before.snapshot()) {
        r = Transactor.run(before, s, txData);
      }
      Stats stats = before.stats.with(r.changes);
      try (WriteTxn wt = store().beginWrite()) {
        Writes.toStore(wt, r.changes, r.t, r.nextEid, stats);
        wt.commit();
      }
      Db after = new Db(this, r.schema, r.t, r.t, Db.NO_AS_OF, Db.NO_SINCE, false, null, r.nextEid,
          stats);
      db = after;
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

  /** Closes the store; waits for a running transaction to finish first. */
  @Override
  public void close() {
    txLock.lock();
    try {
      if (!closed) {
        closed = true;
        store.close();
      }
    } finally {
      txLock.unlock();
    }
  }
}
