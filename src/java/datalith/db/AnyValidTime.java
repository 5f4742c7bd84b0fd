package datalith.db;

import clojure.lang.Keyword;
import java.util.ArrayList;
import java.util.List;

/**
 * A database value read at any valid time (#19, Minigraf's {@code :any-valid-time}): a query
 * source whose facts are every valid-time version of the value's attributes, as known at its
 * basis or as-of point, each a tuple {@code [e a v from to]} ({@link ValidTime#intervals}: one
 * per piece of each pair's valid-time line, {@code to} the instant {@link ValidTime#END_OF_TIME}
 * when open-ended, so intervals compare as instants). A data pattern on it binds an assertion's
 * interval in its fourth and fifth positions, where a pattern on a database has the
 * transaction and the added flag: {@code [$vt ?i :issue/assignee ?who ?from ?to]}.
 *
 * <p>The tuples of a pattern are made when it runs, for its attribute (every user attribute
 * when it is a variable: the attribute position then holds the attribute's ident, as in
 * DataScript, so that it joins with idents given as inputs) and its entity when that is a
 * constant. Immutable; the value it reads is immutable.
 */
public final class AnyValidTime {
  private final Db db;

  /**
   * {@code db} at any valid time; a valid-at view gives its base value (any valid time
   * replaces the instant).
   *
   * @throws clojure.lang.ExceptionInfo {@code :db/valid-at-view} for a since or history view
   */
  public AnyValidTime(Db db) {
    Db base = db.validBase != null ? db.validBase : db;
    if (base.history || base.sinceT != Db.NO_SINCE) {
      throw Errors.error("db/valid-at-view", "any-valid-time reads a value without a since or"
          + " history view", "db", db.toString());
    }
    this.db = base;
  }

  /** The database value read. */
  public Db db() {
    return db;
  }

  /**
   * The tuples {@code [e a v from to]} a pattern with entity {@code e} and attribute
   * {@code attr} can match: {@code attr} an ident or id (the tuples hold it as given) or null
   * (every user attribute, by id), {@code e} an id, ident or lookup ref, or null for every
   * entity. An unknown attribute or entity has none.
   */
  public List<Object[]> versions(Object e, Object attr) {
    long eid = -1;
    if (e != null) {
      try (Snapshot s = db.snapshot()) {
        eid = db.entid(s, e);
      }
      if (eid < 0) {
        return List.of();
      }
    }
    List<Object[]> out = new ArrayList<>();
    if (attr == null) {
      long at = eid;
      db.schema.forEachUserAttr(a -> addVersions(out, e, at, a, a.ident));
    } else {
      Attr a = attr instanceof Keyword k ? db.schema.attr(k)
          : attr instanceof Long id ? db.schema.attr(id) : null;
      if (a != null) {
        addVersions(out, e, eid, a, attr);
      }
    }
    return out;
  }

  /** Adds the versions of {@code a} of entity {@code eid} ({@code -1}: all), {@code e} and
   * {@code attr} as the pattern gives them (null {@code e}: each version's id). */
  private void addVersions(List<Object[]> out, Object e, long eid, Attr a, Object attr) {
    for (Object[] version : ValidTime.intervals(db, eid, a)) {
      // version: [e v from to tx]
      out.add(new Object[] {e == null ? version[0] : e, attr, version[1], version[2],
          version[3]});
    }
  }

  @Override
  public String toString() {
    return "#datalith/any-valid-time " + db;
  }
}
