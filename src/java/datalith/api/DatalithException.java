package datalith.api;

import clojure.lang.ExceptionInfo;
import clojure.lang.IExceptionInfo;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import java.util.Map;

/**
 * Every failure of the Java API: an unchecked exception carrying the error's
 * category (the {@code :error} key of datalith's {@code ex-info} data, e.g.
 * {@code "tx/unique"}) and the rest of that data in Java types. Its message is
 * the {@code ex-info}'s and its cause the {@code ex-info} itself, for callers
 * that mix the Java API with {@code datalith.core}. From Clojure, {@code ex-data}
 * of it is the {@code ex-info}'s data.
 *
 * <pre>{@code
 * try {
 *   // :user/email is :db.unique/identity: Bob may not take Ada's email
 *   conn.transact("[[:db/add [:user/email \"bob@example.com\"] :user/email \"ada@example.com\"]]");
 * } catch (DatalithException e) {
 *   e.category();           // "tx/unique"
 *   e.data().get("error");  // the same, as a String
 * }
 * }</pre>
 */
public final class DatalithException extends RuntimeException implements IExceptionInfo {
  private static final long serialVersionUID = 1L;
  private static final Keyword ERROR = Keyword.intern("error");

  /** The category, as "ns/name"; "api/unexpected" when the ex-info has none. */
  private final String category;
  /** The ex-info's data, converted by {@link JavaData#of}; read-only. */
  private final transient Map<String, Object> data;

  DatalithException(ExceptionInfo cause) {
    super(cause.getMessage(), cause);
    Object error = cause.getData().valAt(ERROR);
    this.category = error instanceof Keyword k ? JavaData.name(k) : "api/unexpected";
    this.data = JavaData.named((Map<?, ?>) cause.getData());
  }

  /**
   * The exception for {@code ex}: {@code ex} itself when it is one, a
   * DatalithException around it when it is datalith's {@code ex-info}, else one
   * of category "api/unexpected" (the class and message of {@code ex} in its data).
   */
  static DatalithException of(Exception ex) {
    if (ex instanceof DatalithException d) {
      return d;
    }
    if (ex instanceof ExceptionInfo info) {
      return new DatalithException(info);
    }
    return new DatalithException(datalith.db.Errors.errorWithCause(ex, "api/unexpected",
        "Unexpected " + ex.getClass().getName() + (ex.getMessage() == null ? ""
            : ": " + ex.getMessage()), "class", ex.getClass().getName()));
  }

  /**
   * The error's category, the {@code :error} key of its data as "ns/name":
   * e.g. "tx/unique", "parser/query", "db/invalid-lookup-ref".
   *
   * @return the category, never null
   */
  public String category() {
    return category;
  }

  /**
   * The error's data: keys and keyword values as "ns/name" strings, symbols as
   * their names, nested maps, lists and sets as read-only {@code java.util}
   * collections; other values as they are. Includes {@code "error"}, the category.
   *
   * @return the data, read-only
   */
  public Map<String, Object> data() {
    return data;
  }

  /**
   * The error's data as datalith made it, a Clojure map with keyword keys (what
   * {@code ex-data} returns from Clojure); {@link #data} is the Java form.
   *
   * @return the {@code ex-info}'s data
   */
  @Override
  public IPersistentMap getData() {
    return ((ExceptionInfo) getCause()).getData();
  }
}
