package datalith.api;

import datalith.conn.With;
import datalith.db.Db;
import datalith.db.Entity;
import datalith.db.Snapshot;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.pull.Puller;
import datalith.query.Engine;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;

/**
 * An immutable database value. Results are {@code java.util} collections
 * (Clojure's persistent ones, read-only): a relation query gives a
 * {@code Set<List<Object>>} (with {@code :with} and no aggregate, a
 * {@code List<List<Object>>} that keeps the repeats {@code :with} makes), a
 * collection query a {@code List}, a scalar query the value; keywords are
 * {@code clojure.lang.Keyword}s ({@link Datalith#kw}).
 */
public final class Database {
  private final Db db;

  Database(Db db) {
    this.db = db;
  }

  /** The Clojure-level value, for mixing with {@code datalith.core}. */
  public Db unwrap() {
    return db;
  }

  /** The t of the last transaction this value includes. */
  public long basisT() {
    return db.basisT();
  }

  /**
   * Runs a Datalog query given as EDN text (vector or map form) or data, with
   * one input per {@code :in} element after {@code $}, which is this database.
   */
  public Object q(Object query, Object... inputs) {
    Object[] all = new Object[inputs.length + 1];
    all[0] = db;
    for (int i = 0; i < inputs.length; i++) {
      all[i + 1] = inputs[i] instanceof Database d ? d.db : inputs[i];
    }
    return Engine.q(Edn.read(query, "query"), all, null);
  }

  /** The entity as a map shaped by {@code pattern} (EDN text or data); null when it has nothing. */
  @SuppressWarnings("unchecked")
  public Map<Object, Object> pull(Object pattern, Object eid) {
    return (Map<Object, Object>) Puller.pull(db, Edn.read(pattern, "pull pattern"), eid);
  }

  /** {@link #pull} of each entity, in order, through one read. */
  @SuppressWarnings("unchecked")
  public List<Map<Object, Object>> pullMany(Object pattern, List<?> eids) {
    return (List<Map<Object, Object>>) Puller.pullMany(db, Edn.read(pattern, "pull pattern"),
        eids);
  }

  /**
   * Every attribute of an entity, refs as {@link Entity} values (themselves
   * lookups by keyword); null when {@code eid} names no entity.
   */
  @SuppressWarnings("unchecked")
  public Map<Object, Object> entity(Object eid) {
    try (Snapshot s = db.snapshot()) {
      long e = db.entid(s, eid);
      return e < 0 ? null : (Map<Object, Object>) new Entity(db, e).toMap();
    }
  }

  /** The datoms of {@code index} ("eavt", "aevt", "avet", "vaet") under leading components. */
  @SuppressWarnings("unchecked")
  public List<Datom> datoms(String index, Object... components) {
    Index ix = Index.valueOf(index.toUpperCase(java.util.Locale.ROOT));
    byte[] prefix = db.keyFor(ix, components);
    List<Datom> out = new ArrayList<>();
    byte[] resume = null;
    while (prefix != null) {
      Object[] chunk = db.chunk(ix, prefix, null, null, resume, 4096);
      out.addAll((List<Datom>) chunk[0]);
      resume = (byte[]) chunk[1];
      if (resume == null) {
        break;
      }
    }
    return out;
  }

  /** This database as of a t, a transaction id or a {@link Date}. */
  public Database asOf(Object point) {
    return new Database(db.asOf(point));
  }

  /** Only what was asserted after a t, a transaction id or a {@link Date}. */
  public Database since(Object point) {
    return new Database(db.since(point));
  }

  /** Every assertion and retraction. */
  public Database history() {
    return new Database(db.historyView());
  }

  /** The database after {@code txData} (EDN text or data), in memory only. */
  public TxResult with(Object txData) {
    return new TxResult(With.run(db, Edn.read(txData, "tx-data")));
  }
}
