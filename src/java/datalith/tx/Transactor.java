package datalith.tx;

import clojure.lang.ExceptionInfo;
import clojure.lang.IFn;
import clojure.lang.IPersistentMap;
import clojure.lang.ISeq;
import clojure.lang.Keyword;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.Symbol;
import datalith.codec.Codec;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.IndexScan;
import datalith.db.Schema;
import datalith.db.Snapshot;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Date;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Turns tx-data into the datoms one transaction asserts and retracts, with
 * Datomic's semantics: map and list forms, tempids, upserts, lookup refs,
 * cardinality, uniqueness, cas, retractEntity, transaction functions, and
 * schema installed and altered as data. Reads the database through one
 * snapshot and writes nothing itself: a failed transaction leaves no trace.
 */
public final class Transactor {
  private static final Keyword DB_ID = Keyword.intern("db", "id");
  private static final Keyword DB_ADD = Keyword.intern("db", "add");
  private static final Keyword DB_RETRACT = Keyword.intern("db", "retract");
  private static final Keyword DB_RETRACT_ENTITY = Keyword.intern("db", "retractEntity");
  private static final Keyword FN_RETRACT_ENTITY = Keyword.intern("db.fn", "retractEntity");
  private static final Keyword DB_CAS = Keyword.intern("db", "cas");
  private static final Keyword FN_CAS = Keyword.intern("db.fn", "cas");
  private static final Keyword ERROR = Keyword.intern("error");
  private static final int MAX_FN_DEPTH = 32;
  /** Deepest nesting of entity maps in maps (deeper is a cyclic Java map, or a mistake). */
  private static final int MAX_MAP_NESTING = 10_000;

  private static final int ADD = 0;
  private static final int RETRACT = 1;
  private static final int RETRACT_ATTR = 2;
  private static final int RETRACT_ENTITY = 3;
  private static final int CAS = 4;

  /** What a transaction does, before anything is written. */
  public static final class Result {
    public final List<TxChange> changes;
    /** User tempid -> entity id, plus {@code :db/current-tx}. */
    public final IPersistentMap tempids;
    public final Schema schema;
    public final long nextEid;
    public final long t;
    public final long tx;

    Result(List<TxChange> changes, IPersistentMap tempids, Schema schema, long nextEid, long t,
        long tx) {
      this.changes = changes;
      this.tempids = tempids;
      this.schema = schema;
      this.nextEid = nextEid;
      this.t = t;
      this.tx = tx;
    }
  }

  private static final class Op {
    final int kind;
    final Object form;
    Object e; // Long or TempRef
    Attr attr;
    Object v; // for refs: Long or TempRef
    Object old;

    Op(int kind, Object form, Object e, Attr attr, Object v, Object old) {
      this.kind = kind;
      this.form = form;
      this.e = e;
      this.attr = attr;
      this.v = v;
      this.old = old;
    }
  }

  /**
   * A value of one (entity, attribute) as the transaction sees it. Every
   * operation reads the database before the transaction, so the order of
   * tx-data does not matter: conflicts are decided from {@code asserted} and
   * {@code retracted}, whatever order set them.
   */
  private static final class Val {
    static final int EXISTING = 0; // in the db before, kept
    static final int ADDED = 1; // new
    static final int RETRACTED = 2; // in the db before, retracted
    static final int ABSENT = 3; // not in the db before: an explicit retraction of it does nothing
    final Object v;
    final byte[] encoded;
    final long assertedTx;
    int status;
    /** Asserted by the transaction (redundantly when EXISTING). */
    boolean asserted;
    /** Retracted explicitly, not only replaced by a cardinality-one assertion. */
    boolean retracted;
    Object form;

    Val(Object v, byte[] encoded, long assertedTx, int status) {
      this.v = v;
      this.encoded = encoded;
      this.assertedTx = assertedTx;
      this.status = status;
    }
  }

  private record SlotKey(long e, long aid) {}

  /** Byte-array identity for value lookups. */
  private record Bytes(byte[] b) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Bytes x && Arrays.equals(b, x.b);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(b);
    }
  }

  private final Db db;
  private final Snapshot snap;
  private final Schema schema;
  private final long t;
  private final long tx;
  private final EntityIds ids;
  private final PendingAttrs pending;
  private final Tempids temps = new Tempids();
  private final EntityRefs refs;
  /** The attributes as this transaction defines them, by ident. */
  private final Function<Keyword, Attr> attrs;
  /** Top-level maps that define attributes -> their entity (Long or TempRef). */
  private final IdentityHashMap<Object, Object> mapEntities;
  private final List<Op> ops = new ArrayList<>();
  private final Map<SlotKey, LinkedHashMap<Bytes, Val>> slots = new LinkedHashMap<>();
  private final Map<SlotKey, Attr> slotAttrs = new HashMap<>();

  private Transactor(Db db, Snapshot snap, Object txData) {
    this.db = db;
    this.snap = snap;
    this.schema = db.schema();
    this.t = db.basisT() + 1;
    this.tx = Db.tToTx(t);
    this.ids = new EntityIds(db.nextEid(), tx);
    this.pending = new PendingAttrs(schema);
    this.refs = new EntityRefs(db, snap, pending, temps, ids, tx);
    this.attrs = pending::get;
    this.mapEntities = pending.declareAll(txData, temps);
  }

  /**
   * Computes the transaction of {@code txData} against {@code db} (a current,
   * unfiltered value), reading through {@code snap}.
   *
   * @throws ExceptionInfo for any tx-data it refuses, with a namespaced
   *     {@code :error}; it throws nothing else ({@code :tx/too-deep} when tx-data
   *     or a transaction function recursed past the stack, {@code :tx/internal}
   *     for a fault of datalith's own)
   */
  public static Result run(Db db, Snapshot snap, Object txData) {
    if (!(txData instanceof Collection) && !(txData instanceof ISeq) && txData != null) {
      throw Errors.error("tx/invalid-data", "tx-data must be a collection of maps and lists",
          "tx-data", txData);
    }
    try {
      return new Transactor(db, snap, txData).run(txData);
    } catch (ExceptionInfo ex) {
      if (hasError(ex)) {
        throw ex;
      }
      throw Errors.errorWithCause(ex, "tx/internal", "datalith failed on this transaction: " + ex,
          "tx-data", txData);
    } catch (StackOverflowError ex) {
      throw Errors.errorWithCause(ex, "tx/too-deep", "The transaction nests too deeply to process:"
          + " the stack overflowed");
    } catch (RuntimeException ex) {
      throw Errors.errorWithCause(ex, "tx/internal", "datalith failed on this transaction: " + ex,
          "tx-data", txData);
    }
  }

  // an ex-info of datalith's kind: its data has a namespaced :error
  private static boolean hasError(ExceptionInfo ex) {
    return ex.getData() != null && ex.getData().valAt(ERROR) instanceof Keyword k
        && k.getNamespace() != null;
  }

  private Result run(Object txData) {
    expandAll(txData, 0);
    resolveTempids();
    for (Op op : ops) {
      apply(op);
    }
    maintainComposites();
    addTxInstant();
    List<TxChange> changes = collect();
    List<Datom> datoms = new ArrayList<>(changes.size());
    for (TxChange c : changes) {
      datoms.add(c.datom);
    }
    Schema next = schema.with(datoms);
    if (next != schema) {
      SchemaCheck.check(db, snap, schema, next, changes);
    }
    checkUnique(changes, next);
    return new Result(changes, temps.toMap(tx), next, ids.next(), t, tx);
  }

  // ---- expansion of tx-data into ops

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
      throw Errors.error("tx/invalid-attribute", "No attribute " + k + ": the :db namespaces are"
          + " datalith's own, so it cannot be installed on first use", "attribute", k, "form", form);
    }
    TempRef entity = temps.anonymous();
    a = pending.install(k, entity);
    assertOp(entity, schema.attr(Schema.IDENT), k, form);
    // a cardinality makes it an attribute, not a mere ident (an enum value)
    assertOp(entity, schema.attr(Schema.CARDINALITY), Schema.CARD_ONE, form);
    return a;
  }

  private void expandAll(Object txData, int depth) {
    for (ISeq s = RT.seq(txData); s != null; s = s.next()) {
      Object form = s.first();
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
   * Adds the ops of an entity map and of the maps nested in it (worked
   * through with a stack of their own, so that no depth of nesting overflows
   * the thread's); returns its entity (Long or TempRef).
   */
  private Object expandMap(Map<?, ?> top) {
    Object topEntity = mapEntity(top);
    ArrayDeque<Nested> todo = new ArrayDeque<>();
    todo.push(new Nested(top, topEntity, 1));
    while (!todo.isEmpty()) {
      expandAttrs(todo.pop(), todo);
    }
    return topEntity;
  }

  /** A map still to expand: its entity, and how deep it is nested (1 for a tx-data form). */
  private record Nested(Map<?, ?> map, Object entity, int depth) {}

  /** The entity of a map: declared with its attribute, its :db/id, or a new one. */
  private Object mapEntity(Map<?, ?> m) {
    Object declared = mapEntities.get(m);
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
    Object e = n.entity();
    for (Map.Entry<?, ?> en : m.entrySet()) {
      Object k = en.getKey();
      if (k == DB_ID) {
        continue;
      }
      if (!(k instanceof Keyword kw)) {
        throw Errors.error("tx/invalid-attribute", "Attribute names are keywords",
            "attribute", k, "form", m);
      }
      Object v = en.getValue();
      if (v == null) {
        throw Errors.error("tx/nil-value", "nil is not a value: leave the attribute out instead",
            "attribute", kw, "form", m);
      }
      if (kw.getName().startsWith("_") && pending.get(kw) == null) {
        Keyword fwd = Keyword.intern(kw.getNamespace(), kw.getName().substring(1));
        Attr a = attrOf(fwd, m);
        if (!a.isRef()) {
          throw Errors.error("tx/invalid-attribute", "A reverse attribute must name a ref attribute",
              "attribute", kw, "form", m);
        }
        for (Object r : refValues(a, v, m)) {
          Object src = r instanceof Map<?, ?> child ? nested(child, n, todo) : refs.resolve(r, m);
          OpChecks.assertion(src, a, tx, m);
          assertOp(src, a, e, m);
        }
        continue;
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
  }

  /** Adds the assertion of {@code v} for {@code a} of {@code e}, which thereby is an entity. */
  private void assertOp(Object e, Attr a, Object v, Object form) {
    if (e instanceof TempRef r) {
      r.asEntity = true;
    }
    ops.add(new Op(ADD, form, e, a, v, null));
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

  private void expandList(List<?> l, int depth) {
    if (l.isEmpty()) {
      throw Errors.error("tx/invalid-op", "An empty list is not an operation", "form", l);
    }
    Object head = l.get(0);
    if (head instanceof Symbol sym) {
      callTxFn(sym, l, depth);
      return;
    }
    if (head == DB_ADD || head == DB_RETRACT) {
      boolean add = head == DB_ADD;
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
        ops.add(new Op(RETRACT_ATTR, l, e, a, null, null));
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
        ops.add(new Op(RETRACT, l, e, a, v, null));
      }
    } else if (head == DB_RETRACT_ENTITY || head == FN_RETRACT_ENTITY) {
      if (l.size() != 2) {
        throw Errors.error("tx/invalid-op", "Expected [:db/retractEntity e]", "form", l);
      }
      // like Datomic's, retracts the datoms the entity has: none when it names nothing
      Object e = refs.resolveOrNull(l.get(1), l);
      if (e != null) {
        ops.add(new Op(RETRACT_ENTITY, l, e, null, null, null));
      }
    } else if (head == DB_CAS || head == FN_CAS) {
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
      ops.add(new Op(CAS, l, e, a, a.isRef() ? refs.resolve(v, l) : v,
          old != null && a.isRef() ? refs.resolve(old, l) : old));
    } else {
      throw Errors.error("tx/invalid-op",
          "Unknown operation: expected :db/add, :db/retract, :db/retractEntity, :db/cas "
          + "or a fully qualified transaction function symbol", "op", head, "form", l);
    }
  }

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

  private void callTxFn(Symbol sym, List<?> l, int depth) {
    if (depth >= MAX_FN_DEPTH) {
      throw Errors.error("tx/fn-depth", "Transaction functions nested too deeply", "form", l);
    }
    if (sym.getNamespace() == null) {
      throw Errors.error("tx/unknown-fn", "A transaction function must be a fully qualified symbol",
          "fn", sym, "form", l);
    }
    Object f;
    try {
      f = datalith.db.Fns.resolve(sym);
    } catch (Exception ex) {
      throw Errors.errorWithCause(ex, "tx/unknown-fn", "Cannot load transaction function " + sym,
          "fn", sym, "form", l);
    }
    if (!(f instanceof IFn fn)) {
      throw Errors.error("tx/unknown-fn", "No transaction function " + sym, "fn", sym, "form", l);
    }
    Object result;
    try {
      result = fn.applyTo(RT.cons(db, RT.seq(l.subList(1, l.size()))));
    } catch (ExceptionInfo ex) {
      if (hasError(ex)) {
        throw ex;
      }
      throw Errors.errorWithCause(ex, "tx/fn-failed",
          "Transaction function " + sym + " threw: " + ex.getMessage(), "fn", sym, "form", l,
          "data", ex.getData());
    } catch (Exception | StackOverflowError ex) {
      throw Errors.errorWithCause(ex, "tx/fn-failed",
          "Transaction function " + sym + " threw: " + ex, "fn", sym, "form", l);
    }
    if (result != null && !(result instanceof Collection) && !(result instanceof ISeq)) {
      throw Errors.error("tx/fn-result", "A transaction function must return tx-data",
          "fn", sym, "result", result);
    }
    expandAll(result, depth + 1);
  }

  /**
   * Upserts through unique identities, unifies tempids, then gives the rest
   * new ids (the first ids the transaction allocates: every id it names is
   * known by now), and the new attributes theirs.
   */
  private void resolveTempids() {
    boolean changed = true;
    while (changed) {
      changed = false;
      Map<Bytes, TempRef> seenValues = new HashMap<>();
      for (Op op : ops) {
        if (op.kind != ADD || !(op.e instanceof TempRef tr) || op.attr == null
            || !op.attr.isIdentity()) {
          continue;
        }
        Object v = op.v;
        if (v instanceof TempRef vr) {
          TempRef root = vr.root();
          if (root.eid < 0) {
            continue;
          }
          v = root.eid;
        }
        byte[] vpart = Db.valuePart(op.attr, v);
        if (vpart == null) {
          continue; // reported as a type error later
        }
        TempRef root = tr.root();
        long found = PendingAttrs.isNew(op.attr) ? -1 : db.lookup(snap, op.attr, v);
        if (found >= 0) {
          if (root.eid >= 0 && root.eid != found) {
            throw Errors.error("tx/upsert-conflict",
                "Two unique identities resolve one tempid to two entities",
                "tempid", root.name, "entities", RT.vector(root.eid, found), "form", op.form);
          }
          if (root.eid < 0) {
            root.eid = found;
            changed = true;
          }
        }
        byte[] key = new KeyBuilder(false).putLong(op.attr.id).put(vpart).toBytes();
        TempRef other = seenValues.putIfAbsent(new Bytes(key), root);
        if (other != null && other.root() != root) {
          TempRef o = other.root();
          if (o.eid >= 0 && root.eid >= 0 && o.eid != root.eid) {
            throw Errors.error("tx/upsert-conflict",
                "Two tempids with one unique identity resolve to different entities",
                "form", op.form);
          }
          Tempids.unify(o, root, op.form);
          changed = true;
        }
      }
    }
    for (Op op : ops) {
      markUsed(op.e);
      markUsed(op.v);
      markUsed(op.old);
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
    IdentityHashMap<Attr, Attr> renamed = pending.assignIds();
    for (Op op : ops) {
      if (op.e instanceof TempRef r) {
        op.e = r.root().eid;
      }
      if (op.v instanceof TempRef r) {
        op.v = r.root().eid;
      }
      if (op.old instanceof TempRef r) {
        op.old = r.root().eid;
      }
      Attr now = renamed.get(op.attr);
      if (now != null) {
        op.attr = now;
      }
    }
  }

  private static void markUsed(Object x) {
    if (x instanceof TempRef r) {
      r.used = true;
    }
  }

  // ---- applying ops to the per-(entity, attribute) state

  private LinkedHashMap<Bytes, Val> slot(long e, Attr a) {
    SlotKey k = new SlotKey(e, a.id);
    LinkedHashMap<Bytes, Val> s = slots.get(k);
    if (s != null) {
      return s;
    }
    s = new LinkedHashMap<>(4);
    slots.put(k, s);
    slotAttrs.put(k, a);
    if (e < db.nextEid() || e >= Db.TX0) {
      // stored values are encoded as the attribute was when they were written
      Attr stored = schema.attr(a.id);
      KeyBuilder kb = new KeyBuilder().putLong(e).putLong(a.id);
      IndexScan scan = db.scan(snap, Index.EAVT, kb.view());
      while (scan.next()) {
        Datom d = scan.datom();
        byte[] enc = Codec.encode(d.v, tagOf(stored != null ? stored : a, d.v));
        s.put(new Bytes(Codec.keyPart(enc)), new Val(d.v, enc, d.tx, Val.EXISTING));
      }
      scan.close();
    }
    return s;
  }

  private static int tagOf(Attr a, Object v) {
    return a.valueType == Codec.T_ANY ? Codec.inferTag(v) : a.valueType;
  }

  private Object coerce(Attr a, Object v, Object form) {
    return Values.coerce(a, v, form, attrs);
  }

  private void apply(Op op) {
    long e = (Long) op.e;
    switch (op.kind) {
      case ADD -> add(e, op.attr, op.v, op.form);
      case RETRACT -> retract(e, op.attr, op.v, op.form);
      case RETRACT_ATTR -> retractAll(e, op.attr, op.form);
      case RETRACT_ENTITY -> retractEntity(e, op.form);
      case CAS -> cas(e, op.attr, op.old, op.v, op.form);
      default -> throw new IllegalStateException("op kind " + op.kind);
    }
  }

  private void add(long e, Attr a, Object raw, Object form) {
    Object v = coerce(a, raw, form);
    byte[] enc = Codec.encode(v, tagOf(a, v));
    Bytes key = new Bytes(Codec.keyPart(enc));
    LinkedHashMap<Bytes, Val> s = slot(e, a);
    Val same = s.get(key);
    if (same != null && same.retracted) {
      throw conflict(e, a, v, form, same.form);
    }
    if (!a.many) {
      for (Val x : s.values()) {
        if (x != same && x.asserted) {
          throw conflict(e, a, v, form, x.form);
        }
      }
      for (Val x : s.values()) {
        if (x != same && x.status == Val.EXISTING) {
          x.status = Val.RETRACTED;
          x.form = form;
        }
      }
    }
    if (same == null) {
      same = new Val(v, enc, tx, Val.ADDED);
      s.put(key, same);
    }
    same.asserted = true;
    same.form = form;
  }

  private ExceptionInfo conflict(long e, Attr a, Object v, Object form, Object otherForm) {
    return Errors.error("tx/conflict", "The transaction both asserts and retracts, or asserts two "
        + "values of cardinality-one " + a.ident + " for entity " + e,
        "entity", e, "attribute", a.ident, "value", v, "form", form, "other-form", otherForm);
  }

  private void retract(long e, Attr a, Object raw, Object form) {
    Object v = coerce(a, raw, form);
    byte[] enc = Codec.encode(v, tagOf(a, v));
    LinkedHashMap<Bytes, Val> s = slot(e, a);
    Bytes key = new Bytes(Codec.keyPart(enc));
    Val x = s.get(key);
    if (x == null) {
      x = new Val(v, enc, 0, Val.ABSENT);
      s.put(key, x);
    }
    if (x.asserted) {
      throw conflict(e, a, v, form, x.form);
    }
    if (x.status != Val.ABSENT) {
      x.status = Val.RETRACTED;
    }
    x.retracted = true;
    x.form = form;
  }

  /** Retracts the values {@code e} had before the transaction; values it asserts stay. */
  private void retractAll(long e, Attr a, Object form) {
    for (Val x : slot(e, a).values()) {
      if (x.status == Val.ADDED || x.status == Val.ABSENT) {
        continue;
      }
      if (x.asserted) {
        throw conflict(e, a, x.v, form, x.form);
      }
      x.status = Val.RETRACTED;
      x.retracted = true;
      x.form = form;
    }
  }

  /**
   * Retracts every datom of {@code e0} and every ref to it, and so for the
   * entities its component attributes refer to, however deep (a work list,
   * not recursion). A transaction's {@code :db/txInstant} stays: it dates the
   * transaction.
   */
  private void retractEntity(long e0, Object form) {
    Set<Long> visited = new HashSet<>();
    ArrayDeque<Long> todo = new ArrayDeque<>();
    todo.push(e0);
    while (!todo.isEmpty()) {
      long e = todo.pop();
      if (!visited.add(e)) {
        continue;
      }
      List<Attr> attrs = new ArrayList<>();
      IndexScan scan = db.scan(snap, Index.EAVT, new KeyBuilder().putLong(e).view());
      long lastAid = -1;
      while (scan.next()) {
        Datom d = scan.datom();
        Attr a = schema.attr(d.aid);
        if (a == null || d.aid == Schema.TX_INSTANT) {
          continue;
        }
        if (d.aid != lastAid) {
          attrs.add(a);
          lastAid = d.aid;
        }
        if (a.component && d.v instanceof Long c) {
          todo.push(c);
        }
      }
      scan.close();
      List<long[]> refsIn = new ArrayList<>();
      IndexScan vaet = db.scan(snap, Index.VAET, new KeyBuilder().putLong(e).view());
      while (vaet.next()) {
        Datom d = vaet.datom();
        refsIn.add(new long[] {d.e, d.aid});
      }
      vaet.close();
      for (Attr a : attrs) {
        retractAll(e, a, form);
      }
      for (long[] in : refsIn) {
        Attr a = schema.attr(in[1]);
        if (a != null) {
          retract(in[0], a, e, form);
        }
      }
    }
  }

  private void cas(long e, Attr a, Object oldRaw, Object newRaw, Object form) {
    LinkedHashMap<Bytes, Val> s = slot(e, a);
    Val live = null; // the value before the transaction
    for (Val x : s.values()) {
      if (x.status == Val.EXISTING || x.status == Val.RETRACTED) {
        live = x;
      }
    }
    boolean ok;
    if (oldRaw == null) {
      ok = live == null;
    } else {
      Object old = coerce(a, oldRaw, form);
      ok = live != null && Arrays.equals(Codec.keyPart(Codec.encode(old, tagOf(a, old))),
          Codec.keyPart(live.encoded));
    }
    if (!ok) {
      throw Errors.error("tx/cas-failed", "Compare-and-swap failed: " + a.ident + " of entity "
          + e + " is " + (live == null ? "absent" : RT.printString(live.v)), "entity", e,
          "attribute", a.ident, "expected", oldRaw, "actual", live == null ? null : live.v,
          "form", form);
    }
    add(e, a, newRaw, form);
  }

  /**
   * Sets every composite tuple ({@code :db/tupleAttrs}) of the entities whose
   * component attributes this transaction touched to the tuple of their values
   * (nil for a missing one); retracts it when all are missing. A composite is
   * derived, never written: tx-data may assert one only as the value it
   * derives to (as an upsert through a unique composite does).
   */
  private void maintainComposites() {
    List<Attr> composites = pending.composites();
    if (composites.isEmpty()) {
      return;
    }
    List<SlotKey> touched = new ArrayList<>(slots.keySet());
    for (Attr c : composites) {
      Attr[] parts = new Attr[c.tupleAttrs.length];
      for (int i = 0; i < parts.length; i++) {
        parts[i] = pending.get(c.tupleAttrs[i]);
        if (parts[i] == null || parts[i].many) {
          throw Errors.error("schema/invalid", "A composite tuple's attributes must be installed "
              + "cardinality-one attributes", "attribute", c.ident, "tupleAttrs",
              RT.vector((Object[]) c.tupleAttrs));
        }
      }
      Set<Long> entities = new LinkedHashSet<>();
      for (SlotKey k : touched) {
        if (k.aid() == c.id && k.e() < Db.TX0) {
          entities.add(k.e());
        }
        for (Attr p : parts) {
          if (k.aid() == p.id && k.e() < Db.TX0) {
            entities.add(k.e());
          }
        }
      }
      for (long e : entities) {
        Object[] vals = new Object[parts.length];
        boolean any = false;
        for (int i = 0; i < parts.length; i++) {
          for (Val x : slot(e, parts[i]).values()) {
            if (x.status == Val.EXISTING || x.status == Val.ADDED) {
              vals[i] = x.v;
              any = true;
            }
          }
        }
        Object derived = any ? PersistentVector.create(vals) : null;
        refuseWritten(e, c, derived);
        if (any) {
          add(e, c, derived, null);
        } else {
          retractAll(e, c, null);
        }
      }
    }
  }

  // a value of composite c that tx-data asserted for e, other than the one it derives to
  private void refuseWritten(long e, Attr c, Object derived) {
    byte[] key = derived == null ? null : Codec.keyPart(Codec.encode(derived, Codec.T_TUPLE));
    for (Val x : slot(e, c).values()) {
      if (x.asserted && (key == null || !Arrays.equals(key, Codec.keyPart(x.encoded)))) {
        throw Errors.error("tx/composite-tuple", "Composite tuple " + c.ident + " is derived from "
            + RT.printString(RT.vector((Object[]) c.tupleAttrs)) + ", so it cannot be asserted as "
            + Printed.brief(x.v) + ": entity " + e + (derived == null ? " has none of those"
            : "'s is " + Printed.brief(derived)), "attribute", c.ident, "value", x.v,
            "derived", derived, "entity", e, "form", x.form);
      }
    }
  }

  /**
   * Stamps the transaction with {@code :db/txInstant}: instants never decrease
   * with t (as-of by Date depends on it), so a given one older than the
   * previous transaction's is refused, as Datomic does.
   */
  private void addTxInstant() {
    Attr inst = schema.attr(Schema.TX_INSTANT);
    IndexScan scan = db.scan(snap, Index.EAVT,
        new KeyBuilder().putLong(Db.tToTx(db.basisT())).putLong(inst.id).view());
    Date prev = scan.next() ? (Date) scan.datom().v : null;
    scan.close();
    LinkedHashMap<Bytes, Val> given = slots.get(new SlotKey(tx, inst.id));
    if (given == null) {
      Date now = new Date();
      add(tx, inst, prev != null && prev.after(now) ? prev : now, null);
      return;
    }
    for (Val x : given.values()) {
      if (x.status == Val.ADDED && prev != null && ((Date) x.v).before(prev)) {
        throw Errors.error("tx/past-instant", "The :db/txInstant " + RT.printString(x.v)
            + " is older than the previous transaction's, " + RT.printString(prev),
            "value", x.v, "previous", prev, "form", x.form);
      }
    }
  }

  // ---- results

  private List<TxChange> collect() {
    List<TxChange> out = new ArrayList<>();
    for (Map.Entry<SlotKey, LinkedHashMap<Bytes, Val>> en : slots.entrySet()) {
      long e = en.getKey().e();
      Attr a = slotAttrs.get(en.getKey());
      Keyword ident = a.ident;
      for (Val x : en.getValue().values()) {
        if (x.status == Val.RETRACTED) {
          out.add(new TxChange(new Datom(e, a.id, ident, x.v, tx, false), a, x.encoded,
              x.assertedTx));
        }
      }
      for (Val x : en.getValue().values()) {
        if (x.status == Val.ADDED) {
          out.add(new TxChange(new Datom(e, a.id, ident, x.v, tx, true), a, x.encoded, tx));
        }
      }
    }
    return out;
  }

  /** No two entities may hold one value of a unique attribute. */
  private void checkUnique(List<TxChange> changes, Schema next) {
    Map<Bytes, Long> inTx = new HashMap<>();
    Set<Bytes> retracted = new HashSet<>();
    for (TxChange c : changes) {
      Attr a = next.attr(c.datom.aid);
      if (a != null && a.isUnique() && !c.datom.added) {
        retracted.add(new Bytes(new KeyBuilder(false).putLong(a.id)
            .put(Codec.keyPart(c.encoded)).putLong(c.datom.e).toBytes()));
      }
    }
    for (TxChange c : changes) {
      Attr a = next.attr(c.datom.aid);
      if (a == null || !a.isUnique() || !c.datom.added) {
        continue;
      }
      byte[] vpart = Codec.keyPart(c.encoded);
      byte[] key = new KeyBuilder(false).putLong(a.id).put(vpart).toBytes();
      Long other = inTx.putIfAbsent(new Bytes(key), c.datom.e);
      if (other != null && other != c.datom.e) {
        throw uniqueError(a, c, other);
      }
      IndexScan scan = db.scan(snap, Index.AVET, new KeyBuilder().put(key).view());
      while (scan.next()) {
        long holder = scan.datom().e;
        byte[] held = new KeyBuilder(false).put(key).putLong(holder).toBytes();
        if (holder != c.datom.e && !retracted.contains(new Bytes(held))) {
          scan.close();
          throw uniqueError(a, c, holder);
        }
      }
      scan.close();
    }
  }

  private static ExceptionInfo uniqueError(Attr a, TxChange c, long holder) {
    return Errors.error("tx/unique", "Unique conflict: " + a.ident + " "
        + RT.printString(c.datom.v) + " already belongs to entity " + holder,
        "attribute", a.ident, "value", c.datom.v, "entity", c.datom.e, "conflicting-entity", holder);
  }
}
