package datalith.query;

import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The bindings of one scope while its clauses run: a list of relations over
 * disjoint variables, whose product is the scope's relation. Relations are
 * joined only when a clause relates them.
 */
final class Ctx {
  private final List<Rel> rels = new ArrayList<>();

  void add(Rel r) {
    rels.add(r);
  }

  boolean bound(Variable v) {
    for (Rel r : rels) {
      if (r.has(v)) {
        return true;
      }
    }
    return false;
  }

  Set<Variable> boundVars() {
    Set<Variable> out = new LinkedHashSet<>();
    for (Rel r : rels) {
      for (Variable v : r.vars) {
        out.add(v);
      }
    }
    return out;
  }

  /** True when some relation is empty, so the whole scope has no rows. */
  boolean isEmpty() {
    for (Rel r : rels) {
      if (r.rows.isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /** The number of rows of the scope's relation (for explain): the product of the sizes. */
  long size() {
    long n = 1;
    for (Rel r : rels) {
      n *= r.rows.size();
    }
    return n;
  }

  /**
   * Removes and returns the join of the relations that hold any of {@code vs}
   * (the unit relation when none does); the caller adds back what it makes of it.
   */
  Rel take(Collection<Variable> vs, Deadline deadline) {
    Rel out = null;
    for (int i = 0; i < rels.size(); ) {
      Rel r = rels.get(i);
      boolean hit = false;
      for (Variable v : vs) {
        if (r.has(v)) {
          hit = true;
          break;
        }
      }
      if (hit) {
        rels.remove(i);
        out = out == null ? r : Rel.join(out, r, deadline);
      } else {
        i++;
      }
    }
    return out == null ? Rel.unit() : out;
  }

  /** Adds {@code r}, joining it with the relations it shares variables with. */
  void joinIn(Rel r, Deadline deadline) {
    List<Variable> vs = List.of(r.vars);
    boolean shares = false;
    for (Variable v : vs) {
      shares |= bound(v);
    }
    if (!shares) {
      rels.add(r);
      return;
    }
    rels.add(Rel.join(take(vs, deadline), r, deadline));
  }
}
