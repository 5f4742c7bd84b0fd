package datalith.query;

import datalith.codec.Codec;
import datalith.db.Db;
import datalith.db.Reverse;
import datalith.db.Snapshot;
import datalith.index.Index;
import datalith.query.parser.Aggregate;
import datalith.query.parser.Clause;
import datalith.query.parser.Constant;
import datalith.query.parser.FindElement;
import datalith.query.parser.Order;
import datalith.query.parser.Pattern;
import datalith.query.parser.Query;
import datalith.query.parser.Variable;
import datalith.query.parser.Window;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Runs a query whose {@code :order-by} and {@code :limit} let it stop before it has found every
 * row (a limit without an order is {@link Chunks}'). When the order's first key is the value
 * {@code ?v} of a pattern {@code [?e attr ?v]} on an attribute of longs or instants, with a
 * limit, no aggregate and no {@code :with}: a walk of the attribute's AVET datoms in the key's
 * order (backwards for {@code :desc}, in chunks read forwards), each chunk joined with the
 * query's other clauses, until the best {@code offset + limit} tuples are known. A chunk never
 * splits the datoms of one value, so every later chunk's values are worse than all of an
 * earlier one's: once that many tuples are found, no later one can enter.
 *
 * <p>The walk is chosen when it should read fewer datoms than the plain plan:
 * {@code k * |pattern| < smallest-other-pattern^2}, that is, when the answer's rows, about as
 * many as the most selective pattern's, are common enough in the walk that {@code k} of them
 * come early. Not used when explaining (explain shows the plain plan). Stateless.
 */
final class OrderedWalk {
  private static final int FIRST_CHUNK = 256;
  private static final int MAX_CHUNK = 1 << 16;

  private OrderedWalk() {}

  /**
   * The best {@code offset + limit} find tuples of the query, or more (before pulls, in no
   * order: the slice sorts and cuts them), found by the ordered walk; null when the query is not
   * of its shape or the walk would not pay. {@code ctx} holds the inputs' bindings, left as is.
   */
  static List<Object[]> run(Query query, Ctx ctx, Scope scope, Evaluator ev,
      Results results, Set<Variable> findVars, Deadline deadline) {
    Query.Slice slice = query.slice();
    if (slice.order().isEmpty() || slice.limit().isEmpty() || !query.with().isEmpty()
        || slice.reach() > MAX_CHUNK) {
      return null;
    }
    for (FindElement el : query.findElements()) {
      if (el instanceof Aggregate || el instanceof Window) {
        return null;
      }
    }
    Order order = slice.order().get();
    Order.Key first = order.keys().get(0);
    if (!(first.ref() instanceof Variable v)) {
      return null;
    }
    Pattern p = driver(query.where(), v);
    if (p == null || !(scope.source(p.src()) instanceof Db db)) {
      return null;
    }
    Set<Variable> bound = ctx.boundVars();
    DbPattern dp = ev.dbPattern(p, db);
    if (bound.contains(v) || bound.contains((Variable) p.e()) || dp.constAttr() == null
        || !walkable(dp.constAttr().valueType)) {
      return null;
    }
    Snapshot s = ev.snapshot(db);
    ValueRange range = Planner.rangeFor(p, dp, query.where());
    int reach = (int) slice.reach();
    if (!pays(query.where(), p, dp.estimate(s, range), reach, scope, ev)) {
      return null;
    }
    List<Clause> rest = new ArrayList<>(query.where());
    rest.remove(p);
    Set<Variable> restBound = new LinkedHashSet<>(bound);
    restBound.addAll(Arrays.asList(dp.vars));
    Plan restPlan = ev.tryPlan(rest, restBound, findVars, scope);
    if (restPlan == null) {
      return null;
    }
    Walk walk = new Walk(ctx, dp, restPlan, scope, ev, results, reach,
        Slices.comparator(order, query.findElements().size()), deadline);
    if (first.desc()) {
      walk.backwards(db, s, range);
    } else {
      walk.forwards(s, range, Arrays.asList(dp.vars).indexOf(v));
    }
    return walk.best;
  }

  /** The first pattern {@code [?e attr ?v]} of {@code where} binding {@code v} as its value. */
  private static Pattern driver(List<Clause> where, Variable v) {
    for (Clause c : where) {
      if (c instanceof Pattern p && p.terms().size() == 3 && p.v() == v
          && p.e() instanceof Variable e && e != v && p.a() instanceof Constant) {
        return p;
      }
    }
    return null;
  }

  /**
   * Whether an attribute of {@code valueType} keeps its values in the AVET index in exactly the
   * order of {@link Compare}, each value's datoms together: fixed-width longs and instants
   * (strings past the key's length keep a hash there, floats -0.0 and NaN apart).
   */
  private static boolean walkable(int valueType) {
    return valueType == Codec.T_LONG || valueType == Codec.T_INSTANT;
  }

  /** Whether walking {@code p} ({@code size} datoms) for {@code k} tuples should pay. */
  private static boolean pays(List<Clause> where, Pattern p, long size, int k, Scope scope,
      Evaluator ev) {
    double smallest = size;
    for (Clause c : where) {
      if (c != p && c instanceof Pattern q && scope.source(q.src()) instanceof Db qdb) {
        DbPattern dq = ev.dbPattern(q, qdb);
        smallest = Math.min(smallest,
            dq.estimate(ev.snapshot(qdb), Planner.rangeFor(q, dq, where)));
      }
    }
    return (double) k * 4 < size && (double) k * size < smallest * smallest;
  }

  /** One walk's state: the best tuples so far. */
  private static final class Walk {
    private final Ctx inputs;
    private final DbPattern dp;
    private final Plan rest;
    private final Scope scope;
    private final Evaluator ev;
    private final Results results;
    private final int k;
    private final Comparator<Object[]> cmp;
    private final Deadline deadline;
    /** The best tuples of the chunks walked, at most k after each chunk. */
    List<Object[]> best = new ArrayList<>();

    Walk(Ctx inputs, DbPattern dp, Plan rest, Scope scope, Evaluator ev, Results results, int k,
        Comparator<Object[]> cmp, Deadline deadline) {
      this.inputs = inputs;
      this.dp = dp;
      this.rest = rest;
      this.scope = scope;
      this.ev = ev;
      this.results = results;
      this.k = k;
      this.cmp = cmp;
      this.deadline = deadline;
    }

    /** Ascending: chunks of about n matches from a lower bound, the last value's cut off. */
    void forwards(Snapshot s, ValueRange range, int vCol) {
      Object lower = range == null ? null : range.lower;
      boolean lowerIn = range == null || range.lowerInclusive;
      Object upper = range == null ? null : range.upper;
      boolean upperIn = range == null || range.upperInclusive;
      int chunk = FIRST_CHUNK;
      while (true) {
        deadline.check();
        List<Object[]> rows = new ArrayList<>();
        dp.scan(s, null, vals -> rows.add(vals.clone()), chunk,
            new ValueRange(lower, lowerIn, upper, upperIn));
        boolean last = rows.size() < chunk;
        if (!last) {
          // the chunk may end within a value: its datoms go to the next chunk, all together
          Object cut = rows.get(rows.size() - 1)[vCol];
          while (!rows.isEmpty() && Compare.compare(rows.get(rows.size() - 1)[vCol], cut) == 0) {
            rows.remove(rows.size() - 1);
          }
          lower = Compare.indexBound(cut, true);
          lowerIn = true;
        }
        join(rows);
        if (last || best.size() >= k) {
          return;
        }
        chunk = rows.isEmpty() ? chunk * 2 : Math.min(chunk * 2, MAX_CHUNK);
      }
    }

    /** Descending: chunks below an upper key, each cut at a value's start ({@link Reverse}). */
    void backwards(Db db, Snapshot s, ValueRange range) {
      byte[] lowest = dp.avetKey(range == null ? null : range.lower, false);
      byte[] upper = dp.avetKey(range == null ? null : range.upper, true);
      int chunk = FIRST_CHUNK;
      while (true) {
        deadline.check();
        byte[] lo = Reverse.chunkStart(db, Index.AVET, upper, chunk);
        boolean last = lo == null || Arrays.compareUnsigned(lo, lowest) <= 0;
        if (last) {
          lo = lowest;
        }
        List<Object[]> rows = new ArrayList<>();
        dp.scanAvet(s, lo, upper, vals -> rows.add(vals.clone()), range);
        join(rows);
        if (last || best.size() >= k) {
          return;
        }
        upper = lo;
        chunk = Math.min(chunk * 2, MAX_CHUNK);
      }
    }

    /** The chunk's rows joined with the other clauses; their tuples added to the best. */
    private void join(List<Object[]> rows) {
      if (rows.isEmpty()) {
        return;
      }
      Ctx c = inputs.copy();
      c.joinIn(new Rel(dp.vars, rows, dp.distinctRows()), deadline);
      ev.evalAll(c, rest, scope);
      best.addAll(results.tuples(c));
      if (best.size() > k) {
        best = Slices.best(best, k, cmp, deadline);
      }
    }
  }
}
