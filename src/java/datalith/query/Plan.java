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
 * from then on and is projected away, so that it cannot multiply rows. Immutable; {@code lives}
 * holds each step's live set, made with the plan since a cached plan runs many times.
 */
record Plan(List<Clause> clauses, List<Set<Variable>> later, Set<Variable> wanted,
    List<Set<Variable>> lives) {
  Plan {
    clauses = List.copyOf(clauses);
    later = List.copyOf(later);
    wanted = Collections.unmodifiableSet(new HashSet<>(wanted));
    lives = List.copyOf(lives);
  }

  /** A plan whose live sets ({@link #live}) are made once here, not per step of each run. */
  Plan(List<Clause> clauses, List<Set<Variable>> later, Set<Variable> wanted) {
    this(clauses, later, wanted, livesOf(later, wanted));
  }

  private static List<Set<Variable>> livesOf(List<Set<Variable>> later, Set<Variable> wanted) {
    List<Set<Variable>> out = new ArrayList<>(later.size());
    for (Set<Variable> after : later) {
      Set<Variable> live = new HashSet<>(after);
      live.addAll(wanted);
      out.add(Collections.unmodifiableSet(live));
    }
    return out;
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

  /** The variables still needed after step {@code i}, read-only. */
  Set<Variable> live(int i) {
    return lives.get(i);
  }
}
