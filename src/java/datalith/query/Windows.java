package datalith.query;

import clojure.lang.Numbers;
import datalith.db.Errors;
import datalith.query.parser.FindElement;
import datalith.query.parser.Window;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The window columns of an answer ({@link Window}), computed over its rows: the distinct rows of
 * the {@code :find} variables, the variables the windows read and the {@code :with} variables.
 * Each window sorts the rows' indexes once, by partition, then by its order's keys, then by the
 * row's values of those variables in turn (the :find element's, then the windows', then
 * {@code :with}'s; all in {@link Compare}'s order, so that partitions and peers are values the
 * order holds equal; columns of integers compared as longs, {@link RowOrder}), and walks them:
 * one sort per window, no per-row allocation but the result.
 * Stateless.
 */
final class Windows {
  private Windows() {}

  /** Whether any of {@code els} is a window. */
  static boolean any(List<FindElement> els) {
    for (FindElement el : els) {
      if (el instanceof Window) {
        return true;
      }
    }
    return false;
  }

  /**
   * Writes each window element's value for each row into {@code tuples} (one per row of
   * {@code rel}, in its order, the window columns holding placeholders), ties among rows broken
   * by their values of {@code columnOrder}, in turn: every window is
   * computed from {@code rel} before any is written, as {@code tuples} may be its rows. With
   * {@code distinct}, tuples that the rows' other variables made equal are kept once.
   */
  static List<Object[]> apply(List<FindElement> els, Rel rel, List<Variable> columnOrder,
      List<Object[]> tuples, boolean distinct, Deadline deadline) {
    Object[][] columns = new Object[els.size()][];
    int[] tieBreak = cols(rel, columnOrder);
    for (int k = 0; k < els.size(); k++) {
      if (els.get(k) instanceof Window w) {
        columns[k] = compute(w, rel, tieBreak, deadline);
      }
    }
    for (int k = 0; k < columns.length; k++) {
      if (columns[k] != null) {
        for (int i = 0; i < tuples.size(); i++) {
          tuples.get(i)[k] = columns[k][i];
        }
      }
    }
    if (!distinct) {
      return tuples;
    }
    Set<Tuple> seen = new HashSet<>();
    List<Object[]> out = new ArrayList<>(tuples.size());
    for (Object[] t : tuples) {
      if (seen.add(new Tuple(t))) {
        out.add(t);
      }
    }
    return out;
  }

  /**
   * The value of window {@code w} for each row of {@code rel}, by row index; rows equal on the
   * partition and the order are ordered by their values at {@code tieBreak}, in turn.
   */
  private static Object[] compute(Window w, Rel rel, int[] tieBreak, Deadline deadline) {
    List<Object[]> rows = rel.rows;
    int n = rows.size();
    int[] part = cols(rel, w.partitionBy());
    List<Variable> orderVars = new ArrayList<>();
    for (Window.OrderKey k : w.orderBy()) {
      orderVars.add(k.var());
    }
    int[] order = cols(rel, orderVars);
    boolean[] desc = new boolean[order.length];
    for (int i = 0; i < desc.length; i++) {
      desc[i] = w.orderBy().get(i).desc();
    }
    RowOrder byPart = new RowOrder(rows, part, null);
    RowOrder byOrder = new RowOrder(rows, order, desc);
    int[] idx = RowOrder.sort(n, byPart, byOrder, new RowOrder(rows, tieBreak, null));
    Object[] out = new Object[n];
    int argCol = w.arg() == null ? -1 : rel.col(w.arg());
    String fn = w.fn().getName();
    int start = 0;
    while (start < n) {
      deadline.tick(0);
      int end = start + 1;
      while (end < n && byPart.compare(idx[start], idx[end]) == 0) {
        end++;
      }
      partition(fn, w, rows, idx, start, end, byOrder, argCol, out);
      start = end;
    }
    return out;
  }

  /** Fills {@code out} for the rows {@code idx[start..end)}, one partition in window order. */
  private static void partition(String fn, Window w, List<Object[]> rows, int[] idx,
      int start, int end, RowOrder order, int argCol, Object[] out) {
    if (fn.equals("lag") || fn.equals("lead")) {
      long shift = fn.equals("lag") ? -w.offset() : w.offset();
      for (int i = start; i < end; i++) {
        long j = i + shift;
        out[idx[i]] = j >= start && j < end ? rows.get(idx[(int) j])[argCol] : null;
      }
      return;
    }
    Object acc = null;
    long count = 0;
    int dense = 0;
    int g = start;
    while (g < end) {
      // the peers of the row at g: equal on the order's keys (all the partition without an order)
      int h = g + 1;
      while (h < end && order.compare(idx[g], idx[h]) == 0) {
        h++;
      }
      dense++;
      for (int i = g; i < h; i++) {
        if (argCol >= 0) {
          acc = add(fn, acc, rows.get(idx[i])[argCol], w);
          count++;
        }
      }
      for (int i = g; i < h; i++) {
        out[idx[i]] = switch (fn) {
          case "row-number" -> (long) (i - start + 1);
          case "rank" -> (long) (g - start + 1);
          case "dense-rank" -> (long) dense;
          case "count" -> count;
          case "avg" -> ((Number) acc).doubleValue() / count;
          default -> acc; // sum, min, max
        };
      }
      g = h;
    }
  }

  /** {@code acc} with value {@code v} taken in by {@code fn} (null acc: nothing yet). */
  private static Object add(String fn, Object acc, Object v, Window w) {
    switch (fn) {
      case "min":
        return acc == null || Compare.compare(v, acc) < 0 ? v : acc;
      case "max":
        return acc == null || Compare.compare(v, acc) > 0 ? v : acc;
      case "sum":
      case "avg":
        if (!(v instanceof Number x)) {
          throw Errors.error("query/invalid-window", "Window " + w + " adds up numbers, got "
              + clojure.lang.RT.printString(v), "fn", w.fn(), "value", v);
        }
        try {
          return acc == null ? Numbers.add(0L, x) : Numbers.add(acc, x);
        } catch (ArithmeticException e) {
          throw Errors.errorWithCause(e, "query/invalid-window", "Window " + w
              + " cannot add up its values: " + e.getMessage(), "fn", w.fn());
        }
      default:
        return acc; // count counts apart
    }
  }

  private static int[] cols(Rel rel, List<Variable> vs) {
    int[] out = new int[vs.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = rel.col(vs.get(i));
    }
    return out;
  }
}
