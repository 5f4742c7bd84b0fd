package datalith.tx;

import clojure.lang.RT;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Snapshot;
import datalith.index.KeyBuilder;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Resolves the tempids of expanded tx-data: upserts through unique
 * identities and unifies the tempids that share one, then gives the rest new
 * ids, and the new attributes theirs. It runs once, after expansion, so the
 * ids it allocates are the transaction's first: every id tx-data names is
 * known by then ({@link EntityIds}).
 */
final class TempidResolver {
  private TempidResolver() {}

  /**
   * {@code ops}, each changed in place: every {@link TempRef} replaced by its
   * entity id and every new attribute by its {@link Attr} with its real id; the
   * tempids of {@code temps} resolved, as the report's {@code :tempids} shows them.
   *
   * @throws clojure.lang.ExceptionInfo {@code :tx/upsert-conflict} when one
   *     tempid upserts to two entities; {@code :tx/tempid-only-value} when a
   *     tempid is used but asserts nothing of its own
   */
  static List<Op> resolve(List<Op> ops, Db db, Snapshot snap, Tempids temps, EntityIds ids,
      PendingAttrs pending) {
    upsert(ops, db, snap);
    allocate(ops, temps, ids);
    IdentityHashMap<Attr, Attr> renamed = pending.assignIds();
    for (Op op : ops) {
      Attr now = renamed.isEmpty() ? null : renamed.get(op.attr());
      if (now != null || op.e() instanceof TempRef || op.v() instanceof TempRef
          || op.old() instanceof TempRef) {
        op.resolve(eid(op.e()), now != null ? now : op.attr(), eid(op.v()), eid(op.old()));
      }
    }
    return ops;
  }

  /**
   * Unifies tempids with the entities their unique identities name, and
   * with each other when two assert one identity value, until nothing
   * changes (a tempid that resolves may make another's ref value known).
   */
  private static void upsert(List<Op> ops, Db db, Snapshot snap) {
    boolean changed = true;
    while (changed) {
      changed = false;
      Map<Bytes, TempRef> seenValues = new HashMap<>();
      for (Op op : ops) {
        if (op.kind() != Op.Kind.ADD || !(op.e() instanceof TempRef tr) || op.attr() == null
            || !op.attr().isIdentity()) {
          continue;
        }
        Object v = op.v();
        if (v instanceof TempRef vr) {
          TempRef root = vr.root();
          if (root.eid < 0) {
            continue;
          }
          v = root.eid;
        }
        byte[] vpart = Db.valuePart(op.attr(), v);
        if (vpart == null) {
          continue; // reported as a type error later
        }
        TempRef root = tr.root();
        long found = PendingAttrs.isNew(op.attr()) ? -1 : db.lookup(snap, op.attr(), v);
        if (found >= 0) {
          if (root.eid >= 0 && root.eid != found) {
            throw Errors.error("tx/upsert-conflict",
                "Two unique identities resolve one tempid to two entities",
                "tempid", root.name, "entities", RT.vector(root.eid, found), "form", op.form());
          }
          if (root.eid < 0) {
            root.eid = found;
            changed = true;
          }
        }
        byte[] key = new KeyBuilder(false).putLong(op.attr().id).put(vpart).toBytes();
        TempRef other = seenValues.putIfAbsent(new Bytes(key), root);
        if (other != null && other.root() != root) {
          TempRef o = other.root();
          if (o.eid >= 0 && root.eid >= 0 && o.eid != root.eid) {
            throw Errors.error("tx/upsert-conflict",
                "Two tempids with one unique identity resolve to different entities",
                "form", op.form());
          }
          Tempids.unify(o, root, op.form());
          changed = true;
        }
      }
    }
  }

  /**
   * Gives a new id to every entity that some operation names and no upsert
   * resolved; one that only values and retractions name is refused (it
   * would be an entity with no datom).
   */
  private static void allocate(List<Op> ops, Tempids temps, EntityIds ids) {
    for (Op op : ops) {
      markUsed(op.e());
      markUsed(op.v());
      markUsed(op.old());
    }
    for (TempRef r : temps.all()) {
      TempRef root = r.root();
      root.asEntity |= r.asEntity;
      root.used |= r.used;
    }
    for (TempRef r : temps.all()) {
      TempRef root = r.root();
      if (root.eid >= 0 || !root.used) {
        continue; // resolved, or named by no operation (only by an empty map): no entity
      }
      if (!root.asEntity) {
        Object name = r.name != null ? r.name : root.name;
        throw Errors.error("tx/tempid-only-value", (name == null ? "A map without :db/id"
            : "Tempid " + Printed.brief(name)) + " names no entity of its own: the transaction"
            + " asserts nothing about it, and uses it only as a value or in retractions",
            "tempid", name);
      }
      root.eid = ids.allocate();
    }
  }

  private static void markUsed(Object x) {
    if (x instanceof TempRef r) {
      r.used = true;
    }
  }

  // x with a TempRef replaced by its entity id
  private static Object eid(Object x) {
    return x instanceof TempRef r ? r.root().id() : x;
  }
}
