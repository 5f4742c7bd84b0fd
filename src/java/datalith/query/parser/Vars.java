package datalith.query.parser;

import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/** Ordered, unmodifiable variable sets (order of first appearance) for the AST's accessors. */
final class Vars {
  private Vars() {}

  static Set<Variable> ofTerms(List<Term> terms) {
    LinkedHashSet<Variable> out = new LinkedHashSet<>();
    for (Term t : terms) {
      if (t instanceof Variable v) {
        out.add(v);
      }
    }
    return Collections.unmodifiableSet(out);
  }

  static List<Variable> ofBindings(List<Binding> bindings) {
    LinkedHashSet<Variable> out = new LinkedHashSet<>();
    for (Binding b : bindings) {
      out.addAll(b.vars());
    }
    return List.copyOf(out);
  }

  static Set<Variable> ofClauses(List<Clause> clauses) {
    LinkedHashSet<Variable> out = new LinkedHashSet<>();
    for (Clause c : clauses) {
      out.addAll(c.vars());
    }
    return Collections.unmodifiableSet(out);
  }

  static Set<Variable> union(Collection<Variable> a, Collection<Variable> b) {
    LinkedHashSet<Variable> out = new LinkedHashSet<>(a);
    out.addAll(b);
    return Collections.unmodifiableSet(out);
  }

  static Set<Variable> minus(Collection<Variable> a, Collection<Variable> b) {
    LinkedHashSet<Variable> out = new LinkedHashSet<>(a);
    out.removeAll(b);
    return Collections.unmodifiableSet(out);
  }

  static Set<Variable> of(Collection<Variable> vars) {
    return Collections.unmodifiableSet(new LinkedHashSet<>(vars));
  }
}
