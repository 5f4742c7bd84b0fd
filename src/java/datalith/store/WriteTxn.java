package datalith.store;

import java.nio.ByteBuffer;

/**
 * The single write transaction of a {@link Store}. It does not read: callers
 * read through a {@link ReadTxn} opened after {@link Store#beginWrite()} returns,
 * which sees every commit before this one (of any process). Buffers passed in
 * may be reused by the caller as soon as the call returns.
 */
public interface WriteTxn extends AutoCloseable {

  /** Stores {@code val} under {@code key}, replacing any previous value. */
  void put(SubDb db, ByteBuffer key, ByteBuffer val);

  /** Removes {@code key}; no effect when absent. */
  void delete(SubDb db, ByteBuffer key);

  /**
   * Makes {@link #commit()} fail with {@code :store/conflict}, writing nothing,
   * unless {@code key} holds {@code val} ({@code null}: is absent) when the
   * commit applies: a guard for a transaction built on values read earlier,
   * against a writer that did not wait for this transaction (one that ignores
   * the store's writer lock).
   */
  void expect(SubDb db, ByteBuffer key, ByteBuffer val);

  /**
   * Makes every write visible at once, on disk before returning when the store
   * is durable. The store grows its map by itself: a commit never fails for
   * lack of space while the disk has room.
   */
  void commit();

  /**
   * Whether the store makes the entries of {@code db} itself, from another sub-database's
   * (a staging's AEVT from its EAVT, {@link LayeredStore}): the writer then leaves them out.
   * Fixed for the life of the transaction. No store does so by default.
   */
  default boolean derives(SubDb db) {
    return false;
  }

  /**
   * Asks whether the writer may leave out the entries of {@code db} whose key begins with the
   * 8 bytes of {@code attr}, an attribute's id: true when the store makes them itself from
   * EAVT's (a staging's AVET, {@link LayeredStore}), which it does then for every key of that
   * attribute a later write leaves out; the writer still deletes them. Asked before each put it
   * would leave out, so that the store knows which attributes it makes. No store does so by
   * default.
   */
  default boolean omits(SubDb db, long attr) {
    return false;
  }

  /** Discards the writes unless committed, and releases the writer slot. */
  @Override
  void close();
}
