package datalith.query;

import datalith.query.parser.Aggregate;
import datalith.query.parser.FindElement;
import datalith.query.parser.Query;
import datalith.query.parser.Term;
import datalith.query.parser.Variable;
import datalith.query.parser.Window;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;

/**
 * A parsed query with what every run of it shares, made once: the variables its find reads, that
 * the functions it names resolve, and the plan of its last run, reused while the databases it
 * reads stay in the same size classes and the rules form is the same one. A run then does only
 * what depends on the database and the inputs ({@link Engine#runPrepared}). Thread-safe:
 * the plan is swapped whole, the function check is idempotent.
 */
public final class Prepared {
  private final Query query;
  private final Set<Variable> findVars;
  /** True once the query's own functions (not its rules') resolved; a failure is tried again. */
  private volatile boolean functionsResolved;
  /** The plan of the last run, with what it was made for (null before the first run). */
  private volatile Held held;

  /** The plan of a run, with its rules form (compared by identity) and its sources' size key. */
  private record Held(Object rulesForm, long sizeKey, Plan plan) {}

  private Prepared(Query query) {
    this.query = query;
    this.findVars = Collections.unmodifiableSet(findVarsOf(query));
  }

  /**
   * {@code query} prepared to run many times.
   *
   * @param query a parsed query ({@link Engine#parse})
   * @return the prepared query
   */
  public static Prepared of(Query query) {
    return new Prepared(query);
  }

  /**
   * The parsed query.
   *
   * @return the query
   */
  public Query query() {
    return query;
  }

  /**
   * The variables a query's find reads at the end: find elements, {@code :with}, windows' and
   * aggregates' variable arguments.
   */
  static Set<Variable> findVarsOf(Query query) {
    Set<Variable> out = new HashSet<>(query.with());
    for (FindElement el : query.findElements()) {
      out.add(el.var());
      if (el instanceof Window w) {
        out.addAll(w.vars());
      }
      if (el instanceof Aggregate a) {
        for (Term t : a.args()) {
          if (t instanceof Variable v) {
            out.add(v);
          }
        }
      }
    }
    return out;
  }

  Set<Variable> findVars() {
    return findVars;
  }

  boolean functionsResolved() {
    return functionsResolved;
  }

  void functionsResolved(boolean resolved) {
    functionsResolved = resolved;
  }

  /** The plan held for {@code rulesForm} (the same object) and {@code sizeKey}, or null. */
  Plan plan(Object rulesForm, long sizeKey) {
    Held h = held;
    return h != null && h.rulesForm == rulesForm && h.sizeKey == sizeKey ? h.plan : null;
  }

  /** Holds {@code plan} as the one for {@code rulesForm} and {@code sizeKey}. */
  void hold(Object rulesForm, long sizeKey, Plan plan) {
    held = new Held(rulesForm, sizeKey, plan);
  }
}
