package datalith.query.parser;

import clojure.lang.Symbol;
import java.util.List;
import java.util.Set;

// aggregate = [ aggregate-fn-name fn-arg* variable ]
/**
 * An aggregate column such as {@code (count ?x)}, {@code (max 3 ?x)} or {@code (my.ns/agg 0.5
 * ?x)}. {@code fn} is a built-in name (see {@link #BUILTINS}) or a namespace-qualified symbol of a
 * user function. {@code args} are the arguments before the aggregated variable: constants, sources
 * or variables bound by {@code :in}; for the built-ins with a count ({@code min}, {@code max},
 * {@code rand}, {@code sample}) the single argument is a positive integer constant or an
 * {@code :in} variable. {@code var} is the variable aggregated over.
 */
public record Aggregate(Symbol fn, List<Term> args, Variable var) implements FindElement {
  /** Names of the built-in aggregates. */
  public static final Set<String> BUILTINS = Set.of("count", "count-distinct", "sum", "avg",
      "min", "max", "median", "variance", "stddev", "distinct", "rand", "sample");

  public Aggregate {
    args = List.copyOf(args);
  }

  /** True when {@code fn} names a built-in aggregate rather than a user function. */
  public boolean isBuiltin() {
    return fn.getNamespace() == null && BUILTINS.contains(fn.getName());
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
