package datalith.query.parser;

// constant = any non-variable data literal
/**
 * A constant kept as the raw value written in the query: keyword, string, number, boolean,
 * lookup ref vector {@code [:attr val]}, ... It never contains a variable. {@code value} is null
 * only for a {@code nil} function argument.
 */
public record Constant(Object value) implements Term {
  @Override
  public String toString() {
    return clojure.lang.RT.printString(value);
  }
}
