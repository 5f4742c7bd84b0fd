package datalith.db;

import datalith.store.Store;

/**
 * Where database values read from: the store of the connection that made them
 * ({@code datalith.conn.Conn} implements it). A value holds its source, not its
 * connection, so this package needs nothing of the layers above it.
 */
public interface Source {
  /**
   * The store, open: each read of a database value begins a read transaction on
   * it. Any thread may call it.
   *
   * @throws clojure.lang.ExceptionInfo {@code :db/closed} once the connection is
   *     closed
   */
  Store store();

  /**
   * Whether reads and transactions of this source's values refuse attributes that are not
   * installed (strict mode), instead of matching nothing or installing them. Default: lenient.
   */
  default boolean strict() {
    return false;
  }

  /**
   * Where this source's values keep their replayed valid-time lines for the values after them
   * with the same state ({@link ValidCache}); null: each value replays its own. Default: null.
   */
  default ValidCache validCache() {
    return null;
  }

  /**
   * Where this source's as-of views keep the entity bounds of their points ({@link EntityBounds});
   * null: their scans test every key. Default: null.
   */
  default EntityBounds entityBounds() {
    return null;
  }
}
