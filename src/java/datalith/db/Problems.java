package datalith.db;

import clojure.lang.IPersistentMap;
import clojure.lang.IPersistentVector;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What {@link Verify} found wrong: every problem counted per check, the first {@code max} of
 * them kept as maps {@code {:index check :problem kind ...}}. One thread.
 */
final class Problems {
  private static final Keyword INDEX = Keyword.intern("index");
  private static final Keyword PROBLEM = Keyword.intern("problem");

  private final int max;
  private final List<IPersistentMap> listed = new ArrayList<>();
  private final Map<Keyword, Long> counts = new HashMap<>();
  private long total;

  Problems(int max) {
    this.max = max;
  }

  /**
   * Counts a problem of {@code check}; keeps it as a map when fewer than max are kept, its
   * further entries from {@code details} (alternating names without colon and values), which is
   * called only then.
   */
  void add(Keyword check, Keyword problem, Supplier<Object[]> details) {
    total++;
    counts.merge(check, 1L, Long::sum);
    if (listed.size() >= max) {
      return;
    }
    Object[] kvs = details.get();
    Object[] data = new Object[kvs.length + 4];
    data[0] = INDEX;
    data[1] = check;
    data[2] = PROBLEM;
    data[3] = problem;
    for (int i = 0; i < kvs.length; i += 2) {
      data[i + 4] = Keyword.intern((String) kvs[i]);
      data[i + 5] = kvs[i + 1];
    }
    listed.add(PersistentArrayMap.createAsIfByAssoc(data));
  }

  /** Problems of {@code check} counted so far. */
  long count(Keyword check) {
    return counts.getOrDefault(check, 0L);
  }

  long total() {
    return total;
  }

  /** The problems kept, in the order found. */
  IPersistentVector listed() {
    return PersistentVector.create(listed);
  }
}
