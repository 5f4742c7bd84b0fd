package datalith.query.parser;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.Symbol;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Parses what orders and cuts a query's answer: {@code :order-by}, {@code :limit} and
 * {@code :offset} ({@link Order}, {@link Query.Slice}), and the window elements of {@code :find}
 * ({@link Window}), whose orders read alike. Stateless; errors as {@link QueryParser}'s.
 */
final class SliceParser {
  static final Keyword OVER = Keyword.intern("over");
  private static final Keyword ASC = Keyword.intern("asc");
  private static final Keyword DESC = Keyword.intern("desc");
  private static final Keyword PARTITION_BY = Keyword.intern("partition-by");
  private static final Keyword ORDER_BY = Keyword.intern("order-by");

  private SliceParser() {}

  // limit = ':limit' n ; offset = ':offset' n ; n a non-negative integer
  static long count(List<Object> items, String section, Object data) {
    Object value = items.size() == 1 ? items.get(0) : null;
    if ((value instanceof Long || value instanceof Integer || value instanceof Short
        || value instanceof Byte) && ((Number) value).longValue() >= 0) {
      return ((Number) value).longValue();
    }
    Object shown = items.size() == 1 ? value : Syntax.vector(items);
    throw Syntax.error("parser/" + section, ":" + section + " is one non-negative integer, got "
        + Syntax.show(shown), data, section, shown);
  }

  // order-by = ':order-by' (order-key+ | [order-key+])
  static Order parseOrder(List<Object> items, FindSpec find, Map<Object, Object> forms) {
    List<Object> keys = items;
    if (isOrderKey(items)) {
      keys = List.of(Syntax.vector(items)); // {:order-by [?v :desc]}: one key
    } else if (items.size() == 1 && Syntax.isVector(items.get(0))
        && !isOrderKey(Syntax.items(items.get(0)))) {
      keys = Syntax.items(items.get(0)); // :order-by [[?v :desc] ?w]
    }
    if (keys.isEmpty()) {
      throw Syntax.error("parser/order-by", ":order-by needs at least one key", items);
    }
    List<Order.Key> out = new ArrayList<>();
    Set<Integer> seen = new HashSet<>();
    for (Object k : keys) {
      Order.Key key = orderKey(k, find, forms);
      if (!seen.add(key.column())) {
        throw Syntax.error("parser/order-by", ":order-by names " + Forms.print(key.ref())
            + " twice", k);
      }
      out.add(key);
    }
    return new Order(out);
  }

  /** Whether {@code items} read as one key {@code [find-ref :asc|:desc]}. */
  private static boolean isOrderKey(List<Object> items) {
    return items.size() == 2 && items.get(1) instanceof Keyword
        && (Syntax.isVariable(items.get(0)) || Syntax.isList(items.get(0)));
  }

  // order-key = find-ref | [find-ref (':asc' | ':desc')]
  private static Order.Key orderKey(Object k, FindSpec find, Map<Object, Object> forms) {
    Object ref = k;
    boolean desc = false;
    if (Syntax.isVector(k)) {
      List<Object> kv = Syntax.items(k);
      if (kv.size() != 2 || !(ASC.equals(kv.get(1)) || DESC.equals(kv.get(1)))) {
        throw Syntax.error("parser/order-by", "Cannot parse :order-by key " + Syntax.show(k)
            + ", expected ?var, (aggregate ?x), or either in [key :asc] or [key :desc]", k);
      }
      ref = kv.get(0);
      desc = DESC.equals(kv.get(1));
    }
    List<FindElement> els = find.elements();
    if (Syntax.isVariable(ref)) {
      Variable v = Variable.of((Symbol) ref);
      for (int i = 0; i < els.size(); i++) {
        if (els.get(i) instanceof FindVar fv && fv.var().equals(v)) {
          return new Order.Key(i, desc, v);
        }
      }
      throw Syntax.error("parser/order-by", ":order-by key " + Syntax.show(k) + " names " + v
          + ", which is not a plain variable of :find " + Syntax.show(Forms.of(find))
          + "; an answer is ordered by its own columns", k, "vars",
          Syntax.symbols(List.of(v)));
    }
    if (Syntax.isList(ref)) {
      for (int i = 0; i < els.size(); i++) {
        if ((els.get(i) instanceof Aggregate || els.get(i) instanceof Window)
            && ref.equals(forms.get(els.get(i)))) {
          return new Order.Key(i, desc, els.get(i));
        }
      }
    }
    throw Syntax.error("parser/order-by", ":order-by key " + Syntax.show(k) + " is not a"
        + " variable or aggregate of :find " + Syntax.show(Forms.of(find)), k);
  }

  // window = (window-fn variable? offset? ':over' {':partition-by' [variable+] ':order-by' [order-key+]})
  static Window parseWindow(Object form) {
    List<Object> items = Syntax.items(form);
    int over = items.indexOf(OVER);
    String shape = "(fn ?x :over {:partition-by [?g] :order-by [?t]}), (rank :over {...}) or"
        + " (lag ?x n :over {...})";
    if (over != items.size() - 2 || !Syntax.isPlainSymbol(items.get(0))
        || ((Symbol) items.get(0)).getNamespace() != null) {
      throw Syntax.error("parser/find", "Cannot parse window " + Syntax.show(form)
          + ", expected " + shape, form);
    }
    Symbol fn = (Symbol) items.get(0);
    String name = fn.getName();
    if (!Window.FUNCTIONS.contains(name)) {
      throw Syntax.error("parser/find", "Unknown window function " + fn + " in "
          + Syntax.show(form) + "; the window functions are " + new TreeSet<>(Window.FUNCTIONS),
          form);
    }
    List<Object> args = items.subList(1, over);
    boolean numbering = name.equals("rank") || name.equals("dense-rank")
        || name.equals("row-number");
    boolean shift = name.equals("lag") || name.equals("lead");
    boolean ok = numbering ? args.isEmpty()
        : !args.isEmpty() && Syntax.isVariable(args.get(0)) && (args.size() == 1
            || shift && args.size() == 2 && (args.get(1) instanceof Long
                || args.get(1) instanceof Integer) && ((Number) args.get(1)).longValue() > 0);
    if (!ok) {
      String expected = numbering ? "(" + name + " :over {...})" : shift
          ? "(" + name + " ?x :over {...}) or (" + name + " ?x n :over {...}), n a positive integer"
          : "(" + name + " ?x :over {...})";
      throw Syntax.error("parser/find", "Cannot parse window " + Syntax.show(form)
          + ", expected " + expected, form);
    }
    Variable arg = numbering ? null : Variable.of((Symbol) args.get(0));
    long offset = shift ? (args.size() == 2 ? ((Number) args.get(1)).longValue() : 1) : 0;
    Object spec = items.get(over + 1);
    if (!(spec instanceof IPersistentMap map)) {
      throw Syntax.error("parser/find", "The window of " + Syntax.show(form) + " is a map"
          + " {:partition-by [?g] :order-by [?t]}, got " + Syntax.show(spec), form);
    }
    List<Variable> partition = new ArrayList<>();
    List<Window.OrderKey> order = new ArrayList<>();
    for (Object o : map) {
      Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
      if (PARTITION_BY.equals(e.getKey()) && Syntax.isVector(e.getValue())) {
        for (Object v : Syntax.items(e.getValue())) {
          if (!Syntax.isVariable(v) || partition.contains(Variable.of((Symbol) v))) {
            throw Syntax.error("parser/find", "The :partition-by of " + Syntax.show(form)
                + " is a vector of distinct variables, got " + Syntax.show(e.getValue()), form);
          }
          partition.add(Variable.of((Symbol) v));
        }
      } else if (ORDER_BY.equals(e.getKey()) && Syntax.isVector(e.getValue())) {
        List<Object> keys = Syntax.items(e.getValue());
        for (Object k : isOrderKey(keys) ? List.of(e.getValue()) : keys) {
          order.add(windowKey(k, form, order));
        }
      } else {
        throw Syntax.error("parser/find", "The window of " + Syntax.show(form) + " takes"
            + " :partition-by [?g ...] and :order-by [?t [?u :desc] ...], got "
            + Syntax.show(e.getKey()) + " " + Syntax.show(e.getValue()), form);
      }
    }
    if (arg == null && partition.isEmpty() && order.isEmpty()) {
      throw Syntax.error("parser/find", "The window of " + Syntax.show(form) + " needs an"
          + " :order-by or a :partition-by to number its rows by", form);
    }
    return new Window(fn, arg, offset, partition, order);
  }

  // window order-key = variable | [variable (':asc' | ':desc')]
  private static Window.OrderKey windowKey(Object k, Object form, List<Window.OrderKey> seen) {
    Object ref = k;
    boolean desc = false;
    if (Syntax.isVector(k) && Syntax.items(k).size() == 2
        && (ASC.equals(Syntax.items(k).get(1)) || DESC.equals(Syntax.items(k).get(1)))) {
      ref = Syntax.items(k).get(0);
      desc = DESC.equals(Syntax.items(k).get(1));
    }
    if (!Syntax.isVariable(ref)) {
      throw Syntax.error("parser/find", "Cannot parse window order key " + Syntax.show(k)
          + " in " + Syntax.show(form) + ", expected ?var, [?var :asc] or [?var :desc]", form);
    }
    Variable v = Variable.of((Symbol) ref);
    for (Window.OrderKey o : seen) {
      if (o.var().equals(v)) {
        throw Syntax.error("parser/find", "The window of " + Syntax.show(form) + " orders by "
            + v + " twice", form);
      }
    }
    return new Window.OrderKey(v, desc);
  }
}
