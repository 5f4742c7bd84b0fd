package datalith.query;

import clojure.lang.IFn;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.LazilyPersistentVector;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashSet;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.Symbol;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Snapshot;
import datalith.pull.PullPattern;
import datalith.pull.Puller;
import datalith.query.parser.Aggregate;
import datalith.query.parser.BindColl;
import datalith.query.parser.BindIgnore;
import datalith.query.parser.BindRel;
import datalith.query.parser.BindScalar;
import datalith.query.parser.BindTuple;
import datalith.query.parser.Binding;
import datalith.query.parser.Clause;
import datalith.query.parser.Constant;
import datalith.query.parser.FindColl;
import datalith.query.parser.FindElement;
import datalith.query.parser.FindScalar;
import datalith.query.parser.FindTuple;
import datalith.query.parser.FindVar;
import datalith.query.parser.FnBinding;
import datalith.query.parser.InBinding;
import datalith.query.parser.Not;
import datalith.query.parser.Or;
import datalith.query.parser.Pattern;
import datalith.query.parser.PatternName;
import datalith.query.parser.Predicate;
import datalith.query.parser.Pull;
import datalith.query.parser.Query;
import datalith.query.parser.QueryParser;
import datalith.query.parser.ReturnMap;
import datalith.query.parser.Rule;
import datalith.query.parser.RulesVar;
import datalith.query.parser.SrcVar;
import datalith.query.parser.Term;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs parsed queries: binds the inputs, evaluates the clauses in the
 * planner's order set-at-a-time (index-lookup joins when the bound side is
 * small, hash joins otherwise, anti-joins for {@code not}, unions for
 * {@code or}, a tabled fixpoint for rules), then projects and aggregates.
 * Thread-safe: each call has its own state; parsed queries and plans are
 * cached by form.
 */
public final class Engine {
  private static final int CACHE_LIMIT = 2048;
  private static final Map<Object, Query> PARSED = new ConcurrentHashMap<>();
  /** Plans by query and rules form (the rules decide which arguments a rule call needs). */
  private static final Map<List<Object>, Plan> PLANS = new ConcurrentHashMap<>();
  private static final Map<Object, List<Rule>> RULES = new ConcurrentHashMap<>();
  private static final Keyword K_TIMEOUT = Keyword.intern("timeout");
  private static final Keyword K_MAX_ROWS = Keyword.intern("max-rows");

  private final Query query;
  private final Map<String, Object> sources = new HashMap<>();
  private final Map<Symbol, List<Rule>> rules = new HashMap<>();
  private final Map<String, Object> pullPatterns = new HashMap<>();
  private final Deadline deadline;
  private Object rulesForm;
  private final List<Object> explain;
  /** Runs the clauses; made once the inputs (sources, rules) are bound. */
  private Evaluator evaluator;

  private Engine(Query query, long timeoutMs, long maxRows, boolean explain) {
    this.query = query;
    this.deadline = Deadline.of(timeoutMs > 0 ? timeoutMs : query.timeout().orElse(0), maxRows);
    this.explain = explain ? new ArrayList<>() : null;
  }

  /** The parsed form of a query, cached by form. */
  public static Query parse(Object form) {
    Query q = PARSED.get(form);
    if (q == null) {
      q = QueryParser.parse(form);
      if (PARSED.size() >= CACHE_LIMIT) {
        PARSED.clear();
        PLANS.clear();
      }
      PARSED.put(form, q);
    }
    return q;
  }

  /**
   * Runs {@code form} on {@code inputs} (one per {@code :in} element).
   *
   * @param opts may hold {@code :timeout} (ms) and {@code :max-rows} (the most rows any relation
   *     of the query, final or intermediate, may have); null for none
   */
  public static Object q(Object form, Object[] inputs, IPersistentMap opts) {
    Engine e = new Engine(parse(form), positiveOption(opts, K_TIMEOUT,
        ":timeout is a positive number of milliseconds"), positiveOption(opts, K_MAX_ROWS,
        ":max-rows is a positive number of rows"), false);
    return e.run(inputs);
  }

  /** The plan {@code form} runs with on {@code inputs}, as data, with actual sizes. */
  public static Object explain(Object form, Object[] inputs) {
    Engine e = new Engine(parse(form), 0, 0, true);
    Object result = e.run(inputs);
    int n = result instanceof Collection<?> c ? c.size() : result == null ? 0 : 1;
    return map("query", e.query.toString(), "clauses", PersistentVector.create(e.explain),
        "result-size", (long) n);
  }

  /** Option {@code k} of {@code opts}, a positive number (taken whole), or 0 when absent. */
  private static long positiveOption(IPersistentMap opts, Keyword k, String what) {
    Object t = opts == null ? null : opts.valAt(k);
    if (t == null) {
      return 0;
    }
    if (!(t instanceof Number n) || n.longValue() <= 0) {
      throw Errors.error("query/invalid-option", what, k.getName(), t);
    }
    return n.longValue();
  }

  private static IPersistentMap map(Object... kvs) {
    for (int i = 0; i < kvs.length; i += 2) {
      if (kvs[i] instanceof String s) {
        kvs[i] = Keyword.intern(s);
      }
    }
    return PersistentArrayMap.createAsIfByAssoc(kvs);
  }

  // ---------------------------------------------------------------- running

  private Object run(Object[] inputs) {
    try {
      Ctx ctx = new Ctx();
      bindInputs(ctx, inputs);
      evaluator = new Evaluator(sources, rules, deadline, explain, query::formOf);
      resolveFunctions(query.where());
      for (List<Rule> bodies : rules.values()) {
        for (Rule body : bodies) {
          resolveFunctions(body.clauses());
        }
      }
      for (FindElement el : query.findElements()) {
        if (el instanceof Aggregate a && !a.isBuiltin()) {
          Functions.resolve(a.fn());
        }
      }
      Scope scope = new Scope(sources);
      // a plan fits the sizes it was made for: a source four times larger plans again
      List<Object> planKey = java.util.Arrays.asList(query, rulesForm, sizeClasses());
      Plan plan = PLANS.get(planKey);
      if (plan == null) {
        plan = evaluator.plan(query.where(), ctx.boundVars(), findVars(), scope);
        PLANS.put(planKey, plan);
      }
      List<Object[]> streamed = streamAggregate(ctx, plan.clauses(), scope);
      if (streamed != null) {
        return shape(streamed);
      }
      evaluator.evalAll(ctx, plan, scope);
      return find(ctx);
    } finally {
      if (evaluator != null) {
        evaluator.close();
      }
    }
  }

  /** The variables the find reads at the end: find elements, :with, aggregates' variable arguments. */
  private Set<Variable> findVars() {
    Set<Variable> out = new java.util.HashSet<>(query.with());
    for (FindElement el : query.findElements()) {
      out.add(el.var());
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

  private Snapshot snapshot(Db db) {
    return evaluator.snapshot(db);
  }

  private DbPattern dbPattern(Pattern p, Db db) {
    return evaluator.dbPattern(p, db);
  }

  /** For each database source, by name, the base-4 magnitude of its datom count. */
  private List<Object> sizeClasses() {
    List<Object> out = new ArrayList<>();
    // a query form names its sources in one order, which the map keeps
    for (Map.Entry<String, Object> e : sources.entrySet()) {
      if (e.getValue() instanceof Db db) {
        out.add(e.getKey());
        out.add((64 - Long.numberOfLeadingZeros(db.stats().total())) / 2);
      }
    }
    return out;
  }

  /** Throws {@code :query/unknown-fn} for the first function of {@code clauses} that is unknown. */
  private static void resolveFunctions(List<Clause> clauses) {
    for (Clause c : clauses) {
      if (c instanceof Predicate p) {
        Functions.resolve(p.fn());
      } else if (c instanceof FnBinding f) {
        Functions.resolve(f.fn());
      } else if (c instanceof Not n) {
        resolveFunctions(n.clauses());
      } else if (c instanceof Or o) {
        for (datalith.query.parser.And branch : o.branches()) {
          resolveFunctions(branch.clauses());
        }
      }
    }
  }

  private void bindInputs(Ctx ctx, Object[] inputs) {
    List<InBinding> in = query.in();
    if (inputs.length != in.size()) {
      throw Errors.error("query/inputs", "The query takes " + in.size() + " inputs ("
          + in + ") but was given " + inputs.length, "expected", (long) in.size(),
          "given", (long) inputs.length);
    }
    for (int i = 0; i < inputs.length; i++) {
      InBinding b = in.get(i);
      Object x = inputs[i];
      if (b instanceof SrcVar s) {
        if (!(x instanceof Db) && !(x instanceof Collection) && !(x instanceof Object[])) {
          throw Errors.error("query/inputs", "Source " + s.name()
              + " must be a database or a collection of tuples", "source", s.name(), "input", x);
        }
        sources.put(s.name(), x instanceof Object[] arr ? List.of(arr) : x);
      } else if (b instanceof RulesVar) {
        List<Rule> rs = RULES.get(x);
        if (rs == null) {
          rs = QueryParser.parseRules(x);
          if (RULES.size() >= CACHE_LIMIT) {
            RULES.clear();
          }
          RULES.put(x, rs);
        }
        rulesForm = x;
        query.validateRules(rs);
        for (Rule r : rs) {
          rules.computeIfAbsent(r.name(), k -> new ArrayList<>()).add(r);
        }
      } else if (b instanceof PatternName p) {
        pullPatterns.put(p.toString(), x);
      } else {
        ctx.add(bindingRel((Binding) b, x));
      }
    }
  }

  private Rel bindingRel(Binding b, Object x) {
    List<Variable> vars = b.vars();
    List<Object[]> rows = new ArrayList<>();
    if (b instanceof BindScalar) {
      rows.add(new Object[] {x});
    } else if (b instanceof BindTuple t) {
      rows.add(tupleRow(t.elements(), x, b));
    } else if (b instanceof BindColl) {
      for (Object el : seqOf(x, b)) {
        rows.add(new Object[] {el});
      }
    } else if (b instanceof BindRel r) {
      for (Object el : seqOf(x, b)) {
        rows.add(tupleRow(r.elements(), el, b));
      }
    } else if (b instanceof BindIgnore) {
      return Rel.unit();
    }
    return new Rel(vars.toArray(new Variable[0]), rows).project(vars);
  }

  static Object[] tupleRow(List<Binding> elements, Object x, Binding b) {
    List<?> l = listOf(x, b);
    if (l.size() < elements.size()) {
      throw Errors.error("query/binding", "Cannot bind " + RT.printString(x) + " to " + b
          + ": too few elements", "binding", b.toString(), "value", x);
    }
    List<Object> row = new ArrayList<>();
    for (int i = 0; i < elements.size(); i++) {
      if (elements.get(i) instanceof BindScalar) {
        row.add(l.get(i));
      }
    }
    return row.toArray();
  }

  private static List<?> listOf(Object x, Binding b) {
    if (x instanceof List<?> l) {
      return l;
    }
    if (x instanceof Object[] a) {
      return List.of(a);
    }
    if (x instanceof Collection<?> c) {
      return new ArrayList<>(c);
    }
    throw Errors.error("query/binding", "Cannot bind " + RT.printString(x) + " to " + b
        + ": expected a collection", "binding", b.toString(), "value", x);
  }

  static Collection<?> seqOf(Object x, Binding b) {
    if (x instanceof Collection<?> c) {
      return c;
    }
    return listOf(x, b);
  }

  // ---------------------------------------------------------------- results

  private Object find(Ctx ctx) {
    List<FindElement> els = query.findElements();
    List<Variable> needed = new ArrayList<>();
    for (FindElement el : els) {
      if (!needed.contains(el.var())) {
        needed.add(el.var());
      }
    }
    for (Variable v : query.with()) {
      if (!needed.contains(v)) {
        needed.add(v);
      }
    }
    List<Object[]> tuples;
    Rel all;
    if (ctx.isEmpty()) {
      all = new Rel(needed.toArray(new Variable[0]), new ArrayList<>());
    } else {
      all = ctx.take(needed, deadline);
    }
    for (Variable v : needed) {
      if (!all.has(v)) {
        throw Errors.error("query/unbound-var", "Variable " + v + " is not bound by the query",
            "vars", PersistentVector.create(v.symbol()), "form", query.form());
      }
    }
    // columns are found by variable, so distinct rows of just the needed variables serve as they are
    Rel proj = all.distinct && all.vars.length == needed.size() ? all : all.project(needed);
    boolean aggregate = false;
    for (FindElement el : els) {
      aggregate |= el instanceof Aggregate;
    }
    tuples = aggregate ? aggregate(proj, els, all, ctx) : project(proj, els);
    deadline.tick(tuples.size()); // the answer is within the row budget too
    pulls(tuples, els);
    return shape(tuples);
  }

  /** Replaces the entity ids of {@code (pull ?e pattern)} columns by the pulled maps. */
  private void pulls(List<Object[]> tuples, List<FindElement> els) {
    for (int i = 0; i < els.size(); i++) {
      if (!(els.get(i) instanceof Pull p)) {
        continue;
      }
      Object src = new Scope(sources).source(p.src());
      if (!(src instanceof Db db)) {
        throw Errors.error("query/pull-source", "pull needs a database source", "form",
            query.formOf(p));
      }
      Object form = p.patternName() != null ? pullPatterns.get(p.patternName().toString())
          : p.pattern();
      PullPattern pattern = PullPattern.parse(form);
      Puller puller = new Puller(db, snapshot(db));
      for (Object[] t : tuples) {
        deadline.tick(0);
        t[i] = puller.pullOne(pattern, t[i]);
      }
    }
  }

  /** The find tuples of {@code proj}, the distinct rows of the find and :with variables. */
  private List<Object[]> project(Rel proj, List<FindElement> els) {
    int[] cols = new int[els.size()];
    boolean same = cols.length == proj.vars.length;
    for (int i = 0; i < cols.length; i++) {
      cols[i] = proj.col(els.get(i).var());
      same &= cols[i] == i;
    }
    if (same) {
      return proj.rows;
    }
    if (query.with().isEmpty() && isPermutation(cols, proj.vars.length)) {
      // every variable found once, in another order: the rows, which are this query's own (pulls
      // write into them too), are reordered where they are
      Object[] tmp = new Object[cols.length];
      for (Object[] row : proj.rows) {
        for (int i = 0; i < cols.length; i++) {
          tmp[i] = row[cols[i]];
        }
        System.arraycopy(tmp, 0, row, 0, cols.length);
      }
      return proj.rows;
    }
    List<Object[]> out = new ArrayList<>(proj.rows.size());
    // without :with, every variable of proj is found, so its distinct rows stay distinct
    Set<Object> seen = query.with().isEmpty() ? null
        : new java.util.HashSet<>(Math.max(16, proj.rows.size() * 4 / 3 + 1));
    for (Object[] row : proj.rows) {
      if (seen == null || seen.add(Tuple.key(row, cols))) {
        out.add(Rel.values(row, cols));
      }
    }
    return out;
  }

  private static boolean isPermutation(int[] cols, int n) {
    if (cols.length != n) {
      return false;
    }
    boolean[] hit = new boolean[n];
    for (int c : cols) {
      if (c < 0 || c >= n || hit[c]) {
        return false;
      }
      hit[c] = true;
    }
    return true;
  }

  /** The rows of one group of an aggregate query, counted, and kept when an aggregate reads them. */
  private static final class Group {
    final Object[] first;
    final List<Object[]> rows;
    long count;

    Group(Object[] first, boolean keepRows) {
      this.first = first;
      this.rows = keepRows ? new ArrayList<>() : null;
    }
  }

  private List<Object[]> aggregate(Rel proj, List<FindElement> els, Rel all, Ctx ctx) {
    Grouper grouper = new Grouper(proj.vars, els);
    for (Object[] row : proj.rows) {
      deadline.tick(0);
      grouper.add(row, false);
    }
    return grouper.finish(all, ctx);
  }

  /** The groups of an aggregate query, fed distinct rows over {@code vars} one at a time. */
  private final class Grouper {
    private final Variable[] vars;
    private final List<FindElement> els;
    private final int[] gc;
    private final boolean keepRows;
    private final Map<Object, Group> groups = new LinkedHashMap<>();
    private long rows;

    Grouper(Variable[] vars, List<FindElement> els) {
      this.vars = vars;
      this.els = els;
      List<Integer> groupCols = new ArrayList<>();
      boolean keep = false;
      for (FindElement el : els) {
        if (el instanceof FindVar fv) {
          groupCols.add(Evaluator.indexOf(vars, fv.var()));
        }
        // the rows are distinct, so a count is the number of rows: no need to keep them
        keep |= el instanceof Aggregate a && !(a.isBuiltin() && a.fn().getName().equals("count"));
      }
      this.gc = groupCols.stream().mapToInt(Integer::intValue).toArray();
      this.keepRows = keep;
    }

    // the groups of the last few one-column keys by identity: a scan hands out the same
    // object for a repeated value, so a few distinct values group without hashing
    private final Object[] recentKeys = new Object[8];
    private final Group[] recentGroups = new Group[8];
    private int recentNext;

    /** Adds a row; {@code reused}: the caller reuses the array, so a kept row is copied. */
    void add(Object[] row, boolean reused) {
      add(row, reused, 1);
    }

    /** Adds {@code n} rows alike to {@code row} as far as the groups go (only when no rows are kept). */
    void add(Object[] row, boolean reused, long n) {
      rows += n;
      if (gc.length == 1) {
        Object v = row[gc[0]];
        for (int i = 0; i < recentKeys.length; i++) {
          if (recentKeys[i] == v && v != null) {
            Group g = recentGroups[i];
            g.count += n;
            if (keepRows) {
              g.rows.add(reused ? row.clone() : row);
            }
            return;
          }
        }
      }
      Object key = gc.length == 0 ? List.of() : Tuple.key(row, gc);
      Group g = groups.get(key);
      Object[] kept = reused && (g == null || keepRows) ? row.clone() : row;
      if (g == null) {
        g = new Group(kept, keepRows);
        groups.put(key, g);
      }
      g.count += n;
      if (keepRows) {
        g.rows.add(kept);
      }
      if (gc.length == 1) {
        recentKeys[recentNext] = row[gc[0]];
        recentGroups[recentNext] = g;
        recentNext = (recentNext + 1) % recentKeys.length;
      }
    }

    /** The result tuples; {@code all} and {@code ctx} give aggregates' variable arguments. */
    List<Object[]> finish(Rel all, Ctx ctx) {
      if (gc.length == 0 && rows == 0) {
        // Datomic answers an aggregate over nothing with no rows
        return new ArrayList<>();
      }
      List<Object[]> out = new ArrayList<>(groups.size());
      for (Group g : groups.values()) {
        deadline.tick(out.size());
        Object[] res = new Object[els.size()];
        int gi = 0;
        for (int i = 0; i < els.size(); i++) {
          FindElement el = els.get(i);
          if (el instanceof FindVar) {
            res[i] = g.first[gc[gi++]];
          } else if (g.rows == null) {
            res[i] = g.count;
          } else {
            Aggregate a = (Aggregate) el;
            int col = Evaluator.indexOf(vars, a.var());
            List<Object> vals = new ArrayList<>(g.rows.size());
            for (Object[] row : g.rows) {
              vals.add(row[col]);
            }
            Object[] aArgs = new Object[a.args().size()];
            for (int k = 0; k < aArgs.length; k++) {
              Term t = a.args().get(k);
              aArgs[k] = t instanceof Constant c ? c.value()
                  : t instanceof Variable v ? aggregateArg(v, all, ctx)
                  : t instanceof SrcVar src ? new Scope(sources).source(src) : null;
            }
            IFn user = a.isBuiltin() ? null : Functions.resolve(a.fn());
            res[i] = Aggregates.apply(a.fn(), user, aArgs, vals);
          }
        }
        out.add(res);
      }
      return out;
    }
  }

  /**
   * An aggregate over one data pattern, grouped as the scan goes without keeping
   * its rows; null when the query is not that simple (then it runs as usual).
   */
  private List<Object[]> streamAggregate(Ctx ctx, List<Clause> plan, Scope scope) {
    if (explain != null || plan.size() != 1 || !(plan.get(0) instanceof Pattern p)
        || !ctx.boundVars().isEmpty() || !(scope.source(p.src()) instanceof Db db)) {
      return null;
    }
    List<FindElement> els = query.findElements();
    Set<Variable> needed = new LinkedHashSet<>(query.with());
    boolean aggregate = false;
    for (FindElement el : els) {
      needed.add(el.var());
      if (el instanceof Pull) {
        return null;
      }
      if (el instanceof Aggregate a) {
        aggregate = true;
        for (Term t : a.args()) {
          if (t instanceof Variable) {
            return null;
          }
        }
      }
    }
    DbPattern dp = dbPattern(p, db);
    if (!aggregate || !dp.distinctRows() || !needed.equals(new LinkedHashSet<>(List.of(dp.vars)))) {
      return null; // the rows of the needed variables must be the scan's distinct rows
    }
    Grouper grouper = new Grouper(dp.vars, els);
    for (FindElement el : els) {
      if (el instanceof FindVar fv && fv.var() == p.v()) {
        dp.preferValueOrder(); // grouped by the value: each group's datoms together
      }
    }
    if (!grouper.keepRows) {
      // only counts: the counted and :with variables matter only as distinct datoms
      Set<Variable> unread = new java.util.HashSet<>(needed);
      for (FindElement el : els) {
        if (el instanceof FindVar fv) {
          unread.remove(fv.var());
        }
      }
      dp.leaveUnread(unread);
    }
    DbPattern.Range range = Planner.rangeFor(p, dp, plan);
    if (!grouper.keepRows && range == null && grouper.gc.length == 1
        && dp.vars[grouper.gc[0]] == p.v()) {
      // counts by the value alone: AVET's runs of keys per value are counted, not read
      int vAt = grouper.gc[0];
      boolean counted = dp.countByValue(snapshot(db), (v, n) -> {
        Object[] row = new Object[dp.vars.length];
        row[vAt] = v;
        grouper.add(row, false, n);
      });
      if (counted) {
        return grouper.finish(null, null);
      }
    }
    dp.scan(snapshot(db), null, vals -> grouper.add(vals, true), Long.MAX_VALUE, range);
    return grouper.finish(null, null);
  }

  /** The value of an aggregate's variable argument (?n in (sample ?n ?x)), any of its values. */
  private Object aggregateArg(Variable v, Rel all, Ctx ctx) {
    if (all.has(v)) {
      return all.rows.isEmpty() ? null : all.rows.get(0)[all.col(v)];
    }
    if (!ctx.bound(v)) {
      return null;
    }
    Rel r = ctx.take(List.of(v), deadline);
    ctx.add(r);
    return r.rows.isEmpty() ? null : r.rows.get(0)[r.col(v)];
  }

  private Object shape(List<Object[]> tuples) {
    Object spec = query.find();
    if (spec instanceof FindScalar) {
      return tuples.isEmpty() ? null : tuples.get(0)[0];
    }
    if (spec instanceof FindColl) {
      List<Object> out = new ArrayList<>(tuples.size());
      for (Object[] t : tuples) {
        out.add(t[0]);
      }
      return PersistentVector.create(out);
    }
    ReturnMap rm = query.returnMap().orElse(null);
    if (spec instanceof FindTuple) {
      return tuples.isEmpty() ? null : rm == null ? PersistentVector.create(tuples.get(0))
          : returnMap(rm, tuples.get(0));
    }
    Object[] items = new Object[tuples.size()];
    for (int i = 0; i < items.length; i++) {
      Object[] t = tuples.get(i);
      items[i] = rm == null ? LazilyPersistentVector.createOwning(t) : returnMap(rm, t);
    }
    boolean pulls = false;
    for (FindElement el : query.findElements()) {
      pulls |= el instanceof Pull;
    }
    // tuples are distinct, unless pulls made equal maps of different entities
    return pulls ? PersistentHashSet.create(items) : new ResultSet(items);
  }

  private static Object returnMap(ReturnMap rm, Object[] t) {
    Object[] kvs = new Object[t.length * 2];
    for (int i = 0; i < t.length; i++) {
      kvs[2 * i] = rm.keys().get(i);
      kvs[2 * i + 1] = t[i];
    }
    return PersistentArrayMap.createAsIfByAssoc(kvs);
  }
}
