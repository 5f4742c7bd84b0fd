package datalith.tx;

import clojure.lang.Keyword;
import clojure.lang.RT;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Schema;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The attributes a transaction defines, as the rest of its tx-data sees them:
 * existing user attributes that maps with {@code :db/ident} alter, new ones
 * they declare, and new ones installed on first use (cardinality one, any
 * value type).
 *
 * <p>A new attribute has no id while tx-data is expanded: its entity is a
 * {@link TempRef}, and its {@link Attr} carries a provisional negative id
 * (distinct per attribute, never an entity's). Once the tempids are resolved,
 * {@link #assignIds} rebuilds it with its real id. So the allocator hands out
 * no id before every id that tx-data names is known ({@link EntityIds}).
 */
final class PendingAttrs {
  private static final Keyword DB_ID = Keyword.intern("db", "id");

  /** A new attribute (or ident): its entity and the definition tx-data gives it. */
  private static final class Fresh {
    final TempRef entity;
    final long provisionalId;
    final Map<Long, Object> props = new HashMap<>();

    Fresh(TempRef entity, long provisionalId) {
      this.entity = entity;
      this.provisionalId = provisionalId;
    }
  }

  private final Schema schema;
  /** Ident -> the attribute as this transaction defines it (new ones with provisional ids). */
  private final Map<Keyword, Attr> attrs = new HashMap<>();
  /** Existing user attributes altered by maps: ident -> their changed properties. */
  private final Map<Keyword, Map<Long, Object>> altered = new HashMap<>();
  private final Map<Keyword, Fresh> fresh = new LinkedHashMap<>();
  private long lastProvisional;

  PendingAttrs(Schema schema) {
    this.schema = schema;
  }

  /**
   * Declares the attributes that maps with a {@code :db/ident} keyword (and
   * no {@code :db/id} other than a user's tempid) define, so the rest of
   * tx-data uses them as defined. Returns each such map's entity (Long, or
   * TempRef of a new one). A map naming a system entity (below {@link Schema#FIRST_USER_ID})
   * declares nothing: its datoms are ordinary ones, and SchemaCheck refuses
   * any change they make.
   */
  IdentityHashMap<Object, Object> declareAll(Object txData, Tempids temps) {
    IdentityHashMap<Object, Object> entities = new IdentityHashMap<>();
    for (Iterator<?> it = RT.iter(txData); it.hasNext(); ) {
      if (!(it.next() instanceof Map<?, ?> m) || !(m.get(Schema.K_IDENT) instanceof Keyword ident)) {
        continue;
      }
      Object id = m.get(DB_ID);
      Long existing = schema.entid(ident);
      if (existing == null && isUserId(id)) {
        declareAt(((Number) id).longValue(), ident, m, temps, entities);
        continue;
      }
      if (id != null && (!Tempids.isTempid(id) || Tempids.TX_TEMPID.equals(id))) {
        continue; // an entity given by id, ident, lookup ref or "datomic.tx": ordinary data
      }
      Map<Long, Object> props = props(ident, m);
      if (existing != null) {
        if (existing < Schema.FIRST_USER_ID) {
          continue;
        }
        if (id != null) {
          TempRef r = temps.named(id);
          if (r.root().eid >= 0 && r.root().eid != existing) {
            throw Errors.error("tx/upsert-conflict", "A tempid names two different entities",
                "tempid", id, "entities", RT.vector(r.root().eid, existing), "form", m);
          }
          r.root().eid = existing;
        }
        Map<Long, Object> changes = altered.computeIfAbsent(ident, k -> new HashMap<>());
        changes.putAll(props);
        attrs.put(ident, schema.preview(existing, ident, changes));
        entities.put(m, existing);
      } else {
        TempRef r = id != null ? temps.named(id) : null;
        Fresh f = fresh.get(ident);
        if (f == null) {
          f = new Fresh(r != null ? r : temps.anonymous(), --lastProvisional);
          fresh.put(ident, f);
        } else if (r != null) {
          Tempids.unify(f.entity, r, m);
        }
        f.props.putAll(props);
        attrs.put(ident, schema.preview(f.provisionalId, ident, f.props));
        entities.put(m, f.entity);
      }
    }
    return entities;
  }

  /** Whether {@code id} is an explicit entity id of a user entity (not a system or tx one). */
  private static boolean isUserId(Object id) {
    return (id instanceof Long || id instanceof Integer) && ((Number) id).longValue()
        >= Schema.FIRST_USER_ID && ((Number) id).longValue() < Db.TX0;
  }

  /**
   * Declares the new ident of map {@code m}, whose {@code :db/id} is the explicit entity id
   * {@code eid} (as an exported history names its attributes, see {@code datalith.core/export}):
   * the attribute's entity is resolved to {@code eid} from the start, and the map's entity is
   * {@code eid} itself, which the expander names like any explicit id.
   */
  private void declareAt(long eid, Keyword ident, Map<?, ?> m, Tempids temps,
      IdentityHashMap<Object, Object> entities) {
    Fresh f = fresh.get(ident);
    if (f == null) {
      TempRef r = temps.anonymous();
      r.eid = eid;
      f = new Fresh(r, --lastProvisional);
      fresh.put(ident, f);
    } else if (f.entity.root().eid >= 0 && f.entity.root().eid != eid) {
      throw Errors.error("tx/upsert-conflict", "Two entities declare the ident " + ident,
          "ident", ident, "entities", RT.vector(f.entity.root().eid, eid), "form", m);
    } else {
      f.entity.root().eid = eid;
    }
    f.props.putAll(props(ident, m));
    attrs.put(ident, schema.preview(f.provisionalId, ident, f.props));
    entities.put(m, eid);
  }

  // the system-attribute values map m gives (refs given by ident as entity ids)
  private Map<Long, Object> props(Keyword ident, Map<?, ?> m) {
    Map<Long, Object> props = new HashMap<>();
    props.put(Schema.IDENT, ident);
    for (Map.Entry<?, ?> en : m.entrySet()) {
      if (en.getKey() instanceof Keyword k) {
        Long aid = schema.entid(k);
        if (aid != null && Schema.isSchemaAttr(aid) && aid != Schema.IDENT) {
          Object v = en.getValue();
          Long ref = v instanceof Keyword kv && schema.attr(aid).isRef() ? schema.entid(kv) : null;
          props.put(aid, ref != null ? ref : v);
        }
      }
    }
    return props;
  }

  /**
   * Installs {@code k}, which names no entity, as a new attribute
   * (cardinality one, any value type) whose entity is {@code entity}.
   */
  Attr install(Keyword k, TempRef entity) {
    Fresh f = new Fresh(entity, --lastProvisional);
    f.props.put(Schema.IDENT, k);
    f.props.put(Schema.CARDINALITY, Schema.CARD_ONE);
    fresh.put(k, f);
    Attr a = schema.preview(f.provisionalId, k, f.props);
    attrs.put(k, a);
    return a;
  }

  /** The attribute {@code k} names, as this transaction defines it, or null. */
  Attr get(Keyword k) {
    Attr a = attrs.get(k);
    return a != null ? a : schema.attr(k);
  }

  /** The entity of the new ident {@code k}, or null when {@code k} is not new. */
  TempRef newEntity(Keyword k) {
    Fresh f = fresh.get(k);
    return f == null ? null : f.entity;
  }

  /** Whether {@code a} is a new attribute, still with its provisional id. */
  static boolean isNew(Attr a) {
    return a.id < 0;
  }

  /**
   * Gives every new attribute the id its entity resolved to (call once the
   * tempids are resolved); returns each provisional {@link Attr} -> its
   * rebuilt one.
   */
  IdentityHashMap<Attr, Attr> assignIds() {
    IdentityHashMap<Attr, Attr> renamed = new IdentityHashMap<>();
    for (Map.Entry<Keyword, Fresh> en : fresh.entrySet()) {
      Keyword ident = en.getKey();
      Attr old = attrs.get(ident);
      Attr now = schema.preview(en.getValue().entity.root().eid, ident, en.getValue().props);
      attrs.put(ident, now);
      renamed.put(old, now);
    }
    return renamed;
  }

  /** Every composite tuple attribute, as this transaction defines them. */
  List<Attr> composites() {
    List<Attr> out = new ArrayList<>();
    for (Attr a : schema.composites()) {
      Attr now = attrs.getOrDefault(a.ident, a);
      if (now.tupleAttrs != null) {
        out.add(now);
      }
    }
    for (Attr a : attrs.values()) {
      if (a.tupleAttrs != null && schema.attr(a.ident) == null) {
        out.add(a);
      }
    }
    return out;
  }
}
