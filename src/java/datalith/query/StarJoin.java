package datalith.query;

import datalith.db.Db;
import datalith.db.IndexScan;
import datalith.db.LongMap;
import datalith.db.Snapshot;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import datalith.query.parser.Clause;
import datalith.query.parser.Pattern;
import datalith.query.parser.Variable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * A star join: consecutive patterns {@code [?e attr ?v]} of a plan on one entity variable the
 * scope has bound to a few entities, each binding a value variable of its own, answered together
 * from one EAVT position per entity (an entity's datoms lie together there, sorted by attribute)
 * rather than one lookup join, and one seek per entity, per pattern. Its rows are those the
 * lookup joins would make one after the other: each row of an entity times each matching datom
 * of the first pattern times each of the second, and so on (a history view's retractions are
 * datoms like the others, a filtered view's hidden ones none). Runs only where each pattern
 * would be a sparse index-lookup join in EAVT by itself ({@link Evaluator}'s choice).
 */
final class StarJoin {
  /** How many entities' seeks are warmed at once (see {@link IndexScan#warm}). */
  private static final int WARM = 32;

  private final Evaluator ev;
  private final Db db;
  private final Snapshot snap;
  private final List<DbPattern> members;

  private StarJoin(Evaluator ev, Db db, List<DbPattern> members) {
    this.ev = ev;
    this.db = db;
    this.snap = ev.snapshot(db);
    this.members = members;
  }

  /**
   * Runs the star join of the clauses of {@code plan} from step {@code from} on, when there is
   * one of two patterns or more there (see the class comment), and returns its patterns, the
   * steps it ran; null when there is none (the clauses are then run one by one as usual, ctx
   * left as it was). {@code sparse}: how many of an attribute's datoms per bound entity make its
   * lookups sparse; {@code implied}: clauses a range already answers (none of them joins).
   */
  static List<DbPattern> run(Evaluator ev, Ctx ctx, Plan plan, int from, Scope scope,
      Set<Clause> implied, long sparse) {
    List<Clause> clauses = plan.clauses();
    if (!(clauses.get(from) instanceof Pattern first) || !(first.e() instanceof Variable e)
        || from + 1 == clauses.size() || !(clauses.get(from + 1) instanceof Pattern second)
        || second.e() != e || !ctx.bound(e)
        || !(scope.sources.get(first.src().name()) instanceof Db db)) {
      return null; // not two patterns on a bound entity: nothing made (most steps end here)
    }
    List<DbPattern> members = new ArrayList<>();
    List<Variable> values = new ArrayList<>();
    for (int i = from; i < clauses.size(); i++) {
      if (!(clauses.get(i) instanceof Pattern p) || p.e() != e
          || scope.sources.get(p.src().name()) != db || implied != null && implied.contains(p)
          || !(p.v() instanceof Variable v) || ctx.bound(v) || values.contains(v)
          || !plan.later().get(i).contains(v) && !plan.wanted().contains(v)) {
        break;
      }
      DbPattern dp = ev.dbPattern(p, db);
      if (!dp.isEntityValue() || Planner.rangeFor(p, dp, clauses) != null) {
        break;
      }
      members.add(dp);
      values.add(v);
    }
    if (members.size() < 2) {
      return null;
    }
    Rel r = ctx.take(List.of(e), ev.deadline());
    LongMap<Object> byEntity = Rel.longTable(r.rows, r.col(e));
    if (byEntity != null) {
      // only the patterns whose own lookup join would read EAVT: sparse among their datoms
      Snapshot s = ev.snapshot(db);
      int n = 0;
      while (n < members.size()
          && (long) byEntity.size() * sparse < members.get(n).estimate(s, null)) {
        n++;
      }
      members = members.subList(0, n);
    }
    if (byEntity == null || members.size() < 2) {
      ctx.add(r);
      return null;
    }
    ctx.add(new StarJoin(ev, db, members).join(r, byEntity));
    return members;
  }

  /** The rows of {@code r} (grouped by entity in {@code byEntity}) joined with the members. */
  private Rel join(Rel r, LongMap<Object> byEntity) {
    int k = members.size();
    Variable[] vars = Arrays.copyOf(r.vars, r.vars.length + k);
    long[] attrs = new long[k];
    long maxAttr = Long.MIN_VALUE;
    boolean distinct = r.distinct;
    for (int m = 0; m < k; m++) {
      DbPattern dp = members.get(m);
      vars[r.vars.length + m] = dp.vars[1];
      attrs[m] = dp.constAttr().id;
      maxAttr = Math.max(maxAttr, attrs[m]);
      distinct &= dp.distinctRows();
      dp.ranOn(Index.EAVT);
    }
    @SuppressWarnings("unchecked")
    List<Object>[] found = new List[k]; // per member, the values of the entity's matching datoms
    for (int m = 0; m < k; m++) {
      found[m] = new ArrayList<>(4);
    }
    long[] keys = byEntity.keys();
    IdSet.sortDistinct(keys);
    Deadline deadline = ev.deadline();
    List<Object[]> out = new ArrayList<>(keys.length);
    KeyBuilder kb = new KeyBuilder(true);
    // the next WARM entities' keys, whose pages the store reads side by side before their seeks
    ByteBuffer warmKeys = ByteBuffer.allocateDirect(WARM * Long.BYTES);
    ByteBuffer[] warm = new ByteBuffer[WARM];
    for (int i = 0; i < WARM; i++) {
      warm[i] = warmKeys.slice(i * Long.BYTES, Long.BYTES);
    }
    IndexScan scan = null;
    try {
      for (int j = 0; j < keys.length; j++) {
        long key = keys[j];
        deadline.tick(out.size());
        kb.reset().putLong(key);
        if (scan == null) {
          scan = db.scan(snap, Index.EAVT, kb.view());
          scan.seekOnRestart(); // the entities are few among the attributes' datoms: pages apart
        } else {
          scan.restart(kb.sharedView());
        }
        if (j % WARM == 0 && keys.length - j > 1) {
          int m = Math.min(WARM, keys.length - j - 1);
          for (int i = 0; i < m; i++) {
            warm[i].putLong(0, keys[j + 1 + i]);
          }
          scan.warm(warm, m);
        }
        for (List<Object> f : found) {
          f.clear();
        }
        // the entity's datoms, in attribute order, up to the last attribute wanted
        while (scan.next()) {
          long a = scan.aid();
          if (a > maxAttr) {
            break;
          }
          for (int m = 0; m < k; m++) {
            if (attrs[m] == a) {
              found[m].add(scan.v());
            }
          }
        }
        Object g = byEntity.get(key);
        if (g instanceof Object[] row) {
          product(row, found, out);
        } else {
          for (Object[] row : (Rel.RowList) g) {
            product(row, found, out);
          }
        }
      }
    } finally {
      if (scan != null) {
        scan.close();
      }
    }
    return new Rel(vars, out, distinct);
  }

  /** Adds to {@code out} {@code row} extended by each combination of one value per member. */
  private void product(Object[] row, List<Object>[] found, List<Object[]> out) {
    long total = 1;
    for (List<Object> f : found) {
      total *= f.size();
    }
    int w = row.length;
    for (long c = 0; c < total; c++) {
      Object[] r = Arrays.copyOf(row, w + found.length);
      long rest = c;
      for (int m = found.length - 1; m >= 0; m--) {
        int size = found[m].size();
        r[w + m] = found[m].get((int) (rest % size));
        rest /= size;
      }
      out.add(r);
      ev.deadline().tick(out.size());
    }
  }
}
