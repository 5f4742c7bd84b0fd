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
  /** The valid-time lines a valid-at view lays on top (null: none), shown at instant {@link #at}. */
  private final ValidTime.Lines valid;
  private final long at;
  /** The basis t the store had committed when this read began. */
  final long storeLatestT;

  /**
   * A snapshot of {@code rt}, which it closes when this is closed, or now when its META t
   * cannot be read (a damaged store).
   */
  Snapshot(ReadTxn rt, Overlay overlay) {
    this(rt, overlay, null, 0);
  }

  /** A snapshot whose cursors also show the keys of {@code valid}'s lines at instant {@code at}. */
  Snapshot(ReadTxn rt, Overlay overlay, ValidTime.Lines valid, long at) {
    this.rt = rt;
    this.overlay = overlay;
    this.valid = valid;
    this.at = at;
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
    if (ov != null) {
      c = new OverlayCursor(c, ov);
    }
    ValidKeys vk = valid == null ? null : valid.keys().get(db);
    return vk == null ? c : new ValidCursor(c, vk, at);
  }

  /** Whether the key {@code src} is on comes from memory (a with overlay or valid-time lines). */
  static boolean inMemory(Cursor src) {
    return src instanceof OverlayCursor oc ? oc.fromOverlay()
        : src instanceof ValidCursor vc && vc.inMemory();
  }

  /** The value under {@code key}, overlay first; null when absent. */
  public ByteBuffer get(SubDb db, ByteBuffer key) {
    if (valid != null && db == SubDb.BLOBS) {
      ByteBuffer v = valid.blobs().get(key);
      if (v != null) {
        return v.duplicate();
      }
    }
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
