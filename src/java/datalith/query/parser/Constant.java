package datalith.query.parser;

// constant = any non-variable data literal; a plain symbol in a data pattern; 'x in a call
/**
 * A constant kept as the raw value written in the query: keyword, string, number, boolean,
 * lookup ref vector {@code [:attr val]}, symbol ({@code sym} in a data pattern, {@code 'sym} in
 * a function's or aggregate's arguments, held unquoted), ... It never contains a variable.
 * {@code value} is null only for a {@code nil} function argument.
 */
public record Constant(Object value) implements Term {
  @Override
  public String toString() {
    return clojure.lang.RT.printString(value);
  }
}
