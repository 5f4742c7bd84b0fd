package datalith.db;

import datalith.store.Cursor;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeMap;

/** A cursor over a store cursor with an {@link Overlay}'s puts and tombstones laid on top. */
final class OverlayCursor implements Cursor {
  private final Cursor base;
  private final TreeMap<ByteBuffer, ByteBuffer> ov;
  private boolean baseValid;
  private Map.Entry<ByteBuffer, ByteBuffer> entry; // a live overlay entry, or null
  private boolean onOverlay;
  private boolean valid;
  private boolean forward = true; // direction of the last move

  OverlayCursor(Cursor base, TreeMap<ByteBuffer, ByteBuffer> ov) {
    this.base = base;
    this.ov = ov;
  }

  /** Whether the current entry comes from the overlay rather than the store. */
  boolean fromOverlay() {
    return onOverlay;
  }

  private Map.Entry<ByteBuffer, ByteBuffer> liveUp(Map.Entry<ByteBuffer, ByteBuffer> e) {
    while (e != null && e.getValue() == Overlay.TOMBSTONE) {
      e = ov.higherEntry(e.getKey());
    }
    return e;
  }

  private Map.Entry<ByteBuffer, ByteBuffer> liveDown(Map.Entry<ByteBuffer, ByteBuffer> e) {
    while (e != null && e.getValue() == Overlay.TOMBSTONE) {
      e = ov.lowerEntry(e.getKey());
    }
    return e;
  }

  /** Steps the base over keys the overlay shadows, in direction {@code forward}. */
  private void skipShadowed(boolean forward) {
    while (baseValid && ov.containsKey(base.key())) {
      baseValid = forward ? base.next() : base.prev();
    }
  }

  private boolean choose(boolean forward) {
    if (baseValid && entry != null) {
      int c = Overlay.compare(entry.getKey(), base.key());
      onOverlay = forward ? c < 0 : c > 0;
    } else {
      onOverlay = entry != null;
    }
    valid = baseValid || entry != null;
    this.forward = forward;
    return valid;
  }

  @Override
  public boolean seek(ByteBuffer key) {
    baseValid = base.seek(key);
    skipShadowed(true);
    entry = liveUp(ov.ceilingEntry(key));
    return choose(true);
  }

  @Override
  public boolean first() {
    baseValid = base.first();
    skipShadowed(true);
    entry = liveUp(ov.firstEntry());
    return choose(true);
  }

  @Override
  public boolean last() {
    baseValid = base.last();
    skipShadowed(false);
    entry = liveDown(ov.lastEntry());
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
    if (onOverlay) {
      entry = liveUp(ov.higherEntry(entry.getKey()));
    } else {
      baseValid = base.next();
    }
    skipShadowed(true);
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
      skipShadowed(false);
      entry = liveDown(ov.lowerEntry(at));
      return choose(false);
    }
    if (onOverlay) {
      entry = liveDown(ov.lowerEntry(entry.getKey()));
    } else {
      baseValid = base.prev();
    }
    skipShadowed(false);
    return choose(false);
  }

  private static ByteBuffer copyKey(ByteBuffer k) {
    ByteBuffer c = ByteBuffer.allocate(k.limit());
    c.put(0, k, 0, k.limit());
    return c;
  }

  @Override
  public ByteBuffer key() {
    return onOverlay ? entry.getKey().duplicate() : base.key();
  }

  @Override
  public ByteBuffer val() {
    return onOverlay ? entry.getValue().duplicate() : base.val();
  }

  @Override
  public void close() {
    base.close();
  }
}
