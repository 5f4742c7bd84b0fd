package datalith.api;

import datalith.query.Engine;
import datalith.query.Prepared;
import datalith.query.parser.Query;

/**
 * A query parsed once ({@link Datalith#prepare}), run on any database without
 * reading or parsing it again: it holds its plan, made on the first run and
 * reused while the databases it runs on stay about the same size. May be shared
 * between threads.
 *
 * <pre>{@code
 * PreparedQuery byEmail = Datalith.prepare("[:find ?e . :in $ ?email :where [?e :user/email ?email]]");
 * Object ada = byEmail.run(conn.db(), "ada@example.com").scalar();
 * }</pre>
 */
public final class PreparedQuery {
  private final Query query;
  private final Prepared prepared;

  PreparedQuery(Query query) {
    this.query = query;
    this.prepared = Prepared.of(query);
  }

  /**
   * Runs the query on {@code db} ({@code $}) and {@code inputs}.
   *
   * @param db the database bound to {@code $}
   * @param inputs the inputs after {@code $}, in {@code :in} order
   * @return the typed answer
   * @throws DatalithException when an input does not fit its binding or the query fails
   */
  public QueryResult run(Database db, Object... inputs) {
    try {
      Args.required(db, "db");
      return new QueryResult(query, Engine.runPrepared(prepared, db.inputs(inputs)));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * Runs the query with its inputs by name: {@code "email"} for {@code ?email}
   * (and {@code [?email ...]}), {@code "$"} or {@code "$src"} for a source (a
   * {@link Database}), {@code "%"} for the rules.
   *
   * @param inputs every input of {@code :in}, by name
   * @return the typed answer
   * @throws DatalithException when a name is missing or unknown, an input has
   *     no name (a tuple or relation binding), or the query fails
   */
  public QueryResult runNamed(java.util.Map<String, ?> inputs) {
    try {
      Args.required(inputs, "inputs");
      java.util.Map<Object, Object> named = new java.util.HashMap<>();
      for (java.util.Map.Entry<String, ?> e : inputs.entrySet()) {
        Object v = e.getValue() instanceof Database d ? d.unwrap() : e.getValue();
        named.put(clojure.lang.Keyword.intern(e.getKey()), v);
      }
      return new QueryResult(query,
          Engine.runPrepared(prepared, Engine.namedInputs(query, named)));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * The query as parsed, printed as EDN.
   *
   * @return the query's text
   */
  @Override
  public String toString() {
    return query.toString();
  }
}
