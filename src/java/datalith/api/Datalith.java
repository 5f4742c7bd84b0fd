package datalith.api;

import clojure.lang.Keyword;
import datalith.conn.Conn;
import datalith.db.Errors;
import datalith.log.KafkaLog;
import datalith.log.Node;
import datalith.query.Engine;
import datalith.store.LmdbStore;
import datalith.store.MemStore;
import datalith.store.Store;
import java.nio.file.Path;
import java.util.Map;

/**
 * Opens datalith databases from Java, and prepares queries. Every failure is a
 * {@link DatalithException}.
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

  /**
   * A durable database in {@code dir} (created if needed), with default options.
   *
   * @param dir the database's directory
   * @return the open connection; close it when done
   * @throws DatalithException when the directory cannot be opened as a database
   */
  public static Connection open(Path dir) {
    return open(dir, Map.of());
  }

  /**
   * A durable database in {@code dir} (created if needed). Options: {@code "map-size"} (initial
   * LMDB map size in bytes; it grows by itself), {@code "sync"} (false skips
   * fsync on commit: faster bulk loads, but an OS crash may lose the last
   * commits), {@code "commit"} ({@code "wal"} or {@code "lmdb-sync"}: through a write-ahead
   * log, or by LMDB's own sync of each commit; see {@code LmdbStore.open}),
   * {@code "write-behind"} (true, the default: commits durable in the log are laid in memory
   * and written into LMDB in batches by a thread of the store, about one fdatasync a commit,
   * while no other process has the database open: another process's open waits while every
   * commit is written back, and commits then go into LMDB directly until the store is alone
   * again; false: each commit put into LMDB's trees), {@code "schema"} (EDN text or data, as
   * {@code transact} takes it),
   * {@code "kafka.bootstrap-servers"} and {@code "kafka.topic"} (both strings: a node of a
   * replicated database whose transactions go through that Kafka topic, as the Clojure API's
   * {@code :log {:kafka {...}}}; see {@link Connection#sync}).
   *
   * @param dir the database's directory
   * @param options the options by name
   * @return the open connection; close it when done
   * @throws DatalithException when an option is bad, the directory cannot be
   *     opened as a database or the schema cannot be installed
   */
  public static Connection open(Path dir, Map<String, Object> options) {
    try {
      Args.required(dir, "dir");
      Args.required(options, "options");
      return connect(LmdbStore.open(dir, options), options);
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * An in-memory database that behaves like a durable one until closed.
   *
   * @return the open connection
   */
  public static Connection openInMemory() {
    try {
      return connect(MemStore.open(), Map.of());
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  private static Connection connect(Store store, Map<String, Object> options) {
    Conn conn;
    try {
      conn = Conn.open(store);
    } catch (Exception ex) {
      store.close();
      throw ex;
    }
    Object servers = options.get("kafka.bootstrap-servers");
    Object topic = options.get("kafka.topic");
    if (servers != null || topic != null) {
      try {
        Node.start(conn, KafkaLog.open(Args.string(servers, "kafka.bootstrap-servers"),
            Args.string(topic, "kafka.topic")));
      } catch (Exception ex) {
        conn.close();
        throw ex;
      }
    }
    Connection c = new Connection(conn);
    Object schema = options.get("schema");
    if (schema != null) {
      try {
        c.transact(schema);
      } catch (Exception ex) {
        c.close();
        throw ex;
      }
    }
    return c;
  }

  /**
   * The keyword {@code :name}, for inputs and map keys.
   *
   * @param name "ns/name" or "name", with or without the leading colon (e.g. {@code "user/email"})
   * @return the keyword
   * @throws DatalithException when {@code name} is null or empty
   */
  public static Keyword kw(String name) {
    try {
      String n = Args.required(name, "name").startsWith(":") ? name.substring(1) : name;
      if (n.isEmpty()) {
        throw Errors.error("api/keyword", "A keyword's name must not be empty", "name", name);
      }
      return Keyword.intern(n);
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * Parses a query once, to run many times without reading it again.
   *
   * @param query the query, EDN text or Clojure data
   * @return the prepared query
   * @throws DatalithException when the query is malformed
   */
  public static PreparedQuery prepare(Object query) {
    try {
      return new PreparedQuery(Engine.parse(Edn.read(Args.required(query, "query"), "query")));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }
}
