/**
 * The Java API: {@link datalith.api.Datalith} opens a database and returns a
 * {@link datalith.api.Connection}; {@link datalith.api.Database} values answer
 * queries (EDN strings or Clojure data) and pulls with {@code java.util}
 * collections. {@link datalith.api.Database#query} and
 * {@link datalith.api.PreparedQuery} (a query parsed once,
 * {@link datalith.api.Datalith#prepare}) answer with a
 * {@link datalith.api.QueryResult} whose accessors are typed by the
 * {@code :find} shape; {@link datalith.api.Database#pullNamed} pulls without
 * keywords. Lookup refs may be {@code List}s or {@code Object[]}s.
 *
 * <p>Every failure through this package is a
 * {@link datalith.api.DatalithException} (unchecked) with the error's category
 * ("tx/unique", "parser/query", ...) and its data in Java types; its cause is
 * datalith's {@code ex-info}. Arguments the layers below would misreport are
 * checked here: a null argument is "api/null-argument", an unknown index name
 * "db/invalid-index", a result read with the accessor of another find shape
 * "api/find-shape"; any other exception is wrapped as "api/unexpected".
 *
 * <p>Connections are thread-safe; database values, query results and prepared
 * queries are immutable and may be shared between threads.
 */
package datalith.api;
