package datalith.db;

import datalith.store.Cursor;
import java.nio.ByteBuffer;

/**
 * How a restarted {@link IndexScan}'s cursors reach its new prefix: by a few steps forward
 * where the prefixes follow closely (a join looking up ascending ids), else by a seek; it stops
 * trying steps where they rarely reach the prefix. One scan's; one thread.
 */
final class ScanRestarts {
  private static final int MAX_STEPS = 16;
  private final ScanRange range;
  private int stepHits; // restarts that found their first key by a few steps forward
  private int stepMisses; // restarts that stepped and still had to seek
  private boolean stepping = true; // whether a restart may step before it seeks

  ScanRestarts(ScanRange range) {
    this.range = range;
  }

  /** Makes every later {@link #reposition} seek at once, without first stepping forward. */
  void seekAlways() {
    stepping = false;
  }

  /** Positions {@code c} at its first key >= the prefix {@code p}; whether there is one. */
  boolean reposition(Cursor c, boolean valid, boolean forward, ByteBuffer p) {
    if (!valid) {
      return forward ? false : c.seek(p);
    }
    if (range.compareToPrefix(c.key()) >= 0) {
      return forward || c.seek(p);
    }
    // Before p: when p's keys (or the keys after them) follow closely, as in a join looking up
    // ascending ids, the next key is the first one >= p. Stops trying when that rarely works.
    if (stepping && (stepMisses < 64 || stepHits >= stepMisses)) {
      // a step costs a fraction of a seek, which descends the tree and lands on a cold page
      for (int i = 0; i < MAX_STEPS; i++) {
        if (!c.next()) {
          stepHits++;
          return false;
        }
        if (range.compareToPrefix(c.key()) >= 0) {
          stepHits++;
          return true;
        }
      }
      stepMisses++;
    }
    return c.seek(p);
  }
}
