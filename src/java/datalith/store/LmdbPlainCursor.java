package datalith.store;

import java.nio.ByteBuffer;
import org.lmdbjava.LmdbException;

/**
 * A cursor of an {@link LmdbReadTxn} that leaves the reading to LMDB: every move is a call to
 * LMDB's cursor, opened in the slot for it. This is the {@code "page-reader" "lmdb"} path (and the
 * path when LMDB's structs do not read as {@link LmdbLayout} says), which the tests check the Java
 * reader ({@link LmdbCursor}) against. Every key and value LMDB returns is checked to lie in the
 * snapshot's pages before it is read ({@link LmdbSnapshot#check}), every step to follow the key it
 * left and every seek to land at or after its probe (so that no scan goes round a damaged page for
 * ever); LMDB's own reading of a damaged page is not checked otherwise.
 */
final class LmdbPlainCursor implements Cursor {

  private final LmdbReadTxn txn;
  private final SubDb db;
  private LmdbReader.Slot slot; // null once closed
  private boolean positioned; // false before the first positioning and after running off an end
  private ByteBuffer key; // LMDB's key while positioned, checked, else null

  LmdbPlainCursor(LmdbReadTxn txn, SubDb db, LmdbReader.Slot slot) {
    this.txn = txn;
    this.db = db;
    this.slot = slot;
  }

  /** The slot; throws once this cursor or its transaction is closed. */
  private LmdbReader.Slot slot() {
    txn.reader(); // throws once the transaction is closed
    LmdbReader.Slot s = slot;
    if (s == null) {
      throw txn.closed("The cursor");
    }
    return s;
  }

  /** LMDB's cursor; throws once this cursor or its transaction is closed. */
  private org.lmdbjava.Cursor<ByteBuffer> lmdb() {
    LmdbReader.Slot s = slot();
    try {
      return txn.reader().lmdbCursor(s);
    } catch (LmdbException e) {
      throw failure("Cannot open a cursor", e);
    }
  }

  private RuntimeException failure(String what, LmdbException e) {
    return txn.failure(what + " in " + db, e);
  }

  /** After a move of LMDB's cursor: takes its key, checked to lie in the file. */
  private boolean moved(boolean found, org.lmdbjava.Cursor<ByteBuffer> c) {
    positioned = found;
    if (!found) {
      key = null;
      return false;
    }
    ByteBuffer k = txn.check(c.key(), db, "key");
    if (k.capacity() == 0 || k.capacity() > Errors.MAX_KEY_SIZE) {
      throw txn.corrupt(db, -1, "LMDB read a key of " + k.capacity()
          + " bytes, which no page holds");
    }
    key = k;
    return true;
  }

  @Override
  public boolean seek(ByteBuffer probe) {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    boolean found;
    try {
      found = moved(slot.seek(c, probe, txn), c);
    } catch (LmdbException e) {
      throw failure("Cannot seek", e);
    }
    // a damaged branch page may route the probe to a leaf of smaller keys, whose next page
    // LMDB takes the first key of: below the probe, a seek that a scan repeats would return
    // it for ever (the Java reader checks the same in LmdbCursor.cross). The error says whether
    // the slot's copy of a long (or heap) probe still holds the probe's bytes: it was thrown
    // once in the store tests, on an undamaged store, the copy not holding them (not
    // reproduced since), so that a recurrence carries that evidence
    if (found && ReadOnlyBufferProxy.compareUnsigned(key, probe) < 0) {
      throw txn.corrupt(db, -1, "LMDB's seek found a key below the one sought"
          + slot.probeReport(probe));
    }
    return found;
  }

  @Override
  public boolean first() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.first(), c);
    } catch (LmdbException e) {
      throw failure("Cannot move to the first key", e);
    }
  }

  @Override
  public boolean last() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.last(), c);
    } catch (LmdbException e) {
      throw failure("Cannot move to the last key", e);
    }
  }

  @Override
  public boolean next() {
    return step(1);
  }

  @Override
  public boolean prev() {
    return step(-1);
  }

  /**
   * Moves LMDB's cursor to the next key ({@code direction} 1) or the previous one (-1), which
   * must follow the key left in that direction, else {@code :store/corrupt}: LMDB steps along a
   * damaged page's keys in whatever order they lie, and a scan that seeks on from a key out of
   * order (past a run, to a later key) comes back to where it was, round forever. The key left
   * is compared where it lies in the map, which stays mapped while the transaction is open.
   */
  private boolean step(int direction) {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (!positioned) {
      return false;
    }
    long from = ReadOnlyBufferProxy.base(key) + key.position();
    int fromSize = key.remaining();
    boolean found;
    try {
      found = moved(direction > 0 ? c.next() : c.prev(), c);
    } catch (LmdbException e) {
      throw failure(direction > 0 ? "Cannot move to the next key"
          : "Cannot move to the previous key", e);
    }
    if (!found) {
      return false;
    }
    ByteBuffer k = key;
    int order = ReadOnlyBufferProxy.compareUnsigned(ReadOnlyBufferProxy.base(k) + k.position(),
        k.remaining(), from, fromSize);
    if (order * direction <= 0) {
      throw txn.corrupt(db, -1, "LMDB stepped to a key out of order");
    }
    return true;
  }

  @Override
  public ByteBuffer key() {
    // LMDB's key buffer is re-pointed by every move; a closed transaction's reader may serve
    // another transaction through it, so it is returned only while this one is open
    ByteBuffer k = key;
    if (k != null && txn.isOpen()) {
      return k;
    }
    slot();
    throw new IllegalStateException("The cursor is not positioned");
  }

  @Override
  public ByteBuffer val() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (!positioned) {
      throw new IllegalStateException("The cursor is not positioned");
    }
    return txn.check(c.val(), db, "value");
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
