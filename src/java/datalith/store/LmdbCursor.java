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
  private ByteBuffer key; // the cursor's key view while positioned, else null

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

  private boolean moved(boolean found, org.lmdbjava.Cursor<ByteBuffer> c) {
    positioned = found;
    key = found ? c.key() : null;
    return found;
  }

  @Override
  public boolean seek(ByteBuffer key) {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(slot.seek(key), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot seek", e);
    }
  }

  @Override
  public boolean first() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.first(), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the first key", e);
    }
  }

  @Override
  public boolean last() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.last(), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the last key", e);
    }
  }

  @Override
  public boolean next() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return positioned && moved(c.next(), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the next key", e);
    }
  }

  @Override
  public boolean prev() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return positioned && moved(c.prev(), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the previous key", e);
    }
  }

  @Override
  public ByteBuffer key() {
    // The view is re-pointed by every move, so it only needs checking that the transaction is
    // still open: a closed one's reader may serve another transaction through the same view.
    ByteBuffer k = key;
    if (k != null && txn.isOpen()) {
      return k;
    }
    lmdb();
    throw new IllegalStateException("The cursor is not positioned");
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
      key = null;
      if (txn.isOpen()) {
        txn.reader().giveBack(s);
      }
    }
  }
}
