package datalith.tx;

import clojure.lang.RT;
import clojure.lang.Var;

/** Values as error messages show them: printed with bounded depth, length and size. */
final class Printed {
  private static final Var PRINT_LEVEL = RT.var("clojure.core", "*print-level*");
  private static final Var PRINT_LENGTH = RT.var("clojure.core", "*print-length*");
  private static final int MAX_CHARS = 200;

  private Printed() {}

  /**
   * {@code v} printed as {@code pr} does, collections cut at 5 levels and 10
   * elements and the text at 200 characters, so that a huge or deeply nested
   * value cannot overflow the stack or flood a message.
   */
  static String brief(Object v) {
    Var.pushThreadBindings(RT.map(PRINT_LEVEL, 5, PRINT_LENGTH, 10));
    String s;
    try {
      s = RT.printString(v);
    } finally {
      Var.popThreadBindings();
    }
    return s.length() <= MAX_CHARS ? s : s.substring(0, MAX_CHARS) + "...";
  }
}
