package datalith.query.parser;

import clojure.lang.Symbol;
import java.util.List;
import java.util.Set;

// pred-expr = [ [pred fn-arg*] ]
/**
 * A predicate {@code [(pred ?a 10)]}: keeps the rows for which the function returns truthy.
 * {@code fn} is the symbol as written (built-in such as {@code <} or {@code missing?}, or
 * qualified); the parser does not resolve it. {@code args} are {@link Variable}s,
 * {@link Constant}s (nil allowed; a symbol constant is written quoted, {@code 'sym}, and held
 * unquoted) and {@link SrcVar}s, as written. Needs all its variables; binds none. A
 * {@code fn} that is a variable ({@code [(?f ?x)]}) calls the function value bound to it (an
 * {@code :in} input): then the variable is one the predicate needs too.
 */
public record Predicate(Symbol fn, List<Term> args) implements Clause {
  public Predicate {
    args = List.copyOf(args);
  }

  /** The variable whose value is the function, or null when {@code fn} names one. */
  public Variable fnVar() {
    return fnVar(fn);
  }

  /** The variable {@code fn} is, or null when it names a function. */
  static Variable fnVar(Symbol fn) {
    return fn.getNamespace() == null && fn.getName().startsWith("?") ? Variable.of(fn) : null;
  }

  @Override
  public Set<Variable> vars() {
    Variable f = fnVar();
    return f == null ? Vars.ofTerms(args) : Vars.union(Vars.ofTerms(args), List.of(f));
  }

  @Override
  public Set<Variable> binds() {
    return Set.of();
  }

  @Override
  public Set<Variable> needs() {
    return vars();
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
