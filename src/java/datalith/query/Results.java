package datalith.query;

import clojure.lang.LazilyPersistentVector;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashSet;
import clojure.lang.PersistentVector;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Snapshot;
import datalith.pull.PullPattern;
import datalith.pull.Puller;
import datalith.query.parser.Aggregate;
import datalith.query.parser.Constant;
import datalith.query.parser.FindColl;
import datalith.query.parser.FindElement;
import datalith.query.parser.FindScalar;
import datalith.query.parser.FindTuple;
import datalith.query.parser.FindVar;
import datalith.query.parser.Pull;
import datalith.query.parser.Query;
import datalith.query.parser.ReturnMap;
import datalith.query.parser.SrcVar;
import datalith.query.parser.Term;
import datalith.query.parser.Variable;
import datalith.query.parser.Window;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * A query's answer from the bindings its clauses leave. The rows are the distinct rows of the
 * {@code :find} and {@code :with} variables. Without aggregates they are projected to the
 * {@code :find} elements: a set, or with {@code :with} a bag that keeps the repeats the
 * {@code :with} variables make (Datomic's {@code [:find ?heads :with ?monster]} over three
 * one-headed monsters is {@code [[1] [1] [1]]}). With aggregates they are grouped by the other
 * elements (variables and pulls) and each aggregate reads its group's bag ({@link Grouper}).
 * Then pulls replace their entity ids and the find spec shapes the tuples: a set of vectors
 * (relation; a vector of them when a bag), a vector (collection, repeats kept with {@code :with}),
 * one vector or value (tuple, scalar: the first, nil when none), each tuple a map with
 * {@code :keys}/{@code :strs}/{@code :syms}. Before pulls, the query's slice ({@link Slices}) keeps
 * the tuples {@code :order-by}, {@code :offset} and {@code :limit} ask for; a relation with an
 * order is a vector in that order. One per query run; not thread-safe.
 */
final class Results {
  private final Query query;
  private final Function<SrcVar, Object> sources;
  private final Map<String, Object> pullPatterns;
  private final Function<Db, Snapshot> snapshots;
  private final Deadline deadline;
  private final boolean aggregates;
  /** Whether a relation or collection answer is a lazy sequence, pulled as it is read (qseq). */
  private final boolean lazy;

  /**
   * @param sources the value of each source variable (throws for an unknown one)
   * @param pullPatterns the pull patterns given as {@code :in} inputs, by name
   * @param snapshots the run's snapshot of a database, which the run closes
   */
  Results(Query query, Function<SrcVar, Object> sources, Map<String, Object> pullPatterns,
      Function<Db, Snapshot> snapshots, Deadline deadline, boolean lazy) {
    this.lazy = lazy;
    this.query = query;
    this.sources = sources;
    this.pullPatterns = pullPatterns;
    this.snapshots = snapshots;
    this.deadline = deadline;
    boolean agg = false;
    for (FindElement el : query.findElements()) {
      agg |= el instanceof Aggregate;
    }
    this.aggregates = agg;
  }

  /** The answer from {@code ctx}, the bindings left once every clause has run. */
  Object of(Ctx ctx) {
    return shape(tuples(ctx));
  }

  /**
   * The find tuples of {@code ctx} (one value per :find element, aggregates computed, pulls not
   * yet made), before the slice and the shape.
   */
  List<Object[]> tuples(Ctx ctx) {
    List<FindElement> els = query.findElements();
    List<Variable> needed = new ArrayList<>();
    for (FindElement el : els) {
      if (!needed.contains(el.var())) {
        needed.add(el.var());
      }
    }
    // variables only windows read: rows that differ in them alone can make equal tuples
    boolean extra = false;
    for (FindElement el : els) {
      if (el instanceof Window w) {
        for (Variable v : w.vars()) {
          if (!needed.contains(v)) {
            needed.add(v);
          }
          extra |= !isColumn(v, els);
        }
      }
    }
    for (Variable v : query.with()) {
      if (!needed.contains(v)) {
        needed.add(v);
      }
    }
    Rel all = ctx.isEmpty() ? new Rel(needed.toArray(new Variable[0]), new ArrayList<>())
        : ctx.take(needed, deadline);
    for (Variable v : needed) {
      if (!all.has(v)) {
        throw Errors.error("query/unbound-var", "Variable " + v + " is not bound by the query",
            "vars", PersistentVector.create(v.symbol()), "form", query.form());
      }
    }
    // columns are found by variable, so distinct rows of just the needed variables serve as they are
    Rel proj = all.distinct && all.vars.length == needed.size() ? all : all.project(needed);
    List<Object[]> tuples;
    if (aggregates) {
      Grouper grouper = new Grouper(proj.vars, els, deadline);
      for (Object[] row : proj.rows) {
        deadline.tick(0);
        grouper.add(row, false);
      }
      tuples = grouper.finish(aggregateArgs(all, ctx));
    } else {
      tuples = project(proj, els);
      if (Windows.any(els)) {
        // the rows the windows read may differ in their own variables only: a set keeps one
        tuples = Windows.apply(els, proj, needed, tuples, extra && query.with().isEmpty(),
            deadline);
      }
    }
    deadline.tick(tuples.size()); // the answer is within the row budget too
    return tuples;
  }

  /**
   * The answer from tuples already grouped and aggregated (one per :find element each): pulls
   * done, then shaped.
   */
  Object shape(List<Object[]> all) {
    List<Object[]> tuples = Slices.apply(query.slice(), all, query.findElements().size(),
        deadline);
    Object spec = query.find();
    if (streams()) {
      return stream(tuples.iterator());
    }
    pulls(tuples);
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
    if (isBag() || query.slice().order().isPresent()) {
      return LazilyPersistentVector.createOwning(items);
    }
    boolean pulls = false;
    for (FindElement el : query.findElements()) {
      pulls |= el instanceof Pull;
    }
    // tuples are distinct, unless pulls made equal maps of different entities
    return pulls ? PersistentHashSet.create(items) : new ResultSet(items);
  }

  /**
   * For each :find element (by position) that is an aggregate, the values of its leading
   * arguments: constants, sources, and :in variables (any of their values), read from
   * {@code all} (the rows of the needed variables) or {@code ctx}; both null when no argument
   * is a variable.
   */
  Object[][] aggregateArgs(Rel all, Ctx ctx) {
    List<FindElement> els = query.findElements();
    Object[][] out = new Object[els.size()][];
    for (int i = 0; i < out.length; i++) {
      if (!(els.get(i) instanceof Aggregate a)) {
        continue;
      }
      out[i] = new Object[a.args().size()];
      for (int k = 0; k < out[i].length; k++) {
        Term t = a.args().get(k);
        out[i][k] = t instanceof Constant c ? c.value()
            : t instanceof Variable v ? variableArg(v, all, ctx)
            : sources.apply((SrcVar) t);
      }
    }
    return out;
  }

  /** Whether {@code v} is the variable of a column that shows it: a plain variable or a pull. */
  private static boolean isColumn(Variable v, List<FindElement> els) {
    for (FindElement el : els) {
      if ((el instanceof FindVar || el instanceof Pull) && el.var().equals(v)) {
        return true;
      }
    }
    return false;
  }

  /** Whether the answer is a bag: :with without aggregates keeps the repeats it makes. */
  private boolean isBag() {
    return !query.with().isEmpty() && !aggregates;
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
    if (isPermutation(cols, proj.vars.length)) {
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
    // a :find variable twice, or :with variables left out: with :with, a bag of the rows'
    // find values, repeats kept; without, the rows stay distinct (every variable is found)
    List<Object[]> out = new ArrayList<>(proj.rows.size());
    for (Object[] row : proj.rows) {
      out.add(Rel.values(row, cols));
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

  /** Whether the answer is a lazy sequence (qseq, a relation or collection find). */
  boolean streams() {
    return lazy && !(query.find() instanceof FindScalar) && !(query.find() instanceof FindTuple);
  }

  /**
   * The tuples as a lazy sequence of rows (or values, for a collection), pulled as read; for a
   * query that {@link #streams()}. A relation's rows are distinct, as {@code tuples} gives them.
   */
  Object stream(java.util.Iterator<Object[]> tuples) {
    boolean coll = query.find() instanceof FindColl;
    List<FindElement> els = query.findElements();
    Db[] dbs = new Db[els.size()];
    PullPattern[] patterns = new PullPattern[els.size()];
    for (int i = 0; i < els.size(); i++) {
      if (els.get(i) instanceof Pull p) {
        dbs[i] = pullSource(p);
        patterns[i] = pullPattern(p);
      }
    }
    ReturnMap rm = query.returnMap().orElse(null);
    return LazyPulls.seq(tuples, dbs, patterns, t -> coll ? t[0]
        : rm == null ? LazilyPersistentVector.createOwning(t) : returnMap(rm, t));
  }

  private Db pullSource(Pull p) {
    Object src = sources.apply(p.src());
    if (!(src instanceof Db db)) {
      throw Errors.error("query/pull-source", "pull needs a database source", "form",
          query.formOf(p));
    }
    return db;
  }

  private PullPattern pullPattern(Pull p) {
    return PullPattern.parse(p.patternName() != null
        ? pullPatterns.get(p.patternName().toString()) : p.pattern());
  }

  /** Replaces the entity ids of {@code (pull ?e pattern)} columns by the pulled maps. */
  private void pulls(List<Object[]> tuples) {
    List<FindElement> els = query.findElements();
    for (int i = 0; i < els.size(); i++) {
      if (!(els.get(i) instanceof Pull p)) {
        continue;
      }
      Db db = pullSource(p);
      PullPattern pattern = pullPattern(p);
      Puller puller = new Puller(db, snapshots.apply(db));
      deadline.check(); // the loops before may have left a long stride between clock reads
      for (Object[] t : tuples) {
        deadline.tick(0);
        t[i] = puller.pullOne(pattern, t[i]);
      }
    }
  }

  /** The value of an aggregate's variable argument (?n in (sample ?n ?x)), any of its values. */
  private Object variableArg(Variable v, Rel all, Ctx ctx) {
    if (all != null && all.has(v)) {
      return all.rows.isEmpty() ? null : all.rows.get(0)[all.col(v)];
    }
    if (ctx == null || !ctx.bound(v)) {
      return null;
    }
    Rel r = ctx.take(List.of(v), deadline);
    ctx.add(r);
    return r.rows.isEmpty() ? null : r.rows.get(0)[r.col(v)];
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
