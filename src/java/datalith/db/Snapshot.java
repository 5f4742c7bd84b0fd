package datalith.db;

import datalith.store.Cursor;
import datalith.store.ReadTxn;
import datalith.store.Store;
import datalith.store.SubDb;
import java.nio.ByteBuffer;
import java.util.TreeMap;

/**
 * One short read of a database value: a store read transaction, plus the
 * overlay of a speculative database. Used by one thread, closed within the call
 * that opened it; every buffer it hands out is valid only while it is open.
 */
public final class Snapshot implements AutoCloseable {
  final ReadTxn rt;
  final Overlay overlay;
  /** The basis t the store had committed when this read began. */
  final long storeLatestT;

  /**
   * A snapshot of {@code rt}, which it closes when this is closed, or now when its META t
   * cannot be read (a damaged store).
   */
  Snapshot(ReadTxn rt, Overlay overlay) {
    this.rt = rt;
    this.overlay = overlay;
    try {
      ByteBuffer t = rt.get(SubDb.META, Meta.T.duplicate());
      this.storeLatestT = t == null ? -1 : Meta.longOf(t, "t");
    } catch (RuntimeException e) {
      rt.close();
      throw e;
    }
  }

  /** A read of the last commit in {@code store} (of any process), with no overlay. */
  public static Snapshot of(Store store) {
    return new Snapshot(store.beginRead(), null);
  }

  /** A cursor over {@code db}, with the overlay laid on top. */
  public Cursor cursor(SubDb db) {
    Cursor c = rt.cursor(db);
    TreeMap<ByteBuffer, ByteBuffer> ov = overlay == null ? null : overlay.map(db);
    return ov == null ? c : new OverlayCursor(c, ov);
  }

  /** The value under {@code key}, overlay first; null when absent. */
  public ByteBuffer get(SubDb db, ByteBuffer key) {
    TreeMap<ByteBuffer, ByteBuffer> ov = overlay == null ? null : overlay.map(db);
    if (ov != null) {
      ByteBuffer v = ov.get(key);
      if (v != null) {
        return v == Overlay.TOMBSTONE ? null : v.duplicate();
      }
    }
    return rt.get(db, key);
  }

  @Override
  public void close() {
    rt.close();
  }
}
