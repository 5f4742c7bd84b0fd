package datalith.store;

import java.nio.ByteBuffer;
import org.lmdbjava.LmdbException;

/**
 * A cursor of an {@link LmdbReadTxn}: a handle on one of its reader's pooled LMDB cursors. Its
 * key and value are read-only views into the memory map, re-pointed on every move.
 */
final class LmdbCursor implements Cursor {

  private final LmdbReadTxn txn;
  private LmdbReader.Slot slot; // null once closed
  private boolean positioned; // false before the first positioning and after running off an end

  LmdbCursor(LmdbReadTxn txn, LmdbReader.Slot slot) {
    this.txn = txn;
    this.slot = slot;
  }

  private org.lmdbjava.Cursor<ByteBuffer> lmdb() {
    txn.reader(); // throws once the transaction is closed
    LmdbReader.Slot s = slot;
    if (s == null) {
      throw txn.closed("The cursor");
    }
    return s.cursor;
  }

  private boolean moved(boolean found) {
    positioned = found;
    return found;
  }

  @Override
  public boolean seek(ByteBuffer key) {
    lmdb();
    try {
      return moved(slot.seek(key));
    } catch (LmdbException e) {
      throw txn.failure("Cannot seek", e);
    }
  }

  @Override
  public boolean first() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.first());
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the first key", e);
    }
  }

  @Override
  public boolean last() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.last());
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the last key", e);
    }
  }

  @Override
  public boolean next() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return positioned && moved(c.next());
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the next key", e);
    }
  }

  @Override
  public boolean prev() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return positioned && moved(c.prev());
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the previous key", e);
    }
  }

  @Override
  public ByteBuffer key() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (!positioned) {
      throw new IllegalStateException("The cursor is not positioned");
    }
    return c.key();
  }

  @Override
  public ByteBuffer val() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (!positioned) {
      throw new IllegalStateException("The cursor is not positioned");
    }
    return c.val();
  }

  @Override
  public void close() {
    LmdbReader.Slot s = slot;
    if (s != null) {
      slot = null;
      if (txn.isOpen()) {
        txn.reader().giveBack(s);
      }
    }
  }
}
