package datalith.tx;

import clojure.lang.Keyword;
import datalith.db.Attr;
import datalith.db.Db;
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
  private final HashMap<Key, Long> found = new HashMap<>();
  private final HashSet<Long> attrs = new HashSet<>(); // the attributes of the entries

  /**
   * {@link Db#lookup} of {@code v} in unique attribute {@code a}, through the cache. Entries are
   * keyed by the value as given, of the immutable kinds a lookup ref names entities by: values
   * equal by {@code equals} encode alike, and a value given otherwise (an Integer for a Long,
   * say) only misses and looks up. Values of other kinds are looked up every time.
   */
  long lookup(Db db, Snapshot s, Attr a, Object v) {
    if (!(v instanceof String || v instanceof Long || v instanceof Keyword || v instanceof UUID)) {
      return db.lookup(s, a, v);
    }
    Key key = new Key(a.id, v);
    Long e = found.get(key);
    if (e != null) {
      return e;
    }
    long x = db.lookup(s, a, v);
    if (x >= 0) {
      found.put(key, x);
      attrs.add(a.id);
    }
    return x;
  }

  /** An entry's key: the attribute's id and the value as the lookup ref gave it. */
  private record Key(long aid, Object v) {}

  /**
   * Before a transaction runs on {@code db}: keeps the entries when {@code db} is the value
   * after the transaction of t {@code lastT} that the cache was last told of, else drops them.
   */
  public void continues(Db db, long lastT) {
    if (db.basisT() != lastT) {
      found.clear();
      attrs.clear();
    }
  }

  /**
   * After a transaction committed {@code changes} on a value of schema {@code before}, making
   * schema {@code after}: drops the entries of the unique attributes it changed, every entry when
   * it changed the schema.
   */
  public void committed(List<TxChange> changes, Schema before, Schema after) {
    if (found.isEmpty()) {
      return;
    }
    if (before != after) {
      found.clear();
      attrs.clear();
      return;
    }
    for (TxChange c : changes) {
      if (c.attr.isUnique() && attrs.remove(c.attr.id)) {
        long aid = c.attr.id;
        found.keySet().removeIf(k -> k.aid() == aid);
      }
    }
  }
}
