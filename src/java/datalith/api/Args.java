package datalith.api;

import datalith.db.Errors;

/** Checks of the Java API's arguments that the layers below would report less clearly. */
final class Args {
  private Args() {}

  /** {@code x}, or an {@code :api/null-argument} error naming {@code what} when null. */
  static <T> T required(T x, String what) {
    if (x == null) {
      throw Errors.error("api/null-argument", what + " must not be null", "argument", what);
    }
    return x;
  }

  /**
   * {@code x} as a non-empty string, or an {@code :db/invalid-options} error naming option
   * {@code what}.
   */
  static String string(Object x, String what) {
    if (!(x instanceof String s) || s.isEmpty()) {
      throw Errors.error("db/invalid-options", "The option " + what + " is a non-empty string",
          "option", what, "value", x);
    }
    return s;
  }
}
