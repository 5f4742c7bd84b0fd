package datalith.query.parser;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

// or-clause = [ src-var? 'or' (clause | and-clause)+ ] ; or-join-clause = [ src-var? 'or-join' rule-vars (clause | and-clause)+ ]
/**
 * Disjunction: the union of its {@code branches}, each an {@link And}, projected on
 * {@code joinVars}; other branch variables are local to their branch. For {@code or}
 * ({@code join} false) every branch uses the same variables and {@code joinVars} are those. For
 * {@code or-join} they are the ones written, {@code requiredVars} first (the {@code [[?req] ?other]}
 * form); a branch that does not bind a join variable leaves it to the enclosing scope. {@code src} (never null) is the branches' default
 * source. Needs its required variables and any join variable some branch cannot bind; binds the
 * other join variables.
 */
public record Or(SrcVar src, boolean join, List<Variable> requiredVars, List<Variable> joinVars,
    List<And> branches) implements Clause {
  public Or {
    requiredVars = List.copyOf(requiredVars);
    joinVars = List.copyOf(joinVars);
    branches = List.copyOf(branches);
  }

  @Override
  public Set<Variable> vars() {
    return Vars.of(joinVars);
  }

  @Override
  public Set<Variable> binds() {
    LinkedHashSet<Variable> out = new LinkedHashSet<>(joinVars);
    out.removeAll(requiredVars);
    for (And branch : branches) {
      out.retainAll(branch.binds());
    }
    return Vars.of(out);
  }

  @Override
  public Set<Variable> needs() {
    return Vars.minus(joinVars, binds());
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
