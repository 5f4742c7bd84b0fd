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

  /** A scope holding the same relations, which neither scope's clauses change in place. */
  Ctx copy() {
    Ctx c = new Ctx();
    c.rels.addAll(rels);
    return c;
  }

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

  /**
   * Projects away, as existential, the variables no longer {@code live}: a relation all of whose
   * variables are dead only had to have a row (it goes; an empty one stays, as an empty relation
   * over nothing, and empties the scope); one that keeps some is made the distinct rows of those
   * when a later clause reads it ({@code later}: the later clauses' variables), so that what was
   * dead or repeated cannot multiply the rows that clause joins. Relations no later clause reads
   * are left whole for the end of the scope, which projects anyway.
   */
  void retain(Set<Variable> live, Set<Variable> later) {
    for (int i = 0; i < rels.size(); i++) {
      Rel r = rels.get(i);
      List<Variable> kept = new ArrayList<>(r.vars.length);
      boolean read = false;
      for (Variable v : r.vars) {
        if (live.contains(v)) {
          kept.add(v);
          read |= later.contains(v);
        }
      }
      if (kept.isEmpty()) {
        if (r.rows.isEmpty()) {
          rels.set(i, new Rel(new Variable[0], new ArrayList<>(), true));
        } else {
          rels.remove(i--);
        }
      } else if (read && (kept.size() < r.vars.length || !r.distinct)) {
        rels.set(i, r.project(kept));
      }
    }
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
