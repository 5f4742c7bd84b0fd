package datalith.db;

import datalith.store.Cursor;
import datalith.store.MergedCursor;
import java.nio.ByteBuffer;
import java.util.TreeMap;

/**
 * A cursor over a store cursor with an {@link Overlay}'s puts and tombstones laid on top: the
 * store's {@link MergedCursor} of the two halves of the overlay's map ({@link OverlayMapCursor}).
 * Its own type, so that a scan knows which keys come from memory ({@link Snapshot#inMemory}).
 */
final class OverlayCursor implements Cursor {
  private final MergedCursor merged;

  OverlayCursor(Cursor base, TreeMap<ByteBuffer, ByteBuffer> ov) {
    this.merged = new MergedCursor(base, new OverlayMapCursor(ov, false),
        new OverlayMapCursor(ov, true));
  }

  /** Whether the current entry comes from the overlay rather than the store. */
  boolean fromOverlay() {
    return merged.onTop();
  }

  @Override
  public boolean seek(ByteBuffer key) {
    return merged.seek(key);
  }

  @Override
  public boolean first() {
    return merged.first();
  }

  @Override
  public boolean last() {
    return merged.last();
  }

  @Override
  public boolean next() {
    return merged.next();
  }

  @Override
  public boolean prev() {
    return merged.prev();
  }

  @Override
  public long skipRun(ByteBuffer prefix) {
    return merged.skipRun(prefix);
  }

  @Override
  public void warm(ByteBuffer[] keys, int n) {
    merged.warm(keys, n);
  }

  @Override
  public boolean within(ByteBuffer prefix) {
    return merged.within(prefix);
  }

  @Override
  public ByteBuffer key() {
    return merged.key();
  }

  @Override
  public ByteBuffer val() {
    return merged.val();
  }

  @Override
  public void close() {
    merged.close();
  }
}
