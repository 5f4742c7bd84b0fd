package datalith.tx;

import clojure.lang.Keyword;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Schema;
import datalith.db.Snapshot;
import java.util.List;

/**
 * Resolves the entity references of one transaction's tx-data: entity ids
 * (checked and reserved through {@link EntityIds}), tempids and
 * {@code "datomic.tx"} ({@link Tempids}), idents (new ones through
 * {@link PendingAttrs}) and lookup refs, read in the database before the
 * transaction.
 */
final class EntityRefs {
  private static final Keyword CURRENT_TX = Keyword.intern("db", "current-tx");
  /** Deepest nesting of lookup refs in lookup refs ({@code [:a/ref [:a/ref [:b/id 1]]]}). */
  private static final int MAX_LOOKUP_NESTING = 64;

  private final Db db;
  private final Snapshot snap;
  private final Schema schema;
  private final PendingAttrs pending;
  private final Tempids temps;
  private final EntityIds ids;
  private final long tx;
  private final LookupCache lookups; // an import's, or null

  EntityRefs(Db db, Snapshot snap, PendingAttrs pending, Tempids temps, EntityIds ids, long tx,
      LookupCache lookups) {
    this.db = db;
    this.snap = snap;
    this.schema = db.schema();
    this.pending = pending;
    this.temps = temps;
    this.ids = ids;
    this.tx = tx;
    this.lookups = lookups;
  }

  /**
   * The entity {@code x} names: a Long id, or the TempRef of a tempid or of
   * a new ident.
   *
   * @throws clojure.lang.ExceptionInfo when x names no entity, or is no
   *     entity reference
   */
  Object resolve(Object x, Object form) {
    return resolve(x, form, true, 0);
  }

  /** Like {@link #resolve}, but null for an ident or lookup ref that names no entity. */
  Object resolveOrNull(Object x, Object form) {
    return resolve(x, form, false, 0);
  }

  // nesting: how many lookup refs x is inside
  private Object resolve(Object x, Object form, boolean strict, int nesting) {
    if (Tempids.TX_TEMPID.equals(x)) {
      temps.txNamed();
      return tx;
    }
    if (x == CURRENT_TX) {
      return tx;
    }
    if (Tempids.isTempid(x)) {
      return temps.named(x);
    }
    if (x instanceof Long || x instanceof Integer || x instanceof Short) {
      return ids.named(((Number) x).longValue(), form);
    }
    if (x instanceof Keyword k) {
      TempRef fresh = pending.newEntity(k);
      if (fresh != null) {
        return fresh;
      }
      Long e = schema.entid(k);
      if (e == null && strict) {
        throw Errors.error("tx/unknown-ident", "No entity has the ident " + k
            + (Schema.typeTag(k) >= 0 ? ": this database was made before datalith had " + k
                + " (export it and import the export into a new database to use " + k + ")" : ""),
            "ident", k, "form", form);
      }
      return e;
    }
    if (x instanceof List<?> l && l.size() == 2 && l.get(0) instanceof Keyword k) {
      return lookupRef(k, l.get(1), x, form, strict, nesting);
    }
    throw Errors.error("tx/invalid-entity",
        "Expected an entity id, a tempid, an ident or a lookup ref, not " + Printed.brief(x),
        "entity", x, "form", form);
  }

  /** The entity lookup ref {@code ref}, {@code [k v]}, names (see {@link #resolve}). */
  private Object lookupRef(Keyword k, Object v, Object ref, Object form, boolean strict,
      int nesting) {
    if (nesting >= MAX_LOOKUP_NESTING) {
      throw Errors.error("tx/too-deep", "Lookup refs are nested more than " + MAX_LOOKUP_NESTING
          + " deep", "form", Printed.brief(form));
    }
    Attr a = pending.get(k);
    if (a == null) {
      throw Errors.error("tx/invalid-lookup-ref", "Unknown attribute in lookup ref", "attribute", k,
          "form", form);
    }
    if (!a.isUnique()) {
      throw Errors.error("tx/invalid-lookup-ref", "A lookup ref's attribute must be :db/unique",
          "lookup-ref", ref, "form", form);
    }
    if (a.isRef() && v != null) {
      Object r = resolve(v, form, strict, nesting + 1);
      if (r == null) {
        return null;
      }
      if (!(r instanceof Long)) {
        throw Errors.error("tx/invalid-lookup-ref", "A lookup ref cannot name a tempid",
            "lookup-ref", ref, "form", form);
      }
      v = r;
    }
    // a new attribute has no values yet
    Long e = null;
    if (v != null && !PendingAttrs.isNew(a)) {
      e = lookups == null ? LookupCache.found(db.lookup(snap, a, v)) : lookups.lookup(db, snap, a, v);
    }
    if (e != null) {
      return e;
    }
    if (!strict) {
      return null;
    }
    throw Errors.error("tx/lookup-ref-not-found", "Nothing matches the lookup ref "
        + Printed.brief(ref), "lookup-ref", ref, "form", form);
  }
}
