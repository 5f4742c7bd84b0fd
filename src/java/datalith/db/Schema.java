package datalith.db;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
import clojure.lang.PersistentHashSet;
import clojure.lang.Symbol;
import clojure.lang.ITransientMap;
import datalith.codec.Codec;
import datalith.index.Datom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The idents and attribute definitions of one database value: immutable.
 * Built from the datoms of the system attributes ({@code :db/ident},
 * {@code :db/valueType}, ...), which are data like any other.
 */
public final class Schema {
  // System attribute ids: fixed, written at t 0.
  public static final long IDENT = 1, VALUE_TYPE = 2, CARDINALITY = 3, UNIQUE = 4, INDEX = 5,
      IS_COMPONENT = 6, NO_HISTORY = 7, DOC = 8, TX_INSTANT = 9, TUPLE_ATTRS = 10, TUPLE_TYPE = 11,
      TUPLE_TYPES = 12;
  /**
   * Attribute predicates and entity specs (stop 47; a database made before has none of these
   * entities): {@code :db.attr/preds} (symbols, many: checked on each value an attribute is
   * given), {@code :db.entity/attrs} (keywords, many) and {@code :db.entity/preds} (symbols,
   * many) of a spec, and {@code :db/ensure} (refs, many: never stored; asserting it checks the
   * entity against the spec). Id 13 is {@code ValidTime.EVENT}'s, installed on first use.
   */
  public static final long ATTR_PREDS = 14, ENTITY_ATTRS = 15, ENTITY_PREDS = 16, ENSURE = 17;
  // Enum entity ids.
  // :db.type/* are TYPE_BASE + index in TYPE_NAMES, ids 20 to 34: a new type takes the next id
  // (below CARD_ONE), and databases made before it have no datoms for it (EntityRefs says so)
  public static final long TYPE_BASE = 20;
  public static final long CARD_ONE = 40, CARD_MANY = 41, UNIQUE_IDENTITY = 42, UNIQUE_VALUE = 43;
  /** The first id handed to user entities. */
  public static final long FIRST_USER_ID = 1000;

  static final String[] TYPE_NAMES = {"string", "long", "double", "float", "boolean",
      "keyword", "symbol", "ref", "instant", "uuid", "bigint", "bigdec", "bytes", "tuple", "uri"};
  private static final int[] TYPE_TAGS = {Codec.T_STRING, Codec.T_LONG, Codec.T_DOUBLE,
      Codec.T_FLOAT, Codec.T_BOOLEAN, Codec.T_KEYWORD, Codec.T_SYMBOL, Codec.T_REF,
      Codec.T_INSTANT, Codec.T_UUID, Codec.T_BIGINT, Codec.T_BIGDEC, Codec.T_BYTES, Codec.T_TUPLE,
      Codec.T_URI};

  public static final Keyword K_IDENT = Keyword.intern("db", "ident");
  public static final Keyword K_VALUE_TYPE = Keyword.intern("db", "valueType");
  public static final Keyword K_CARDINALITY = Keyword.intern("db", "cardinality");
  public static final Keyword K_UNIQUE = Keyword.intern("db", "unique");
  public static final Keyword K_INDEX = Keyword.intern("db", "index");
  public static final Keyword K_IS_COMPONENT = Keyword.intern("db", "isComponent");
  public static final Keyword K_NO_HISTORY = Keyword.intern("db", "noHistory");
  public static final Keyword K_DOC = Keyword.intern("db", "doc");
  public static final Keyword K_TUPLE_ATTRS = Keyword.intern("db", "tupleAttrs");
  public static final Keyword K_TUPLE_TYPE = Keyword.intern("db", "tupleType");
  public static final Keyword K_TUPLE_TYPES = Keyword.intern("db", "tupleTypes");
  public static final Keyword K_ATTR_PREDS = Keyword.intern("db.attr", "preds");

  /** Entity id -> that entity's system-attribute values (aid -> value); never mutated once shared. */
  private final LongMap<Map<Long, Object>> props;
  /** Entity id -> its {@code :db.attr/preds}, in the order asserted; never mutated once shared. */
  private final LongMap<List<Symbol>> preds;
  private final LongMap<Attr> attrs;
  private final boolean anyPreds;
  private final Map<Keyword, Long> idents;
  private final List<Attr> composites = new ArrayList<>();

  private Schema(LongMap<Map<Long, Object>> props, LongMap<List<Symbol>> preds) {
    this.props = props;
    this.preds = preds;
    boolean any = false;
    for (long e : preds.keys()) {
      any |= !preds.get(e).isEmpty();
    }
    this.anyPreds = any;
    this.attrs = new LongMap<>(props.size());
    this.idents = new HashMap<>(props.size() * 2);
    props.forEach((e, p) -> {
      Object ident = p.get(IDENT);
      if (ident instanceof Keyword k) {
        idents.put(k, e);
        Attr a = build(e, k, p);
        attrs.put(e, a);
        if (a.tupleAttrs != null) {
          composites.add(a);
        }
      }
    });
  }

  /** The datoms every database starts with, at t 0 (tx id {@code txId}). */
  public static List<Object[]> bootstrap() {
    List<Object[]> out = new ArrayList<>();
    sysAttr(out, IDENT, "ident", "keyword", UNIQUE_IDENTITY);
    sysAttr(out, VALUE_TYPE, "valueType", "ref", 0);
    sysAttr(out, CARDINALITY, "cardinality", "ref", 0);
    sysAttr(out, UNIQUE, "unique", "ref", 0);
    sysAttr(out, INDEX, "index", "boolean", 0);
    sysAttr(out, IS_COMPONENT, "isComponent", "boolean", 0);
    sysAttr(out, NO_HISTORY, "noHistory", "boolean", 0);
    sysAttr(out, DOC, "doc", "string", 0);
    sysAttr(out, TX_INSTANT, "txInstant", "instant", 0);
    sysAttr(out, TUPLE_ATTRS, "tupleAttrs", "tuple", 0);
    sysAttr(out, TUPLE_TYPE, "tupleType", "ref", 0);
    sysAttr(out, TUPLE_TYPES, "tupleTypes", "tuple", 0);
    sysAttr(out, ATTR_PREDS, K_ATTR_PREDS, "symbol", CARD_MANY);
    sysAttr(out, ENTITY_ATTRS, Keyword.intern("db.entity", "attrs"), "keyword", CARD_MANY);
    sysAttr(out, ENTITY_PREDS, Keyword.intern("db.entity", "preds"), "symbol", CARD_MANY);
    sysAttr(out, ENSURE, Keyword.intern("db", "ensure"), "ref", CARD_MANY);
    out.add(new Object[] {TX_INSTANT, INDEX, Boolean.TRUE});
    for (int i = 0; i < TYPE_NAMES.length; i++) {
      out.add(new Object[] {TYPE_BASE + i, IDENT, Keyword.intern("db.type", TYPE_NAMES[i])});
    }
    out.add(new Object[] {CARD_ONE, IDENT, Keyword.intern("db.cardinality", "one")});
    out.add(new Object[] {CARD_MANY, IDENT, Keyword.intern("db.cardinality", "many")});
    out.add(new Object[] {UNIQUE_IDENTITY, IDENT, Keyword.intern("db.unique", "identity")});
    out.add(new Object[] {UNIQUE_VALUE, IDENT, Keyword.intern("db.unique", "value")});
    return out;
  }

  private static void sysAttr(List<Object[]> out, long id, String name, String type, long unique) {
    sysAttr(out, id, Keyword.intern("db", name), type, CARD_ONE);
    if (unique != 0) {
      out.add(new Object[] {id, UNIQUE, unique});
    }
  }

  private static void sysAttr(List<Object[]> out, long id, Keyword ident, String type,
      long cardinality) {
    out.add(new Object[] {id, IDENT, ident});
    out.add(new Object[] {id, VALUE_TYPE, TYPE_BASE + indexOf(type)});
    out.add(new Object[] {id, CARDINALITY, cardinality});
  }

  private static int indexOf(String type) {
    for (int i = 0; i < TYPE_NAMES.length; i++) {
      if (TYPE_NAMES[i].equals(type)) {
        return i;
      }
    }
    throw new IllegalArgumentException(type);
  }

  /** Whether {@code aid} is one of the system attributes that define schema. */
  public static boolean isSchemaAttr(long aid) {
    return aid >= IDENT && aid <= TUPLE_TYPES && aid != TX_INSTANT;
  }

  /** The schema of the bootstrap datoms alone. */
  public static Schema initial() {
    return fromTriples(bootstrap());
  }

  /**
   * The schema from every datom of a database's schema attributes ({@link #isSchemaAttr}) and
   * {@link #ATTR_PREDS} ({@code [e aid v]} triples).
   */
  public static Schema fromTriples(Iterable<Object[]> triples) {
    LongMap<Map<Long, Object>> p = new LongMap<>(64);
    LongMap<List<Symbol>> preds = new LongMap<>(8);
    for (Object[] d : triples) {
      long e = (Long) d[0];
      if ((Long) d[1] == ATTR_PREDS) {
        List<Symbol> l = preds.get(e);
        preds.put(e, withPred(l == null ? List.of() : l, (Symbol) d[2], true));
      } else {
        setProp(p, e, (Long) d[1], d[2]);
      }
    }
    return new Schema(p, preds);
  }

  private static List<Symbol> withPred(List<Symbol> l, Symbol pred, boolean added) {
    List<Symbol> out = new ArrayList<>(l);
    out.remove(pred);
    if (added) {
      out.add(pred);
    }
    return List.copyOf(out);
  }

  private static void setProp(LongMap<Map<Long, Object>> p, long e, long aid, Object v) {
    Map<Long, Object> m = p.get(e);
    if (m == null) {
      m = new HashMap<>(8);
      p.put(e, m);
    }
    m.put(aid, v);
  }

  /**
   * This schema after {@code datoms} (a transaction's assertions and
   * retractions): this object when they touch no system attribute.
   */
  public Schema with(List<Datom> datoms) {
    LongMap<Map<Long, Object>> p = null;
    LongMap<List<Symbol>> pr = null;
    for (Datom d : datoms) {
      if (d.aid == ATTR_PREDS) {
        if (pr == null) {
          pr = preds.copy();
        }
        List<Symbol> l = pr.get(d.e);
        pr.put(d.e, withPred(l == null ? List.of() : l, (Symbol) d.v, d.added));
        continue;
      }
      if (!isSchemaAttr(d.aid)) {
        continue;
      }
      if (p == null) {
        p = props.copy();
      }
      Map<Long, Object> m = p.get(d.e);
      m = m == null ? new HashMap<>(8) : new HashMap<>(m);
      p.put(d.e, m);
      if (d.added) {
        m.put(d.aid, d.v);
      } else if (Datom.valueEquals(m.get(d.aid), d.v)) {
        m.remove(d.aid);
      }
    }
    return p == null && pr == null ? this
        : new Schema(p == null ? props : p, pr == null ? preds : pr);
  }

  /** The schema an entity would have with {@code changes} (aid -> value, null = retracted). */
  public Attr preview(long e, Keyword ident, Map<Long, Object> changes) {
    Map<Long, Object> m = props.get(e);
    m = m == null ? new HashMap<>(8) : new HashMap<>(m);
    for (Map.Entry<Long, Object> c : changes.entrySet()) {
      if (c.getValue() == null) {
        m.remove(c.getKey());
      } else {
        m.put(c.getKey(), c.getValue());
      }
    }
    return build(e, ident, m);
  }

  /** The current system-attribute values of entity {@code e} (aid -> value); never null. */
  public Map<Long, Object> props(long e) {
    Map<Long, Object> m = props.get(e);
    return m == null ? Map.of() : m;
  }

  private Attr build(long e, Keyword ident, Map<Long, Object> p) {
    int type = Codec.T_ANY;
    Object vt = p.get(VALUE_TYPE);
    if (vt instanceof Long t && t >= TYPE_BASE && t < TYPE_BASE + TYPE_TAGS.length) {
      type = TYPE_TAGS[(int) (t - TYPE_BASE)];
    }
    Object tt = p.get(TUPLE_TYPE);
    int tupleType = tt instanceof Long t && t >= TYPE_BASE && t < TYPE_BASE + TYPE_TAGS.length
        ? TYPE_TAGS[(int) (t - TYPE_BASE)] : 0;
    // malformed tuple properties are ignored here, and refused by the transactor's SchemaCheck
    int[] tupleTypes = null;
    if (p.get(TUPLE_TYPES) instanceof List<?> l) {
      tupleTypes = new int[l.size()];
      for (int i = 0; i < l.size(); i++) {
        int tag = l.get(i) instanceof Keyword k ? typeTag(k) : -1;
        tupleTypes[i] = tag < 0 ? Codec.T_ANY : tag;
      }
    }
    Keyword[] tupleAttrs = null;
    if (p.get(TUPLE_ATTRS) instanceof List<?> l && !l.isEmpty()
        && l.stream().allMatch(x -> x instanceof Keyword)) {
      tupleAttrs = l.toArray(new Keyword[0]);
    }
    Object u = p.get(UNIQUE);
    int unique = u instanceof Long x && x == UNIQUE_IDENTITY ? Attr.UNIQUE_IDENTITY
        : u instanceof Long x && x == UNIQUE_VALUE ? Attr.UNIQUE_VALUE : Attr.UNIQUE_NONE;
    List<Symbol> ps = preds.get(e);
    return new Attr(e, ident, type, Long.valueOf(CARD_MANY).equals(p.get(CARDINALITY)), unique,
        Boolean.TRUE.equals(p.get(INDEX)), Boolean.TRUE.equals(p.get(IS_COMPONENT)),
        Boolean.TRUE.equals(p.get(NO_HISTORY)), tupleAttrs, tupleType, tupleTypes,
        ps == null || ps.isEmpty() ? null : ps);
  }

  /** How many {@code :db.type/*} enum entities there are (ids TYPE_BASE and up). */
  public static int typeCount() {
    return TYPE_TAGS.length;
  }

  /** The position of a {@code Codec.T_*} tag among the type enums (id = TYPE_BASE + it), or -1. */
  public static int typeIndex(int tag) {
    for (int i = 0; i < TYPE_TAGS.length; i++) {
      if (TYPE_TAGS[i] == tag) {
        return i;
      }
    }
    return -1;
  }

  /** The {@code Codec.T_*} tag of a {@code :db.type/*} keyword, or -1. */
  public static int typeTag(Keyword k) {
    if (k != null && "db.type".equals(k.getNamespace())) {
      for (int i = 0; i < TYPE_NAMES.length; i++) {
        if (TYPE_NAMES[i].equals(k.getName())) {
          return TYPE_TAGS[i];
        }
      }
    }
    return -1;
  }

  /** The {@code :db.type/*} keyword of a tag, or null for {@code T_ANY}. */
  public static Keyword typeKeyword(int tag) {
    for (int i = 0; i < TYPE_TAGS.length; i++) {
      if (TYPE_TAGS[i] == tag) {
        return Keyword.intern("db.type", TYPE_NAMES[i]);
      }
    }
    return null;
  }

  /** Whether any attribute has {@code :db.attr/preds}. */
  public boolean hasAttrPreds() {
    return anyPreds;
  }

  /** The composite tuple attributes ({@code :db/tupleAttrs}). */
  public List<Attr> composites() {
    return composites;
  }

  /** Calls {@code f} with every ident's attribute of a user entity (enum idents too). */
  void forEachUserAttr(java.util.function.Consumer<Attr> f) {
    attrs.forEach((e, a) -> {
      if (e >= FIRST_USER_ID) {
        f.accept(a);
      }
    });
  }

  /** The attribute with entity id {@code aid}, or null when that entity has no ident. */
  public Attr attr(long aid) {
    return attrs.get(aid);
  }

  /** The attribute named {@code ident}, or null. */
  public Attr attr(Keyword ident) {
    Long id = idents.get(ident);
    return id == null ? null : attrs.get(id);
  }

  /** The entity id of {@code ident}, or null. */
  public Long entid(Keyword ident) {
    return idents.get(ident);
  }

  /** The ident of entity {@code e}, or null. */
  public Keyword ident(long e) {
    Attr a = attrs.get(e);
    return a == null ? null : a.ident;
  }

  /**
   * The user-facing schema: {@code {ident {:db/valueType :db.type/string ...}}}
   * for every attribute that is not a system one and not an enum value.
   */
  public IPersistentMap toMap() {
    ITransientMap out = PersistentHashMap.EMPTY.asTransient();
    props.forEach((e, p) -> {
      if (e < FIRST_USER_ID || !(p.get(IDENT) instanceof Keyword ident)
          || p.get(VALUE_TYPE) == null && p.get(CARDINALITY) == null) {
        return; // not an attribute: an ident (an enum value)
      }
      List<Object> kvs = new ArrayList<>();
      kvs.add(K_IDENT);
      kvs.add(ident);
      for (Map.Entry<Long, Object> en : p.entrySet()) {
        Keyword k = keyOf(en.getKey());
        if (k == null || en.getKey() == IDENT) {
          continue;
        }
        Object v = en.getValue();
        if (en.getKey() == VALUE_TYPE || en.getKey() == CARDINALITY || en.getKey() == UNIQUE
            || en.getKey() == TUPLE_TYPE) {
          Keyword vi = ident((Long) v);
          v = vi == null ? v : vi;
        }
        kvs.add(k);
        kvs.add(v);
      }
      List<Symbol> ps = preds.get(e);
      if (ps != null && !ps.isEmpty()) {
        kvs.add(K_ATTR_PREDS);
        kvs.add(PersistentHashSet.create(ps));
      }
      out.assoc(ident, PersistentArrayMap.createAsIfByAssoc(kvs.toArray()));
    });
    return out.persistent();
  }

  private static Keyword keyOf(long aid) {
    switch ((int) aid) {
      case 1: return K_IDENT;
      case 2: return K_VALUE_TYPE;
      case 3: return K_CARDINALITY;
      case 4: return K_UNIQUE;
      case 5: return K_INDEX;
      case 6: return K_IS_COMPONENT;
      case 7: return K_NO_HISTORY;
      case 8: return K_DOC;
      case 10: return K_TUPLE_ATTRS;
      case 11: return K_TUPLE_TYPE;
      case 12: return K_TUPLE_TYPES;
      default: return null;
    }
  }
}
