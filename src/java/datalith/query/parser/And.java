package datalith.query.parser;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

// and-clause = [ 'and' clause+ ]
/**
 * One branch of an {@link Or}: a conjunction of clauses (never empty). A branch written as a
 * single clause is an {@code And} of that clause. Only ever a branch, never a clause of its own.
 */
public record And(List<Clause> clauses) {
  public And {
    clauses = List.copyOf(clauses);
    if (clauses.isEmpty()) {
      throw new IllegalArgumentException("An and has at least one clause");
    }
  }

  /** Variables the branch's clauses mention. */
  public Set<Variable> vars() {
    return Vars.ofClauses(clauses);
  }

  /** Variables some clause of the branch binds. */
  public Set<Variable> binds() {
    LinkedHashSet<Variable> out = new LinkedHashSet<>();
    for (Clause c : clauses) {
      out.addAll(c.binds());
    }
    return Vars.of(out);
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
