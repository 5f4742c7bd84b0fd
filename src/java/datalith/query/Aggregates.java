package datalith.query;

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

/** Datomic's aggregate functions over the bag of values of one group. */
final class Aggregates {
  private Aggregates() {}

  /**
   * Applies aggregate {@code name} (built-in) or {@code user} (a resolved user
   * function) with leading arguments {@code args} to {@code values}.
   */
  static Object apply(Symbol name, IFn user, Object[] args, List<Object> values) {
    if (user != null) {
      Object[] all = new Object[args.length + 1];
      System.arraycopy(args, 0, all, 0, args.length);
      all[args.length] = PersistentVector.create(values);
      return Functions.call(user, name, all);
    }
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
          sum = Numbers.add(sum, number(v, "sum"));
        }
        return sum;
      }
      case "avg": {
        if (values.isEmpty()) {
          return null;
        }
        Object sum = 0L;
        for (Object v : values) {
          sum = Numbers.add(sum, number(v, "avg"));
        }
        return ((Number) sum).doubleValue() / values.size(); // a double, as Datomic's avg
      }
      case "median": {
        List<Object> sorted = sorted(values);
        int n = sorted.size();
        if (n == 0) {
          return null;
        }
        if (n % 2 == 1) {
          return sorted.get(n / 2);
        }
        return Numbers.divide(Numbers.add(number(sorted.get(n / 2 - 1), "median"),
            number(sorted.get(n / 2), "median")), 2);
      }
      case "variance":
        return variance(values);
      case "stddev": {
        Object var = variance(values);
        return var == null ? null : Math.sqrt(((Number) var).doubleValue());
      }
      case "min":
      case "max":
        return args.length == 0 ? extreme(values, name.getName().equals("max"))
            : extremes(values, count(args[0], name), name.getName().equals("max"));
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
    if (!(n instanceof Number x) || x.longValue() < 1) {
      throw Errors.error("query/invalid-aggregate", name + " needs a positive count", "fn", name,
          "count", n);
    }
    return (int) Math.min(Integer.MAX_VALUE, x.longValue());
  }

  private static Number number(Object v, String fn) {
    if (!(v instanceof Number n)) {
      throw Errors.error("query/invalid-aggregate", fn + " needs numbers", "fn", fn, "value", v);
    }
    return n;
  }

  private static List<Object> distinct(List<Object> values) {
    LinkedHashSet<Tuple> seen = new LinkedHashSet<>();
    List<Object> out = new ArrayList<>();
    for (Object v : values) {
      if (seen.add(new Tuple(new Object[] {v}))) {
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

  private static Object variance(List<Object> values) {
    int n = values.size();
    if (n == 0) {
      return null;
    }
    double mean = 0;
    for (Object v : values) {
      mean += number(v, "variance").doubleValue();
    }
    mean /= n;
    double sq = 0;
    for (Object v : values) {
      double d = ((Number) v).doubleValue() - mean;
      sq += d * d;
    }
    return sq / n;
  }

  private static Object extreme(List<Object> values, boolean max) {
    Object best = null;
    for (Object v : values) {
      if (best == null || (max ? Compare.compare(v, best) > 0 : Compare.compare(v, best) < 0)) {
        best = v;
      }
    }
    return best;
  }

  private static Object extremes(List<Object> values, int n, boolean max) {
    List<Object> s = sorted(distinct(values));
    if (max) {
      Collections.reverse(s);
    }
    return PersistentVector.create(s.subList(0, Math.min(n, s.size())));
  }

  private static Object randomWithReplacement(List<Object> values, int n) {
    List<Object> out = new ArrayList<>(n);
    for (int i = 0; i < n && !values.isEmpty(); i++) {
      out.add(values.get(ThreadLocalRandom.current().nextInt(values.size())));
    }
    return PersistentVector.create(out);
  }
}
