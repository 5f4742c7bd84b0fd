package datalith.query.parser;

import clojure.lang.Symbol;

// src-var = symbol starting with "$"
/**
 * A data source: {@code $} (the default) or {@code $name}. As an {@code :in} binding it declares
 * the source; in clauses it names the source a pattern reads; as a function argument it is passed
 * as the source's value. Inside a rule body, {@code $} stands for the source the rule was invoked
 * with.
 */
public record SrcVar(String name) implements Term, InBinding {
  /** The default source {@code $}. */
  public static final SrcVar DEFAULT = new SrcVar("$");

  public SrcVar {
    if (name == null || !name.startsWith("$")) {
      throw new IllegalArgumentException("A source name starts with $: " + name);
    }
  }

  /** True for {@code $}. */
  public boolean isDefault() {
    return name.equals("$");
  }

  /** The symbol this source is written as. */
  public Symbol symbol() {
    return Symbol.intern(name);
  }

  @Override
  public String toString() {
    return name;
  }
}
