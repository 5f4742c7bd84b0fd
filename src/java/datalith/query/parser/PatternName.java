package datalith.query.parser;

import clojure.lang.Symbol;

// pattern-name = plain-symbol | variable
/**
 * An {@code :in} input holding a pull pattern, referred to by {@code (pull ?e name)}: a plain
 * symbol (Datomic's pattern name, never starting with {@code ?}, {@code $} or {@code %}), or
 * the variable of a scalar {@code :in} binding (DataScript's {@code (pull ?e ?pattern)}).
 */
public record PatternName(Symbol symbol) implements InBinding {
  @Override
  public String toString() {
    return symbol.toString();
  }
}
