package datalith.tx;

import clojure.lang.IMapIterable;
import clojure.lang.Keyword;
import clojure.lang.RT;
import clojure.lang.Symbol;
import datalith.codec.Codec;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Schema;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Expands tx-data into {@link Op}s: entity maps and the maps nested in them,
 * reverse attributes, list forms ({@code :db/add}, {@code :db/retract},
 * {@code :db/retractEntity}, {@code :db/cas}, {@code :db.fn/retractAttribute}) and the tx-data
 * transaction functions return ({@link TxFns}: named by a symbol, or a function value in
 * {@code [:db.fn/call f arg ...]}). Each entity reference is resolved as it
 * is met ({@link EntityRefs}: ids, tempids, idents, lookup refs) and each
 * operation checked ({@link OpChecks}); an attribute that names nothing is
 * installed on first use ({@link PendingAttrs}), with the ops that assert it.
 * Entities stay {@link TempRef}s where tx-data gives no id: resolving them
 * is {@link TempidResolver}'s job, once every form is expanded.
 */
final class Expander {
  private static final Keyword DB_ID = Keyword.intern("db", "id");
  private static final Keyword DB_ADD = Keyword.intern("db", "add");
  private static final Keyword DB_RETRACT = Keyword.intern("db", "retract");
  private static final Keyword DB_RETRACT_ENTITY = Keyword.intern("db", "retractEntity");
  private static final Keyword FN_RETRACT_ENTITY = Keyword.intern("db.fn", "retractEntity");
  private static final Keyword DB_CAS = Keyword.intern("db", "cas");
  private static final Keyword FN_CAS = Keyword.intern("db.fn", "cas");
  private static final Keyword FN_RETRACT_ATTRIBUTE = Keyword.intern("db.fn", "retractAttribute");
  private static final Keyword FN_CALL = Keyword.intern("db.fn", "call");
  /** Deepest nesting of transaction functions that return calls of transaction functions. */
  private static final int MAX_FN_DEPTH = 32;
  /** Deepest nesting of entity maps in maps (deeper is a cyclic Java map, or a mistake). */
  private static final int MAX_MAP_NESTING = 10_000;

  private final Db db;
  private final Schema schema;
  private final long tx;
  private final PendingAttrs pending;
  private final Tempids temps;
  private final EntityRefs refs;
  /** Top-level maps that define attributes -> their entity (Long or TempRef). */
  private final IdentityHashMap<Object, Object> mapEntities;
  /** What {@link #expand} returns: the ops, in the order of tx-data. */
  private final List<Op> ops = new ArrayList<>();
  /** The maps still to expand of the entity map being expanded ({@link #expandMap}). */
  private final ArrayDeque<Nested> work = new ArrayDeque<>();

  private Expander(Db db, long tx, PendingAttrs pending, Tempids temps, EntityRefs refs,
      IdentityHashMap<Object, Object> mapEntities) {
    this.db = db;
    this.schema = db.schema();
    this.tx = tx;
    this.pending = pending;
    this.temps = temps;
    this.refs = refs;
    this.mapEntities = mapEntities;
  }

  /**
   * The ops of {@code txData}, a collection of maps and lists, against
   * {@code db}, for transaction {@code tx}.
   *
   * @param mapEntities the entities of the maps that define attributes
   *     ({@link PendingAttrs#declareAll}, which must have run first)
   * @throws clojure.lang.ExceptionInfo for a form it refuses
   */
  static List<Op> expand(Object txData, Db db, long tx, PendingAttrs pending, Tempids temps,
      EntityRefs refs, IdentityHashMap<Object, Object> mapEntities) {
    Expander x = new Expander(db, tx, pending, temps, refs, mapEntities);
    x.expandAll(txData, 0);
    return x.ops;
  }

  // depth: how many transaction functions returned txData
  private void expandAll(Object txData, int depth) {
    for (Iterator<?> it = RT.iter(txData); it.hasNext(); ) {
      Object form = it.next();
      if (form instanceof Map<?, ?> m) {
        expandMap(m);
      } else if (form instanceof List<?> l) {
        expandList(l, depth);
      } else {
        throw Errors.error("tx/invalid-op",
            "Each element of tx-data must be a map or a list like [:db/add e a v]", "form", form);
      }
    }
  }

  /**
   * The attribute {@code k} names, installed (cardinality one, any type) when it names nothing
   * and the database is lenient; a strict one refuses it.
   */
  private Attr attrOf(Keyword k, Object form) {
    Attr a = pending.get(k);
    if (a != null) {
      return a;
    }
    String ns = k.getNamespace();
    if (k.getName().startsWith("_")) {
      throw Errors.error("tx/invalid-attribute",
          "A reverse attribute is only allowed as a map key", "attribute", k, "form", form);
    }
    if (ns != null && (ns.equals("db") || ns.startsWith("db."))) {
      throw SchemaKeys.unknown(k, form);
    }
    if (db.isStrict()) {
      throw Errors.error("tx/unknown-attribute", "No attribute " + k + " is installed (the"
          + " connection is strict: install it with a schema map first)", "attribute", k,
          "form", form);
    }
    TempRef entity = temps.anonymous();
    a = pending.install(k, entity);
    assertOp(entity, schema.attr(Schema.IDENT), k, form);
    // a cardinality makes it an attribute, not a mere ident (an enum value)
    assertOp(entity, schema.attr(Schema.CARDINALITY), Schema.CARD_ONE, form);
    return a;
  }

  /** Adds the assertion of {@code v} for {@code a} of {@code e}, which thereby is an entity. */
  private void assertOp(Object e, Attr a, Object v, Object form) {
    if (e instanceof TempRef r) {
      r.asEntity = true;
    }
    ops.add(new Op(Op.Kind.ADD, form, e, a, v, null));
  }

  // ---- entity maps

  /**
   * Adds the ops of an entity map and of the maps nested in it (worked
   * through with a stack of their own, so that no depth of nesting overflows
   * the thread's).
   */
  private void expandMap(Map<?, ?> top) {
    if (top.size() == 1 && top.get(DB_ID) != null) {
      // a map of :db/id alone asserts nothing: its id is checked as any entity reference is,
      // but a lookup ref or an ident that names no entity is no error (Datomic takes such a
      // map as nothing at all, whatever its id); the size first, so that other maps pay no
      // lookup here
      refs.resolveOrNull(top.get(DB_ID), top);
      return;
    }
    // the expander's one work stack, empty between maps; a fresh one should this run re-enter
    ArrayDeque<Nested> todo = work.isEmpty() ? work : new ArrayDeque<>();
    todo.push(new Nested(top, mapEntity(top), 1));
    while (!todo.isEmpty()) {
      expandAttrs(todo.pop(), todo);
    }
  }

  /** A map still to expand: its entity, and how deep it is nested (1 for a tx-data form). */
  private record Nested(Map<?, ?> map, Object entity, int depth) {}

  /** The entity of a map: declared with its attribute, its :db/id, or a new one. */
  private Object mapEntity(Map<?, ?> m) {
    Object declared = mapEntities.get(m);
    if (declared instanceof Long e) {
      return refs.resolve(e, m); // an explicit id is named, so the allocator moves above it
    }
    if (declared != null) {
      return declared;
    }
    Object id = m.get(DB_ID);
    return id != null ? refs.resolve(id, m) : temps.anonymous();
  }

  /** The entity of a map nested in {@code parent}; the map joins the work stack. */
  private Object nested(Map<?, ?> m, Nested parent, ArrayDeque<Nested> todo) {
    if (parent.depth() >= MAX_MAP_NESTING) {
      throw Errors.error("tx/too-deep", "Entity maps are nested more than " + MAX_MAP_NESTING
          + " deep (a map that contains itself?)", "form", Printed.brief(parent.map()));
    }
    Object e = mapEntity(m);
    todo.push(new Nested(m, e, parent.depth() + 1));
    return e;
  }

  private void expandAttrs(Nested n, ArrayDeque<Nested> todo) {
    Map<?, ?> m = n.map();
    if (m instanceof IMapIterable im) {
      // keys and values side by side, in one order: no map entry made for each
      Iterator<?> vs = im.valIterator();
      for (Iterator<?> ks = im.keyIterator(); ks.hasNext(); ) {
        expandAttr(n, ks.next(), vs.next(), todo);
      }
    } else {
      for (Map.Entry<?, ?> en : m.entrySet()) {
        expandAttr(n, en.getKey(), en.getValue(), todo);
      }
    }
  }

  /** The ops of {@code k v} in the map of {@code n}. */
  private void expandAttr(Nested n, Object k, Object v, ArrayDeque<Nested> todo) {
    Map<?, ?> m = n.map();
    Object e = n.entity();
    if (k == DB_ID) {
      return;
    }
    if (!(k instanceof Keyword kw)) {
      throw Errors.error("tx/invalid-attribute", "Attribute names are keywords",
          "attribute", k, "form", m);
    }
    if (v == null) {
      throw Errors.error("tx/nil-value", "nil is not a value: leave the attribute out instead",
          "attribute", kw, "form", m);
    }
    if (kw.getName().startsWith("_") && pending.get(kw) == null) {
      expandReverse(kw, v, n, todo);
      return;
    }
    Attr a = attrOf(kw, m);
    OpChecks.assertion(e, a, tx, m);
    Collection<?> vals = a.many ? manyValues(a, v, m) : null;
    if (vals == null) {
      assertOp(e, a, valueOf(a, v, m, n, todo), m);
    } else {
      for (Object x : vals) {
        assertOp(e, a, valueOf(a, x, m, n, todo), m);
      }
    }
  }

  /**
   * {@code :ns/_name v} in the map of {@code n}: each entity of {@code v}
   * (a ref, a nested map, or a collection of them) refers to n's entity by
   * {@code :ns/name}.
   */
  private void expandReverse(Keyword kw, Object v, Nested n, ArrayDeque<Nested> todo) {
    Map<?, ?> m = n.map();
    Attr a = attrOf(Keyword.intern(kw.getNamespace(), kw.getName().substring(1)), m);
    if (!a.isRef()) {
      throw Errors.error("tx/invalid-attribute", "A reverse attribute must name a ref attribute",
          "attribute", kw, "form", m);
    }
    for (Object r : refValues(a, v, m)) {
      Object src = r instanceof Map<?, ?> child ? nested(child, n, todo) : refs.resolve(r, m);
      OpChecks.assertion(src, a, tx, m);
      assertOp(src, a, n.entity(), m);
    }
  }

  /** The values of a ref attribute given in a map: one, or a collection of refs/maps. */
  private Collection<?> refValues(Attr a, Object v, Object form) {
    if (v instanceof Map || isLookupRef(v)) {
      return List.of(v);
    }
    if (v instanceof Collection<?> c) {
      return c;
    }
    Values.refuseArray(a, v, form);
    return List.of(v);
  }

  /** For a cardinality-many attribute: the collection a map value stands for, or null for one value. */
  private Collection<?> manyValues(Attr a, Object v, Object form) {
    if (v instanceof Map || v instanceof byte[]) {
      return null;
    }
    Values.refuseArray(a, v, form);
    if (a.isRef()) {
      return v instanceof Collection<?> c && !isLookupRef(v) ? c : null;
    }
    if (a.valueType == Codec.T_TUPLE) {
      if (v instanceof Set<?> s) {
        return s;
      }
      if (v instanceof List<?> l && !l.isEmpty() && l.stream().allMatch(x -> x instanceof List)) {
        return l;
      }
      return null;
    }
    return v instanceof Collection<?> c ? c : null;
  }

  private boolean isLookupRef(Object v) {
    if (v instanceof List<?> l && l.size() == 2 && l.get(0) instanceof Keyword k) {
      Attr a = pending.get(k);
      return a != null && a.isUnique();
    }
    return false;
  }

  /** A value for attribute {@code a}: refs become Long or TempRef (nested maps join the stack). */
  private Object valueOf(Attr a, Object v, Object form, Nested parent, ArrayDeque<Nested> todo) {
    if (v == null) {
      throw Errors.error("tx/nil-value", "nil is not a value", "attribute", a.ident, "form", form);
    }
    if (!a.isRef()) {
      return v;
    }
    if (v instanceof Map<?, ?> child) {
      return nested(child, parent, todo);
    }
    Values.refuseArray(a, v, form);
    return refs.resolve(v, form);
  }

  // ---- list forms

  private void expandList(List<?> l, int depth) {
    if (l.isEmpty()) {
      throw Errors.error("tx/invalid-op", "An empty list is not an operation", "form", l);
    }
    Object head = l.get(0);
    if (head instanceof Symbol sym) {
      if (depth >= MAX_FN_DEPTH) {
        throw Errors.error("tx/fn-depth", "Transaction functions nested too deeply", "form", l);
      }
      expandAll(TxFns.call(db, sym, l), depth + 1);
    } else if (head == FN_CALL) {
      if (depth >= MAX_FN_DEPTH) {
        throw Errors.error("tx/fn-depth", "Transaction functions nested too deeply", "form", l);
      }
      expandAll(TxFns.callValue(db, l), depth + 1);
    } else if (head == DB_ADD || head == DB_RETRACT) {
      expandAddOrRetract(head == DB_ADD, l);
    } else if (head == FN_RETRACT_ATTRIBUTE) {
      if (l.size() != 3) {
        throw Errors.error("tx/invalid-op", "Expected [:db.fn/retractAttribute e a]", "form", l);
      }
      expandAddOrRetract(false, l);
    } else if (head == DB_RETRACT_ENTITY || head == FN_RETRACT_ENTITY) {
      if (l.size() != 2) {
        throw Errors.error("tx/invalid-op", "Expected [:db/retractEntity e]", "form", l);
      }
      // like Datomic's, retracts the datoms the entity has: none when it names nothing
      Object e = refs.resolveOrNull(l.get(1), l);
      if (e != null) {
        ops.add(new Op(Op.Kind.RETRACT_ENTITY, l, e, null, null, null));
      }
    } else if (head == DB_CAS || head == FN_CAS) {
      expandCas(l);
    } else {
      throw Errors.error("tx/invalid-op",
          "Unknown operation: expected :db/add, :db/retract, :db/retractEntity, :db/cas, "
          + ":db.fn/retractAttribute, :db.fn/call or a fully qualified transaction function symbol",
          "op", head, "form", l);
    }
  }

  // [:db/add e a v], [:db/retract e a v] or [:db/retract e a]
  private void expandAddOrRetract(boolean add, List<?> l) {
    if (!(l.size() == 4 || !add && l.size() == 3)) {
      throw Errors.error("tx/invalid-op", add ? "Expected [:db/add e a v]"
          : "Expected [:db/retract e a v] or [:db/retract e a]", "form", l);
    }
    Attr a = attrArg(l.get(2), l);
    Object e = refs.resolve(l.get(1), l);
    if (add) {
      OpChecks.assertion(e, a, tx, l);
    } else {
      OpChecks.retraction(a, l);
    }
    if (l.size() == 3) {
      ops.add(new Op(Op.Kind.RETRACT_ATTR, l, e, a, null, null));
      return;
    }
    Object v = l.get(3);
    if (v == null) {
      throw Errors.error("tx/nil-value", "nil is not a value", "form", l);
    }
    if (a.isRef()) {
      Values.refuseArray(a, v, l);
      v = refs.resolve(v, l);
    }
    if (add) {
      assertOp(e, a, v, l);
    } else {
      ops.add(new Op(Op.Kind.RETRACT, l, e, a, v, null));
    }
  }

  // [:db/cas e a old new]
  private void expandCas(List<?> l) {
    if (l.size() != 5) {
      throw Errors.error("tx/invalid-op", "Expected [:db/cas e a old-value new-value]", "form", l);
    }
    Attr a = attrArg(l.get(2), l);
    if (a.many) {
      throw Errors.error("tx/invalid-op", ":db/cas needs a cardinality-one attribute",
          "attribute", a.ident, "form", l);
    }
    Object e = refs.resolve(l.get(1), l);
    OpChecks.cas(e, a, tx, l);
    Object old = l.get(3);
    Object v = l.get(4);
    if (v == null) {
      throw Errors.error("tx/nil-value", "nil is not a value", "form", l);
    }
    if (e instanceof TempRef r) {
      r.asEntity = true;
    }
    ops.add(new Op(Op.Kind.CAS, l, e, a, a.isRef() ? refs.resolve(v, l) : v,
        old != null && a.isRef() ? refs.resolve(old, l) : old));
  }

  /** The attribute of a list form: an ident (installed on first use) or an attribute's id. */
  private Attr attrArg(Object a, Object form) {
    if (a instanceof Keyword k) {
      return attrOf(k, form);
    }
    if (a instanceof Long || a instanceof Integer) {
      Attr at = schema.attr(((Number) a).longValue());
      if (at != null) {
        return at;
      }
    }
    throw Errors.error("tx/invalid-attribute", "Expected an attribute ident", "attribute", a,
        "form", form);
  }
}
