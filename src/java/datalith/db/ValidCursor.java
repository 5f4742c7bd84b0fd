package datalith.db;

import datalith.store.Cursor;
import java.nio.ByteBuffer;

/**
 * A cursor over another with the keys of a value's valid-time lines ({@link ValidKeys}) laid on
 * top: a key shows when one of its intervals holds the view's instant. The keys are shared by
 * every valid-at view of the value, so a view costs nothing to make and a scan meets only the
 * keys in its range. A base key equal to a shown one is stepped over (the scan hides the
 * tracked pairs' stored datoms anyway, see {@link IndexScan}).
 */
final class ValidCursor implements Cursor {
  private final Cursor base;
  private final ValidKeys keys;
  private final long at;
  private boolean baseValid;
  private int pos = -1; // a key shown at the instant, or -1
  private boolean onValid;
  private boolean valid;
  private boolean forward = true; // direction of the last move

  ValidCursor(Cursor base, ValidKeys keys, long at) {
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

  /** The first position from {@code i} up whose key is shown, or -1. */
  private int shownUp(int i) {
    int n = keys.size();
    while (i < n && !keys.shown(i, at)) {
      i++;
    }
    return i < n ? i : -1;
  }

  /** The first position from {@code i} down whose key is shown, or -1. */
  private int shownDown(int i) {
    while (i >= 0 && !keys.shown(i, at)) {
      i--;
    }
    return i;
  }

  private boolean choose(boolean forward) {
    onValid = pos >= 0;
    while (baseValid && pos >= 0) {
      int c = keys.compareTo(pos, base.key());
      if (c == 0) {
        baseValid = forward ? base.next() : base.prev();
        continue;
      }
      onValid = forward ? c < 0 : c > 0;
      break;
    }
    valid = baseValid || pos >= 0;
    this.forward = forward;
    return valid;
  }

  /** {@inheritDoc} The base's hint: the lines are read whole. */
  @Override
  public boolean within(ByteBuffer prefix) {
    return base.within(prefix);
  }

  @Override
  public boolean seek(ByteBuffer key) {
    baseValid = base.seek(key);
    pos = shownUp(keys.ceiling(key));
    return choose(true);
  }

  /**
   * Moves the base cursor forward to its first key {@code >= key}, the lines where they were: for
   * a scan that passes base keys it knows are hidden ({@link IndexScan}), keeping the lines' keys
   * among them. {@code key} is at or after the current key.
   */
  boolean seekBase(ByteBuffer key) {
    if (!forward && valid) {
      seek(copyKey(key()));
    }
    baseValid = base.seek(key);
    return choose(true);
  }

  @Override
  public boolean first() {
    baseValid = base.first();
    pos = shownUp(0);
    return choose(true);
  }

  @Override
  public boolean last() {
    baseValid = base.last();
    pos = shownDown(keys.size() - 1);
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
      pos = shownUp(pos + 1);
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
      pos = shownDown(keys.ceiling(at) - 1);
      return choose(false);
    }
    if (onValid) {
      pos = shownDown(pos - 1);
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
    return onValid ? keys.views[pos].duplicate() : base.key();
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
