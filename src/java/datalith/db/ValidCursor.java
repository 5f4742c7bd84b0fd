package datalith.db;

import datalith.store.Cursor;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeMap;

/**
 * A cursor over another with the keys of a value's valid-time lines ({@link ValidTime.Lines})
 * laid on top: a key shows when one of its intervals holds the view's instant. The keys are
 * shared by every valid-at view of the value, so a view costs nothing to make and a scan meets
 * only the keys in its range. A base key equal to a shown one is stepped over (the scan hides
 * the tracked pairs' stored datoms anyway, see {@link IndexScan}).
 */
final class ValidCursor implements Cursor {
  private final Cursor base;
  /** Key -> intervals {@code [from0, to0, from1, to1, ...]} (ms, to exclusive). */
  private final TreeMap<ByteBuffer, long[]> keys;
  private final long at;
  private boolean baseValid;
  private Map.Entry<ByteBuffer, long[]> entry; // a key shown at the instant, or null
  private boolean onValid;
  private boolean valid;
  private boolean forward = true; // direction of the last move

  ValidCursor(Cursor base, TreeMap<ByteBuffer, long[]> keys, long at) {
    this.base = base;
    this.keys = keys;
    this.at = at;
  }

  /** Whether the current key is one of the valid-time lines'. */
  boolean onValid() {
    return onValid;
  }

  /** Whether the current key comes from memory: the lines or a {@code with} overlay. */
  boolean inMemory() {
    return onValid || base instanceof OverlayCursor oc && oc.fromOverlay();
  }

  private boolean shown(long[] intervals) {
    for (int i = 0; i < intervals.length; i += 2) {
      if (intervals[i] <= at && at < intervals[i + 1]) {
        return true;
      }
    }
    return false;
  }

  private Map.Entry<ByteBuffer, long[]> shownUp(Map.Entry<ByteBuffer, long[]> e) {
    while (e != null && !shown(e.getValue())) {
      e = keys.higherEntry(e.getKey());
    }
    return e;
  }

  private Map.Entry<ByteBuffer, long[]> shownDown(Map.Entry<ByteBuffer, long[]> e) {
    while (e != null && !shown(e.getValue())) {
      e = keys.lowerEntry(e.getKey());
    }
    return e;
  }

  private boolean choose(boolean forward) {
    onValid = entry != null;
    while (baseValid && entry != null) {
      int c = Overlay.compare(entry.getKey(), base.key());
      if (c == 0) {
        baseValid = forward ? base.next() : base.prev();
        continue;
      }
      onValid = forward ? c < 0 : c > 0;
      break;
    }
    valid = baseValid || entry != null;
    this.forward = forward;
    return valid;
  }

  @Override
  public boolean seek(ByteBuffer key) {
    baseValid = base.seek(key);
    entry = shownUp(keys.ceilingEntry(key));
    return choose(true);
  }

  @Override
  public boolean first() {
    baseValid = base.first();
    entry = shownUp(keys.firstEntry());
    return choose(true);
  }

  @Override
  public boolean last() {
    baseValid = base.last();
    entry = shownDown(keys.lastEntry());
    return choose(false);
  }

  @Override
  public boolean next() {
    if (!valid) {
      return false;
    }
    if (!forward) {
      ByteBuffer at = copyKey(key());
      seek(at);
      return valid && Overlay.compare(key(), at) == 0 ? next() : valid;
    }
    if (onValid) {
      entry = shownUp(keys.higherEntry(entry.getKey()));
    } else {
      baseValid = base.next();
    }
    return choose(true);
  }

  @Override
  public boolean prev() {
    if (!valid) {
      return false;
    }
    if (forward) {
      ByteBuffer at = copyKey(key());
      baseValid = base.seek(at) ? base.prev() : base.last();
      entry = shownDown(keys.lowerEntry(at));
      return choose(false);
    }
    if (onValid) {
      entry = shownDown(keys.lowerEntry(entry.getKey()));
    } else {
      baseValid = base.prev();
    }
    return choose(false);
  }

  private static ByteBuffer copyKey(ByteBuffer k) {
    ByteBuffer c = ByteBuffer.allocate(k.limit());
    c.put(0, k, 0, k.limit());
    return c;
  }

  @Override
  public ByteBuffer key() {
    return onValid ? entry.getKey().duplicate() : base.key();
  }

  @Override
  public ByteBuffer val() {
    return onValid ? ValidTime.MARK.duplicate() : base.val();
  }

  @Override
  public void close() {
    base.close();
  }
}
