package datalith.query;

import datalith.db.LongMap;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A relation: rows of values over a list of distinct variables. Rows are
 * {@code Object[]} in column order. Rows may repeat unless {@link #distinct}
 * says they do not; projections remove repeats, and skip that work when the
 * relation is known to be distinct.
 */
final class Rel {
  final Variable[] vars;
  final List<Object[]> rows;
  /** True when no two rows are equal (scans of whole datoms, joins and filters of such). */
  final boolean distinct;

  Rel(Variable[] vars, List<Object[]> rows) {
    this(vars, rows, false);
  }

  Rel(Variable[] vars, List<Object[]> rows, boolean distinct) {
    this.vars = vars;
    this.rows = rows;
    this.distinct = distinct;
  }

  /** The rows {@code rows}, a subset of this relation's, over the same variables. */
  Rel filtered(List<Object[]> rows) {
    return new Rel(vars, rows, distinct);
  }

  /**
   * The rows of a one-column relation of entity ids, held as longs: a hash join that only
   * filters its scan by them ({@link IdSet}) reads the ids without a row or a box for each. Any
   * other use makes the rows, once.
   */
  static final class IdRows extends java.util.AbstractList<Object[]> implements java.util.RandomAccess {
    private final long[] ids;
    private final int size;
    private Object[][] made; // the rows, once asked for

    IdRows(long[] ids, int size) {
      this.ids = ids;
      this.size = size;
    }

    /** The ids: the first {@link #size()} longs; not to be changed. */
    long[] ids() {
      return ids;
    }

    @Override
    public int size() {
      return size;
    }

    @Override
    public Object[] get(int i) {
      Object[][] m = made;
      if (m == null) {
        m = new Object[size][];
        for (int j = 0; j < size; j++) {
          m[j] = new Object[] {ids[j]};
        }
        made = m;
      }
      return m[java.util.Objects.checkIndex(i, size)];
    }
  }

  /** The relation with one empty row: the identity of joins. */
  static Rel unit() {
    List<Object[]> rows = new ArrayList<>(1);
    rows.add(new Object[0]);
    return new Rel(new Variable[0], rows, true);
  }

  int col(Variable v) {
    return col(vars, v);
  }

  /** The column of {@code v} among {@code vars} (variables are interned: identity), else -1. */
  static int col(Variable[] vars, Variable v) {
    for (int i = 0; i < vars.length; i++) {
      if (vars[i] == v) {
        return i;
      }
    }
    return -1;
  }

  boolean has(Variable v) {
    return col(v) >= 0;
  }

  int[] cols(List<Variable> vs) {
    int[] out = new int[vs.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = col(vs.get(i));
    }
    return out;
  }

  /** Distinct rows of the given distinct variables (all of which this relation has). */
  Rel project(List<Variable> vs) {
    int[] cols = cols(vs);
    Variable[] outVars = vs.toArray(new Variable[0]);
    if (rows instanceof IdRows idRows && !distinct && cols.length == 1) {
      // entity ids stay longs: sorted, each kept once
      long[] ids = java.util.Arrays.copyOf(idRows.ids(), idRows.size());
      java.util.Arrays.sort(ids);
      int n = 0;
      for (int i = 0; i < ids.length; i++) {
        if (n == 0 || ids[i] != ids[n - 1]) {
          ids[n++] = ids[i];
        }
      }
      return new Rel(outVars, new IdRows(ids, n), true);
    }
    if (distinct && cols.length == vars.length) {
      // every column, maybe reordered: the rows are already distinct
      boolean same = true;
      for (int i = 0; i < cols.length; i++) {
        same &= cols[i] == i;
      }
      if (same) {
        return this;
      }
      List<Object[]> out = new ArrayList<>(rows.size());
      for (Object[] row : rows) {
        out.add(values(row, cols));
      }
      return new Rel(outVars, out, true);
    }
    List<Object[]> out = new ArrayList<>(rows.size());
    if (rows.size() <= 1) {
      // one row is distinct (an input's scalar, a point query's answer): no set to build
      for (Object[] row : rows) {
        out.add(values(row, cols));
      }
      return new Rel(outVars, out, true);
    }
    Set<Object> seen = new HashSet<>(Math.max(16, rows.size() * 4 / 3 + 1));
    for (Object[] row : rows) {
      if (seen.add(Tuple.key(row, cols))) {
        out.add(values(row, cols));
      }
    }
    return new Rel(outVars, out, true);
  }

  static Object[] values(Object[] row, int[] cols) {
    Object[] out = new Object[cols.length];
    for (int i = 0; i < cols.length; i++) {
      out[i] = row[cols[i]];
    }
    return out;
  }

  /** The natural join: a hash join on shared variables, a product when there are none. */
  static Rel join(Rel a, Rel b, Deadline deadline) {
    List<Variable> shared = new ArrayList<>();
    for (Variable v : a.vars) {
      if (b.has(v)) {
        shared.add(v);
      }
    }
    List<Variable> bOnly = new ArrayList<>();
    for (Variable v : b.vars) {
      if (!a.has(v)) {
        bOnly.add(v);
      }
    }
    Variable[] outVars = new Variable[a.vars.length + bOnly.size()];
    System.arraycopy(a.vars, 0, outVars, 0, a.vars.length);
    for (int i = 0; i < bOnly.size(); i++) {
      outVars[a.vars.length + i] = bOnly.get(i);
    }
    int[] bExtra = b.cols(bOnly);
    boolean distinct = a.distinct && b.distinct;
    List<Object[]> out = new ArrayList<>();
    if (shared.isEmpty()) {
      for (Object[] ra : a.rows) {
        for (Object[] rb : b.rows) {
          out.add(concat(ra, rb, bExtra));
          deadline.tick(out.size());
        }
      }
      return new Rel(outVars, out, distinct);
    }
    int[] aKey = a.cols(shared);
    int[] bKey = b.cols(shared);
    boolean buildA = a.rows.size() < b.rows.size();
    List<Object[]> build = buildA ? a.rows : b.rows;
    int[] buildKey = buildA ? aKey : bKey;
    // key -> its one row (Object[]) or its rows (RowList); one column of longs (entity ids, most
    // often) is hashed as primitive longs
    LongMap<Object> longTable = buildKey.length == 1 ? longTable(build, buildKey[0]) : null;
    Map<Object, Object> table = null;
    if (longTable == null) {
      table = new HashMap<>(Math.max(16, build.size() * 4 / 3 + 1));
      for (Object[] r : build) {
        table.merge(Tuple.key(r, buildKey), r, Rel::addRow);
      }
    }
    int[] probeKey = buildA ? bKey : aKey;
    for (Object[] probe : buildA ? b.rows : a.rows) {
      deadline.tick(out.size());
      Object matches;
      if (longTable != null) {
        // only a long key can equal one of the table's
        matches = Tuple.key(probe[probeKey[0]]) instanceof Long k ? longTable.get(k) : null;
      } else {
        matches = table.get(Tuple.key(probe, probeKey));
      }
      if (matches == null) {
        continue;
      }
      if (matches instanceof Object[] m) {
        out.add(buildA ? concat(m, probe, bExtra) : concat(probe, m, bExtra));
      } else {
        for (Object[] m : (RowList) matches) {
          out.add(buildA ? concat(m, probe, bExtra) : concat(probe, m, bExtra));
          deadline.tick(out.size());
        }
      }
    }
    return new Rel(outVars, out, distinct);
  }

  /**
   * The rows of {@code rows} by their value at {@code col}, one row (Object[]) or a
   * {@link RowList} per key, when every such value's key ({@link Tuple#key(Object)}) is a long
   * other than Long.MIN_VALUE (the map's empty mark); else null.
   */
  static LongMap<Object> longTable(List<Object[]> rows, int col) {
    LongMap<Object> table = new LongMap<>(rows.size());
    for (Object[] row : rows) {
      if (!(Tuple.key(row[col]) instanceof Long k) || k == Long.MIN_VALUE) {
        return null;
      }
      Object old = table.get(k);
      table.put(k, old == null ? row : addRow(old, row));
    }
    return table;
  }

  /** Rows sharing a hash key, in a map whose lone rows are stored bare. */
  static final class RowList extends ArrayList<Object[]> {
    RowList(Object[] a, Object[] b) {
      super(4);
      add(a);
      add(b);
    }
  }

  /** Merges row(s) {@code more} into the row(s) {@code old} held under one key. */
  static Object addRow(Object old, Object more) {
    if (old instanceof RowList list) {
      list.add((Object[]) more);
      return list;
    }
    return new RowList((Object[]) old, (Object[]) more);
  }

  static Object[] concat(Object[] a, Object[] b, int[] bCols) {
    Object[] r = new Object[a.length + bCols.length];
    System.arraycopy(a, 0, r, 0, a.length);
    for (int i = 0; i < bCols.length; i++) {
      r[a.length + i] = b[bCols[i]];
    }
    return r;
  }

  /**
   * Rows of this relation whose values at {@code vs} are (keep) or are not (drop)
   * in {@code keys}, a set of {@link Tuple#key(Object[], int[])} keys over {@code vs}.
   */
  Rel semiJoin(List<Variable> vs, Set<Object> keys, boolean keep) {
    int[] cols = cols(vs);
    List<Object[]> out = new ArrayList<>();
    for (Object[] row : rows) {
      if (keys.contains(Tuple.key(row, cols)) == keep) {
        out.add(row);
      }
    }
    return filtered(out);
  }
}
