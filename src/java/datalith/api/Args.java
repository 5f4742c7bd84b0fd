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
}
