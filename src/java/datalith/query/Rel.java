package datalith.query;

import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A relation: rows of values over a list of distinct variables. Rows are
 * {@code Object[]} in column order; a relation built by this package holds no
 * duplicate rows unless said otherwise.
 */
final class Rel {
  final Variable[] vars;
  final List<Object[]> rows;

  Rel(Variable[] vars, List<Object[]> rows) {
    this.vars = vars;
    this.rows = rows;
  }

  /** The relation with one empty row: the identity of joins. */
  static Rel unit() {
    List<Object[]> rows = new ArrayList<>(1);
    rows.add(new Object[0]);
    return new Rel(new Variable[0], rows);
  }

  int col(Variable v) {
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

  /** Distinct rows of the given variables (all of which this relation has). */
  Rel project(List<Variable> vs) {
    int[] cols = cols(vs);
    Set<Tuple> seen = new HashSet<>();
    List<Object[]> out = new ArrayList<>();
    for (Object[] row : rows) {
      Tuple t = Tuple.of(row, cols);
      if (seen.add(t)) {
        out.add(t.vals);
      }
    }
    return new Rel(vs.toArray(new Variable[0]), out);
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
    List<Object[]> out = new ArrayList<>();
    if (shared.isEmpty()) {
      for (Object[] ra : a.rows) {
        deadline.check();
        for (Object[] rb : b.rows) {
          out.add(concat(ra, rb, bExtra));
        }
      }
      return new Rel(outVars, out);
    }
    int[] aKey = a.cols(shared);
    int[] bKey = b.cols(shared);
    boolean buildA = a.rows.size() < b.rows.size();
    Map<Tuple, List<Object[]>> table = new HashMap<>();
    for (Object[] r : buildA ? a.rows : b.rows) {
      table.computeIfAbsent(Tuple.of(r, buildA ? aKey : bKey), k -> new ArrayList<>(2)).add(r);
    }
    int n = 0;
    for (Object[] probe : buildA ? b.rows : a.rows) {
      if ((++n & 4095) == 0) {
        deadline.check();
      }
      List<Object[]> matches = table.get(Tuple.of(probe, buildA ? bKey : aKey));
      if (matches == null) {
        continue;
      }
      for (Object[] m : matches) {
        out.add(buildA ? concat(m, probe, bExtra) : concat(probe, m, bExtra));
      }
    }
    return new Rel(outVars, out);
  }

  static Object[] concat(Object[] a, Object[] b, int[] bCols) {
    Object[] r = new Object[a.length + bCols.length];
    System.arraycopy(a, 0, r, 0, a.length);
    for (int i = 0; i < bCols.length; i++) {
      r[a.length + i] = b[bCols[i]];
    }
    return r;
  }

  /** Rows of this relation whose values at {@code vs} are (keep) or are not (drop) in {@code keys}. */
  Rel semiJoin(List<Variable> vs, Collection<Tuple> keys, boolean keep) {
    Set<Tuple> set = keys instanceof Set<Tuple> s ? s : new HashSet<>(keys);
    int[] cols = cols(vs);
    List<Object[]> out = new ArrayList<>();
    for (Object[] row : rows) {
      if (set.contains(Tuple.of(row, cols)) == keep) {
        out.add(row);
      }
    }
    return new Rel(vars, out);
  }
}
