package datalith.api;

import datalith.db.Errors;
import datalith.query.parser.FindColl;
import datalith.query.parser.FindRel;
import datalith.query.parser.FindScalar;
import datalith.query.parser.FindSpec;
import datalith.query.parser.Query;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A query's answer with typed accessors, one per {@code :find} shape. An
 * accessor that does not fit the query's shape throws a
 * {@link DatalithException} of category {@code "api/find-shape"} naming the
 * shape the query has and the accessor that fits it.
 *
 * <pre>{@code
 * Set<List<Object>> rows = db.query("[:find ?e ?n :where [?e :user/name ?n]]").rel();
 * List<Object> names = db.query("[:find [?n ...] :where [_ :user/name ?n]]").coll();
 * Object name = db.query("[:find ?n . :in $ ?e :where [?p :user/email ?e] [?p :user/name ?n]]",
 *                        "ada@example.com").scalar();
 * }</pre>
 */
public final class QueryResult {
  /** The query's shape, one of "rel", "coll", "scalar" and "tuple". */
  private final String shape;
  /** :keys, :strs or :syms: rows (or the tuple) are maps. */
  private final boolean maps;
  /** The engine's answer: a set or vector of rows, a vector, a row, a value or null. */
  private final Object value;

  QueryResult(Query query, Object value) {
    FindSpec find = query.find();
    this.shape = find instanceof FindRel ? "rel" : find instanceof FindColl ? "coll"
        : find instanceof FindScalar ? "scalar" : "tuple";
    this.maps = query.returnMap().isPresent();
    this.value = value;
  }

  /**
   * The query's find shape: "rel" ({@code :find ?a ?b}), "coll"
   * ({@code :find [?a ...]}), "scalar" ({@code :find ?a .}) or "tuple"
   * ({@code :find [?a ?b]}).
   *
   * @return the shape's name
   */
  public String shape() {
    return shape;
  }

  /**
   * The answer as the engine gives it (what {@link Database#q} returns).
   *
   * @return the untyped answer; null for a scalar or tuple query that found nothing
   */
  public Object value() {
    return value;
  }

  /**
   * The rows of a relation query, each a list of the find elements' values.
   *
   * @return the distinct rows, read-only
   * @throws DatalithException when the query is not a relation query, keeps
   *     repeats ({@code :with} without an aggregate: use {@link #rows}), is ordered
   *     ({@code :order-by}: use {@link #rows}) or returns maps ({@code :keys}: use
   *     {@link #maps})
   */
  @SuppressWarnings("unchecked")
  public Set<List<Object>> rel() {
    expect("rel", "rel()", false);
    if (!(value instanceof Set<?>)) {
      throw shapeError("The query keeps repeated rows (:with) or orders them (:order-by):"
          + " rows() returns them", "rel()");
    }
    return (Set<List<Object>>) value;
  }

  /**
   * The rows of a relation query: a {@code Set} as {@link #rel} gives it, or a
   * {@code List} when {@code :with} (without an aggregate) keeps repeated rows or
   * {@code :order-by} orders them (in that order).
   *
   * @return the rows, read-only
   * @throws DatalithException when the query is not a relation query or returns maps
   */
  @SuppressWarnings("unchecked")
  public Collection<List<Object>> rows() {
    expect("rel", "rows()", false);
    return (Collection<List<Object>>) value;
  }

  /**
   * The rows of a relation query with {@code :keys}, {@code :strs} or
   * {@code :syms}, each a map from those names (keywords, strings or symbols) to
   * the values.
   *
   * @return the rows as maps, read-only (a {@code List} when {@code :with} keeps repeats
   *     or {@code :order-by} orders them)
   * @throws DatalithException when the query is not a relation query returning maps
   */
  @SuppressWarnings("unchecked")
  public Collection<Map<Object, Object>> maps() {
    expect("rel", "maps()", true);
    return (Collection<Map<Object, Object>>) value;
  }

  /**
   * The values of a collection query ({@code :find [?a ...]}).
   *
   * @return the values, read-only
   * @throws DatalithException when the query is not a collection query
   */
  @SuppressWarnings("unchecked")
  public List<Object> coll() {
    expect("coll", "coll()", false);
    return (List<Object>) value;
  }

  /**
   * The value of a scalar query ({@code :find ?a .}).
   *
   * @return the value, or null when the query found nothing
   * @throws DatalithException when the query is not a scalar query
   */
  public Object scalar() {
    expect("scalar", "scalar()", false);
    return value;
  }

  /**
   * The one row of a tuple query ({@code :find [?a ?b]}).
   *
   * @return the row, read-only, or null when the query found nothing
   * @throws DatalithException when the query is not a tuple query, or returns a map
   *     ({@code :keys}: use {@link #value})
   */
  @SuppressWarnings("unchecked")
  public List<Object> tuple() {
    expect("tuple", "tuple()", false);
    return (List<Object>) value;
  }

  private void expect(String wanted, String accessor, boolean wantMaps) {
    if (!shape.equals(wanted)) {
      throw shapeError("The query's :find is a " + shape + " (" + fits() + " reads it), not a "
          + wanted, accessor);
    }
    if (maps != wantMaps) {
      throw shapeError(maps ? "The query returns maps (:keys, :strs or :syms): "
          + (shape.equals("rel") ? "maps()" : "value()") + " reads them"
          : "The query returns rows, not maps (no :keys, :strs or :syms): rel() or rows() reads"
              + " them", accessor);
    }
  }

  /** The accessor that reads this result. */
  private String fits() {
    return switch (shape) {
      case "rel" -> maps ? "maps()" : "rel() or rows()";
      case "coll" -> "coll()";
      case "scalar" -> "scalar()";
      default -> maps ? "value()" : "tuple()";
    };
  }

  private DatalithException shapeError(String message, String accessor) {
    return new DatalithException(Errors.error("api/find-shape", accessor + ": " + message,
        "shape", shape, "accessor", accessor));
  }
}
