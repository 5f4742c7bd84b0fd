/**
 * The Java API: {@link datalith.api.Datalith} opens a database and returns a
 * {@link datalith.api.Connection}; {@link datalith.api.Database} values answer
 * queries (EDN strings or Clojure data) and pulls with {@code java.util}
 * collections. Connections are thread-safe; database values are immutable and
 * may be shared between threads.
 */
package datalith.api;
