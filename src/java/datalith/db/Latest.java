package datalith.db;

import datalith.codec.Codec;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import datalith.store.Cursor;
import datalith.store.SubDb;
import datalith.store.WriteTxn;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;

/**
 * The newest database value a connection knows: what the store's META records after a commit
 * (its t, the next entity id, the statistics) with the schema as of that t, and
 * {@code schemaT}, the t of the last transaction that changed the schema (or a later one, up to
 * the value's basis t). Immutable; any thread may use it.
 *
 * <p>It is read from a store ({@link #load}), written into an empty one ({@link #bootstrap}),
 * brought up to the store's last commit, whichever process made it ({@link #refresh}), and
 * moved on by a commit ({@link #commit}), or by transactions staged into one write
 * transaction that commits them together ({@link #stage}). The schema is read again only when
 * the store records a schema change since the value known.
 *
 * <p>A value this connection committed also knows its basis transaction's {@code :db/txInstant}
 * ({@link #instant}), which the next transaction needs (instants never decrease with t): read
 * from the changes it wrote, so that a commit does not look it up in the index again.
 */
public final class Latest {
  /** {@link #instant} of a value loaded from the store: the transaction must read it. */
  public static final long UNKNOWN_INSTANT = Long.MIN_VALUE;

  private final Db db;
  private final long schemaT;
  private final long instant;

  private Latest(Db db, long schemaT, long instant) {
    this.db = db;
    this.schemaT = schemaT;
    this.instant = instant;
  }

  /** The database value: current (no as-of, since or history), without overlay. Never null. */
  public Db db() {
    return db;
  }

  /**
   * The {@code :db/txInstant} of the basis transaction, as epoch milliseconds: what EAVT holds
   * for it once the value is committed; {@link #UNKNOWN_INSTANT} for a value loaded from the
   * store.
   */
  public long instant() {
    return instant;
  }

  /**
   * The latest value of the store of {@code source} as {@code s} reads it; null when the store
   * is empty (never bootstrapped).
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/format} for a store of another format,
   *     {@code :store/corrupt} for one with a basis t but no next entity id
   */
  public static Latest load(Source source, Snapshot s) {
    return load(source, s, null);
  }

  /**
   * As {@link #load(Source, Snapshot)}, keeping {@code known}'s schema when the store records no
   * schema change since {@code known}.
   */
  private static Latest load(Source source, Snapshot s, Latest known) {
    ByteBuffer fb = s.rt.get(SubDb.META, Meta.FORMAT.duplicate());
    long format = fb == null ? Meta.FORMAT_VERSION : Meta.longOf(fb, "format");
    if (format != Meta.FORMAT_VERSION) {
      throw formatError(format);
    }
    long t = s.storeLatestT;
    if (t < 0) {
      return null;
    }
    ByteBuffer nb = s.rt.get(SubDb.META, Meta.NEXT_EID.duplicate());
    if (nb == null) {
      throw Errors.error("store/corrupt", "The store has a basis t but no next entity id", "t", t);
    }
    long nextEid = Meta.longOf(nb, "next-eid");
    ByteBuffer sb = s.rt.get(SubDb.META, Meta.STATS.duplicate());
    Stats stats = sb == null ? Stats.EMPTY : Stats.decode(sb);
    long schemaT = Meta.schemaT(s.rt.get(SubDb.META, Meta.SCHEMA_T.duplicate()), t);
    Schema schema;
    if (known != null && schemaT <= known.db.basisT) {
      schema = known.db.schema; // holds from schemaT on
    } else {
      Db boot = new Db(source, Schema.initial(), t, t, Db.NO_AS_OF, Db.NO_SINCE, false, null,
          nextEid, stats);
      schema = loadSchema(boot, s);
    }
    return new Latest(new Db(source, schema, t, t, Db.NO_AS_OF, Db.NO_SINCE, false, null, nextEid,
        stats), schemaT, UNKNOWN_INSTANT);
  }

  private static RuntimeException formatError(long format) {
    String how = format == Meta.FORMAT_NO_CHECKSUMS
        ? ": it was written before log records had checksums. Copy it into the current format"
          + " with `datalith repair DIR NEWDIR` (d/rebuild-indexes), which leaves it untouched"
        : ", not " + Meta.FORMAT_VERSION + ": written by another version of datalith";
    return Errors.error("store/format", "The store has on-disk format " + format + how,
        "format", format, "supported", Meta.FORMAT_VERSION);
  }

  /** The schema that {@code boot} (with the initial schema) reads through {@code s}. */
  private static Schema loadSchema(Db boot, Snapshot s) {
    List<Object[]> triples = new ArrayList<>();
    for (long aid = Schema.IDENT; aid <= Schema.ATTR_PREDS; aid++) {
      if (!Schema.isSchemaAttr(aid) && aid != Schema.ATTR_PREDS) {
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

  /**
   * Checks that the store {@code s} reads holds nothing at all, as a store to bootstrap must: one
   * without a basis t that holds data is damaged (its META t lost or unreadable), and writing a
   * bootstrap into it would write into damaged pages, which LMDB's own code does unchecked.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} naming a sub-database that holds
   *     an entry
   */
  public static void checkEmpty(Snapshot s) {
    for (SubDb db : SubDb.values()) {
      try (Cursor c = s.rt.cursor(db)) {
        if (c.first()) {
          throw Errors.error("store/corrupt", "The store holds data but no basis t: it is"
              + " damaged (run d/verify, or datalith repair from its log)", "sub-database",
              db.name());
        }
      }
    }
  }

  /**
   * Writes transaction 0 into the empty store of {@code source} through {@code wt} (the
   * bootstrap schema, and the format) and commits it; returns its value. The caller has read the
   * store under {@code wt} and found it empty.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/conflict} when the store holds a t after all
   *     (a writer that ignored the store's writer lock), writing nothing
   */
  public static Latest bootstrap(Source source, WriteTxn wt) {
    Schema schema = Schema.initial();
    long tx = Db.tToTx(0);
    List<TxChange> changes = new ArrayList<>();
    for (Object[] d : Schema.bootstrap()) {
      long e = (Long) d[0];
      long aid = (Long) d[1];
      Attr a = schema.attr(aid);
      Object v = d[2];
      changes.add(new TxChange(new Datom(e, aid, a.ident, v, tx, true), a,
          Codec.encode(v, a.valueType), tx));
    }
    Attr inst = schema.attr(Schema.TX_INSTANT);
    Date epoch = new Date(0);
    changes.add(new TxChange(new Datom(tx, inst.id, inst.ident, epoch, tx, true), inst,
        Codec.encode(epoch, inst.valueType), tx));
    Stats stats = Stats.EMPTY.with(changes);
    wt.expect(SubDb.META, Meta.T.duplicate(), null);
    Writes.toStore(wt, changes, 0, Schema.FIRST_USER_ID, stats, 0);
    wt.put(SubDb.META, Meta.FORMAT.duplicate(), Meta.longVal(Meta.FORMAT_VERSION));
    wt.commit();
    return new Latest(new Db(source, schema, 0, 0, Db.NO_AS_OF, Db.NO_SINCE, false, null,
        Schema.FIRST_USER_ID, stats), 0, epoch.getTime());
  }

  /**
   * The latest value as {@code s} reads the store: this one when the store's t is still its
   * basis t, else the newer commit (another process's), loaded.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when the store has lost its basis
   *     t, besides {@link #load}'s errors
   */
  public Latest refresh(Snapshot s) {
    if (s.storeLatestT == db.basisT) {
      return this;
    }
    Latest l = load(db.source, s, this);
    if (l == null) {
      throw Errors.error("store/corrupt", "The store has lost its basis t");
    }
    return l;
  }

  /**
   * Writes the transaction that {@code changes} make on this value into {@code wt} (its datoms
   * in every index, its log record, the META after it) and commits it; returns the value after
   * it. The caller holds the store's write transaction since it read this value, so nothing
   * commits in between; should a writer that ignores the store's writer lock have, the commit
   * fails with {@code :store/conflict}, writing nothing.
   *
   * @param schema the schema after the transaction ({@code db().schema()} when it changed none)
   * @param t the transaction's t, above this value's basis t
   * @param nextEid the next entity id after the transaction
   */
  public Latest commit(WriteTxn wt, List<TxChange> changes, Schema schema, long t, long nextEid) {
    expectBasis(wt);
    Latest after = stage(wt, changes, schema, t, nextEid);
    wt.commit();
    return after;
  }

  /**
   * Makes the commit of {@code wt} fail with {@code :store/conflict}, writing nothing, unless
   * the store's t is still this value's basis t when it applies: the guard of a write
   * transaction built on this value against a writer that ignores the store's writer lock.
   */
  public void expectBasis(WriteTxn wt) {
    wt.expect(SubDb.META, Meta.T.duplicate(), Meta.longVal(db.basisT));
  }

  /**
   * Writes the transaction that {@code changes} make on this value into {@code wt}, as
   * {@link #commit} does, without committing: the value after it, which reads right once
   * {@code wt} commits. Several transactions, each staged on the value the previous one
   * returned, commit together (a group commit); the META of the last one is what stays.
   *
   * @param schema the schema after the transaction ({@code db().schema()} when it changed none)
   * @param t the transaction's t, above this value's basis t
   * @param nextEid the next entity id after the transaction
   */
  public Latest stage(WriteTxn wt, List<TxChange> changes, Schema schema, long t, long nextEid) {
    Stats stats = db.stats.with(changes);
    long nextSchemaT = schema == db.schema ? schemaT : t;
    Writes.toStore(wt, changes, t, nextEid, stats, nextSchemaT);
    return new Latest(new Db(db.source, schema, t, t, Db.NO_AS_OF, Db.NO_SINCE, false, null,
        nextEid, stats), nextSchemaT, instantOf(changes, Db.tToTx(t)));
  }

  /**
   * The instant transaction {@code tx} asserts for itself in {@code changes} (at most one:
   * :db/txInstant has cardinality one), else {@link #UNKNOWN_INSTANT}.
   */
  private static long instantOf(List<TxChange> changes, long tx) {
    // the transactor adds its instant last: look from the end
    for (int i = changes.size() - 1; i >= 0; i--) {
      Datom d = changes.get(i).datom;
      if (d.e == tx && d.aid == Schema.TX_INSTANT && d.added) {
        return ((Date) d.v).getTime();
      }
    }
    return UNKNOWN_INSTANT;
  }
}
