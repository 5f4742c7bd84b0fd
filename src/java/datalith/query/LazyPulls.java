package datalith.query;

import clojure.lang.ISeq;
import clojure.lang.RT;
import datalith.db.Db;
import datalith.db.Snapshot;
import datalith.pull.PullPattern;
import datalith.pull.Puller;
import java.util.Iterator;
import java.util.function.Function;

/**
 * The answer of {@code qseq}: the rows of a relation or collection find as a lazy sequence,
 * whose {@code (pull ?e pattern)} columns are pulled as the sequence is read (a chunk of rows
 * at a time), each row through a short read of its own.
 */
final class LazyPulls {
  private LazyPulls() {}

  /**
   * The lazy sequence of {@code tuples}, each shaped by {@code shape} once its pull columns are
   * pulled: {@code dbs[i]} and {@code patterns[i]} for a pull column i, nulls for the others.
   */
  static ISeq seq(Iterator<Object[]> rows, Db[] dbs, PullPattern[] patterns,
      Function<Object[], Object> shape) {
    return RT.chunkIteratorSeq(new Iterator<Object>() {
      @Override
      public boolean hasNext() {
        return rows.hasNext();
      }

      @Override
      public Object next() {
        Object[] t = rows.next().clone();
        for (int i = 0; i < t.length; i++) {
          if (patterns[i] != null) {
            try (Snapshot s = dbs[i].snapshot()) {
              t[i] = new Puller(dbs[i], s).pullOne(patterns[i], t[i]);
            }
          }
        }
        return shape.apply(t);
      }
    });
  }
}
