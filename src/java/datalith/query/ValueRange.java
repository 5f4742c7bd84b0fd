package datalith.query;

/**
 * A value range on a data pattern's value position ({@link DbPattern}), pushed into an AVET scan;
 * a null bound is open. Made by {@link Planner#rangeFor} from the comparisons on the value's
 * variable, and by {@link OrderedWalk} for each chunk of its walk.
 */
final class ValueRange {
  final Object lower;
  final boolean lowerInclusive;
  final Object upper;
  final boolean upperInclusive;

  ValueRange(Object lower, boolean lowerInclusive, Object upper, boolean upperInclusive) {
    this.lower = lower;
    this.lowerInclusive = lowerInclusive;
    this.upper = upper;
    this.upperInclusive = upperInclusive;
  }

  boolean contains(Object v) {
    if (lower != null) {
      int c = Compare.compare(v, lower);
      if (c < 0 || c == 0 && !lowerInclusive) {
        return false;
      }
    }
    if (upper != null) {
      int c = Compare.compare(v, upper);
      if (c > 0 || c == 0 && !upperInclusive) {
        return false;
      }
    }
    return true;
  }
}
