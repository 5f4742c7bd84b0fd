package datalith.tx;

import clojure.lang.Keyword;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.LongMap;
import datalith.db.Schema;
import datalith.db.Snapshot;
import datalith.db.TxChange;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.UUID;

/**
 * The entities lookup refs found, kept across the transactions of one import
 * ({@code datalith.conn.Import}), whose chunks name the same few entities over and over
 * ({@code [:user/email "ada@x"]} in every chunk of issues): a hash lookup instead of an AVET
 * seek. Only found entities are kept, by attribute and value.
 *
 * <p>Invariant: every entry is what {@link Db#lookup} gives on the value the next transaction
 * runs on. The import tells it each transaction it commits ({@link #committed}), which drops
 * the entries of every unique attribute whose datoms it changes (everything when it changes the
 * schema), and whether the value it runs on is the one after the last ({@link #continues}):
 * another process's commit in between drops everything too. Used by the import's thread only.
 */
public final class LookupCache {
  /** By attribute id, the entities found by value; null (or no entry) for none. */
  private LongMap<HashMap<Object, Long>> found = new LongMap<>();
  /** The attributes with entries in {@link #found}. */
  private final HashSet<Long> attrs = new HashSet<>();

  /**
   * {@link Db#lookup} of {@code v} in unique attribute {@code a}, through the cache: the entity
   * id, or null when nothing matches. Entries are keyed by the value as given, of the immutable
   * kinds a lookup ref names entities by: values equal by {@code equals} encode alike, and a value
   * given otherwise (an Integer for a Long, say) only misses and looks up. Values of other kinds
   * are looked up every time.
   */
  Long lookup(Db db, Snapshot s, Attr a, Object v) {
    if (!(v instanceof String || v instanceof Long || v instanceof Keyword || v instanceof UUID)) {
      return found(db.lookup(s, a, v));
    }
    HashMap<Object, Long> byValue = found.get(a.id);
    Long e = byValue == null ? null : byValue.get(v);
    if (e != null) {
      return e;
    }
    e = found(db.lookup(s, a, v));
    if (e != null) {
      if (byValue == null) {
        byValue = new HashMap<>();
        found.put(a.id, byValue);
        attrs.add(a.id);
      }
      byValue.put(v, e);
    }
    return e;
  }

  /** {@code e} boxed, or null when negative (found nothing). */
  static Long found(long e) {
    return e >= 0 ? e : null;
  }

  /**
   * Before a transaction runs on {@code db}: keeps the entries when {@code db} is the value
   * after the transaction of t {@code lastT} that the cache was last told of, else drops them.
   */
  public void continues(Db db, long lastT) {
    if (db.basisT() != lastT) {
      clear();
    }
  }

  /**
   * After a transaction committed {@code changes} on a value of schema {@code before}, making
   * schema {@code after}: drops the entries of the unique attributes it changed, every entry when
   * it changed the schema.
   */
  public void committed(List<TxChange> changes, Schema before, Schema after) {
    if (attrs.isEmpty()) {
      return;
    }
    if (before != after) {
      clear();
      return;
    }
    for (TxChange c : changes) {
      if (c.attr.isUnique() && attrs.remove(c.attr.id)) {
        found.put(c.attr.id, null);
      }
    }
  }

  private void clear() {
    if (!attrs.isEmpty()) {
      found = new LongMap<>();
      attrs.clear();
    }
  }
}
