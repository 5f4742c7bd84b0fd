package datalith.query;

import datalith.db.Db;
import datalith.query.parser.Aggregate;
import datalith.query.parser.FindElement;
import datalith.query.parser.Pattern;
import datalith.query.parser.Query;
import datalith.query.parser.Variable;
import datalith.query.parser.Window;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.Supplier;

/**
 * A query run a chunk at a time: its plan's first step, a scan of one data pattern, is read in
 * chunks of matches (short reads, each resuming after the last key of the one before), and each
 * chunk is joined with the rest of the plan on its own, giving that chunk's find tuples. So a
 * query needs memory for one chunk's rows and tuples, not for its whole answer: a limit without
 * an order stops after enough tuples ({@link Engine}), and {@code qseq} reads chunks as its
 * sequence is consumed.
 *
 * <p>For a query without aggregates, order or rules whose first step scans a pattern sharing no
 * variable with the inputs and binding one the answer holds. Tuples of two chunks are told apart when the pattern's matches are
 * distinct datoms and the answer holds every variable of the pattern; otherwise the tuples given
 * out so far are kept to drop repeats (memory then grows with the distinct answer), and a query
 * with {@code :with}, whose repeats count, is not run in chunks. The chunk size adapts so that a
 * chunk makes about {@link #TARGET} tuples. One query's; not thread-safe.
 */
final class Chunks {
  private static final long FIRST = 64;
  private static final long MAX = 1 << 16;
  /** About how many tuples a chunk should make. */
  private static final long TARGET = 1 << 15;

  private final Pattern first;
  private final Plan plan;
  private final Plan rest;
  private final Ctx inputs;
  private final Scope scope;
  private final Results results;
  /** The tuples given out so far, when two chunks can make the same one; else null. */
  private final Set<Tuple> seen;
  private final DbPattern.Resume resume = new DbPattern.Resume();
  private long size = FIRST;

  private Chunks(Pattern first, Plan plan, Ctx inputs, Scope scope, Results results,
      boolean distinct) {
    this.first = first;
    this.plan = plan;
    int n = plan.clauses().size();
    this.rest = new Plan(plan.clauses().subList(1, n), plan.later().subList(1, n), plan.wanted(),
        plan.lives().subList(1, n));
    this.inputs = inputs;
    this.scope = scope;
    this.results = results;
    this.seen = distinct ? null : new HashSet<>();
  }

  /**
   * The chunked run of {@code query} with {@code plan} on the inputs bound in {@code ctx} (left
   * as is), or null when the query is not of the kind (see the class).
   */
  static Chunks of(Query query, Plan plan, Ctx ctx, Scope scope, Evaluator ev, Results results) {
    if (query.slice().order().isPresent() || query.hasRules() || plan.clauses().isEmpty()
        || !(plan.clauses().get(0) instanceof Pattern p)
        || !(scope.source(p.src()) instanceof Db db)) {
      return null;
    }
    Set<Variable> needed = new HashSet<>(query.with());
    for (FindElement el : query.findElements()) {
      if (el instanceof Aggregate || el instanceof Window) {
        return null;
      }
      needed.add(el.var());
    }
    DbPattern dp = ev.dbPattern(p, db);
    Set<Variable> bound = ctx.boundVars();
    for (Variable v : dp.vars) {
      if (bound.contains(v)) {
        return null;
      }
    }
    if (Collections.disjoint(needed, List.of(dp.vars))) {
      return null; // the scan only has to match: chunks would run the rest once per chunk
    }
    boolean distinct = dp.distinctRows() && needed.containsAll(List.of(dp.vars));
    if (!distinct && !query.with().isEmpty()) {
      return null;
    }
    return new Chunks(p, plan, ctx, scope, results, distinct);
  }

  /**
   * The find tuples of the next chunk that makes any (pulls not made), read through {@code ev}
   * (its snapshots); null once the scan is done.
   */
  List<Object[]> next(Evaluator ev) {
    Db db = (Db) scope.source(first.src());
    DbPattern dp = ev.dbPattern(first, db);
    ValueRange range = Planner.rangeFor(first, dp, plan.clauses());
    Deadline deadline = ev.deadline();
    while (!resume.done) {
      deadline.check();
      List<Object[]> rows = new ArrayList<>();
      dp.scanChunk(ev.snapshot(db), vals -> rows.add(vals.clone()), size, range, resume);
      if (rows.isEmpty()) {
        continue;
      }
      Ctx c = inputs.copy();
      c.joinIn(new Rel(dp.vars, rows, dp.distinctRows()), deadline);
      c.retain(plan.live(0), plan.later().get(0));
      ev.evalAll(c, rest, scope);
      List<Object[]> tuples = results.tuples(c);
      size = next(size, tuples.size());
      if (seen != null) {
        List<Object[]> fresh = new ArrayList<>(tuples.size());
        for (Object[] t : tuples) {
          if (seen.add(new Tuple(t))) {
            fresh.add(t);
          }
        }
        tuples = fresh;
      }
      if (!tuples.isEmpty()) {
        return tuples;
      }
    }
    return null;
  }

  /** The next chunk's size: toward {@link #TARGET} tuples, at most four times the last. */
  private static long next(long size, long tuples) {
    long want = tuples == 0 ? size * 4 : size * TARGET / tuples;
    return Math.max(1, Math.min(MAX, Math.min(size * 4, want)));
  }

  /**
   * The tuples of the chunks past {@code slice}'s offset, up to its limit, each chunk read when
   * the last is used up, through an evaluator {@code evaluators} makes, closed at once: for
   * qseq, whose sequence is read after the call returns.
   */
  Iterator<Object[]> stream(Query.Slice slice, Supplier<Evaluator> evaluators) {
    return new Iterator<>() {
      private Iterator<Object[]> chunk = Collections.emptyIterator();
      private long skip = slice.offset();
      private long left = slice.limit().orElse(Long.MAX_VALUE);
      private boolean done;

      @Override
      public boolean hasNext() {
        while (!done && left > 0) {
          while (skip > 0 && chunk.hasNext()) {
            chunk.next();
            skip--;
          }
          if (chunk.hasNext()) {
            return true;
          }
          try (Evaluator ev = evaluators.get()) {
            List<Object[]> more = Chunks.this.next(ev);
            if (more == null) {
              done = true;
            } else {
              chunk = more.iterator();
            }
          }
        }
        return false;
      }

      @Override
      public Object[] next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        left--;
        return chunk.next();
      }
    };
  }
}
