package datalith.db;

import datalith.store.Cursor;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeMap;

/**
 * One half of an {@link Overlay}'s map of a sub-database as a cursor: its puts, or its
 * tombstones (the two a {@link datalith.store.MergedCursor} lays over a store cursor). Keys and
 * values are duplicates of the map's read-only buffers, at position 0.
 */
final class OverlayMapCursor implements Cursor {
  private final TreeMap<ByteBuffer, ByteBuffer> map;
  private final boolean tombstones; // shows the tombstones, else the puts
  private Map.Entry<ByteBuffer, ByteBuffer> at; // the current entry, null when not positioned

  OverlayMapCursor(TreeMap<ByteBuffer, ByteBuffer> map, boolean tombstones) {
    this.map = map;
    this.tombstones = tombstones;
  }

  private boolean shown(Map.Entry<ByteBuffer, ByteBuffer> e) {
    return (e.getValue() == Overlay.TOMBSTONE) == tombstones;
  }

  /** Lands on {@code e} or the first shown entry after it. */
  private boolean up(Map.Entry<ByteBuffer, ByteBuffer> e) {
    while (e != null && !shown(e)) {
      e = map.higherEntry(e.getKey());
    }
    at = e;
    return e != null;
  }

  /** Lands on {@code e} or the last shown entry before it. */
  private boolean down(Map.Entry<ByteBuffer, ByteBuffer> e) {
    while (e != null && !shown(e)) {
      e = map.lowerEntry(e.getKey());
    }
    at = e;
    return e != null;
  }

  @Override
  public boolean seek(ByteBuffer key) {
    return up(map.ceilingEntry(key));
  }

  @Override
  public boolean first() {
    return up(map.firstEntry());
  }

  @Override
  public boolean last() {
    return down(map.lastEntry());
  }

  @Override
  public boolean next() {
    return at != null && up(map.higherEntry(at.getKey()));
  }

  @Override
  public boolean prev() {
    return at != null && down(map.lowerEntry(at.getKey()));
  }

  @Override
  public ByteBuffer key() {
    return at.getKey().duplicate();
  }

  @Override
  public ByteBuffer val() {
    return at.getValue().duplicate();
  }

  @Override
  public void close() {
  }
}
