package datalith.query.parser;

import clojure.lang.Symbol;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

// window = (window-fn variable? offset? ':over' {':partition-by' [variable+]? ':order-by' [order-key+]?})
// window-fn = 'sum' | 'count' | 'min' | 'max' | 'avg' | 'rank' | 'dense-rank' | 'row-number' | 'lag' | 'lead'
/**
 * A window column such as {@code (sum ?x :over {:partition-by [?g] :order-by [?t]})}: for each
 * row of the answer, {@code fn} over the rows of its partition (those equal on
 * {@code partitionBy}; every row when empty), taken in the window's order ({@code orderBy}, ties
 * by the row's columns). {@code sum}, {@code count}, {@code min}, {@code max} and {@code avg}
 * read {@code arg} over the rows up to the current one and its peers (equal on the order's keys)
 * when the window has an order, else over the whole partition; {@code rank} (1 + the rows
 * before the row's peers), {@code dense-rank} (1 + the distinct keys before the row's) and
 * {@code row-number} number the rows; {@code lag} and {@code lead} read {@code arg} of the row
 * {@code offset} rows before or after, nil when there is none.
 *
 * @param fn the function's name
 * @param arg the variable read, or null for rank, dense-rank and row-number
 * @param offset lag's and lead's distance (1 when not written); 0 for the others
 * @param partitionBy the partition's variables, distinct
 * @param orderBy the order's keys, each a variable and a direction
 */
public record Window(Symbol fn, Variable arg, long offset, List<Variable> partitionBy,
    List<OrderKey> orderBy) implements FindElement {
  /** Names of the window functions. */
  public static final Set<String> FUNCTIONS = Set.of("sum", "count", "min", "max", "avg",
      "rank", "dense-rank", "row-number", "lag", "lead");

  /** A key of the window's order. */
  public record OrderKey(Variable var, boolean desc) {}

  public Window {
    partitionBy = List.copyOf(partitionBy);
    orderBy = List.copyOf(orderBy);
  }

  /** The variable the column is computed from: its argument, else its first order or partition variable. */
  @Override
  public Variable var() {
    return arg != null ? arg : !orderBy.isEmpty() ? orderBy.get(0).var() : partitionBy.get(0);
  }

  /** Every variable the window reads: argument, partition and order, in that order. */
  public Set<Variable> vars() {
    Set<Variable> out = new LinkedHashSet<>();
    if (arg != null) {
      out.add(arg);
    }
    out.addAll(partitionBy);
    List<Variable> order = new ArrayList<>();
    for (OrderKey k : orderBy) {
      order.add(k.var());
    }
    out.addAll(order);
    return out;
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
