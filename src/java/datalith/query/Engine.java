package datalith.query;

import clojure.lang.IFn;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.Symbol;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.LongMap;
import datalith.db.Snapshot;
import datalith.query.parser.Aggregate;
import datalith.query.parser.Binding;
import datalith.query.parser.Clause;
import datalith.query.parser.Constant;
import datalith.query.parser.FindElement;
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
import datalith.query.parser.Rule;
import datalith.query.parser.RuleCall;
import datalith.query.parser.RulesVar;
import datalith.query.parser.SrcVar;
import datalith.query.parser.Term;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs parsed queries: binds the inputs ({@link Bindings}), evaluates the clauses in the
 * planner's order set-at-a-time (index-lookup joins when the bound side is
 * small, hash joins otherwise, anti-joins for {@code not}, unions for
 * {@code or}, a tabled fixpoint for rules), then hands the bindings to
 * {@link Results} (projection, aggregates, pulls, shapes).
 * Thread-safe: each call has its own state; parsed queries and plans are
 * cached by form.
 */
public final class Engine {
  private static final int CACHE_LIMIT = 2048;
  private static final Map<Object, Query> PARSED = new ConcurrentHashMap<>();
  /** Plans by query and rules form (the rules decide which arguments a rule call needs). */
  private static final Map<List<Object>, List<Clause>> PLANS = new ConcurrentHashMap<>();
  private static final Map<Object, List<Rule>> RULES = new ConcurrentHashMap<>();
  private static final Keyword K_TIMEOUT = Keyword.intern("timeout");

  private final Query query;
  private final Map<String, Object> sources = new HashMap<>();
  private final Map<Symbol, List<Rule>> rules = new HashMap<>();
  private final Map<String, Object> pullPatterns = new HashMap<>();
  private final Deadline deadline;
  private Object rulesForm;
  private final List<Object> explain;
  private final IdentityHashMap<Db, Snapshot> snapshots = new IdentityHashMap<>();
  private final Map<Pattern, Map<Db, DbPattern>> patterns = new IdentityHashMap<>();
  private final Map<String, Table> tables = new HashMap<>();

  private Engine(Query query, long timeoutMs, boolean explain) {
    this.query = query;
    this.deadline = Deadline.of(timeoutMs > 0 ? timeoutMs : query.timeout().orElse(0));
    this.explain = explain ? new ArrayList<>() : null;
  }

  /** The parsed form of a query, cached by form. */
  public static Query parse(Object form) {
    if (form == null) {
      return QueryParser.parse(null); // throws :parser/query
    }
    Query q = cached(PARSED, form, "parser/query");
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
   * {@code cache}'s entry for {@code form}, or null. Hashing a form recurses along its nested
   * collections, so a form nested deeper than the thread's stack is refused here as too deep
   * (the parser refuses any form nested more than a hundred deep).
   */
  private static <V> V cached(Map<Object, V> cache, Object form, String errorKey) {
    try {
      return cache.get(form);
    } catch (StackOverflowError e) {
      // unwound to here, the stack is whole again
      throw Errors.error(errorKey, "The " + (errorKey.equals("parser/rule") ? "rules nest"
          : "query nests") + " collections too deep to read", "form", form);
    }
  }

  /**
   * Runs {@code form} on {@code inputs} (one per {@code :in} element).
   *
   * @param opts may hold {@code :timeout} (ms); null for none
   */
  public static Object q(Object form, Object[] inputs, IPersistentMap opts) {
    Engine e = new Engine(parse(form), timeoutOf(opts), false);
    return e.run(inputs);
  }

  /** The plan {@code form} runs with on {@code inputs}, as data, with actual sizes. */
  public static Object explain(Object form, Object[] inputs) {
    Engine e = new Engine(parse(form), 0, true);
    Object result = e.run(inputs);
    int n = result instanceof Collection<?> c ? c.size() : result == null ? 0 : 1;
    return map("query", e.query.toString(), "clauses", PersistentVector.create(e.explain),
        "result-size", (long) n);
  }

  private static long timeoutOf(IPersistentMap opts) {
    Object t = opts == null ? null : opts.valAt(K_TIMEOUT);
    if (t == null) {
      return 0;
    }
    if (!(t instanceof Number n) || n.longValue() <= 0) {
      throw Errors.error("query/invalid-option", ":timeout is a positive number of milliseconds",
          "timeout", t);
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
      List<Clause> plan = PLANS.get(planKey);
      if (plan == null) {
        plan = order(query.where(), ctx.boundVars(), scope);
        PLANS.put(planKey, plan);
      }
      Results results = new Results(query, scope::source, pullPatterns, this::snapshot,
          deadline);
      List<Object[]> streamed = streamAggregate(ctx, plan, scope, results);
      if (streamed != null) {
        return results.shape(streamed);
      }
      evalAll(ctx, plan, scope);
      return results.of(ctx);
    } finally {
      for (Snapshot s : snapshots.values()) {
        s.close();
      }
    }
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

  private Snapshot snapshot(Db db) {
    return snapshots.computeIfAbsent(db, Db::snapshot);
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
        List<Rule> rs = x == null ? null : cached(RULES, x, "parser/rule");
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
        ctx.add(Bindings.rel((Binding) b, x));
      }
    }
  }

  // ---------------------------------------------------------------- planning

  /** Where {@code $} and named sources point in one rule or query scope. */
  private static final class Scope {
    final Map<String, Object> sources;

    Scope(Map<String, Object> sources) {
      this.sources = sources;
    }

    Object source(SrcVar s) {
      Object src = sources.get(s.name());
      if (src == null) {
        throw Errors.error("query/unknown-source", "No source " + s.name() + " was given",
            "source", s.name());
      }
      return src;
    }
  }

  /**
   * The order to run {@code clauses} in, given the variables already bound:
   * greedily, filters (predicates, functions, not, or) as soon as their inputs
   * are bound, and among the rest the cheapest, preferring clauses joined to
   * what is bound.
   */
  private List<Clause> order(List<Clause> clauses, Set<Variable> bound0, Scope scope) {
    List<Clause> remaining = new ArrayList<>(clauses);
    List<Clause> out = new ArrayList<>();
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
        double best = Double.MAX_VALUE;
        for (Clause c : remaining) {
          if (!bound.containsAll(needs(c)) || isFilter(c, bound)) {
            continue;
          }
          double cost = cost(c, bound, scope, clauses);
          if (cost < best) {
            best = cost;
            pick = c;
          }
        }
      }
      if (pick == null) {
        pick = remaining.get(0);
      }
      remaining.remove(pick);
      out.add(pick);
      bound.addAll(pick.binds());
    }
    return out;
  }

  /**
   * Whether {@code c} is a filter: a predicate, function, not, or an or that binds nothing new
   * (an or that does is a generator, costed like a rule call).
   */
  private static boolean isFilter(Clause c, Set<Variable> bound) {
    return !(c instanceof Pattern) && !(c instanceof RuleCall)
        && (!(c instanceof Or) || bound.containsAll(c.binds()));
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
          && bound.containsAll(needs(d)) && !java.util.Collections.disjoint(d.vars(), inputs)) {
        return true;
      }
    }
    return false;
  }

  private Set<Variable> needs(Clause c) {
    if (c instanceof RuleCall rc) {
      List<Rule> rs = rules.get(rc.name());
      return rs == null || rs.isEmpty() ? Set.of() : rc.needs(rs.get(0));
    }
    return c.needs();
  }

  private static final double LARGE = 1e9;
  // What one seek of an index-lookup join costs, in datoms a scan reads instead: decoded ones, and
  // ones of other entities that a scan keeping to the bound entities passes over undecoded
  // (sorted title lookups against one filtered title scan at 1M datoms: even at ~7,000 of 162,000)
  private static final long LOOKUP_COST = 3;
  private static final long LOOKUP_COST_UNDECODED = 20;

  private double cost(Clause c, Set<Variable> bound, Scope scope, List<Clause> siblings) {
    boolean joined = false;
    for (Variable v : c.vars()) {
      if (bound.contains(v)) {
        joined = true;
        break;
      }
    }
    if (c instanceof RuleCall || c instanceof Or) {
      return joined ? 50 : 5000;
    }
    Pattern p = (Pattern) c;
    Object src = scope.sources.get(p.src().name());
    if (!(src instanceof Db db)) {
      return joined ? 10 : src instanceof Collection<?> coll ? coll.size() : LARGE;
    }
    DbPattern dp = dbPattern(p, db);
    if (joined) {
      boolean eBound = p.e() instanceof Variable v && bound.contains(v) || p.e() instanceof Constant;
      return eBound ? 1 : 10;
    }
    return dp.estimate(snapshot(db), rangeFor(p, dp, siblings)) + 1;
  }

  private DbPattern dbPattern(Pattern p, Db db) {
    return patterns.computeIfAbsent(p, k -> new IdentityHashMap<>())
        .computeIfAbsent(db, d -> new DbPattern(p, d, snapshot(d)));
  }

  // ---------------------------------------------------------------- clauses

  private void evalAll(Ctx ctx, List<Clause> clauses, Scope scope) {
    // comparisons that a pattern's range already held every row of its variable to
    Set<Clause> implied = null;
    for (Clause c : clauses) {
      deadline.check();
      if (ctx.isEmpty()) {
        return;
      }
      long before = explain == null ? 0 : System.nanoTime();
      int mark = explain == null ? 0 : explain.size();
      String how;
      if (implied != null && implied.contains(c)) {
        how = "in-range";
      } else {
        lastRange = null;
        how = eval(ctx, c, scope, clauses);
        if (c instanceof Pattern p && lastRange != null) {
          implied = impliedBy(p, lastRange, clauses, implied);
        }
      }
      if (explain != null) {
        // the steps of a not or or body nest under it; a rule's fixpoint rounds are left out
        List<Object> inner = explain.subList(mark, explain.size());
        IPersistentMap step = map("clause", query.formOf(c), "method", Keyword.intern(how),
            "rows", (long) ctx.size(), "ms", (System.nanoTime() - before) / 1e6);
        if (c instanceof Pattern && explained != null) {
          step = step.assoc(Keyword.intern("index"), Keyword.intern(explained.lastIndexName()))
              .assoc(Keyword.intern("estimate"), explained.estimate(snapshot(explained.db), explainedRange));
          if (explainedRange != null) {
            step = step.assoc(Keyword.intern("range"), PersistentVector.create(
                explainedRange.lower, explainedRange.lowerInclusive ? ">=" : ">",
                explainedRange.upper, explainedRange.upperInclusive ? "<=" : "<"));
          }
          explained = null;
        }
        if (!inner.isEmpty() && !(c instanceof RuleCall)) {
          step = step.assoc(Keyword.intern("clauses"), PersistentVector.create(inner));
        }
        inner.clear();
        explain.add(step);
      }
    }
  }

  private String eval(Ctx ctx, Clause c, Scope scope, List<Clause> siblings) {
    if (c instanceof Pattern p) {
      return evalPattern(ctx, p, scope, siblings);
    } else if (c instanceof Predicate p) {
      evalPredicate(ctx, p, scope);
      return "filter";
    } else if (c instanceof FnBinding f) {
      evalFn(ctx, f, scope);
      return "function";
    } else if (c instanceof Not n) {
      evalNot(ctx, n, scope);
      return "anti-join";
    } else if (c instanceof Or o) {
      evalOr(ctx, o, scope);
      return "union";
    } else {
      evalRuleCall(ctx, (RuleCall) c, scope);
      return "rule";
    }
  }

  private String evalPattern(Ctx ctx, Pattern p, Scope scope, List<Clause> siblings) {
    Object src = scope.source(p.src());
    if (!(src instanceof Db db)) {
      ctx.joinIn(collectionPattern(p, src), deadline);
      return "collection";
    }
    DbPattern dp = dbPattern(p, db);
    Snapshot s = snapshot(db);
    DbPattern.Range range = rangeFor(p, dp, siblings);
    lastRange = range; // every path below keeps the pattern's rows to it
    if (explain != null) {
      explained = dp;
      explainedRange = range;
    }
    List<Variable> boundVars = new ArrayList<>();
    for (Variable v : dp.vars) {
      if (ctx.bound(v)) {
        boundVars.add(v);
      }
    }
    boolean distinct = dp.distinctRows();
    if (boundVars.isEmpty()) {
      if (dp.bindsOnlyEntity()) {
        // a set of entities: kept as longs (Rel.IdRows)
        IdCollector ids = new IdCollector(dp.sizeHint());
        dp.scan(s, null, ids, Long.MAX_VALUE, range);
        ctx.joinIn(new Rel(dp.vars, new Rel.IdRows(ids.ids, ids.n), distinct), deadline);
        return "scan-" + dp.lastIndexName();
      }
      List<Object[]> rows = new ArrayList<>(dp.sizeHint());
      dp.scan(s, null, vals -> rows.add(vals.clone()), Long.MAX_VALUE, range);
      ctx.joinIn(new Rel(dp.vars, rows, distinct), deadline);
      return "scan-" + dp.lastIndexName();
    }
    Rel r = ctx.take(boundVars, deadline);
    int[] keyCols = r.cols(boundVars);
    // when the entity is bound, datoms of other entities are skipped before decoding
    Variable ev = p.e() instanceof Variable v && boundVars.contains(v) ? v : null;
    long scanCost = dp.estimate(s, range);
    long lookupCost = ev == null ? LOOKUP_COST : LOOKUP_COST_UNDECODED;
    // the entities a hash join keeps its scan to, which also counts them: made when the rows
    // are enough for a hash join (before counting their distinct keys); null when an ident or
    // lookup ref is bound, which only the lookup join resolves
    IdSet entities = ev != null && r.rows.size() * lookupCost >= scanCost
        ? IdSet.ofColumn(r.rows, r.col(ev)) : null;
    // distinct rows bound on every column have as many distinct keys as rows
    boolean keyPerRow = r.distinct && keyCols.length == r.vars.length;
    // rows by key: one long column is grouped without boxing keys again or hashing objects
    LongMap<Object> longGroups = null;
    Map<Object, Object> groups = null;
    long distinctKeys;
    if (keyPerRow) {
      distinctKeys = r.rows.size();
    } else if (keyCols.length == 1 && entities != null) {
      distinctKeys = entities.size();
    } else {
      longGroups = keyCols.length == 1 ? Rel.longTable(r.rows, keyCols[0]) : null;
      groups = longGroups == null ? groupRows(r, keyCols) : null;
      distinctKeys = longGroups != null ? longGroups.size() : groups.size();
    }
    if (distinctKeys * lookupCost >= scanCost && (ev == null || entities != null)
        && !namesEntities(r, dp, boundVars, ev)) {
      Object[] byRank = entities != null && r.vars.length > 1 && keyCols.length == 1
          ? entities.rowsByRank(r.rows, keyCols[0]) : null;
      if (byRank != null) {
        // the join is done as the scan goes: its entities ascend, and so do their ranks in the
        // set, so each datom finds its rows in an array read in order (no hash table to build)
        ctx.add(joinByRank(r, dp, ev, entities, byRank, s, range));
        return "hash-join-" + dp.lastIndexName();
      }
      List<Object[]> rows = entities == null ? new ArrayList<>()
          : new ArrayList<>(Math.min(entities.size(), dp.sizeHint()));
      dp.scan(s, null, vals -> rows.add(vals.clone()), Long.MAX_VALUE, range, entities);
      Rel scanned = new Rel(dp.vars, rows, distinct);
      // when r is a set of entities, which the scan kept to, the join is the scan
      ctx.add(entities != null && r.vars.length == 1 ? scanned : Rel.join(r, scanned, deadline));
      return "hash-join-" + dp.lastIndexName();
    }
    // index-lookup join: one prefix scan per distinct binding of the bound variables, in
    // ascending order when the bindings are ids, so that the scans move forward through the index
    List<Object> ordered; // the rows of each binding: one row (Object[]) or a Rel.RowList
    if (longGroups == null && groups == null && keyCols.length == 1) {
      longGroups = Rel.longTable(r.rows, keyCols[0]);
    }
    if (longGroups != null) {
      long[] keys = longGroups.keys();
      IdSet.sortDistinct(keys);
      ordered = new ArrayList<>(keys.length);
      for (long k : keys) {
        ordered.add(longGroups.get(k));
      }
    } else {
      if (groups == null) {
        groups = groupRows(r, keyCols);
      }
      ordered = new ArrayList<>(groups.values());
    }
    int[] givenPos = new int[boundVars.size()];
    for (int i = 0; i < givenPos.length; i++) {
      givenPos[i] = indexOf(dp.vars, boundVars.get(i));
    }
    Extension ext = Extension.of(r, dp);
    int[] freshCols = ext.cols();
    Variable[] outVars = ext.vars();
    List<Object[]> out = new ArrayList<>();
    Object[] given = new Object[dp.vars.length];
    int count = 0;
    try (DbPattern.Reuse reuse = new DbPattern.Reuse()) {
      for (Object g : ordered) {
        if ((++count & 1023) == 0) {
          deadline.check();
        }
        Object[] first = g instanceof Object[] one ? one : ((Rel.RowList) g).get(0);
        java.util.Arrays.fill(given, null);
        for (int i = 0; i < givenPos.length; i++) {
          given[givenPos[i]] = first[keyCols[i]];
        }
        dp.scan(s, given, vals -> {
          if (g instanceof Object[] row) {
            out.add(Rel.concat(row, vals, freshCols));
          } else {
            for (Object[] row : (Rel.RowList) g) {
              out.add(Rel.concat(row, vals, freshCols));
            }
          }
        }, Long.MAX_VALUE, range, null, reuse);
      }
    }
    ctx.add(new Rel(outVars, out, r.distinct && distinct));
    return "lookup-join-" + dp.lastIndexName();
  }

  /** The ids of a scan's matches, in a growing array. */
  private static final class IdCollector implements DbPattern.IdSink {
    long[] ids;
    int n;

    IdCollector(int capacity) {
      ids = new long[Math.max(16, capacity)];
    }

    @Override
    public void acceptId(long e) {
      if (n == ids.length) {
        ids = Arrays.copyOf(ids, n * 2);
      }
      ids[n++] = e;
    }
  }

  /** The rows of {@code r} by their key at {@code keyCols}: one row (Object[]) or a Rel.RowList. */
  private static Map<Object, Object> groupRows(Rel r, int[] keyCols) {
    Map<Object, Object> groups = new LinkedHashMap<>();
    for (Object[] row : r.rows) {
      groups.merge(Tuple.key(row, keyCols), row, Rel::addRow);
    }
    return groups;
  }

  /**
   * Whether a bound value is an ident or lookup ref where {@code dp} reads an id (entity,
   * attribute or ref value position): only the index-lookup join resolves those, not the hash join.
   * Variable {@code checked} (may be null) is not looked at again.
   */
  private static boolean namesEntities(Rel r, DbPattern dp, List<Variable> boundVars,
      Variable checked) {
    for (Variable v : boundVars) {
      if (v == checked) {
        continue;
      }
      int pos = dp.positionOf(v);
      if (pos > 2 || pos == 2 && (dp.constAttr() == null || !dp.constAttr().isRef())) {
        continue;
      }
      int col = r.col(v);
      for (Object[] row : r.rows) {
        if (row[col] instanceof Keyword || row[col] instanceof List) {
          return true;
        }
      }
    }
    return false;
  }

  private static int indexOf(Variable[] vars, Variable v) {
    for (int i = 0; i < vars.length; i++) {
      if (vars[i] == v) {
        return i;
      }
    }
    return -1;
  }

  /** A range on the pattern's value variable from sibling comparison predicates with a constant. */
  private static DbPattern.Range rangeFor(Pattern p, DbPattern dp, List<Clause> siblings) {
    if (!(p.v() instanceof Variable v) || dp.constAttr() == null
        || dp.positionOf(v) != 2 || !Compare.ordersLikeIndex(dp.constAttr().valueType)) {
      return null; // the index must keep the values in the comparisons' order
    }
    Object lo = null;
    Object hi = null;
    boolean loIn = true;
    boolean hiIn = true;
    for (Clause c : siblings) {
      if (!(c instanceof Predicate pr) || pr.args().size() != 2 || pr.fn().getNamespace() != null) {
        continue;
      }
      String op = pr.fn().getName();
      Term a = pr.args().get(0);
      Term b = pr.args().get(1);
      Object k;
      boolean varFirst;
      if (a == v && b instanceof Constant cb) {
        k = cb.value();
        varFirst = true;
      } else if (b == v && a instanceof Constant ca) {
        k = ca.value();
        varFirst = false;
      } else {
        continue;
      }
      if (k == null || Db.valuePart(dp.constAttr(), k) == null) {
        continue;
      }
      String eff = varFirst ? op : flip(op);
      switch (eff) {
        case ">":
        case ">=":
          if (lo == null || Compare.compare(k, lo) > 0) {
            lo = k;
            loIn = eff.equals(">=");
          }
          break;
        case "<":
        case "<=":
          if (hi == null || Compare.compare(k, hi) < 0) {
            hi = k;
            hiIn = eff.equals("<=");
          }
          break;
        default:
          break;
      }
    }
    return lo == null && hi == null ? null
        : new DbPattern.Range(Compare.indexBound(lo, true), loIn, Compare.indexBound(hi, false), hiIn);
  }

  /**
   * The join of {@code r} with the pattern's datoms, whose entity {@code ev} is the one variable
   * they share: a scan kept to {@code entities}, r's rows found by the rank of each datom's
   * entity in that set ({@link IdSet#rowsByRank}). Rows as {@link Rel#join} makes them.
   */
  private Rel joinByRank(Rel r, DbPattern dp, Variable ev, IdSet entities, Object[] byRank,
      Snapshot s, DbPattern.Range range) {
    Extension ext = Extension.of(r, dp);
    int[] freshCols = ext.cols();
    int eAt = indexOf(dp.vars, ev);
    List<Object[]> out = new ArrayList<>(Math.min(r.rows.size(), dp.sizeHint()));
    dp.scan(s, null, vals -> {
      Object rows = byRank[entities.rank((Long) vals[eAt])];
      if (rows instanceof Object[] row) {
        out.add(Rel.concat(row, vals, freshCols));
      } else if (rows != null) {
        for (Object[] row : (Rel.RowList) rows) {
          out.add(Rel.concat(row, vals, freshCols));
        }
      }
    }, Long.MAX_VALUE, range, entities);
    return new Rel(ext.vars(), out, r.distinct && dp.distinctRows());
  }

  /**
   * A join's output columns: {@code vars}, r's variables then the pattern's that r lacks, and
   * {@code cols}, where in the pattern's matches ({@code dp.vars}) those new ones are.
   */
  private record Extension(Variable[] vars, int[] cols) {
    static Extension of(Rel r, DbPattern dp) {
      List<Variable> fresh = new ArrayList<>();
      for (Variable v : dp.vars) {
        if (!r.has(v)) {
          fresh.add(v);
        }
      }
      int[] cols = new int[fresh.size()];
      Variable[] vars = Arrays.copyOf(r.vars, r.vars.length + fresh.size());
      for (int i = 0; i < cols.length; i++) {
        cols[i] = indexOf(dp.vars, fresh.get(i));
        vars[r.vars.length + i] = fresh.get(i);
      }
      return new Extension(vars, cols);
    }
  }

  /** The range the last pattern evaluated held its value variable to, or null. */
  private DbPattern.Range lastRange;

  /**
   * Adds to {@code implied} (made when null) the comparisons among {@code siblings} of pattern
   * {@code p}'s value variable with a constant that every value in {@code range} satisfies: once
   * the pattern has run, every row holds such a value, so the comparison would keep them all.
   * Range and comparison compare alike ({@link Compare}).
   */
  private static Set<Clause> impliedBy(Pattern p, DbPattern.Range range, List<Clause> siblings,
      Set<Clause> implied) {
    Variable v = (Variable) p.v();
    for (Clause c : siblings) {
      if (!(c instanceof Predicate pr) || pr.args().size() != 2
          || pr.fn().getNamespace() != null) {
        continue;
      }
      Term a = pr.args().get(0);
      Term b = pr.args().get(1);
      String op;
      Object k;
      if (a == v && b instanceof Constant cb) {
        op = pr.fn().getName();
        k = cb.value();
      } else if (b == v && a instanceof Constant ca) {
        op = flip(pr.fn().getName());
        k = ca.value();
      } else {
        continue;
      }
      if (k == null) {
        continue;
      }
      boolean holds;
      switch (op) {
        case ">=":
          holds = range.lower != null && Compare.compare(range.lower, k) >= 0;
          break;
        case ">": {
          int cmp = range.lower == null ? -1 : Compare.compare(range.lower, k);
          holds = cmp > 0 || cmp == 0 && !range.lowerInclusive;
          break;
        }
        case "<=":
          holds = range.upper != null && Compare.compare(range.upper, k) <= 0;
          break;
        case "<": {
          int cmp = range.upper == null ? 1 : Compare.compare(range.upper, k);
          holds = cmp < 0 || cmp == 0 && !range.upperInclusive;
          break;
        }
        default:
          holds = false;
      }
      if (holds) {
        if (implied == null) {
          implied = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        }
        implied.add(c);
      }
    }
    return implied;
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

  private Rel collectionPattern(Pattern p, Object src) {
    return matchTerms(p.terms(), (Collection<?>) src);
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
    IFn f = Functions.resolve(p.fn());
    Rel r = ctx.take(new ArrayList<>(p.vars()), deadline);
    Args args = new Args(p.args(), r, scope);
    List<Object[]> out = new ArrayList<>();
    for (Object[] row : r.rows) {
      if (RT.booleanCast(Functions.call(f, p.fn(), args.of(row)))) {
        out.add(row);
      }
    }
    ctx.add(r.filtered(out));
  }

  private void evalFn(Ctx ctx, FnBinding fb, Scope scope) {
    IFn f = Functions.resolve(fb.fn());
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
    for (Object[] row : r.rows) {
      Object result = Functions.call(f, fb.fn(), args.of(row));
      if (result == null) {
        continue;
      }
      for (Object[] binding : Bindings.rows(b, result)) {
        Object[] nr = java.util.Arrays.copyOf(row, vars.length);
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
    evalAll(sub, order(n.clauses(), sub.boundVars(), scope), scope);
    Set<Object> matched = new java.util.HashSet<>();
    if (!sub.isEmpty()) {
      Rel res = sub.take(joinVars, deadline);
      int[] cols = res.cols(joinVars);
      for (Object[] row : res.rows) {
        matched.add(Tuple.key(row, cols));
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
    for (datalith.query.parser.And branch : o.branches()) {
      Ctx sub = new Ctx();
      sub.add(input);
      evalAll(sub, order(branch.clauses(), sub.boundVars(), scope), scope);
      if (sub.isEmpty()) {
        continue;
      }
      Rel res = sub.take(joinVars, deadline);
      for (Variable v : joinVars) {
        if (!res.has(v)) {
          throw Errors.error("query/insufficient-binding", "An or branch does not bind " + v,
              "form", query.formOf(o), "vars", PersistentVector.create(v.symbol()));
        }
      }
      int[] cols = res.cols(joinVars);
      for (Object[] row : res.rows) {
        union.add(Tuple.of(row, cols));
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

  // ---------------------------------------------------------------- rules

  /** The memo of one rule under one pattern of bound arguments. */
  private static final class Table {
    final Set<Tuple> inputs = new LinkedHashSet<>();
    /** Inputs not yet evaluated by the fixpoint. */
    final Set<Tuple> pending = new LinkedHashSet<>();
    final Set<Tuple> results = new LinkedHashSet<>();
    /** The results by the values of their input positions. */
    final Map<Tuple, List<Tuple>> byInput = new HashMap<>();
    final boolean[] input;
    boolean active;
    /** Computed while another table's fixpoint was running: must be recomputed when called again. */
    boolean partial;

    Table(boolean[] input) {
      this.input = input;
    }

    boolean add(Tuple result) {
      if (!results.add(result)) {
        return false;
      }
      byInput.computeIfAbsent(new Tuple(inputOnly(result.vals, input)), k -> new ArrayList<>(2))
          .add(result);
      return true;
    }

    /** The results whose input positions hold one of {@code ins}. */
    List<Tuple> resultsFor(List<Tuple> ins) {
      List<Tuple> out = new ArrayList<>();
      for (Tuple in : ins) {
        List<Tuple> rs = byInput.get(in);
        if (rs != null) {
          out.addAll(rs);
        }
      }
      return out;
    }
  }

  /** How one rule body depends on rule tables, learnt on its first evaluation. */
  private static final class BodyInfo {
    /** Its only recursive call, when it is a top-level clause calling its own table once. */
    RuleCall linearCall;
    boolean recursive;
  }

  /** The last pattern run and its range, for explain. */
  private DbPattern explained;
  private DbPattern.Range explainedRange;

  /** The table keys called while evaluating the current body (null outside rule bodies). */
  private List<String> calls;
  private final Map<Rule, BodyInfo> bodyInfo = new IdentityHashMap<>();
  private final Map<Rule, Map<Object, List<Clause>>> bodyPlans = new IdentityHashMap<>();

  /** The values of {@code tuples} matched against {@code terms}: a relation over their variables. */
  private static Rel matchTerms(List<Term> terms, Iterable<?> tuples) {
    List<Variable> vars = new ArrayList<>();
    for (Term t : terms) {
      if (t instanceof Variable v && !vars.contains(v)) {
        vars.add(v);
      }
    }
    List<Object[]> rows = new ArrayList<>();
    for (Object tuple : tuples) {
      Object[] vals = tuple instanceof Tuple t ? t.vals : tuple instanceof Object[] a ? a
          : tuple instanceof List<?> l ? l.toArray() : null;
      if (vals == null || vals.length < terms.size()) {
        continue;
      }
      Object[] row = new Object[vars.size()];
      boolean ok = true;
      for (int i = 0; i < terms.size() && ok; i++) {
        Term t = terms.get(i);
        if (t instanceof Constant c) {
          ok = Tuple.same(c.value(), vals[i]);
        } else if (t instanceof Variable v) {
          int idx = vars.indexOf(v);
          if (row[idx] != null) {
            ok = Tuple.same(row[idx], vals[i]);
          } else {
            row[idx] = vals[i];
          }
        }
      }
      if (ok) {
        rows.add(row);
      }
    }
    return new Rel(vars.toArray(new Variable[0]), rows).project(vars);
  }

  private void evalRuleCall(Ctx ctx, RuleCall call, Scope scope) {
    List<Rule> bodies = rules.get(call.name());
    if (bodies == null) {
      throw Errors.error("query/missing-rules", "No rule named " + call.name(),
          "form", query.formOf(call));
    }
    // a rule may run without any source as long as its body reads none
    Object src = scope.sources.get(call.src().name());
    List<Term> args = call.args();
    int arity = args.size();
    boolean[] input = new boolean[arity];
    List<Variable> boundVars = new ArrayList<>();
    StringBuilder mask = new StringBuilder(call.name().getName()).append('/');
    for (int i = 0; i < arity; i++) {
      Term t = args.get(i);
      input[i] = t instanceof Constant || t instanceof Variable v && ctx.bound(v);
      if (t instanceof Variable v && input[i] && !boundVars.contains(v)) {
        boundVars.add(v);
      }
      mask.append(input[i] ? 'b' : 'f');
    }
    mask.append('/').append(System.identityHashCode(src));
    Rel r = boundVars.isEmpty() ? null : ctx.take(boundVars, deadline);
    List<Tuple> ins = new ArrayList<>();
    List<Object[]> inRows = r == null ? Rel.unit().rows : r.project(boundVars).rows;
    for (Object[] row : inRows) {
      Object[] in = new Object[arity];
      for (int i = 0; i < arity; i++) {
        Term t = args.get(i);
        if (t instanceof Constant c) {
          in[i] = c.value();
        } else if (input[i]) {
          in[i] = row[boundVars.indexOf((Variable) t)];
        }
      }
      ins.add(new Tuple(inputOnly(in, input)));
    }
    Table table = solve(mask.toString(), bodies, input, ins, src);
    Rel t = matchTerms(args, table.resultsFor(ins));
    if (r == null) {
      ctx.joinIn(t, deadline);
    } else {
      ctx.add(Rel.join(r, t, deadline));
    }
  }

  private static Object[] inputOnly(Object[] full, boolean[] input) {
    int n = 0;
    for (boolean b : input) {
      n += b ? 1 : 0;
    }
    Object[] out = new Object[n];
    int j = 0;
    for (int i = 0; i < full.length; i++) {
      if (input[i]) {
        out[j++] = full[i];
      }
    }
    return out;
  }

  /**
   * Computes the rule's tuples for the input-position values {@code ins} to a
   * fixpoint, semi-naively: each round evaluates every body for the inputs not
   * seen before, and for the others only the derivations that go through the
   * previous round's new tuples (driven from those tuples, for bodies that
   * recurse once into their own table; in full for other recursive bodies).
   * Recursive calls read and extend the same table.
   */
  private Table solve(String key, List<Rule> bodies, boolean[] input, List<Tuple> ins, Object src) {
    Table table = tables.computeIfAbsent(key, k -> new Table(input));
    if (calls != null) {
      calls.add(key);
    }
    for (Tuple t : ins) {
      if (table.inputs.add(t)) {
        table.pending.add(t);
      }
    }
    if (table.active) {
      return table; // a recursive call: the enclosing fixpoint iterates until nothing changes
    }
    if (table.partial) {
      table.pending.addAll(table.inputs);
      table.partial = false;
    }
    if (!table.pending.isEmpty()) {
      // such a rule calls no other, so its answers are final even inside another rule's fixpoint
      RightLinear rl = rightLinear.computeIfAbsent(key, k -> RightLinear.of(bodies, input));
      if (rl.applies) {
        solveRightLinear(rl, table, src);
        return table;
      }
    }
    boolean insideOther = false;
    for (Table t : tables.values()) {
      insideOther |= t.active;
    }
    table.active = true;
    List<String> outerCalls = calls;
    try {
      Map<String, Object> srcs = new HashMap<>(sources);
      srcs.put("$", src);
      Scope scope = new Scope(srcs);
      Set<Tuple> delta = new LinkedHashSet<>();
      while (true) {
        deadline.check();
        List<Tuple> fresh = new ArrayList<>(table.pending);
        table.pending.clear();
        Set<Tuple> freshSet = new java.util.HashSet<>(fresh);
        List<Tuple> old = new ArrayList<>(table.inputs.size());
        for (Tuple t : table.inputs) {
          if (!freshSet.contains(t)) {
            old.add(t);
          }
        }
        Set<Tuple> found = new LinkedHashSet<>();
        for (Rule body : bodies) {
          if (!fresh.isEmpty()) {
            evalBody(key, body, input, fresh, scope, found);
          }
          BodyInfo info = bodyInfo.get(body);
          if (old.isEmpty() || delta.isEmpty() || info == null || !info.recursive) {
            continue;
          }
          if (info.linearCall == null || !evalDelta(body, info.linearCall, input, table, delta,
              scope, found)) {
            evalBody(key, body, input, old, scope, found);
          }
        }
        delta = new LinkedHashSet<>();
        for (Tuple t : found) {
          if (table.add(t)) {
            delta.add(t);
          }
        }
        if (delta.isEmpty() && table.pending.isEmpty()) {
          break;
        }
      }
    } finally {
      table.active = false;
      calls = outerCalls;
    }
    if (insideOther) {
      table.partial = true;
    }
    return table;
  }

  private final Map<String, RightLinear> rightLinear = new HashMap<>();

  /**
   * A rule whose recursive bodies only pass their outputs through, as
   * {@code (reach ?a ?b) <- [?a :next ?x] (reach ?x ?b)} does: its answers for
   * an input are the exit bodies' answers for every input reachable from it by
   * the recursive bodies' steps. Solved that way, an input costs the inputs it
   * reaches, where the tabled fixpoint would also answer each of them in turn
   * (a chain of n would cost n squared).
   */
  private static final class RightLinear {
    boolean applies;
    final List<Rule> exits = new ArrayList<>();
    final List<Rule> steps = new ArrayList<>();
    final Map<Rule, RuleCall> calls = new IdentityHashMap<>();
    final Map<Rule, List<Clause>> rests = new IdentityHashMap<>();

    static RightLinear of(List<Rule> bodies, boolean[] input) {
      RightLinear rl = new RightLinear();
      boolean anyInput = false;
      boolean anyOutput = false;
      for (boolean b : input) {
        anyInput |= b;
        anyOutput |= !b;
      }
      if (!anyInput || !anyOutput) {
        return rl;
      }
      for (Rule body : bodies) {
        if (new java.util.HashSet<>(body.vars()).size() != body.vars().size()) {
          return rl;
        }
        List<RuleCall> top = new ArrayList<>();
        List<Clause> rest = new ArrayList<>();
        for (Clause c : body.clauses()) {
          if (c instanceof RuleCall rc) {
            top.add(rc);
          } else if (callsRules(List.of(c))) {
            return rl;
          } else {
            rest.add(c);
          }
        }
        if (top.isEmpty()) {
          rl.exits.add(body);
          continue;
        }
        RuleCall call = top.get(0);
        if (top.size() > 1 || !call.name().equals(body.name()) || call.args().size() != input.length
            || !call.src().name().equals("$")) {
          return rl;
        }
        for (int i = 0; i < input.length; i++) {
          Term arg = call.args().get(i);
          if (input[i] ? !(arg instanceof Variable || arg instanceof Constant)
              : arg != body.vars().get(i) || usedBy(rest, (Variable) arg)) {
            return rl;
          }
        }
        rl.steps.add(body);
        rl.calls.put(body, call);
        rl.rests.put(body, rest);
      }
      rl.applies = !rl.steps.isEmpty() && !rl.exits.isEmpty();
      return rl;
    }

    private static boolean usedBy(List<Clause> clauses, Variable v) {
      for (Clause c : clauses) {
        if (c.vars().contains(v)) {
          return true;
        }
      }
      return false;
    }

    private static boolean callsRules(List<Clause> clauses) {
      for (Clause c : clauses) {
        if (c instanceof RuleCall
            || c instanceof Not n && callsRules(n.clauses())) {
          return true;
        }
        if (c instanceof Or o) {
          for (datalith.query.parser.And b : o.branches()) {
            if (callsRules(b.clauses())) {
              return true;
            }
          }
        }
      }
      return false;
    }
  }

  /**
   * Answers the table's pending inputs of a {@link RightLinear} rule: the inputs
   * each reaches through the steps, found set-at-a-time with the input they came
   * from carried along, then the exit bodies run once over all of them.
   */
  private void solveRightLinear(RightLinear rl, Table table, Object src) {
    boolean[] input = table.input;
    int k = table.pending.iterator().next().vals.length;
    Variable[] origin = new Variable[k];
    for (int j = 0; j < k; j++) {
      origin[j] = Variable.of("?__datalith.origin" + j); // a name no query writes
    }
    Map<String, Object> srcs = new HashMap<>(sources);
    srcs.put("$", src);
    Scope scope = new Scope(srcs);
    // (origin values, reached input values) pairs, each 2k long
    Set<Tuple> seen = new LinkedHashSet<>();
    List<Object[]> frontier = new ArrayList<>();
    for (Tuple in : table.pending) {
      Object[] pair = new Object[2 * k];
      System.arraycopy(in.vals, 0, pair, 0, k);
      System.arraycopy(in.vals, 0, pair, k, k);
      if (seen.add(new Tuple(pair))) {
        frontier.add(pair);
      }
    }
    table.pending.clear();
    while (!frontier.isEmpty()) {
      deadline.check();
      List<Object[]> next = new ArrayList<>();
      for (Rule body : rl.steps) {
        Ctx sub = new Ctx();
        sub.add(new Rel(pairVars(origin, body, input), frontier));
        evalAll(sub, bodyPlan(body, "step", rl.rests.get(body), sub.boundVars(), scope), scope);
        if (sub.isEmpty()) {
          continue;
        }
        RuleCall call = rl.calls.get(body);
        List<Variable> want = new ArrayList<>(List.of(origin));
        for (int i = 0; i < input.length; i++) {
          if (input[i] && call.args().get(i) instanceof Variable v && !want.contains(v)) {
            want.add(v);
          }
        }
        Rel res = sub.take(want, deadline);
        // per pair position: its column in res, or -1 for a constant argument (in consts)
        int[] cols = new int[2 * k];
        Object[] consts = new Object[2 * k];
        for (int j = 0; j < k; j++) {
          cols[j] = res.col(origin[j]);
        }
        int at = k;
        for (int i = 0; i < input.length; i++) {
          if (input[i]) {
            Term arg = call.args().get(i);
            cols[at] = arg instanceof Constant c ? -1 : res.col((Variable) arg);
            consts[at++] = arg instanceof Constant c ? c.value() : null;
          }
        }
        for (Object[] row : res.rows) {
          Object[] pair = new Object[2 * k];
          for (int j = 0; j < pair.length; j++) {
            pair[j] = cols[j] >= 0 ? row[cols[j]] : consts[j];
          }
          if (seen.add(new Tuple(pair))) {
            next.add(pair);
          }
        }
      }
      frontier = next;
    }
    List<Object[]> reached = new ArrayList<>(seen.size());
    for (Tuple t : seen) {
      reached.add(t.vals);
    }
    for (Rule body : rl.exits) {
      Ctx sub = new Ctx();
      sub.add(new Rel(pairVars(origin, body, input), reached, true));
      evalAll(sub, bodyPlan(body, "exit", body.clauses(), sub.boundVars(), scope), scope);
      if (sub.isEmpty()) {
        continue;
      }
      List<Variable> want = new ArrayList<>(List.of(origin));
      want.addAll(body.vars());
      Rel res = sub.take(want, deadline);
      int[] cols = new int[input.length];
      int j = 0;
      for (int i = 0; i < input.length; i++) {
        cols[i] = res.col(input[i] ? origin[j++] : body.vars().get(i));
        if (cols[i] < 0) {
          throw headUnbound(body);
        }
      }
      for (Object[] row : res.rows) {
        table.add(new Tuple(Rel.values(row, cols)));
      }
    }
  }

  /** The origin variables, then {@code body}'s head variables at the input positions. */
  private static Variable[] pairVars(Variable[] origin, Rule body, boolean[] input) {
    Variable[] vars = new Variable[2 * origin.length];
    System.arraycopy(origin, 0, vars, 0, origin.length);
    int j = origin.length;
    for (int i = 0; i < input.length; i++) {
      if (input[i]) {
        vars[j++] = body.vars().get(i);
      }
    }
    return vars;
  }

  private static List<Variable> inputVars(Rule body, boolean[] input) {
    List<Variable> head = body.vars();
    List<Variable> inVars = new ArrayList<>();
    for (int i = 0; i < head.size(); i++) {
      if (input[i]) {
        inVars.add(head.get(i));
      }
    }
    return inVars;
  }

  private List<Clause> bodyPlan(Rule body, Object variant, List<Clause> clauses, Set<Variable> bound,
      Scope scope) {
    return bodyPlans.computeIfAbsent(body, b -> new HashMap<>())
        .computeIfAbsent(variant, v -> order(clauses, bound, scope));
  }

  /** Evaluates {@code body} in full for {@code ins}, adding its head tuples to {@code found}. */
  private void evalBody(String key, Rule body, boolean[] input, List<Tuple> ins, Scope scope,
      Set<Tuple> found) {
    List<Variable> inVars = inputVars(body, input);
    Ctx sub = new Ctx();
    List<Object[]> rows = new ArrayList<>(ins.size());
    for (Tuple t : ins) {
      rows.add(t.vals);
    }
    sub.add(inVars.isEmpty() ? Rel.unit()
        : new Rel(inVars.toArray(new Variable[0]), rows).project(distinct(inVars)));
    List<String> seen = new ArrayList<>();
    calls = seen;
    evalAll(sub, bodyPlan(body, "full", body.clauses(), sub.boundVars(), scope), scope);
    calls = null;
    if (!bodyInfo.containsKey(body)) {
      bodyInfo.put(body, classify(key, body, seen));
    }
    addHeads(body, sub, found);
  }

  private BodyInfo classify(String key, Rule body, List<String> seen) {
    BodyInfo info = new BodyInfo();
    int self = 0;
    for (String k : seen) {
      Table t = tables.get(k);
      if (k.equals(key)) {
        self++;
      }
      info.recursive |= k.equals(key) || t != null && (t.active || t.partial);
    }
    List<RuleCall> top = new ArrayList<>();
    for (Clause c : body.clauses()) {
      if (c instanceof RuleCall rc && rc.name().equals(body.name())) {
        top.add(rc);
      }
    }
    if (self == 1 && seen.size() == 1 && top.size() == 1) {
      info.linearCall = top.get(0);
    }
    return info;
  }

  /**
   * The derivations of {@code body} through {@code delta}: its recursive call
   * replaced by the delta tuples, the rest run from their bindings, heads kept
   * when their inputs are the table's. False when the body cannot run that way.
   */
  private boolean evalDelta(Rule body, RuleCall call, boolean[] input, Table table,
      Set<Tuple> delta, Scope scope, Set<Tuple> found) {
    Rel start = matchTerms(call.args(), delta);
    List<Clause> rest = new ArrayList<>(body.clauses());
    rest.remove(call);
    Ctx sub = new Ctx();
    sub.add(start);
    List<Clause> plan = bodyPlan(body, "delta", rest, sub.boundVars(), scope);
    for (Clause c : plan) {
      Set<Variable> bound = sub.boundVars();
      if (!bound.containsAll(needs(c))) {
        return false;
      }
    }
    evalAll(sub, plan, scope);
    Set<Tuple> heads = new LinkedHashSet<>();
    if (!sub.isEmpty()) {
      if (!sub.boundVars().containsAll(body.vars())) {
        return false;
      }
      addHeads(body, sub, heads);
    }
    for (Tuple h : heads) {
      if (table.inputs.contains(new Tuple(inputOnly(h.vals, input)))) {
        found.add(h);
      }
    }
    return true;
  }

  private void addHeads(Rule body, Ctx sub, Set<Tuple> found) {
    if (sub.isEmpty()) {
      return;
    }
    List<Variable> head = body.vars();
    Rel res = sub.take(distinct(head), deadline);
    int[] cols = res.cols(head);
    for (int c : cols) {
      if (c < 0) {
        throw headUnbound(body);
      }
    }
    for (Object[] row : res.rows) {
      found.add(Tuple.of(row, cols));
    }
  }

  private static RuntimeException headUnbound(Rule body) {
    return Errors.error("query/insufficient-binding", "Rule " + body.name()
        + " does not bind all its head variables", "rule", body.name());
  }

  private static List<Variable> distinct(List<Variable> vs) {
    return new ArrayList<>(new LinkedHashSet<>(vs));
  }

  // ---------------------------------------------------------------- results

  /**
   * An aggregate over one data pattern, grouped as the scan goes without keeping
   * its rows; null when the query is not that simple (then it runs as usual).
   */
  private List<Object[]> streamAggregate(Ctx ctx, List<Clause> plan, Scope scope,
      Results results) {
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
    if (!grouper.keepsRows()) {
      // only counts: the counted and :with variables matter only as distinct datoms
      Set<Variable> unread = new java.util.HashSet<>(needed);
      for (FindElement el : els) {
        if (el instanceof FindVar fv) {
          unread.remove(fv.var());
        }
      }
      dp.leaveUnread(unread);
    }
    DbPattern.Range range = rangeFor(p, dp, plan);
    int[] groupCols = grouper.groupColumns();
    if (!grouper.keepsRows() && range == null && groupCols.length == 1
        && dp.vars[groupCols[0]] == p.v()) {
      // counts by the value alone: AVET's runs of keys per value are counted, not read
      int vAt = groupCols[0];
      boolean counted = dp.countByValue(snapshot(db), (v, n) -> {
        Object[] row = new Object[dp.vars.length];
        row[vAt] = v;
        grouper.add(row, false, n);
      });
      if (counted) {
        return grouper.finish(results.aggregateArgs(null, null));
      }
    }
    dp.scan(snapshot(db), null, vals -> grouper.add(vals, true), Long.MAX_VALUE, range);
    return grouper.finish(results.aggregateArgs(null, null));
  }
}
