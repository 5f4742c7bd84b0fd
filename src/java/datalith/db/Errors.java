package datalith.db;

import clojure.lang.ExceptionInfo;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;

/** Builds every user-facing error: an {@code ex-info} whose data has a namespaced {@code :error} key. */
public final class Errors {
  private static final Keyword ERROR = Keyword.intern("error");

  private Errors() {}

  /**
   * An {@link ExceptionInfo} with data {@code {:error error, k1 v1, ...}}.
   *
   * @param error a namespaced name such as {@code "tx/unique"}
   * @param kvs alternating keyword names (strings, without colon) and values
   */
  public static ExceptionInfo error(String error, String message, Object... kvs) {
    return errorWithCause(null, error, message, kvs);
  }

  /** Like {@link #error}, with {@code cause} as the exception's cause. */
  public static ExceptionInfo errorWithCause(Throwable cause, String error, String message,
      Object... kvs) {
    Object[] data = new Object[kvs.length + 2];
    data[0] = ERROR;
    data[1] = Keyword.intern(error);
    for (int i = 0; i < kvs.length; i += 2) {
      data[i + 2] = kvs[i] instanceof String s ? Keyword.intern(s) : kvs[i];
      data[i + 3] = kvs[i + 1];
    }
    return new ExceptionInfo(message, PersistentArrayMap.createAsIfByAssoc(data), cause);
  }
}
