package datalith.db;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
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

  /** Entity id -> that entity's system-attribute values (aid -> value); never mutated once shared. */
  private final LongMap<Map<Long, Object>> props;
  private final LongMap<Attr> attrs;
  private final Map<Keyword, Long> idents;
  private final List<Attr> composites = new ArrayList<>();

  private Schema(LongMap<Map<Long, Object>> props) {
    this.props = props;
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
    out.add(new Object[] {id, IDENT, Keyword.intern("db", name)});
    out.add(new Object[] {id, VALUE_TYPE, TYPE_BASE + indexOf(type)});
    out.add(new Object[] {id, CARDINALITY, CARD_ONE});
    if (unique != 0) {
      out.add(new Object[] {id, UNIQUE, unique});
    }
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
    LongMap<Map<Long, Object>> p = new LongMap<>(64);
    for (Object[] d : bootstrap()) {
      setProp(p, (Long) d[0], (Long) d[1], d[2]);
    }
    return new Schema(p);
  }

  /** The schema from every system-attribute datom of a database ({@code [e aid v]} triples). */
  public static Schema fromTriples(Iterable<Object[]> triples) {
    LongMap<Map<Long, Object>> p = new LongMap<>(64);
    for (Object[] d : triples) {
      setProp(p, (Long) d[0], (Long) d[1], d[2]);
    }
    return new Schema(p);
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
    for (Datom d : datoms) {
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
    return p == null ? this : new Schema(p);
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
    return new Attr(e, ident, type, Long.valueOf(CARD_MANY).equals(p.get(CARDINALITY)), unique,
        Boolean.TRUE.equals(p.get(INDEX)), Boolean.TRUE.equals(p.get(IS_COMPONENT)),
        Boolean.TRUE.equals(p.get(NO_HISTORY)), tupleAttrs, tupleType, tupleTypes);
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
