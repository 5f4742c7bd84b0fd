package datalith.query;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import datalith.db.Errors;
import datalith.query.parser.Order;
import datalith.query.parser.Query;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.OptionalLong;
import java.util.PriorityQueue;

/**
 * A query's slice ({@code :order-by}, {@code :limit}, {@code :offset}) applied to its answer's
 * tuples (one value per {@code :find} element, before pulls): sorted by the keys, ties broken by
 * the columns from the first, ascending, all in {@link Compare}'s order; then the offset skipped
 * and the limit kept. With a limit a bounded heap keeps the best {@code offset + limit} tuples
 * instead of sorting every one. Stateless.
 */
final class Slices {
  private static final Keyword K_LIMIT = Keyword.intern("limit");
  private static final Keyword K_OFFSET = Keyword.intern("offset");

  private Slices() {}

  /**
   * {@code query} cut further by the {@code :offset} and {@code :limit} of a query map
   * ({@code {:query q :args [...] :offset n :limit n}}, Datomic's arg-map): they take the answer
   * the query gives after its own slice, skip {@code :offset} tuples (default 0) and keep at
   * most {@code :limit} ({@code -1} or absent: all). The query itself when neither is given.
   *
   * @throws clojure.lang.ExceptionInfo {@code :query/invalid-option} when {@code :offset} is not
   *     a non-negative integer or {@code :limit} not one or -1
   */
  static Query withOptions(Query query, IPersistentMap opts) {
    Object limitOpt = opts == null ? null : opts.valAt(K_LIMIT);
    Object offsetOpt = opts == null ? null : opts.valAt(K_OFFSET);
    if (limitOpt == null && offsetOpt == null) {
      return query;
    }
    long offset = offsetOpt == null ? 0 : integer(offsetOpt, 0, K_OFFSET,
        ":offset is a non-negative integer: the number of results to skip");
    long limit = limitOpt == null ? -1 : integer(limitOpt, -1, K_LIMIT,
        ":limit is a non-negative integer, or -1 for no limit");
    Query.Slice own = query.slice();
    OptionalLong kept = own.limit();
    if (kept.isPresent()) {
      // the query's own limit, less what the option's offset skips of it
      kept = OptionalLong.of(Math.max(0, kept.getAsLong() - offset));
    }
    if (limit >= 0 && (kept.isEmpty() || limit < kept.getAsLong())) {
      kept = OptionalLong.of(limit);
    }
    long skipped = own.offset() > Long.MAX_VALUE - offset ? Long.MAX_VALUE : own.offset() + offset;
    return query.withSlice(new Query.Slice(own.order(), kept, skipped));
  }

  /** {@code x} as a long of at least {@code min}; throws {@code :query/invalid-option}. */
  private static long integer(Object x, long min, Keyword k, String what) {
    if (!(x instanceof Long || x instanceof Integer || x instanceof Short || x instanceof Byte)
        || ((Number) x).longValue() < min) {
      throw Errors.error("query/invalid-option", what, k.getName(), x);
    }
    return ((Number) x).longValue();
  }

  /** The order of {@code order}'s tuples, each {@code width} values wide; a total order. */
  static Comparator<Object[]> comparator(Order order, int width) {
    List<Order.Key> keys = order.keys();
    int[] cols = new int[keys.size()];
    boolean[] desc = new boolean[keys.size()];
    for (int i = 0; i < cols.length; i++) {
      cols[i] = keys.get(i).column();
      desc[i] = keys.get(i).desc();
    }
    return (a, b) -> {
      for (int i = 0; i < cols.length; i++) {
        int c = Compare.compare(a[cols[i]], b[cols[i]]);
        if (c != 0) {
          return desc[i] ? -c : c;
        }
      }
      for (int i = 0; i < width; i++) {
        int c = Compare.compare(a[i], b[i]);
        if (c != 0) {
          return c;
        }
      }
      return 0;
    };
  }

  /**
   * The tuples {@code slice} keeps of {@code tuples}, in its order when it has one (else in
   * theirs).
   */
  static List<Object[]> apply(Query.Slice slice, List<Object[]> tuples, int width,
      Deadline deadline) {
    if (slice.isAll()) {
      return tuples;
    }
    long reach = slice.reach();
    int n = tuples.size();
    List<Object[]> ordered;
    if (slice.order().isEmpty()) {
      ordered = tuples;
    } else {
      Comparator<Object[]> cmp = comparator(slice.order().get(), width);
      if (reach < n / 2) {
        ordered = best(tuples, (int) reach, cmp, deadline);
      } else {
        ordered = new ArrayList<>(tuples);
        ordered.sort(cmp);
      }
    }
    int from = (int) Math.min(slice.offset(), ordered.size());
    int to = (int) Math.min(reach, ordered.size());
    return ordered.subList(from, to);
  }

  /** The {@code k} least of {@code tuples} by {@code cmp}, in order: a heap of k, worst on top. */
  static List<Object[]> best(List<Object[]> tuples, int k, Comparator<Object[]> cmp,
      Deadline deadline) {
    if (k == 0) {
      return new ArrayList<>();
    }
    PriorityQueue<Object[]> heap = new PriorityQueue<>(k, cmp.reversed());
    for (Object[] t : tuples) {
      deadline.tick(0);
      if (heap.size() < k) {
        heap.add(t);
      } else if (cmp.compare(t, heap.peek()) < 0) {
        heap.poll();
        heap.add(t);
      }
    }
    List<Object[]> out = new ArrayList<>(heap);
    out.sort(cmp);
    return out;
  }
}
