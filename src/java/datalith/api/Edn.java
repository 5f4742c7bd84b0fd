package datalith.api;

import clojure.lang.EdnReader;
import clojure.lang.PersistentHashMap;
import datalith.db.Errors;

/** Reads EDN text given by Java callers. */
final class Edn {
  private Edn() {}

  /** The value of {@code text} when it is a String, else {@code x} itself (already data). */
  static Object read(Object x, String what) {
    if (!(x instanceof String s)) {
      return x;
    }
    try {
      return EdnReader.readString(s, PersistentHashMap.EMPTY);
    } catch (Exception ex) {
      throw Errors.errorWithCause(ex, "api/edn", "Cannot read " + what + " as EDN: "
          + ex.getMessage(), "text", s);
    }
  }
}
