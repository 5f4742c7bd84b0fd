package datalith.api;

import clojure.lang.Keyword;
import datalith.conn.With;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Entity;
import datalith.db.Errors;
import datalith.db.Snapshot;
import datalith.db.ValidTime;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.pull.Puller;
import datalith.query.Engine;
import datalith.query.parser.Query;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * An immutable database value. Results are {@code java.util} collections
 * (Clojure's persistent ones, read-only): a relation query gives a
 * {@code Set<List<Object>>} (with {@code :with} and no aggregate, a
 * {@code List<List<Object>>} that keeps the repeats {@code :with} makes), a
 * collection query a {@code List}, a scalar query the value; keywords are
 * {@code clojure.lang.Keyword}s ({@link Datalith#kw}). {@link #query} gives the
 * answer with typed accessors, {@link #pullNamed} a pull without keywords.
 *
 * <p>Wherever an entity is taken, it may be an entity id ({@code Long}), an
 * ident ({@code Keyword}) or a lookup ref {@code [attr value]} given as a
 * {@code List} or an {@code Object[]} of two, the attribute a {@code Keyword}
 * or a "ns/name" String. Every failure is a {@link DatalithException}.
 */
public final class Database {
  /**
   * The end of valid time, {@code 9999-12-31T23:59:59.999Z} (XTDB's {@code end-of-time}): the
   * {@code to} of every open-ended interval {@link #validIntervals} hands out (as a {@link Date}
   * of the same milliseconds), a {@code :db/valid-to} at or after it being open-ended. Instants
   * given to {@link #validAt} and valid-froms are before it.
   */
  public static final Instant END_OF_TIME = Instant.ofEpochMilli(ValidTime.END_OF_TIME);

  private final Db db;

  Database(Db db) {
    this.db = db;
  }

  /**
   * The Java-API view of a {@code datalith.core} database value (the inverse of {@link #unwrap}).
   *
   * @param db a database value, e.g. {@code (d/db conn)}
   * @return the database value
   * @throws DatalithException when {@code db} is null
   */
  public static Database of(Db db) {
    try {
      return new Database(Args.required(db, "db"));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * The Clojure-level value, for mixing with {@code datalith.core}.
   *
   * @return the {@code datalith.core} database value
   */
  public Db unwrap() {
    return db;
  }

  /**
   * The t of the last transaction this value includes.
   *
   * @return the basis t
   */
  public long basisT() {
    return db.basisT();
  }

  /**
   * Runs a Datalog query given as EDN text (vector or map form) or data, with
   * one input per {@code :in} element after {@code $}, which is this database.
   * A {@link Database} input is taken as that database.
   *
   * @param query the query, EDN text or Clojure data
   * @param inputs the inputs after {@code $}, in {@code :in} order
   * @return the answer, shaped by {@code :find} (see the class comment)
   * @throws DatalithException when the query is malformed, an input does not fit
   *     its binding, or the query fails
   */
  public Object q(Object query, Object... inputs) {
    try {
      return Engine.q(Edn.read(Args.required(query, "query"), "query"), inputs(inputs), null);
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * Runs a query as {@link #q} does and returns its answer with typed accessors
   * ({@link QueryResult#rel}, {@link QueryResult#coll}, {@link QueryResult#scalar},
   * {@link QueryResult#tuple}).
   *
   * @param query the query, EDN text or Clojure data
   * @param inputs the inputs after {@code $}, in {@code :in} order
   * @return the typed answer
   * @throws DatalithException when the query is malformed, an input does not fit
   *     its binding, or the query fails
   */
  public QueryResult query(Object query, Object... inputs) {
    try {
      Query parsed = Engine.parse(Edn.read(Args.required(query, "query"), "query"));
      return new QueryResult(parsed, Engine.run(parsed, inputs(inputs)));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * Parses a query once, as {@link Datalith#prepare} does, to run on this and
   * other databases ({@link PreparedQuery#run}).
   *
   * @param query the query, EDN text or Clojure data
   * @return the prepared query
   * @throws DatalithException when the query is malformed
   */
  public PreparedQuery prepare(Object query) {
    return Datalith.prepare(query);
  }

  /** The engine's inputs: this database, then {@code inputs} with databases unwrapped. */
  Object[] inputs(Object[] inputs) {
    Object[] given = inputs == null ? new Object[] {null} : inputs;
    Object[] all = new Object[given.length + 1];
    all[0] = db;
    for (int i = 0; i < given.length; i++) {
      all[i + 1] = given[i] instanceof Database d ? d.db : given[i];
    }
    return all;
  }

  /**
   * The entity as a map shaped by {@code pattern}: keys are the attributes
   * ({@code Keyword}s, or what {@code :as} names), refs nested maps.
   *
   * @param pattern the pull pattern, EDN text (e.g. {@code "[*]"}) or data
   * @param eid the entity (see the class comment)
   * @return the map, read-only; null when the entity has nothing the pattern asks for
   * @throws DatalithException when the pattern is malformed or {@code eid} is not an entity
   */
  @SuppressWarnings("unchecked")
  public Map<Object, Object> pull(Object pattern, Object eid) {
    try {
      return (Map<Object, Object>) Puller.pull(db, pattern(pattern), Ids.eid(eid));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * {@link #pull}, Keyword-free: every keyword of the answer, key or value, is a
   * "ns/name" String (e.g. {@code "user/email"}), in nested maps too; lists and
   * sets are {@code java.util} ones.
   *
   * @param pattern the pull pattern, EDN text or data
   * @param eid the entity (see the class comment)
   * @return the map, read-only; null when the entity has nothing the pattern asks for
   * @throws DatalithException when the pattern is malformed or {@code eid} is not an entity
   */
  public Map<String, Object> pullNamed(Object pattern, Object eid) {
    Map<Object, Object> m = pull(pattern, eid);
    return m == null ? null : JavaData.named(m);
  }

  /**
   * {@link #pull} of each entity, in order, through one read.
   *
   * @param pattern the pull pattern, EDN text or data
   * @param eids the entities (see the class comment)
   * @return one map (or null) per entity, read-only
   * @throws DatalithException when the pattern is malformed or an entity is not one
   */
  @SuppressWarnings("unchecked")
  public List<Map<Object, Object>> pullMany(Object pattern, List<?> eids) {
    try {
      return (List<Map<Object, Object>>) Puller.pullMany(db, pattern(pattern),
          Ids.eids(Args.required(eids, "eids")));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * {@link #pullMany}, Keyword-free as {@link #pullNamed} is.
   *
   * @param pattern the pull pattern, EDN text or data
   * @param eids the entities (see the class comment)
   * @return one map (or null) per entity, read-only
   * @throws DatalithException when the pattern is malformed or an entity is not one
   */
  public List<Map<String, Object>> pullManyNamed(Object pattern, List<?> eids) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (Map<Object, Object> m : pullMany(pattern, eids)) {
      out.add(m == null ? null : JavaData.named(m));
    }
    return java.util.Collections.unmodifiableList(out);
  }

  private static Object pattern(Object pattern) {
    return Edn.read(Args.required(pattern, "pull pattern"), "pull pattern");
  }

  /**
   * Every attribute of an entity, refs as {@link Entity} values (themselves
   * lookups by keyword).
   *
   * @param eid the entity (see the class comment)
   * @return the attributes by keyword, read-only; null when {@code eid} names no entity
   * @throws DatalithException when {@code eid} is not an entity id, ident or lookup ref
   */
  @SuppressWarnings("unchecked")
  public Map<Object, Object> entity(Object eid) {
    try {
      long e = id(eid);
      return e < 0 ? null : (Map<Object, Object>) new Entity(db, e).toMap();
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * The entity id an entity names, as Datomic's {@code entid}.
   *
   * @param eid the entity (see the class comment)
   * @return its id; null when {@code eid} names no entity (an unknown ident, a lookup ref
   *     that finds none)
   * @throws DatalithException when {@code eid} is not an entity id, ident or lookup ref
   */
  public Long entid(Object eid) {
    try {
      long e = id(eid);
      return e < 0 ? null : e;
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * The ident of an entity, as Datomic's {@code ident}: the inverse of {@link #entid} for
   * attributes and enum entities.
   *
   * @param eid the entity (see the class comment)
   * @return its {@code :db/ident} keyword; null when it has none or {@code eid} names no entity
   * @throws DatalithException when {@code eid} is not an entity id, ident or lookup ref
   */
  public Keyword ident(Object eid) {
    try {
      long e = id(eid);
      return e < 0 ? null : db.schema().ident(e);
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /** The id of the entity {@code eid} names (see the class comment), or -1 when it names none. */
  private long id(Object eid) {
    try (Snapshot s = db.snapshot()) {
      return db.entid(s, Ids.eid(eid));
    }
  }

  /**
   * The datoms of an index under leading components, in index order.
   *
   * @param index "eavt", "aevt", "avet" or "vaet" (any case)
   * @param components the leading components in the index's order: entities (see
   *     the class comment), attributes ({@code Keyword}s or "ns/name" Strings), values
   * @return the datoms
   * @throws DatalithException of category "db/invalid-index" for another index
   *     name; when a component does not fit its place
   */
  @SuppressWarnings("unchecked")
  public List<Datom> datoms(String index, Object... components) {
    try {
      Index ix = index(index);
      byte[] prefix = db.keyFor(ix, components(ix, components));
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
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  private static Index index(String name) {
    for (Index ix : Index.values()) {
      if (ix.name().equalsIgnoreCase(String.valueOf(name))) {
        return ix;
      }
    }
    throw Errors.error("db/invalid-index", "The index is one of \"eavt\", \"aevt\", \"avet\","
        + " \"vaet\", got " + (name == null ? "null" : "\"" + name + "\""), "index", name);
  }

  /** {@code components} with the entity ones (lookup refs as lists or arrays) converted. */
  private static Object[] components(Index ix, Object[] components) {
    if (components == null) {
      return new Object[0];
    }
    Object[] out = components.clone();
    String order = ix.name().toLowerCase(Locale.ROOT);
    for (int i = 0; i < out.length && i < order.length(); i++) {
      if (order.charAt(i) == 'e' || (order.charAt(i) == 'v' && ix == Index.VAET)) {
        out[i] = Ids.eid(out[i]);
      } else if (order.charAt(i) == 'a' && out[i] instanceof String s) {
        out[i] = Keyword.intern(s);
      }
    }
    return out;
  }

  /**
   * This database as of a point in time: only what was true then.
   *
   * @param point a t ({@code Long}), a transaction id or a {@link Date}
   * @return the past database value
   * @throws DatalithException when {@code point} is none of those
   */
  public Database asOf(Object point) {
    try {
      return new Database(db.asOf(point));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * This database as the facts valid at an instant show it (valid time), as they were known at
   * this value's basis or as-of point; composes with {@link #asOf} in either order. Facts get a
   * valid-time interval in tx-data ({@code [:db/add e a v {:db/valid-from #inst "..."
   * :db/valid-to #inst "..."}]}, or {@code :db/valid-from}/{@code :db/valid-to} keys of an entity
   * map or of {@code {:db/id "datomic.tx"}}); a fact without one is valid from its transaction's
   * txInstant until it is retracted.
   *
   * @param instant the valid-time instant
   * @return the database value at that valid instant
   * @throws DatalithException when {@code instant} is not a {@link Date} before
   *     {@link #END_OF_TIME}, or this value is a since or history view
   */
  public Database validAt(Object instant) {
    try {
      return new Database(db.validAt(instant));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * Every valid-time version of an attribute, as known at this value's basis or as-of point:
   * one {@code [e v from to tx]} per interval [from, to) over which entity {@code e}'s attribute
   * had value {@code v}, asserted by transaction {@code tx}; an open end is the {@link Date} of
   * {@link #END_OF_TIME}, so that intervals compare as instants. A query binds the same
   * versions with {@code :valid-at :any-valid-time}: its patterns {@code [e a v from to]}.
   *
   * @param attribute a {@code Keyword} or "ns/name" String
   * @return the versions in entity order, each entity's by valid-from; empty for an unknown
   *     attribute
   * @throws DatalithException when {@code attribute} is neither, or this value is a valid-at,
   *     since or history view
   */
  public List<List<Object>> validIntervals(Object attribute) {
    return intervals(null, attribute);
  }

  /**
   * The valid-time versions of one entity's attribute ({@link #validIntervals(Object)}), each
   * {@code [v from to tx]}.
   *
   * @param entity an entity (see the class comment)
   * @param attribute a {@code Keyword} or "ns/name" String
   * @return the versions by valid-from; empty for an unknown entity or attribute
   * @throws DatalithException when {@code attribute} is neither, or this value is a valid-at,
   *     since or history view
   */
  public List<List<Object>> validIntervals(Object entity, Object attribute) {
    try {
      return intervals(Args.required(entity, "entity"), attribute);
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /** The versions of {@code attribute}, of {@code entity} or (null) of every entity. */
  private List<List<Object>> intervals(Object entity, Object attribute) {
    try {
      Object ident = attribute instanceof String s ? Keyword.intern(s) : attribute;
      if (!(ident instanceof Keyword k)) {
        throw Errors.error("db/invalid-attribute", "Expected an attribute ident (a Keyword or an"
            + " \"ns/name\" String)", "attribute", attribute);
      }
      long eid = -1;
      if (entity != null) {
        try (Snapshot s = db.snapshot()) {
          eid = db.entid(s, Ids.eid(entity));
        }
      }
      Attr a = db.schema().attr(k);
      if (a == null || entity != null && eid < 0) {
        return List.of();
      }
      List<List<Object>> out = new ArrayList<>();
      for (Object[] v : ValidTime.intervals(db, eid, a)) {
        out.add(List.of(entity == null ? v : Arrays.copyOfRange(v, 1, v.length)));
      }
      return out;
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * Only what was asserted after a point in time.
   *
   * @param point a t ({@code Long}), a transaction id or a {@link Date}
   * @return the database value since {@code point}
   * @throws DatalithException when {@code point} is none of those
   */
  public Database since(Object point) {
    try {
      return new Database(db.since(point));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * Every assertion and retraction, as a database value whose datoms say which
   * ({@link Datom#added}).
   *
   * @return the history database value
   */
  public Database history() {
    try {
      return new Database(db.historyView());
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * The database after {@code txData}, in memory only: nothing is written.
   *
   * @param txData EDN text such as {@code "[{:user/name \"Ada\"}]"}, or Clojure data
   * @return what the transaction would do
   * @throws DatalithException when the transaction would fail
   */
  public TxResult with(Object txData) {
    try {
      return new TxResult(With.run(db, Edn.read(Args.required(txData, "tx-data"), "tx-data")));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }
}
