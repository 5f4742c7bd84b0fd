package datalith.query;

import clojure.lang.IFn;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.Symbol;
import datalith.db.AnyValidTime;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Snapshot;
import datalith.query.parser.And;
import datalith.query.parser.Binding;
import datalith.query.parser.Clause;
import datalith.query.parser.Constant;
import datalith.query.parser.FnBinding;
import datalith.query.parser.Not;
import datalith.query.parser.Or;
import datalith.query.parser.Pattern;
import datalith.query.parser.Predicate;
import datalith.query.parser.Rule;
import datalith.query.parser.RuleCall;
import datalith.query.parser.SrcVar;
import datalith.query.parser.Term;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Runs one query's plans, set-at-a-time, clause by clause: patterns as scans, or, when the rows so
 * far bind some of their variables, as the joins of {@link Joins} (index-lookup, hash, semi-join),
 * runs of them on a few entities as one {@link StarJoin}; predicates as filters, function
 * bindings, anti-joins for {@code not}, unions for {@code or}; rule calls through {@link Rules}.
 * After each clause the variables its plan no longer needs are projected away
 * ({@link Ctx#retain}). Holds the query's snapshots (one per database, closed by
 * {@link #close()}) and its patterns bound to each database. One query's own; not thread-safe.
 */
final class Evaluator implements AutoCloseable {
  private static final double LARGE = 1e9;

  private final Deadline deadline;
  /** The steps run so far, when explaining (else null). */
  private final List<Object> explain;
  private final Function<Object, Object> formOf;
  private final Map<Symbol, List<Rule>> ruleDefs;
  private final Map<String, Object> sources;
  /** Made on first use: a run of a cached plan without rules needs neither. */
  private Planner planner;
  private Rules rules;
  // a query reads a database or two and has a few patterns: small tables
  private final IdentityHashMap<Db, Snapshot> snapshots = new IdentityHashMap<>(2);
  private final Map<Pattern, Map<Db, DbPattern>> patterns = new IdentityHashMap<>(8);

  /**
   * An evaluator for one run of a query: {@code sources} by name, {@code ruleDefs} by name,
   * {@code explain} the list explain's steps go to (null when not explaining), {@code formOf} a
   * clause's source form (for errors and explain).
   */
  Evaluator(Map<String, Object> sources, Map<Symbol, List<Rule>> ruleDefs, Deadline deadline,
      List<Object> explain, Function<Object, Object> formOf) {
    this.deadline = deadline;
    this.explain = explain;
    this.formOf = formOf;
    this.ruleDefs = ruleDefs;
    this.sources = sources;
  }

  Planner planner() {
    if (planner == null) {
      planner = new Planner(ruleDefs, formOf);
    }
    return planner;
  }

  private Rules rules() {
    if (rules == null) {
      rules = new Rules(this, ruleDefs, sources);
    }
    return rules;
  }

  Deadline deadline() {
    return deadline;
  }

  Function<Object, Object> formOf() {
    return formOf;
  }

  /** The plan of {@code clauses} in {@code scope} (see {@link Planner#plan}). */
  Plan plan(List<Clause> clauses, Set<Variable> bound, Set<Variable> wanted, Scope scope) {
    return planner().plan(clauses, bound, wanted, (p, siblings) -> unjoined(p, siblings, scope));
  }

  /** Like {@link #plan}, null when no order runs every clause. */
  Plan tryPlan(List<Clause> clauses, Set<Variable> bound, Set<Variable> wanted, Scope scope) {
    return planner().tryPlan(clauses, bound, wanted, (p, siblings) -> unjoined(p, siblings, scope));
  }

  private double unjoined(Pattern p, List<Clause> siblings, Scope scope) {
    Object src = scope.sources.get(p.src().name());
    if (!(src instanceof Db db)) {
      return src instanceof Collection<?> coll ? coll.size() : LARGE;
    }
    DbPattern dp = dbPattern(p, db);
    return dp.estimate(snapshot(db), Planner.rangeFor(p, dp, siblings)) + 1;
  }

  /** The query's snapshot of {@code db}, opened on first use. */
  Snapshot snapshot(Db db) {
    return snapshots.computeIfAbsent(db, Db::snapshot);
  }

  /** {@code p} bound to {@code db}, made once per query. */
  DbPattern dbPattern(Pattern p, Db db) {
    return patterns.computeIfAbsent(p, k -> new IdentityHashMap<>(2))
        .computeIfAbsent(db, d -> new DbPattern(p, d, snapshot(d)));
  }

  /** Closes the snapshots. */
  @Override
  public void close() {
    for (Snapshot s : snapshots.values()) {
      s.close();
    }
    snapshots.clear();
  }

  // ---------------------------------------------------------------- clauses

  /** What running one clause did, for explain and for the comparisons its range implies. */
  private record Outcome(String method, DbPattern dp, ValueRange range) {
    static Outcome of(String method) {
      return new Outcome(method, null, null);
    }
  }

  /** Runs {@code plan} on {@code ctx}, stopping early once the scope has no rows. */
  void evalAll(Ctx ctx, Plan plan, Scope scope) {
    List<Clause> clauses = plan.clauses();
    // comparisons that a pattern's range already held every row of its variable to
    Set<Clause> implied = null;
    for (int i = 0; i < clauses.size(); i++) {
      Clause c = clauses.get(i);
      deadline.check();
      if (ctx.isEmpty()) {
        return;
      }
      long before = explain == null ? 0 : System.nanoTime();
      int mark = explain == null ? 0 : explain.size();
      List<DbPattern> star = StarJoin.run(this, ctx, plan, i, scope, implied, Joins.SPARSE);
      if (star != null) {
        // one step for the patterns it answered, its last one's projection after it
        i += star.size() - 1;
        ctx.retain(plan.live(i), plan.later().get(i));
        if (explain != null) {
          for (DbPattern dp : star) {
            explainStep(dp.pattern, new Outcome("star-join-eavt", dp, null), ctx, before, mark);
            before = System.nanoTime();
            mark = explain.size();
          }
        }
        continue;
      }
      Outcome out;
      Set<Variable> live = plan.live(i);
      if (implied != null && implied.contains(c)) {
        out = Outcome.of("in-range");
      } else {
        out = eval(ctx, c, scope, clauses, live);
        if (c instanceof Pattern p && out.range != null) {
          implied = Planner.impliedBy(p, out.range, clauses, implied);
        }
      }
      ctx.retain(live, plan.later().get(i));
      if (explain != null) {
        explainStep(c, out, ctx, before, mark);
      }
    }
  }

  private void explainStep(Clause c, Outcome out, Ctx ctx, long before, int mark) {
    // the steps of a not or or body nest under it; a rule's fixpoint rounds are left out
    List<Object> inner = explain.subList(mark, explain.size());
    IPersistentMap step = PersistentArrayMap.EMPTY
        .assoc(Keyword.intern("clause"), formOf.apply(c))
        .assoc(Keyword.intern("method"), Keyword.intern(out.method))
        .assoc(Keyword.intern("rows"), ctx.size())
        .assoc(Keyword.intern("ms"), (System.nanoTime() - before) / 1e6);
    if (out.dp != null) {
      ValueRange range = out.range;
      step = step.assoc(Keyword.intern("index"), Keyword.intern(out.dp.lastIndexName()))
          .assoc(Keyword.intern("estimate"), out.dp.estimate(snapshot(out.dp.db), range));
      if (range != null) {
        step = step.assoc(Keyword.intern("range"), PersistentVector.create(
            range.lower, range.lowerInclusive ? ">=" : ">",
            range.upper, range.upperInclusive ? "<=" : "<"));
      }
    }
    if (!inner.isEmpty() && !(c instanceof RuleCall)) {
      step = step.assoc(Keyword.intern("clauses"), PersistentVector.create(inner));
    }
    inner.clear();
    explain.add(step);
  }

  private Outcome eval(Ctx ctx, Clause c, Scope scope, List<Clause> siblings, Set<Variable> live) {
    if (c instanceof Pattern p) {
      return evalPattern(ctx, p, scope, siblings, live);
    } else if (c instanceof Predicate p) {
      evalPredicate(ctx, p, scope);
      return Outcome.of("filter");
    } else if (c instanceof FnBinding f) {
      evalFn(ctx, f, scope);
      return Outcome.of("function");
    } else if (c instanceof Not n) {
      evalNot(ctx, n, scope);
      return Outcome.of("anti-join");
    } else if (c instanceof Or o) {
      evalOr(ctx, o, scope);
      return Outcome.of("union");
    } else {
      rules().evalRuleCall(ctx, (RuleCall) c, scope);
      return Outcome.of("rule");
    }
  }

  /**
   * Runs pattern {@code p}: its rows are kept to {@code range} (from the comparisons among
   * {@code siblings}) on every path. When none of the variables it would bind is {@code live},
   * it only has to match: a check for one match (nothing bound) or a semi-join.
   */
  private Outcome evalPattern(Ctx ctx, Pattern p, Scope scope, List<Clause> siblings,
      Set<Variable> live) {
    Object src = scope.source(p.src());
    if (src instanceof AnyValidTime any) {
      // the versions of the pattern's attribute (and entity, when constant), as tuples
      ctx.joinIn(Rules.matchTerms(p.terms(), any.versions(constant(p, 0), constant(p, 1)),
          deadline), deadline);
      return Outcome.of("any-valid-time");
    }
    if (!(src instanceof Db db)) {
      ctx.joinIn(Rules.matchTerms(p.terms(), (Collection<?>) src, deadline), deadline);
      return Outcome.of("collection");
    }
    DbPattern dp = dbPattern(p, db);
    Snapshot s = snapshot(db);
    ValueRange range = Planner.rangeFor(p, dp, siblings);
    List<Variable> boundVars = new ArrayList<>();
    boolean bindsLive = false;
    for (Variable v : dp.vars) {
      if (ctx.bound(v)) {
        boundVars.add(v);
      } else {
        bindsLive |= live.contains(v);
      }
    }
    String method;
    if (!bindsLive) {
      method = boundVars.isEmpty() ? exists(ctx, dp, s, range)
          : Joins.semiJoin(ctx, p, dp, boundVars, s, range, deadline);
    } else if (boundVars.isEmpty()) {
      method = scan(ctx, dp, s, range);
    } else {
      method = Joins.join(ctx, p, dp, boundVars, s, range, deadline);
    }
    return new Outcome(method, dp, range);
  }

  /** The value of {@code p}'s term at position {@code i} when it is a constant, else null. */
  private static Object constant(Pattern p, int i) {
    return i < p.terms().size() && p.terms().get(i) instanceof Constant c ? c.value() : null;
  }

  private String scan(Ctx ctx, DbPattern dp, Snapshot s, ValueRange range) {
    boolean distinct = dp.distinctRows();
    if (dp.bindsOnlyEntity()) {
      // a set of entities: kept as longs (Rel.IdRows)
      Joins.IdCollector ids = new Joins.IdCollector(dp.sizeHint(), deadline);
      dp.scan(s, null, ids, Long.MAX_VALUE, range);
      ctx.joinIn(new Rel(dp.vars, new Rel.IdRows(ids.ids, ids.n), distinct), deadline);
      return "scan-" + dp.lastIndexName();
    }
    List<Object[]> rows = new ArrayList<>(dp.sizeHint());
    dp.scan(s, null, vals -> {
      rows.add(vals.clone());
      deadline.tick(rows.size());
    }, Long.MAX_VALUE, range);
    ctx.joinIn(new Rel(dp.vars, rows, distinct), deadline);
    return "scan-" + dp.lastIndexName();
  }

  /** A pattern sharing nothing with its scope that binds nothing needed: one match is enough. */
  private String exists(Ctx ctx, DbPattern dp, Snapshot s, ValueRange range) {
    if (dp.scan(s, null, vals -> { }, 1, range) == 0) {
      ctx.add(new Rel(new Variable[0], new ArrayList<>(), true));
    }
    return "exists-" + dp.lastIndexName();
  }

  /**
   * The arguments of a call, read from each row of {@code r}: the columns of its variables are
   * found once, and with four arguments or fewer, which {@link Functions#call} passes one by one,
   * one array serves every row.
   */
  private static final class Args {
    private final int[] cols; // per argument, its column in r, or -1 for a constant or source
    private final Object[] fixed; // the constants and sources in place
    private final boolean shared;

    Args(List<Term> terms, Rel r, Scope scope) {
      cols = new int[terms.size()];
      fixed = new Object[terms.size()];
      for (int i = 0; i < cols.length; i++) {
        Term t = terms.get(i);
        cols[i] = t instanceof Variable v ? r.col(v) : -1;
        if (t instanceof Constant c) {
          fixed[i] = c.value();
        } else if (t instanceof SrcVar src) {
          fixed[i] = scope.source(src);
        }
      }
      shared = cols.length <= 4;
    }

    Object[] of(Object[] row) {
      Object[] out = shared ? fixed : fixed.clone();
      for (int i = 0; i < cols.length; i++) {
        if (cols[i] >= 0) {
          out[i] = row[cols[i]];
        }
      }
      return out;
    }
  }

  private void evalPredicate(Ctx ctx, Predicate p, Scope scope) {
    IFn named = p.fnVar() == null ? Functions.resolve(p.fn()) : null;
    Rel r = ctx.take(new ArrayList<>(p.vars()), deadline);
    int fnCol = named == null ? r.col(p.fnVar()) : -1;
    Args args = new Args(p.args(), r, scope);
    List<Object[]> out = new ArrayList<>();
    for (Object[] row : r.rows) {
      deadline.tick(out.size());
      IFn f = named != null ? named : Functions.value(row[fnCol], p.fn());
      if (RT.booleanCast(Functions.call(f, p.fn(), args.of(row)))) {
        out.add(row);
      }
    }
    ctx.add(r.filtered(out));
  }

  private void evalFn(Ctx ctx, FnBinding fb, Scope scope) {
    IFn named = fb.fnVar() == null ? Functions.resolve(fb.fn()) : null;
    Binding b = fb.binding();
    List<Variable> outVars = b.vars();
    // output variables already bound (the planner may run their clause first) are unified below
    List<Variable> inVars = new ArrayList<>(fb.needs());
    inVars.addAll(outVars);
    Rel r = ctx.take(inVars, deadline);
    List<Variable> fresh = new ArrayList<>();
    for (Variable v : outVars) {
      if (!r.has(v) && !fresh.contains(v)) {
        fresh.add(v);
      }
    }
    Variable[] vars = new Variable[r.vars.length + fresh.size()];
    System.arraycopy(r.vars, 0, vars, 0, r.vars.length);
    for (int i = 0; i < fresh.size(); i++) {
      vars[r.vars.length + i] = fresh.get(i);
    }
    Rel shape = new Rel(vars, null);
    List<Object[]> out = new ArrayList<>();
    Args args = new Args(fb.args(), r, scope);
    int fnCol = named == null ? r.col(fb.fnVar()) : -1;
    for (Object[] row : r.rows) {
      deadline.tick(out.size());
      IFn f = named != null ? named : Functions.value(row[fnCol], fb.fn());
      Object result = Functions.call(f, fb.fn(), args.of(row));
      if (result == null) {
        continue;
      }
      for (Object[] binding : Bindings.rows(b, result)) {
        Object[] nr = Arrays.copyOf(row, vars.length);
        boolean ok = true;
        for (int i = 0; i < outVars.size() && ok; i++) {
          int col = shape.col(outVars.get(i));
          if (col < row.length || nr[col] != null) {
            ok = Tuple.same(nr[col], binding[i]);
          } else {
            nr[col] = binding[i];
          }
        }
        if (ok) {
          out.add(nr);
        }
      }
    }
    ctx.add(new Rel(vars, out).project(List.of(vars)));
  }

  private void evalNot(Ctx ctx, Not n, Scope scope) {
    List<Variable> joinVars = n.joinVars();
    Rel r = ctx.take(joinVars, deadline);
    Ctx sub = new Ctx();
    sub.add(r.project(joinVars));
    evalAll(sub, plan(n.clauses(), sub.boundVars(), new HashSet<>(joinVars), scope), scope);
    Set<Object> matched = new HashSet<>();
    if (!sub.isEmpty()) {
      Rel res = sub.take(joinVars, deadline);
      int[] cols = res.cols(joinVars);
      for (Object[] row : res.rows) {
        matched.add(Tuple.key(row, cols));
        deadline.tick(0);
      }
    }
    ctx.add(r.semiJoin(joinVars, matched, false));
  }

  private void evalOr(Ctx ctx, Or o, Scope scope) {
    List<Variable> joinVars = o.joinVars();
    List<Variable> boundJoin = new ArrayList<>();
    for (Variable v : joinVars) {
      if (ctx.bound(v)) {
        boundJoin.add(v);
      }
    }
    Rel r = boundJoin.isEmpty() ? null : ctx.take(boundJoin, deadline);
    Rel input = r == null ? Rel.unit() : r.project(boundJoin);
    Set<Tuple> union = new LinkedHashSet<>();
    for (And branch : o.branches()) {
      Ctx sub = new Ctx();
      sub.add(input);
      evalAll(sub, plan(branch.clauses(), sub.boundVars(), new HashSet<>(joinVars), scope), scope);
      if (sub.isEmpty()) {
        continue;
      }
      Rel res = sub.take(joinVars, deadline);
      for (Variable v : joinVars) {
        if (!res.has(v)) {
          throw Errors.error("query/insufficient-binding", "An or branch does not bind " + v,
              "form", formOf.apply(o), "vars", PersistentVector.create(v.symbol()));
        }
      }
      int[] cols = res.cols(joinVars);
      for (Object[] row : res.rows) {
        union.add(Tuple.of(row, cols));
        deadline.tick(union.size());
      }
    }
    List<Object[]> rows = new ArrayList<>(union.size());
    for (Tuple t : union) {
      rows.add(t.vals);
    }
    Rel u = new Rel(joinVars.toArray(new Variable[0]), rows, true);
    if (r == null) {
      ctx.joinIn(u, deadline);
    } else {
      ctx.add(Rel.join(r, u, deadline));
    }
  }

}
