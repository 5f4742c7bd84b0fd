package datalith.api;

import clojure.lang.Keyword;
import datalith.conn.Conn;
import datalith.store.LmdbStore;
import datalith.store.MemStore;
import datalith.store.Store;
import java.nio.file.Path;
import java.util.Map;

/**
 * Opens datalith databases from Java.
 *
 * <pre>{@code
 * try (Connection conn = Datalith.open(Path.of("/tmp/people"))) {
 *   conn.transact("[{:user/email \"ada@example.com\" :user/name \"Ada\"}]");
 *   Object name = conn.db().q("[:find ?n . :where [?e :user/name ?n]]");  // "Ada"
 * }
 * }</pre>
 */
public final class Datalith {
  private Datalith() {}

  /** A durable database in {@code dir} (created if needed), with default options. */
  public static Connection open(Path dir) {
    return open(dir, Map.of());
  }

  /**
   * A durable database in {@code dir}. Options: {@code "map-size"} (initial
   * LMDB map size in bytes; it grows by itself), {@code "sync"} (false skips
   * fsync on commit: faster bulk loads, but an OS crash may lose the last
   * commits), {@code "schema"} (EDN text or data, as {@code transact} takes it).
   */
  public static Connection open(Path dir, Map<String, Object> options) {
    return connect(LmdbStore.open(dir, options), options);
  }

  /** An in-memory database that behaves like a durable one until closed. */
  public static Connection openInMemory() {
    return connect(MemStore.open(), Map.of());
  }

  private static Connection connect(Store store, Map<String, Object> options) {
    Conn conn;
    try {
      conn = Conn.open(store);
    } catch (RuntimeException ex) {
      store.close();
      throw ex;
    }
    Connection c = new Connection(conn);
    Object schema = options.get("schema");
    if (schema != null) {
      try {
        c.transact(schema);
      } catch (RuntimeException ex) {
        c.close();
        throw ex;
      }
    }
    return c;
  }

  /** The keyword {@code :name} (e.g. {@code kw("user/email")}), for inputs and map keys. */
  public static Keyword kw(String name) {
    return Keyword.intern(name.startsWith(":") ? name.substring(1) : name);
  }
}
