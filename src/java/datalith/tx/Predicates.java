package datalith.tx;

import clojure.lang.ExceptionInfo;
import clojure.lang.Keyword;
import clojure.lang.PersistentVector;
import clojure.lang.Symbol;
import clojure.lang.Var;
import datalith.codec.Codec;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Fns;
import datalith.db.IndexScan;
import datalith.db.Schema;
import datalith.db.Snapshot;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Attribute predicates and entity specs, as Datomic's. An attribute's {@code :db.attr/preds}
 * (fully qualified symbols of functions of one value) are called on every value a transaction
 * asserts for it, as the schema was before the transaction; a retraction calls none. Asserting
 * {@code [:db/add e :db/ensure spec]} stores nothing: it checks entity e, once the transaction
 * is applied, against the spec entity's {@code :db.entity/attrs} (attributes e must have) and
 * {@code :db.entity/preds} (functions of the database after the transaction and e), and
 * retracting it does nothing. A predicate that returns false or nil, or throws, refuses the
 * transaction.
 */
final class Predicates {
  private Predicates() {}

  /**
   * {@code ops} (resolved: ids only) without their {@code :db/ensure} operations, which no slot
   * takes: the same list when there are none. Adds the [entity, spec] pair of each
   * {@code :db/ensure} assertion to {@code ensures}, in order, each pair once.
   */
  static List<Op> takeEnsures(List<Op> ops, List<long[]> ensures) {
    List<Op> rest = null;
    Set<List<Long>> seen = null;
    for (int i = 0; i < ops.size(); i++) {
      Op op = ops.get(i);
      if (op.attr() == null || op.attr().id != Schema.ENSURE) {
        if (rest != null) {
          rest.add(op);
        }
        continue;
      }
      if (rest == null) {
        rest = new ArrayList<>(ops.subList(0, i));
        seen = new LinkedHashSet<>();
      }
      if (op.kind() == Op.Kind.ADD && seen.add(List.of((Long) op.e(), (Long) op.v()))) {
        ensures.add(new long[] {(Long) op.e(), (Long) op.v()});
      }
    }
    return rest == null ? ops : rest;
  }

  /**
   * Calls the {@code :db.attr/preds} of {@code schema} (the schema before the transaction) on
   * each value {@code ops} (resolved, and applied: their values are of their attributes' types)
   * assert, a value the entity already has too, as Datomic does.
   *
   * @throws ExceptionInfo {@code :tx/attr-pred} for a value a predicate refuses, or when a
   *     predicate cannot be found or throws (an ex-info of datalith's own passes through)
   */
  static void checkAttrs(Schema schema, List<Op> ops) {
    if (!schema.hasAttrPreds()) {
      return;
    }
    for (Op op : ops) {
      if (op.kind() != Op.Kind.ADD && op.kind() != Op.Kind.CAS) {
        continue;
      }
      Attr a = schema.attr(op.attr().id);
      if (a == null || a.preds == null) {
        continue;
      }
      Object v = Codec.coerce(op.v(), a.valueType);
      for (Symbol pred : a.preds) {
        Object ret = call(pred, "tx/attr-pred", "attribute " + a.ident, v);
        if (ret == null || Boolean.FALSE.equals(ret)) {
          throw Errors.error("tx/attr-pred", "Entity " + op.e() + " attribute " + a.ident
              + " value " + Printed.brief(v) + " failed pred " + pred, "entity", op.e(),
              "attribute", a.ident, "value", v, "pred", pred, "pred-return", ret);
        }
      }
    }
  }

  /**
   * Checks each [entity, spec] of {@code ensures} against {@code after}, the database with the
   * transaction applied: the spec's required attributes first, then its predicates.
   *
   * @throws ExceptionInfo {@code :tx/entity-attrs} naming the attributes an entity lacks,
   *     {@code :tx/entity-pred} for a predicate that refuses it, cannot be found or throws
   */
  static void checkEntities(Db after, List<long[]> ensures) {
    Schema schema = after.schema();
    try (Snapshot s = after.snapshot()) {
      for (long[] ensure : ensures) {
        long e = ensure[0];
        long spec = ensure[1];
        Keyword specIdent = schema.ident(spec);
        Object specName = specIdent != null ? specIdent : spec;
        List<Object> missing = new ArrayList<>();
        for (Object k : values(after, s, spec, Schema.ENTITY_ATTRS)) {
          Long aid = schema.entid((Keyword) k);
          if (aid == null || !has(after, s, e, aid)) {
            missing.add(k);
          }
        }
        if (!missing.isEmpty()) {
          throw Errors.error("tx/entity-attrs", "Entity " + e + " is missing attributes "
              + PersistentVector.create(missing) + " of spec " + specName,
              "entity", e, "spec", specName, "missing", PersistentVector.create(missing));
        }
        for (Object p : values(after, s, spec, Schema.ENTITY_PREDS)) {
          Symbol pred = (Symbol) p;
          Object ret = call(pred, "tx/entity-pred", "spec " + specName, after, e);
          if (ret == null || Boolean.FALSE.equals(ret)) {
            throw Errors.error("tx/entity-pred", "Entity " + e + " failed pred " + pred
                + " of spec " + specName, "entity", e, "spec", specName, "pred", pred,
                "pred-return", ret);
          }
        }
      }
    }
  }

  // the values entity e has for attribute aid in db
  private static List<Object> values(Db db, Snapshot s, long e, long aid) {
    List<Object> out = new ArrayList<>();
    IndexScan scan = db.scan(s, Index.EAVT, new KeyBuilder().putLong(e).putLong(aid).view());
    while (scan.next()) {
      out.add(scan.datom().v);
    }
    scan.close();
    return out;
  }

  private static boolean has(Db db, Snapshot s, long e, long aid) {
    IndexScan scan = db.scan(s, Index.EAVT, new KeyBuilder().putLong(e).putLong(aid).view());
    boolean found = scan.next();
    scan.close();
    return found;
  }

  // (pred args...), the errors of a predicate that cannot be called or throws named by key
  private static Object call(Symbol pred, String key, String whose, Object... args) {
    Var f;
    try {
      f = Fns.resolve(pred);
    } catch (Exception ex) {
      throw Errors.errorWithCause(ex, key, "Cannot load the pred " + pred + " of " + whose,
          "pred", pred);
    }
    if (f == null || !f.isBound()) {
      throw Errors.error(key, "No function " + pred + " (a pred of " + whose + ")", "pred", pred);
    }
    try {
      return f.applyTo(clojure.lang.ArraySeq.create(args));
    } catch (ExceptionInfo ex) {
      if (Transactor.isDatalithError(ex)) {
        throw ex;
      }
      throw Errors.errorWithCause(ex, key, "The pred " + pred + " of " + whose + " threw: "
          + ex.getMessage(), "pred", pred, "data", ex.getData());
    } catch (Exception | StackOverflowError ex) {
      throw Errors.errorWithCause(ex, key, "The pred " + pred + " of " + whose + " threw: " + ex,
          "pred", pred);
    }
  }
}
