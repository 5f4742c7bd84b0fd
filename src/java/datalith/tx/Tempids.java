package datalith.tx;

import clojure.lang.IPersistentMap;
import clojure.lang.ITransientMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.RT;
import datalith.db.Errors;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tempids of one transaction: the user's (strings and negative numbers,
 * one {@link TempRef} per name) and the anonymous ones of maps without
 * {@code :db/id} and of attributes installed on first use.
 */
final class Tempids {
  /** The tempid that names the transaction's own entity. */
  static final String TX_TEMPID = "datomic.tx";
  private static final Keyword CURRENT_TX = Keyword.intern("db", "current-tx");

  private final Map<Object, TempRef> named = new LinkedHashMap<>();
  private final List<TempRef> all = new ArrayList<>();
  private boolean txNamed;

  /** Whether {@code x} is a tempid: a string or a negative integer. */
  static boolean isTempid(Object x) {
    return x instanceof String || x instanceof Long l && l < 0 || x instanceof Integer i && i < 0;
  }

  /** The TempRef of the user's tempid {@code name} (Integer and Long name one tempid). */
  TempRef named(Object name) {
    Object key = name instanceof Integer i ? Long.valueOf(i) : name;
    TempRef r = named.get(key);
    if (r == null) {
      r = new TempRef(key);
      named.put(key, r);
      all.add(r);
    }
    return r;
  }

  /** A new TempRef that no user tempid names. */
  TempRef anonymous() {
    TempRef r = new TempRef(null);
    all.add(r);
    return r;
  }

  /** Records that tx-data named the transaction by {@link #TX_TEMPID}. */
  void txNamed() {
    txNamed = true;
  }

  /** Every TempRef of the transaction, in the order they were made. */
  List<TempRef> all() {
    return all;
  }

  /**
   * Makes {@code a} and {@code b} one entity.
   *
   * @throws clojure.lang.ExceptionInfo {@code :tx/upsert-conflict} when they
   *     already stand for two different entities
   */
  static void unify(TempRef a, TempRef b, Object form) {
    TempRef ra = a.root();
    TempRef rb = b.root();
    if (ra == rb) {
      return;
    }
    if (ra.eid >= 0 && rb.eid >= 0 && ra.eid != rb.eid) {
      throw Errors.error("tx/upsert-conflict", "One entity resolves to two different entities",
          "tempid", ra.name != null ? ra.name : rb.name, "entities", RT.vector(ra.eid, rb.eid),
          "form", form);
    }
    if (ra.eid < 0) {
      ra.eid = rb.eid;
    }
    rb.parent = ra;
  }

  /**
   * {@code :tempids} of the report: each user tempid that resolved to an
   * entity, {@code "datomic.tx"} when tx-data used it, and
   * {@code :db/current-tx}, both the transaction's id {@code tx}.
   */
  IPersistentMap toMap(long tx) {
    ITransientMap m = PersistentArrayMap.EMPTY.asTransient();
    for (Map.Entry<Object, TempRef> en : named.entrySet()) {
      long eid = en.getValue().root().eid;
      if (eid >= 0) {
        m = m.assoc(en.getKey(), eid);
      }
    }
    if (txNamed) {
      m = m.assoc(TX_TEMPID, tx);
    }
    return m.assoc(CURRENT_TX, tx).persistent();
  }
}
