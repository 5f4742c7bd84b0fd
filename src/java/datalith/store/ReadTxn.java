package datalith.store;

import java.nio.ByteBuffer;

/**
 * A consistent snapshot of a {@link Store}. Buffers it returns are read-only,
 * big-endian, position 0, and valid only while this transaction is open (for a
 * cursor's buffers: until the cursor moves).
 */
public interface ReadTxn extends AutoCloseable {

  /** A new cursor over {@code db}; closed with this transaction at the latest. */
  Cursor cursor(SubDb db);

  /** The value stored under {@code key}, or null when absent. */
  ByteBuffer get(SubDb db, ByteBuffer key);

  /**
   * Whether a cursor of {@code db} opens at once: false while its entries are still being
   * built on another thread (a staged import's derived index, {@link LayeredStore#beginWriteBack}),
   * so that a reader of every sub-database may read the others first.
   */
  default boolean ready(SubDb db) {
    return true;
  }

  @Override
  void close();
}
