package datalith.query;

import clojure.lang.ExceptionInfo;
import clojure.lang.IFn;
import clojure.lang.Numbers;
import clojure.lang.PersistentHashSet;
import clojure.lang.PersistentVector;
import clojure.lang.Symbol;
import datalith.db.Errors;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Datomic's aggregate functions over the values of one group. The values are a bag: one per
 * distinct row of the {@code :find} and {@code :with} variables, so a value repeats when the rows
 * differ in another variable. Every aggregate reads the bag as it is, duplicates included, except
 * {@code count-distinct}, {@code distinct} and {@code sample}, which draw on its distinct values.
 * Values are ordered by {@link Compare}. Result types (Datomic Local 1.0.291's):
 *
 * <ul>
 *   <li>{@code count}, {@code count-distinct}: a long;
 *   <li>{@code sum}: Clojure's {@code +} of the values (a long for longs, a double for doubles,
 *       a BigDecimal for BigDecimals);
 *   <li>{@code avg}, {@code variance} (population), {@code stddev}: a double;
 *   <li>{@code median}: the middle value of an odd count; of an even count, {@code (quot (+ a b)
 *       2)} of the two middle values, which keeps their type (1 and 2 give 1; 6.5 and 6.5 give
 *       6.0);
 *   <li>{@code min}, {@code max}: a value; {@code (min n ?x)}, {@code (max n ?x)}: a vector of the
 *       n smallest (ascending) or largest (descending) values, duplicates kept;
 *   <li>{@code distinct}: a set; {@code rand}: a value; {@code (rand n ?x)}: a vector of n values
 *       drawn with repeats; {@code (sample n ?x)}: a vector of at most n distinct values.
 * </ul>
 */
final class Aggregates {
  private Aggregates() {}

  /**
   * Applies aggregate {@code name} (built-in) or {@code user} (a resolved user
   * function) with leading arguments {@code args} to the bag {@code values}.
   *
   * @throws ExceptionInfo {@code :query/invalid-aggregate} when the values do not suit it
   */
  static Object apply(Symbol name, IFn user, Object[] args, List<Object> values) {
    if (user != null) {
      Object[] all = new Object[args.length + 1];
      System.arraycopy(args, 0, all, 0, args.length);
      all[args.length] = PersistentVector.create(values);
      return Functions.call(user, name, all);
    }
    try {
      return builtin(name, args, values);
    } catch (ArithmeticException | ClassCastException e) {
      throw Errors.errorWithCause(e, "query/invalid-aggregate", "Aggregate " + name
          + " cannot combine its values: " + e.getMessage(), "fn", name);
    }
  }

  private static Object builtin(Symbol name, Object[] args, List<Object> values) {
    switch (name.getName()) {
      case "count":
        return (long) values.size();
      case "count-distinct":
        return (long) distinct(values).size();
      case "distinct":
        return PersistentHashSet.create(distinct(values));
      case "sum": {
        Object sum = 0L;
        for (Object v : values) {
          sum = Numbers.add(sum, number(v, name));
        }
        return sum;
      }
      case "avg":
        return values.isEmpty() ? null : mean(values, name);
      case "median":
        return median(values, name);
      case "variance":
        return values.isEmpty() ? null : variance(values, name);
      case "stddev":
        return values.isEmpty() ? null : Math.sqrt(variance(values, name));
      case "min":
      case "max": {
        boolean max = name.getName().equals("max");
        return args.length == 0 ? extreme(values, max)
            : extremes(values, count(args[0], name), max);
      }
      case "rand":
        if (args.length == 0) {
          return values.isEmpty() ? null
              : values.get(ThreadLocalRandom.current().nextInt(values.size()));
        }
        return randomWithReplacement(values, count(args[0], name));
      case "sample": {
        List<Object> d = new ArrayList<>(distinct(values));
        Collections.shuffle(d, ThreadLocalRandom.current());
        return PersistentVector.create(d.subList(0, Math.min(d.size(), count(args[0], name))));
      }
      default:
        throw Errors.error("query/unknown-aggregate", "Unknown aggregate " + name, "fn", name);
    }
  }

  private static int count(Object n, Symbol name) {
    if (!(n instanceof Long || n instanceof Integer || n instanceof Short || n instanceof Byte)
        || ((Number) n).longValue() < 1) {
      throw Errors.error("query/invalid-aggregate", name + " needs a positive integer count, got "
          + clojure.lang.RT.printString(n), "fn", name, "count", n);
    }
    return (int) Math.min(Integer.MAX_VALUE, ((Number) n).longValue());
  }

  private static Number number(Object v, Symbol fn) {
    if (!(v instanceof Number n)) {
      throw Errors.error("query/invalid-aggregate", fn + " needs numbers, got "
          + clojure.lang.RT.printString(v), "fn", fn, "value", v);
    }
    return n;
  }

  private static List<Object> distinct(List<Object> values) {
    LinkedHashSet<Object> seen = new LinkedHashSet<>();
    List<Object> out = new ArrayList<>();
    for (Object v : values) {
      if (seen.add(Tuple.key(v))) {
        out.add(v);
      }
    }
    return out;
  }

  private static List<Object> sorted(List<Object> values) {
    List<Object> s = new ArrayList<>(values);
    s.sort(Compare::compare);
    return s;
  }

  private static double mean(List<Object> values, Symbol fn) {
    Object sum = 0L;
    for (Object v : values) {
      sum = Numbers.add(sum, number(v, fn));
    }
    return ((Number) sum).doubleValue() / values.size();
  }

  private static Object median(List<Object> values, Symbol fn) {
    int n = values.size();
    if (n == 0) {
      return null;
    }
    List<Object> s = sorted(values);
    if (n % 2 == 1) {
      return s.get(n / 2);
    }
    Number lo = number(s.get(n / 2 - 1), fn);
    Number hi = number(s.get(n / 2), fn);
    return Numbers.quotient(Numbers.add(lo, hi), 2L);
  }

  private static double variance(List<Object> values, Symbol fn) {
    double mean = mean(values, fn);
    double sq = 0;
    for (Object v : values) {
      double d = ((Number) v).doubleValue() - mean;
      sq += d * d;
    }
    return sq / values.size();
  }

  private static Object extreme(List<Object> values, boolean max) {
    Object best = null;
    boolean first = true;
    for (Object v : values) {
      int c = first ? 0 : Compare.compare(v, best);
      if (first || (max ? c > 0 : c < 0)) {
        best = v;
        first = false;
      }
    }
    return best;
  }

  private static Object extremes(List<Object> values, int n, boolean max) {
    List<Object> s = sorted(values);
    if (max) {
      Collections.reverse(s);
    }
    return PersistentVector.create(s.subList(0, Math.min(n, s.size())));
  }

  private static Object randomWithReplacement(List<Object> values, int n) {
    List<Object> out = new ArrayList<>(Math.min(n, 1024));
    for (int i = 0; i < n && !values.isEmpty(); i++) {
      out.add(values.get(ThreadLocalRandom.current().nextInt(values.size())));
    }
    return PersistentVector.create(out);
  }
}
