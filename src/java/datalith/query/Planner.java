package datalith.query;

import clojure.lang.PersistentVector;
import clojure.lang.Symbol;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.query.parser.And;
import datalith.query.parser.Clause;
import datalith.query.parser.Constant;
import datalith.query.parser.FnBinding;
import datalith.query.parser.Or;
import datalith.query.parser.Pattern;
import datalith.query.parser.Predicate;
import datalith.query.parser.Rule;
import datalith.query.parser.RuleCall;
import datalith.query.parser.Term;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Orders the clauses of one scope (a query's {@code :where}, a rule body, a not body, an or
 * branch) into a {@link Plan}. What binds what decides first: a clause runs only once the
 * variables it needs are bound, and a rule call needs, besides the arguments its head declares
 * required, those its bodies cannot bind themselves (found to a fixpoint over the rules), an
 * {@code or-join} the join variables some branch cannot bind. Among the clauses that can run:
 * filters (predicates, functions, not, an or that binds nothing new) as soon as they can, unless
 * a data clause written before them shares their inputs; then the cheapest generator (pattern,
 * rule call, or that binds), a pattern holding a variable that a function not yet runnable binds
 * waiting for it. No order that runs every clause is a {@code :query/insufficient-binding}.
 * One query's own; not thread-safe.
 */
final class Planner {
  /** What the planner is told of patterns by the sources they read. */
  interface Estimates {
    /**
     * About how many rows {@code p} makes scanned with nothing bound (its range from
     * {@code siblings}' comparisons applied), plus one; a collection source's size.
     */
    double unjoined(Pattern p, List<Clause> siblings);
  }

  private static final double RULE_JOINED = 50;
  private static final double RULE_UNJOINED = 5000;

  private final Map<Symbol, List<Rule>> rules;
  private final Function<Object, Object> formOf;
  /** Per rule, the argument positions a call must pass bound. */
  private final Map<Symbol, boolean[]> ruleNeeds = new HashMap<>();
  private final Map<Or, Set<Variable>> orNeeds = new IdentityHashMap<>();

  /**
   * A planner for the clauses of one query run with {@code rules} (by name); {@code formOf} gives
   * a clause's source form, for errors.
   */
  Planner(Map<Symbol, List<Rule>> rules, Function<Object, Object> formOf) {
    this.rules = rules;
    this.formOf = formOf;
    solveRuleNeeds();
  }

  // ---------------------------------------------------------------- what binds what

  /** The variables that must be bound before {@code c} runs. */
  Set<Variable> needs(Clause c) {
    if (c instanceof RuleCall call) {
      boolean[] need = ruleNeeds.get(call.name());
      if (need == null) {
        return Set.of();
      }
      Set<Variable> out = new LinkedHashSet<>();
      for (int i = 0; i < need.length && i < call.args().size(); i++) {
        if (need[i] && call.args().get(i) instanceof Variable v) {
          out.add(v);
        }
      }
      return out;
    }
    if (c instanceof Or o) {
      Set<Variable> out = orNeeds.get(o);
      if (out == null) {
        out = new LinkedHashSet<>(o.requiredVars());
        Set<Variable> joinVars = new HashSet<>(o.joinVars());
        for (And branch : o.branches()) {
          out.addAll(inputsNeeded(branch.clauses(), new HashSet<>(o.requiredVars()), joinVars));
        }
        orNeeds.put(o, out);
      }
      return out;
    }
    return c.needs();
  }

  /** The variables of the scope bound once {@code c} has run. */
  private static Set<Variable> bindsAfter(Clause c) {
    return c instanceof Or o ? new HashSet<>(o.joinVars()) : c.binds();
  }

  /**
   * Rule needs to a fixpoint: every rule starts needing its required arguments; a body that
   * cannot run without a head variable (a predicate or function on it, a call passing it where
   * a rule needs it) or that never binds one makes its position needed, until nothing changes.
   */
  private void solveRuleNeeds() {
    for (Map.Entry<Symbol, List<Rule>> e : rules.entrySet()) {
      boolean[] need = new boolean[e.getValue().get(0).arity()];
      for (Rule body : e.getValue()) {
        for (int i = 0; i < body.requiredVars().size(); i++) {
          need[i] = true;
        }
      }
      ruleNeeds.put(e.getKey(), need);
    }
    boolean changed = true;
    while (changed) {
      changed = false;
      orNeeds.clear(); // they depend on the rule needs, which grow
      for (Map.Entry<Symbol, List<Rule>> e : rules.entrySet()) {
        boolean[] need = ruleNeeds.get(e.getKey());
        for (Rule body : e.getValue()) {
          List<Variable> head = body.vars();
          Set<Variable> given = new HashSet<>();
          for (int i = 0; i < head.size(); i++) {
            if (need[i]) {
              given.add(head.get(i));
            }
          }
          Set<Variable> more = inputsNeeded(body.clauses(), given, new HashSet<>(head));
          for (int i = 0; i < head.size(); i++) {
            if (!need[i] && more.contains(head.get(i))) {
              need[i] = true;
              changed = true;
            }
          }
        }
      }
    }
  }

  /**
   * The variables among {@code candidates}, beyond {@code given}, that {@code clauses} need
   * given to run them all and to bind every candidate: run in any order that works, a clause
   * that cannot run asks for its unbound needs among the candidates, and candidates never bound
   * are asked for at the end. What cannot run whatever is given is left to the plan to report.
   */
  private Set<Variable> inputsNeeded(List<Clause> clauses, Set<Variable> given,
      Set<Variable> candidates) {
    Set<Variable> bound = new HashSet<>(given);
    Set<Variable> extra = new LinkedHashSet<>();
    List<Clause> remaining = new ArrayList<>(clauses);
    while (!remaining.isEmpty()) {
      Clause next = null;
      for (Clause c : remaining) {
        if (bound.containsAll(needs(c))) {
          next = c;
          break;
        }
      }
      if (next != null) {
        remaining.remove(next);
        bound.addAll(bindsAfter(next));
        continue;
      }
      boolean asked = false;
      for (Clause c : remaining) {
        for (Variable v : needs(c)) {
          if (!bound.contains(v) && candidates.contains(v)) {
            extra.add(v);
            bound.add(v);
            asked = true;
          }
        }
        if (asked) {
          break;
        }
      }
      if (!asked) {
        break;
      }
    }
    for (Variable v : candidates) {
      if (!bound.contains(v)) {
        extra.add(v);
      }
    }
    return extra;
  }

  // ---------------------------------------------------------------- ordering

  /**
   * The plan of {@code clauses} run with {@code bound} already bound, keeping {@code wanted} (the
   * variables the scope's caller reads at its end), costing patterns by {@code estimates}.
   *
   * @throws clojure.lang.ExceptionInfo {@code :query/insufficient-binding} when no order runs
   *     every clause
   */
  Plan plan(List<Clause> clauses, Set<Variable> bound, Set<Variable> wanted,
      Estimates estimates) {
    Plan p = tryPlan(clauses, bound, wanted, estimates);
    if (p == null) {
      throw stuck(clauses, bound);
    }
    return p;
  }

  /** Like {@link #plan}, but null when no order runs every clause. */
  Plan tryPlan(List<Clause> clauses, Set<Variable> bound0, Set<Variable> wanted,
      Estimates estimates) {
    List<Clause> remaining = new ArrayList<>(clauses);
    List<Clause> out = new ArrayList<>(clauses.size());
    Set<Variable> bound = new LinkedHashSet<>(bound0);
    while (!remaining.isEmpty()) {
      Clause pick = null;
      for (Clause c : remaining) {
        if (isFilter(c, bound) && bound.containsAll(needs(c))
            && !waitsForEarlierData(c, clauses, remaining, bound)) {
          pick = c;
          break;
        }
      }
      if (pick == null) {
        pick = cheapestGenerator(remaining, bound, clauses, false, estimates);
      }
      if (pick == null) {
        pick = cheapestGenerator(remaining, bound, clauses, true, estimates);
      }
      if (pick == null) {
        return null;
      }
      remaining.remove(pick);
      out.add(pick);
      bound.addAll(bindsAfter(pick));
    }
    return Plan.of(out, wanted);
  }

  private RuntimeException stuck(List<Clause> clauses, Set<Variable> bound0) {
    // run what can run, in any order, then name the first clause left and what it lacks
    Set<Variable> bound = new HashSet<>(bound0);
    List<Clause> remaining = new ArrayList<>(clauses);
    boolean progress = true;
    while (progress) {
      progress = false;
      for (Clause c : new ArrayList<>(remaining)) {
        if (bound.containsAll(needs(c))) {
          remaining.remove(c);
          bound.addAll(bindsAfter(c));
          progress = true;
        }
      }
    }
    Clause c = remaining.get(0);
    List<Object> missing = new ArrayList<>();
    for (Variable v : needs(c)) {
      if (!bound.contains(v)) {
        missing.add(v.symbol());
      }
    }
    String what = c instanceof RuleCall rc ? "Rule call " + formOf.apply(c) + " needs "
        + missing + " bound (rule " + rc.name() + " cannot bind them itself)"
        : formOf.apply(c) + " needs " + missing + " bound";
    return Errors.error("query/insufficient-binding", what
        + ", but no clause of its scope binds them before it can run",
        "form", formOf.apply(c), "vars", PersistentVector.create(missing));
  }

  /**
   * The cheapest generator that can run; with {@code deferred} false, leaving out those holding an
   * unbound variable that a function binding which cannot run yet will bind (they run after it,
   * joined on that variable, rather than multiplied with what is bound before it).
   */
  private Clause cheapestGenerator(List<Clause> remaining, Set<Variable> bound,
      List<Clause> clauses, boolean deferred, Estimates estimates) {
    Clause pick = null;
    double best = Double.MAX_VALUE;
    for (Clause c : remaining) {
      if (isFilter(c, bound) || !bound.containsAll(needs(c))
          || !deferred && waitsForFunction(c, remaining, bound)) {
        continue;
      }
      double cost = cost(c, bound, clauses, estimates);
      if (cost < best) {
        best = cost;
        pick = c;
      }
    }
    return pick;
  }

  private boolean waitsForFunction(Clause c, List<Clause> remaining, Set<Variable> bound) {
    for (Clause f : remaining) {
      if (f instanceof FnBinding fb && !bound.containsAll(fb.needs())) {
        for (Variable v : fb.binds()) {
          if (!bound.contains(v) && c.vars().contains(v)) {
            return true;
          }
        }
      }
    }
    return false;
  }

  /**
   * Whether {@code c} is a filter: a predicate, function, not, or an or that binds nothing new
   * (an or that does is a generator, costed like a rule call).
   */
  private static boolean isFilter(Clause c, Set<Variable> bound) {
    return !(c instanceof Pattern) && !(c instanceof RuleCall)
        && (!(c instanceof Or o) || bound.containsAll(o.joinVars()));
  }

  /**
   * Whether filter {@code c} must wait for a data clause (pattern or rule call) written before it
   * that shares one of its inputs and can run now: Datomic runs clauses as written, so a filter
   * must not see values such a clause removes (a function may throw on them).
   */
  private boolean waitsForEarlierData(Clause c, List<Clause> clauses, List<Clause> remaining,
      Set<Variable> bound) {
    Set<Variable> inputs = needs(c);
    for (Clause d : clauses) {
      if (d == c) {
        return false;
      }
      if ((d instanceof Pattern || d instanceof RuleCall) && remaining.contains(d)
          && bound.containsAll(needs(d)) && !Collections.disjoint(d.vars(), inputs)) {
        return true;
      }
    }
    return false;
  }

  private static double cost(Clause c, Set<Variable> bound, List<Clause> siblings,
      Estimates estimates) {
    boolean joined = false;
    for (Variable v : c.vars()) {
      if (bound.contains(v)) {
        joined = true;
        break;
      }
    }
    if (!(c instanceof Pattern p)) {
      return joined ? RULE_JOINED : RULE_UNJOINED;
    }
    if (joined) {
      boolean eBound = p.e() instanceof Variable v && bound.contains(v) || p.e() instanceof Constant;
      return eBound ? 1 : 10;
    }
    return estimates.unjoined(p, siblings);
  }

  // ---------------------------------------------------------------- ranges

  /** A range on the pattern's value variable from sibling comparison predicates with a constant. */
  static ValueRange rangeFor(Pattern p, DbPattern dp, List<Clause> siblings) {
    if (!(p.v() instanceof Variable v) || dp.constAttr() == null
        || dp.positionOf(v) != 2 || !Compare.ordersLikeIndex(dp.constAttr().valueType)) {
      return null; // the index must keep the values in the comparisons' order
    }
    Object lo = null;
    Object hi = null;
    boolean loIn = true;
    boolean hiIn = true;
    for (Clause c : siblings) {
      Comparison cmp = Comparison.of(c, v);
      if (cmp == null || Db.valuePart(dp.constAttr(), cmp.k) == null) {
        continue;
      }
      switch (cmp.op) {
        case ">":
        case ">=":
          if (lo == null || Compare.compare(cmp.k, lo) > 0) {
            lo = cmp.k;
            loIn = cmp.op.equals(">=");
          }
          break;
        case "<":
        case "<=":
          if (hi == null || Compare.compare(cmp.k, hi) < 0) {
            hi = cmp.k;
            hiIn = cmp.op.equals("<=");
          }
          break;
        default:
          break;
      }
    }
    return lo == null && hi == null ? null
        : new ValueRange(Compare.indexBound(lo, true), loIn, Compare.indexBound(hi, false), hiIn);
  }

  /**
   * Adds to {@code implied} (made when null) the comparisons among {@code siblings} of pattern
   * {@code p}'s value variable with a constant that every value in {@code range} satisfies: once
   * the pattern has run, every row holds such a value, so the comparison would keep them all.
   * Range and comparison compare alike ({@link Compare}).
   */
  static Set<Clause> impliedBy(Pattern p, ValueRange range, List<Clause> siblings,
      Set<Clause> implied) {
    Variable v = (Variable) p.v();
    for (Clause c : siblings) {
      Comparison cmp = Comparison.of(c, v);
      if (cmp == null) {
        continue;
      }
      boolean holds;
      switch (cmp.op) {
        case ">=":
          holds = range.lower != null && Compare.compare(range.lower, cmp.k) >= 0;
          break;
        case ">": {
          int at = range.lower == null ? -1 : Compare.compare(range.lower, cmp.k);
          holds = at > 0 || at == 0 && !range.lowerInclusive;
          break;
        }
        case "<=":
          holds = range.upper != null && Compare.compare(range.upper, cmp.k) <= 0;
          break;
        case "<": {
          int at = range.upper == null ? 1 : Compare.compare(range.upper, cmp.k);
          holds = at < 0 || at == 0 && !range.upperInclusive;
          break;
        }
        default:
          holds = false;
      }
      if (holds) {
        if (implied == null) {
          implied = Collections.newSetFromMap(new IdentityHashMap<>());
        }
        implied.add(c);
      }
    }
    return implied;
  }

  /** A comparison {@code v op k} with a non-nil constant (written either way round). */
  private record Comparison(String op, Object k) {
    static Comparison of(Clause c, Variable v) {
      if (!(c instanceof Predicate pr) || pr.args().size() != 2
          || pr.fn().getNamespace() != null || pr.fnVar() != null) {
        return null;
      }
      Term a = pr.args().get(0);
      Term b = pr.args().get(1);
      String op = pr.fn().getName();
      if (a == v && b instanceof Constant cb && cb.value() != null) {
        return new Comparison(op, cb.value());
      } else if (b == v && a instanceof Constant ca && ca.value() != null) {
        return new Comparison(flip(op), ca.value());
      }
      return null;
    }

    private static String flip(String op) {
      switch (op) {
        case "<": return ">";
        case ">": return "<";
        case "<=": return ">=";
        case ">=": return "<=";
        default: return op;
      }
    }
  }
}
