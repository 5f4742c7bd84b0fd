package datalith.query;

import clojure.lang.RT;
import datalith.db.Errors;
import datalith.query.parser.BindColl;
import datalith.query.parser.BindIgnore;
import datalith.query.parser.BindRel;
import datalith.query.parser.BindScalar;
import datalith.query.parser.BindTuple;
import datalith.query.parser.Binding;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Binding forms applied to values: the one way both an {@code :in} argument and a function's
 * result ({@code [(f ?x) binding]}) become rows. Bindings nest (a tuple's positions and a
 * collection's elements are bindings themselves), so a value gives the rows of every way it
 * destructures:
 *
 * <ul>
 *   <li>{@code ?x}: one row, the value itself (nil included);
 *   <li>{@code [b1 b2 ...]} (tuple): the value is a list, vector, array or map entry with at least
 *       as many elements (further ones are ignored); every combination of the positions' rows;
 *   <li>{@code [b ...]} (collection): the value is a collection (a map is the collection of its
 *       entries; nil is empty); the rows of each element together, none for an empty one;
 *   <li>{@code [[b1 b2 ...]]} (relation): a collection of tuples;
 *   <li>a binding with no variable, such as {@code _} or {@code [_ ...]}: one empty row,
 *       whatever the value (Datomic's {@code :in ?a [_ ...]} binds ?a for an empty collection).
 * </ul>
 *
 * A value that does not fit is {@code :query/binding}. Stateless; any thread.
 */
final class Bindings {
  private static final Object[] EMPTY_ROW = new Object[0];

  private Bindings() {}

  /**
   * The rows {@code value} gives under {@code b}, each holding the values of {@code b.vars()}
   * in that order. Rows may repeat. The list is new and owned by the caller.
   *
   * @throws clojure.lang.ExceptionInfo {@code :query/binding} when the value does not fit
   */
  static List<Object[]> rows(Binding b, Object value) {
    List<Object[]> out = new ArrayList<>();
    if (b.vars().isEmpty()) {
      out.add(EMPTY_ROW);
      return out;
    }
    add(b, value, b, out);
    return out;
  }

  /** The relation {@code value} gives under {@code b}: its distinct rows over {@code b.vars()}. */
  static Rel rel(Binding b, Object value) {
    List<Variable> vars = b.vars();
    if (vars.isEmpty()) {
      return Rel.unit();
    }
    return new Rel(vars.toArray(new Variable[0]), rows(b, value)).project(vars);
  }

  // adds the rows of value under b (which has variables) to out; whole: the binding as written
  private static void add(Binding b, Object value, Binding whole, List<Object[]> out) {
    if (b instanceof BindScalar) {
      out.add(new Object[] {value});
    } else if (b instanceof BindTuple t) {
      addTuple(t.elements(), value, whole, out);
    } else if (b instanceof BindRel r) {
      for (Object element : elements(value, whole)) {
        addTuple(r.elements(), element, whole, out);
      }
    } else {
      // a collection: BindIgnore has no variables, so never comes here
      Binding element = ((BindColl) b).element();
      for (Object x : elements(value, whole)) {
        if (element instanceof BindScalar) {
          out.add(new Object[] {x});
        } else {
          add(element, x, whole, out);
        }
      }
    }
  }

  private static void addTuple(List<Binding> positions, Object value, Binding whole,
      List<Object[]> out) {
    List<?> items = items(value, positions.size(), whole);
    if (flat(positions)) {
      // variables and _ only: one row, the common case
      Object[] row = new Object[width(positions)];
      int at = 0;
      for (int i = 0; i < positions.size(); i++) {
        if (positions.get(i) instanceof BindScalar) {
          row[at++] = items.get(i);
        }
      }
      out.add(row);
      return;
    }
    // every combination of the positions' rows, positions with variables in order
    List<Object[]> acc = Collections.singletonList(EMPTY_ROW);
    for (int i = 0; i < positions.size() && !acc.isEmpty(); i++) {
      Binding p = positions.get(i);
      if (p.vars().isEmpty()) {
        continue;
      }
      List<Object[]> sub = new ArrayList<>();
      add(p, items.get(i), whole, sub);
      List<Object[]> next = new ArrayList<>(acc.size() * sub.size());
      for (Object[] left : acc) {
        for (Object[] right : sub) {
          Object[] row = Arrays.copyOf(left, left.length + right.length);
          System.arraycopy(right, 0, row, left.length, right.length);
          next.add(row);
        }
      }
      acc = next;
    }
    out.addAll(acc);
  }

  private static boolean flat(List<Binding> positions) {
    for (Binding p : positions) {
      if (!(p instanceof BindScalar || p instanceof BindIgnore)) {
        return false;
      }
    }
    return true;
  }

  private static int width(List<Binding> positions) {
    int n = 0;
    for (Binding p : positions) {
      n += p instanceof BindScalar ? 1 : 0;
    }
    return n;
  }

  /** The elements of a collection value: a collection, a map's entries, an array; nil is empty. */
  private static Iterable<?> elements(Object value, Binding whole) {
    if (value == null) {
      return List.of();
    } else if (value instanceof Collection<?> c) {
      return c;
    } else if (value instanceof Map<?, ?> m) {
      return m.entrySet();
    } else if (value instanceof Object[] a) {
      return Arrays.asList(a);
    } else if (value instanceof Iterable<?> i && !(value instanceof String)) {
      return i;
    }
    throw misfit(value, whole, "expected a collection");
  }

  /** The positions of a tuple value, at least {@code n} of them. */
  private static List<?> items(Object value, int n, Binding whole) {
    List<?> items;
    if (value instanceof List<?> l) {
      items = l;
    } else if (value instanceof Object[] a) {
      items = Arrays.asList(a);
    } else if (value instanceof Map.Entry<?, ?> e) {
      items = Arrays.asList(e.getKey(), e.getValue());
    } else if (value instanceof Collection<?> c) {
      items = new ArrayList<>(c);
    } else {
      throw misfit(value, whole, "expected a tuple (a list, vector, array or map entry)");
    }
    if (items.size() < n) {
      throw misfit(value, whole, "a tuple of " + items.size() + " elements for " + n
          + " positions");
    }
    return items;
  }

  private static RuntimeException misfit(Object value, Binding whole, String why) {
    return Errors.error("query/binding", "Cannot bind " + RT.printString(value) + " to "
        + whole + ": " + why, "binding", whole.toString(), "value", value);
  }
}
