package datalith.query.parser;

import clojure.lang.Symbol;

// pattern-name = plain-symbol
/**
 * An {@code :in} input holding a pull pattern, referred to by {@code (pull ?e name)}. The symbol
 * is unqualified-or-qualified and never starts with {@code ?}, {@code $} or {@code %}.
 */
public record PatternName(Symbol symbol) implements InBinding {
  @Override
  public String toString() {
    return symbol.toString();
  }
}
