package datalith.query.parser;

import clojure.lang.Symbol;
import java.util.List;
import java.util.Set;

// fn-expr = [ [fn fn-arg*] binding ]
/**
 * A function binding {@code [(f ?x) ?y]}: calls {@code fn} and destructures the result with
 * {@code binding}. {@code fn} and {@code args} are as in {@link Predicate}. Needs its argument
 * variables (and the function's, for a {@code fn} that is a variable: see {@link Predicate});
 * binds the binding's variables (a variable that is also an argument is unified).
 */
public record FnBinding(Symbol fn, List<Term> args, Binding binding) implements Clause {
  public FnBinding {
    args = List.copyOf(args);
  }

  /** The variable whose value is the function, or null when {@code fn} names one. */
  public Variable fnVar() {
    return Predicate.fnVar(fn);
  }

  @Override
  public Set<Variable> vars() {
    return Vars.union(needs(), binding.vars());
  }

  @Override
  public Set<Variable> binds() {
    return Vars.of(binding.vars());
  }

  @Override
  public Set<Variable> needs() {
    Variable f = fnVar();
    return f == null ? Vars.ofTerms(args) : Vars.union(Vars.ofTerms(args), List.of(f));
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
