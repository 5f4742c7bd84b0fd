package datalith.query;

import datalith.query.parser.Clause;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The order one scope's clauses run in ({@link Planner}), and after each step the variables still
 * needed: {@code later.get(i)}, those of the clauses after step i, and {@code live(i)}, those plus
 * the variables the scope's caller reads at its end. A variable bound but not live is existential
 * from then on and is projected away, so that it cannot multiply rows. Immutable.
 */
record Plan(List<Clause> clauses, List<Set<Variable>> later, Set<Variable> wanted) {
  Plan {
    clauses = List.copyOf(clauses);
    later = List.copyOf(later);
    wanted = Collections.unmodifiableSet(new HashSet<>(wanted));
  }

  static Plan of(List<Clause> clauses, Set<Variable> wanted) {
    List<Set<Variable>> later = new ArrayList<>(Collections.nCopies(clauses.size(), null));
    Set<Variable> acc = new HashSet<>();
    for (int i = clauses.size() - 1; i >= 0; i--) {
      later.set(i, Collections.unmodifiableSet(new HashSet<>(acc)));
      acc.addAll(clauses.get(i).vars());
    }
    return new Plan(clauses, later, wanted);
  }

  /** The variables still needed after step {@code i}. */
  Set<Variable> live(int i) {
    Set<Variable> out = new HashSet<>(later.get(i));
    out.addAll(wanted);
    return out;
  }
}
