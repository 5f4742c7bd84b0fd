package datalith.query;

import clojure.lang.IFn;
import datalith.query.parser.Aggregate;
import datalith.query.parser.FindElement;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The groups of an aggregate query. Fed the distinct rows of the {@code :find} and {@code :with}
 * variables one at a time, it groups them by the grouping elements of {@code :find} (its
 * variables and its pulls, grouped by the pulled entity) and gives each group one result tuple:
 * a grouping element's value, or an aggregate of the group's bag of values (one per row, so
 * repeated values count). Not thread-safe: one per query run.
 */
final class Grouper {
  /** The rows of one group, counted, and kept when an aggregate reads them. */
  private static final class Group {
    final Object[] first;
    final List<Object[]> rows;
    long count;

    Group(Object[] first, boolean keepRows) {
      this.first = first;
      this.rows = keepRows ? new ArrayList<>() : null;
    }
  }

  private final Variable[] vars; // the columns of the rows fed
  private final List<FindElement> els;
  private final Deadline deadline;
  private final int[] groupCols; // per grouping element, in order, its column
  private final boolean keepRows;
  private final Map<Object, Group> groups = new LinkedHashMap<>();
  private long rows;

  // the groups of the last few one-column keys by identity: a scan hands out the same
  // object for a repeated value, so a few distinct values group without hashing
  private final Object[] recentKeys = new Object[8];
  private final Group[] recentGroups = new Group[8];
  private int recentNext;

  /** A grouper of rows over {@code vars} for the find elements {@code els}. */
  Grouper(Variable[] vars, List<FindElement> els, Deadline deadline) {
    this.vars = vars;
    this.els = els;
    this.deadline = deadline;
    List<Integer> cols = new ArrayList<>();
    boolean keep = false;
    for (FindElement el : els) {
      if (el instanceof Aggregate a) {
        // the rows are distinct, so a count is the number of rows: no need to keep them
        keep |= !(a.isBuiltin() && a.fn().getName().equals("count"));
      } else {
        cols.add(Rel.col(vars, el.var()));
      }
    }
    this.groupCols = cols.stream().mapToInt(Integer::intValue).toArray();
    this.keepRows = keep;
  }

  /** Whether some aggregate reads the rows' values (false when they are only counted). */
  boolean keepsRows() {
    return keepRows;
  }

  /** The columns the rows are grouped by, one per grouping element, in :find order. */
  int[] groupColumns() {
    return groupCols.clone();
  }

  /** Adds a row; {@code reused}: the caller reuses the array, so a kept row is copied. */
  void add(Object[] row, boolean reused) {
    add(row, reused, 1);
  }

  /** Adds {@code n} rows alike to {@code row} as far as the groups go (only when no rows are kept). */
  void add(Object[] row, boolean reused, long n) {
    rows += n;
    if (groupCols.length == 1) {
      Object v = row[groupCols[0]];
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
    Object key = groupCols.length == 0 ? List.of() : Tuple.key(row, groupCols);
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
    if (groupCols.length == 1) {
      recentKeys[recentNext] = row[groupCols[0]];
      recentGroups[recentNext] = g;
      recentNext = (recentNext + 1) % recentKeys.length;
    }
  }

  /**
   * The result tuples, one per group, in :find order. {@code aggregateArgs} holds, for each
   * :find element that is an aggregate (by position), the values of its leading arguments.
   */
  List<Object[]> finish(Object[][] aggregateArgs) {
    if (groupCols.length == 0 && rows == 0) {
      // Datomic answers an aggregate over nothing with no rows
      return new ArrayList<>();
    }
    int n = els.size();
    int[] valueCols = new int[n];
    IFn[] user = new IFn[n];
    for (int i = 0; i < n; i++) {
      if (els.get(i) instanceof Aggregate a) {
        valueCols[i] = Rel.col(vars, a.var());
        user[i] = a.isBuiltin() ? null : Functions.resolve(a.fn());
      }
    }
    List<Object[]> out = new ArrayList<>(groups.size());
    // a new loop, whose aggregates may be slow user functions: its ticks read the clock from
    // the first (the loops before may have left them reading it once in a thousand)
    deadline.check();
    for (Group g : groups.values()) {
      deadline.tick(out.size());
      Object[] res = new Object[n];
      int gi = 0;
      for (int i = 0; i < n; i++) {
        if (!(els.get(i) instanceof Aggregate a)) {
          res[i] = g.first[groupCols[gi++]];
        } else if (g.rows == null) {
          res[i] = g.count;
        } else {
          List<Object> bag = new ArrayList<>(g.rows.size());
          for (Object[] row : g.rows) {
            bag.add(row[valueCols[i]]);
          }
          res[i] = Aggregates.apply(a.fn(), user[i], aggregateArgs[i], bag);
        }
      }
      out.add(res);
    }
    return out;
  }
}
