package datalith.db;

import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * The valid-time lines ({@link ValidTime.Lines}) last replayed from one store, by the point t
 * they were replayed at (a value's basis t or its as-of point, the smaller): the datoms a value
 * of the store sees up to a t never change, so the values at one point (a value and its as-of
 * views, {@code (d/as-of db t)} made twice, the valid-at views of each) replay once. An entry
 * also names the schema it was replayed with (its attributes' cardinality), and serves only
 * values of that schema. The lines of a later point start from the latest earlier one's
 * ({@link #before}). Holds the last {@link #SIZE} points. Thread-safe.
 */
public final class ValidCache {
  /** How many points are kept: the newest value's, and a few as-of points. */
  static final int SIZE = 4;

  private record Entry(long point, Schema schema, ValidTime.Lines lines) {}

  private final ArrayDeque<Entry> entries = new ArrayDeque<>(); // most recently used first

  /** The lines replayed at {@code point} with {@code schema}, or null. */
  synchronized ValidTime.Lines get(long point, Schema schema) {
    for (Iterator<Entry> it = entries.iterator(); it.hasNext(); ) {
      Entry en = it.next();
      if (en.point == point && en.schema == schema) {
        it.remove();
        entries.addFirst(en);
        return en.lines;
      }
    }
    return null;
  }

  /**
   * The lines replayed with {@code schema} at the latest point before {@code point}, or null:
   * where a value at {@code point} starts from ({@link ValidTime#after}).
   */
  synchronized ValidTime.Lines before(long point, Schema schema) {
    ValidTime.Lines best = null;
    for (Entry en : entries) {
      if (en.schema == schema && en.point < point && (best == null || en.point > best.point())) {
        best = en.lines;
      }
    }
    return best;
  }

  /** Keeps {@code lines}, replayed at {@code point} with {@code schema}. */
  synchronized void put(long point, Schema schema, ValidTime.Lines lines) {
    entries.removeIf(en -> en.point == point && en.schema == schema);
    entries.addFirst(new Entry(point, schema, lines));
    while (entries.size() > SIZE) {
      entries.removeLast();
    }
  }
}
