package datalith.store;

import java.nio.ByteBuffer;

/**
 * A cursor over a base cursor with writes laid on top, in key order: every key of {@code top}
 * (puts: its entry shadows the base's entry of the same key), and the base's keys that
 * {@code gone} (deleted keys, values ignored) does not hold. {@code top} and {@code gone} hold
 * no key in common. The three move together, as a merge join: a step of this cursor steps the
 * one it is on (both, on a key the two share), and steps {@code gone} only up to the base's
 * key, so each key of each is visited once in a scan; a change of direction seeks all three
 * around the current key. Key and value are the current cursor's, valid until the next move.
 * Used by {@link LayeredStore} and by {@code datalith.db}'s overlay of speculative writes.
 */
public final class MergedCursor implements Cursor {
  private final Cursor base;
  private final Cursor top;
  private final Cursor gone;
  private boolean baseValid;
  private boolean topValid;
  private boolean goneValid;
  private boolean forward = true; // direction of the last move
  private boolean onTop; // the current entry is top's
  private boolean shared; // top's current key is base's current key too
  private boolean valid;

  /** Takes the three cursors, which {@link #close} closes. */
  public MergedCursor(Cursor base, Cursor top, Cursor gone) {
    this.base = base;
    this.top = top;
    this.gone = gone;
  }

  /** Whether the current entry is one of {@code top}'s (a write) rather than the base's. */
  public boolean onTop() {
    return valid && onTop;
  }

  /** The base cursor. */
  Cursor base() {
    return base;
  }

  /** The cursor of the writes. */
  Cursor top() {
    return top;
  }

  /** The cursor of the deleted keys. */
  Cursor gone() {
    return gone;
  }

  static int compare(ByteBuffer a, ByteBuffer b) {
    return ReadOnlyBufferProxy.compareUnsigned(a, b);
  }

  /**
   * Moves the base past the keys {@code gone} holds, in the direction of the last move; keeps
   * {@code gone} at its first key not yet passed (after, or before when backward, the base's).
   */
  private void skipGone() {
    while (baseValid && goneValid) {
      int c = compare(gone.key(), base.key());
      if (c == 0) {
        baseValid = forward ? base.next() : base.prev();
      } else if (forward ? c < 0 : c > 0) {
        goneValid = forward ? gone.next() : gone.prev();
      } else {
        return;
      }
    }
  }

  private boolean choose() {
    skipGone();
    if (baseValid && topValid) {
      int c = compare(top.key(), base.key());
      shared = c == 0;
      onTop = forward ? c <= 0 : c >= 0;
    } else {
      shared = false;
      onTop = topValid;
    }
    valid = baseValid || topValid;
    return valid;
  }

  @Override
  public boolean seek(ByteBuffer key) {
    baseValid = base.seek(key);
    topValid = top.seek(key);
    goneValid = gone.seek(key);
    forward = true;
    return choose();
  }

  @Override
  public boolean first() {
    baseValid = base.first();
    topValid = top.first();
    goneValid = gone.first();
    forward = true;
    return choose();
  }

  @Override
  public boolean last() {
    baseValid = base.last();
    topValid = top.last();
    goneValid = gone.last();
    forward = false;
    return choose();
  }

  @Override
  public boolean next() {
    if (!valid) {
      return false;
    }
    if (!forward) { // the current key is live: a seek lands on it, then steps on
      seek(copy(key()));
    }
    step();
    return choose();
  }

  @Override
  public boolean prev() {
    if (!valid) {
      return false;
    }
    if (forward) {
      ByteBuffer at = copy(key());
      baseValid = base.seek(at) ? base.prev() : base.last();
      topValid = top.seek(at) ? top.prev() : top.last();
      goneValid = gone.seek(at) ? gone.prev() : gone.last();
      forward = false;
      return choose();
    }
    step();
    return choose();
  }

  /** Steps past the current key in the direction of the last move. */
  private void step() {
    if (onTop) {
      topValid = forward ? top.next() : top.prev();
      if (shared) {
        baseValid = forward ? base.next() : base.prev();
      }
    } else {
      baseValid = forward ? base.next() : base.prev();
    }
  }

  private static ByteBuffer copy(ByteBuffer k) {
    ByteBuffer c = ByteBuffer.allocate(k.remaining());
    c.put(0, k, k.position(), k.remaining());
    return c;
  }

  /**
   * {@inheritDoc} Passes the base's keys in bulk only when no write lies among them: on a base
   * key, moving forward, with neither {@code top}'s next key nor {@code gone}'s in the prefix
   * (the keys with a prefix are a run, so a write past the current key and outside the prefix
   * lies past the whole run).
   */
  @Override
  public long skipRun(ByteBuffer prefix) {
    if (!valid || !forward || onTop) {
      return 0;
    }
    if (topValid && hasPrefix(top.key(), prefix) || goneValid && hasPrefix(gone.key(), prefix)) {
      return 0;
    }
    return base.skipRun(prefix);
  }

  private static boolean hasPrefix(ByteBuffer key, ByteBuffer prefix) {
    return KeyPrefix.at(key, key.position(), key.remaining(), prefix);
  }

  /** {@inheritDoc} Warms the base's pages; the writes are in memory. */
  @Override
  public void warm(ByteBuffer[] keys, int n) {
    base.warm(keys, n);
  }

  /** {@inheritDoc} The base's hint: the writes on top are read whole. */
  @Override
  public boolean within(ByteBuffer prefix) {
    return base.within(prefix);
  }

  @Override
  public ByteBuffer key() {
    return onTop ? top.key() : base.key();
  }

  @Override
  public ByteBuffer val() {
    return onTop ? top.val() : base.val();
  }

  @Override
  public void close() {
    try {
      base.close();
    } finally {
      try {
        top.close();
      } finally {
        gone.close();
      }
    }
  }
}
