package datalith.query.parser;

import java.util.List;
import java.util.Set;

// not-clause = [ src-var? 'not' clause+ ] ; not-join-clause = [ src-var? 'not-join' [variable+] clause+ ]
/**
 * Negation: removes the rows for which {@code clauses} (an implicit and) have a match, joined on
 * {@code joinVars}; the body's other variables are local to it. For {@code not-join}
 * ({@code join} true) {@code joinVars} are the ones written. For {@code not} they are resolved by
 * the parser: the body's variables that the enclosing scope can bind (never empty). {@code src}
 * (never null) is the default source of the body's clauses. Binds nothing; needs its join
 * variables.
 */
public record Not(SrcVar src, boolean join, List<Variable> joinVars, List<Clause> clauses)
    implements Clause {
  public Not {
    joinVars = List.copyOf(joinVars);
    clauses = List.copyOf(clauses);
  }

  /** For {@code not}: every variable of the body; for {@code not-join}: the join variables. */
  @Override
  public Set<Variable> vars() {
    return join ? Vars.of(joinVars) : Vars.ofClauses(clauses);
  }

  @Override
  public Set<Variable> binds() {
    return Set.of();
  }

  @Override
  public Set<Variable> needs() {
    return Vars.of(joinVars);
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
