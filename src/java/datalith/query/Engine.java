package datalith.query;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;
import clojure.lang.Symbol;
import datalith.db.AnyValidTime;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Snapshot;
import datalith.query.parser.Aggregate;
import datalith.query.parser.BindScalar;
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
import datalith.query.parser.RulesVar;
import datalith.query.parser.SrcVar;
import datalith.query.parser.Term;
import datalith.query.parser.ValidAt;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs parsed queries, the conductor of the query package: binds the inputs ({@link Bindings}),
 * has the {@link Planner} order the clauses and the {@link Evaluator} run them set-at-a-time
 * (index-lookup joins when the bound side is small, hash joins otherwise, anti-joins for
 * {@code not}, unions for {@code or}, {@link Rules} for rules), then hands the bindings to
 * {@link Results} (projection, aggregates through {@link Grouper}, pulls, shapes).
 * Thread-safe: each call has its own state; parsed queries and plans are cached by form.
 */
public final class Engine {
  private static final int CACHE_LIMIT = 2048;
  private static final Map<Object, Query> PARSED = new ConcurrentHashMap<>();
  /** Plans by query and rules form (the rules decide which arguments a rule call needs). */
  private static final Map<List<Object>, Plan> PLANS = new ConcurrentHashMap<>();
  private static final Map<Object, List<Rule>> RULES = new ConcurrentHashMap<>();
  private static final Keyword K_TIMEOUT = Keyword.intern("timeout");
  private static final Keyword K_MAX_ROWS = Keyword.intern("max-rows");
  /** The instant of a {@code :valid-at} section that reads its source at any valid time. */
  private static final Keyword ANY_VALID_TIME = Keyword.intern("any-valid-time");

  private final Query query;
  /** The query's shared parts when it runs prepared (its plan held there), else null. */
  private final Prepared prepared;
  private final Map<String, Object> sources = new HashMap<>(4);
  /** The rules by name and the pull patterns given as inputs; empty until an input gives one. */
  private Map<Symbol, List<Rule>> rules = java.util.Collections.emptyMap();
  private Map<String, Object> pullPatterns = java.util.Collections.emptyMap();
  private final Deadline deadline;
  private Object rulesForm;
  private final List<Object> explain;
  /** Runs the clauses; made once the inputs (sources, rules) are bound. */
  private Evaluator evaluator;
  private boolean lazy; // qseq: the answer a lazy sequence

  private Engine(Query query, long timeoutMs, long maxRows, boolean explain) {
    this(query, null, timeoutMs, maxRows, explain);
  }

  private Engine(Query query, Prepared prepared, long timeoutMs, long maxRows, boolean explain) {
    this.query = query;
    this.prepared = prepared;
    this.deadline = Deadline.of(timeoutMs > 0 ? timeoutMs : query.timeout().orElse(0), maxRows);
    this.explain = explain ? new ArrayList<>() : null;
  }

  /**
   * The parsed form of a query, cached by form; a query already parsed is itself, a prepared
   * one its parsed query.
   */
  public static Query parse(Object form) {
    if (form instanceof Query parsed) {
      return parsed;
    }
    if (form instanceof Prepared prepared) {
      return prepared.query();
    }
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
   * @param opts may hold {@code :timeout} (ms), {@code :max-rows} (the most rows any relation
   *     of the query, final or intermediate, may have), {@code :offset} and {@code :limit} (cut
   *     the answer further, {@link Slices#withOptions}); null for none
   */
  public static Object q(Object form, Object[] inputs, IPersistentMap opts) {
    return withOptions(form, opts).run(inputs);
  }

  /**
   * The engine that runs {@code form} with {@code opts} ({@link #q}): a prepared query keeps its
   * held plan unless {@code :offset} or {@code :limit} make it another query.
   */
  private static Engine withOptions(Object form, IPersistentMap opts) {
    Query q = parse(form);
    Query sliced = Slices.withOptions(q, opts);
    return new Engine(sliced, sliced == q && form instanceof Prepared p ? p : null,
        positiveOption(opts, K_TIMEOUT, ":timeout is a positive number of milliseconds"),
        positiveOption(opts, K_MAX_ROWS, ":max-rows is a positive number of rows"), false);
  }

  /**
   * {@code form} prepared to run many times ({@link Prepared}); a prepared query is itself.
   *
   * @throws clojure.lang.ExceptionInfo {@code :parser/...} when the query does not parse
   */
  public static Prepared prepare(Object form) {
    return form instanceof Prepared p ? p : Prepared.of(parse(form));
  }

  /**
   * Runs a query on {@code inputs} (one per {@code :in} element): a prepared one
   * ({@link #prepare}) with its held plan, one already parsed neither read nor looked up by
   * form again.
   */
  public static Object run(Object form, Object[] inputs) {
    return form instanceof Prepared p ? runPrepared(p, inputs)
        : new Engine(parse(form), 0, 0, false).run(inputs);
  }

  /**
   * Runs a prepared query on {@code inputs} (one per {@code :in} element): only what depends on
   * the databases and the inputs is done again, the plan reused while the databases stay in the
   * size classes it was made for ({@link Prepared}).
   */
  public static Object runPrepared(Prepared prepared, Object[] inputs) {
    Query q = prepared.query();
    return new Engine(q, prepared, 0, 0, false).run(inputs);
  }

  /**
   * Like {@link #q}, but a relation or collection answer is a lazy sequence whose pulls are
   * made as it is read (Datomic's {@code qseq}).
   */
  public static Object qseq(Object form, Object[] inputs, IPersistentMap opts) {
    Engine e = withOptions(form, opts);
    e.lazy = true;
    return e.run(inputs);
  }

  /**
   * The inputs of {@code query} in {@code :in} order, from {@code named}: a map from each
   * input's name to its value ({@link Inputs#byName}: {@code :email} for {@code ?email} and
   * {@code [?email ...]}, {@code :$} and {@code :$src} for sources, {@code :%} for the rules).
   *
   * @throws clojure.lang.ExceptionInfo {@code :query/inputs} when a name is missing, unknown, or
   *     an input (a tuple or relation binding) has no name
   */
  public static Object[] namedInputs(Query query, Map<?, ?> named) {
    return Inputs.byName(query, named);
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
      if (prepared == null || !prepared.functionsResolved()) {
        resolveFunctions(query.where());
        for (FindElement el : query.findElements()) {
          if (el instanceof Aggregate a && !a.isBuiltin()) {
            Functions.resolve(a.fn());
          }
        }
        if (prepared != null) {
          prepared.functionsResolved(true);
        }
      }
      for (List<Rule> bodies : rules.values()) {
        for (Rule body : bodies) {
          resolveFunctions(body.clauses());
        }
      }
      Scope scope = new Scope(sources);
      Plan plan = plan(ctx, scope);
      Results results = new Results(query, scope::source, pullPatterns, this::snapshot,
          deadline, lazy);
      List<Object[]> streamed = streamAggregate(ctx, plan.clauses(), scope, results);
      if (streamed != null) {
        return results.shape(streamed);
      }
      if (explain == null) {
        List<Object[]> walked = OrderedWalk.run(query, ctx, scope, evaluator, results,
            findVars(), deadline);
        if (walked != null) {
          return results.shape(walked);
        }
        // chunks serve a lazy answer or a limit only
        Chunks chunks = lazy || query.slice().limit().isPresent()
            ? Chunks.of(query, plan, ctx, scope, evaluator, results) : null;
        if (chunks != null && results.streams()) {
          // qseq: each chunk read when the last is used up, through an evaluator (and
          // snapshots) of its own, closed at once, with the query's limits anew
          return results.stream(chunks.stream(query.slice(), () -> new Evaluator(sources, rules,
              deadline.renewed(), null, query::formOf)));
        }
        if (chunks != null && query.slice().limit().isPresent()) {
          // a limit without an order: chunks until offset + limit tuples are found
          List<Object[]> found = new ArrayList<>();
          List<Object[]> more;
          while (found.size() < query.slice().reach() && (more = chunks.next(evaluator)) != null) {
            found.addAll(more);
          }
          return results.shape(found);
        }
      }
      evaluator.evalAll(ctx, plan, scope);
      return results.of(ctx);
    } catch (StackOverflowError e) {
      // unwound to here, the stack is whole again; hashing or comparing an input nested deeper
      // than the stack recurses along it
      throw Errors.error("query/too-deep", "The query ran out of stack: an input nests"
          + " collections too deep to compare, or a function it calls recursed too deep");
    } finally {
      if (evaluator != null) {
        evaluator.close();
      }
    }
  }

  /**
   * The plan of the query's clauses for this run. A plan fits the sizes it was made for: a
   * source four times larger plans again. A prepared query holds its last plan; other runs (and
   * a prepared one whose rules form or sizes changed) look in the cache by query and rules form.
   */
  private Plan plan(Ctx ctx, Scope scope) {
    long sizeKey = prepared == null ? -1 : sizeKey();
    if (sizeKey >= 0) {
      Plan held = prepared.plan(rulesForm, sizeKey);
      if (held != null) {
        return held;
      }
    }
    List<Object> planKey = java.util.Arrays.asList(query, rulesForm, sizeClasses());
    Plan plan = PLANS.get(planKey);
    if (plan == null) {
      plan = evaluator.plan(query.where(), ctx.boundVars(), findVars(), scope);
      PLANS.put(planKey, plan);
    }
    if (sizeKey >= 0) {
      prepared.hold(rulesForm, sizeKey, plan);
    }
    return plan;
  }

  /**
   * The size classes of the sources, in {@code :in} order, six bits each (a database's class is
   * at most 32, a collection is 63); -1 when there are more than ten.
   */
  private long sizeKey() {
    long key = 0;
    int n = 0;
    for (InBinding b : query.in()) {
      if (b instanceof SrcVar s) {
        if (++n > 10) {
          return -1;
        }
        key = key << 6 | (sources.get(s.name()) instanceof Db db ? sizeClass(db) : 63);
      }
    }
    return key;
  }

  private static long sizeClass(Db db) {
    return (64 - Long.numberOfLeadingZeros(db.stats().total())) / 2;
  }

  /** The variables the find reads at the end ({@link Prepared#findVarsOf}). */
  private Set<Variable> findVars() {
    return prepared != null ? prepared.findVars() : Prepared.findVarsOf(query);
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
        out.add(sizeClass(db));
      }
    }
    return out;
  }

  /** Throws {@code :query/unknown-fn} for the first function of {@code clauses} that is unknown. */
  private static void resolveFunctions(List<Clause> clauses) {
    for (Clause c : clauses) {
      if (c instanceof Predicate p && p.fnVar() == null) {
        Functions.resolve(p.fn());
      } else if (c instanceof FnBinding f && f.fnVar() == null) {
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
        if (!(x instanceof Db) && !(x instanceof Collection) && !(x instanceof Object[])
            && !(x instanceof AnyValidTime)) {
          throw Errors.error("query/inputs", "Source " + s.name() + " must be a database, a"
              + " database at any valid time or a collection of tuples", "source", s.name(),
              "input", x);
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
        rules = new HashMap<>();
        for (Rule r : rs) {
          rules.computeIfAbsent(r.name(), k -> new ArrayList<>()).add(r);
        }
      } else if (b instanceof PatternName p) {
        pullPattern(p.toString(), x);
      } else {
        if (b instanceof BindScalar scalar && pullsByName()) { // for (pull ?e ?pattern)
          pullPattern(scalar.var().toString(), x);
        }
        ctx.add(Bindings.rel((Binding) b, x));
      }
    }
    for (ValidAt v : query.validAt()) {
      sources.put(v.src().name(), validAt(v, inputs));
    }
  }

  /**
   * The database of {@code v}'s source as the facts valid at its instant show it: the
   * {@code :valid-at} section's view, the same value {@code (valid-at db instant)} gives; at
   * {@code :any-valid-time}, the source read at any valid time ({@link AnyValidTime}).
   *
   * @throws clojure.lang.ExceptionInfo {@code :query/valid-at} when the source is not a database,
   *     {@code :db/invalid-valid-time} when the instant is not a java.util.Date
   */
  private Object validAt(ValidAt v, Object[] inputs) {
    Object instant = null;
    if (v.instant() instanceof Constant c) {
      instant = c.value();
    } else {
      List<InBinding> in = query.in();
      for (int i = 0; i < in.size(); i++) {
        if (in.get(i) instanceof BindScalar s && s.var().equals(v.instant())) {
          instant = inputs[i];
        }
      }
    }
    Object src = sources.get(v.src().name());
    Db db = src instanceof AnyValidTime any ? any.db() : src instanceof Db d ? d : null;
    if (db == null) {
      throw Errors.error("query/valid-at", ":valid-at reads a database, but source "
          + v.src().name() + " is a collection", "source", v.src().name());
    }
    return ANY_VALID_TIME.equals(instant) ? new AnyValidTime(db) : db.validAt(instant);
  }

  /** Whether a find element pulls with a pattern given as an input. */
  private boolean pullsByName() {
    for (FindElement el : query.findElements()) {
      if (el instanceof Pull p && p.patternName() != null) {
        return true;
      }
    }
    return false;
  }

  private void pullPattern(String name, Object pattern) {
    if (pullPatterns.isEmpty()) {
      pullPatterns = new HashMap<>();
    }
    pullPatterns.put(name, pattern);
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
    Grouper grouper = new Grouper(dp.vars, els, deadline);
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
    ValueRange range = Planner.rangeFor(p, dp, plan);
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
