package datalith.query.parser;

import java.util.List;

// order-by = ':order-by' (order-key+ | [order-key+])
// order-key = find-ref | [find-ref (':asc' | ':desc')]
// find-ref = variable | aggregate | window     ; a :find element, written as it is in :find
/**
 * A query's {@code :order-by}: the keys an answer's tuples are sorted by, the first key first.
 * Each key names a {@code :find} element by its column (a plain variable of {@code :find}, or an
 * aggregate or window written as in {@code :find}); values compare by the one order of query values
 * (numbers before keywords, as Datomic's comparisons). Tuples equal on every key are ordered by
 * their columns from the first, ascending, so that an ordered answer is one sequence, the same
 * on every run (an offset pages through it).
 */
public record Order(List<Key> keys) {
  public Order {
    keys = List.copyOf(keys);
  }

  /**
   * One key: the {@code :find} column it reads and whether it sorts descending.
   *
   * @param column the index of a :find element
   * @param desc true for {@code :desc}
   * @param ref the element the key names (a {@link Variable}, an {@link Aggregate} or a
   *     {@link Window})
   */
  public record Key(int column, boolean desc, Object ref) {}

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
