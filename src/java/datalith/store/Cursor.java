package datalith.store;

import java.nio.ByteBuffer;

/**
 * A position in one sub-database of a {@link ReadTxn}. Allocation-free while
 * moving: {@link #key()} and {@link #val()} return views that are valid only
 * until the next move (zero-copy from the memory map in LMDB).
 */
public interface Cursor extends AutoCloseable {

  /** Positions at the first key {@code >= key}; false when there is none. */
  boolean seek(ByteBuffer key);

  /** Positions at the first key; false when the sub-database is empty. */
  boolean first();

  /** Positions at the last key; false when the sub-database is empty. */
  boolean last();

  /** Moves forward; false (and invalid) past the end. */
  boolean next();

  /** Moves backward; false (and invalid) before the start. */
  boolean prev();

  /**
   * From a key that starts with {@code prefix} (its bytes 0 to limit), moves forward over the keys
   * after it that start with it too, as far as the store can pass them in bulk (LMDB: to the last
   * such key on the current leaf page), staying on a key with the prefix; returns how many keys it
   * moved over. 0 means no bulk move was possible: the caller steps with {@link #next()}.
   */
  default long skipRun(ByteBuffer prefix) {
    return 0;
  }

  /**
   * A hint that the caller reads only keys that begin with {@code prefix} (its bytes from its
   * position to its limit, read during this call only) until it calls this again: a store may
   * then read the keys beyond the prefix less carefully (a step or seek that leaves the prefix
   * lands on some key beyond it, not necessarily the next). Returns whether the cursor is
   * still where it was; false means it must seek before it steps. Others ignore it.
   */
  default boolean within(ByteBuffer prefix) {
    return true;
  }

  /**
   * A hint that seeks of {@code keys[0 .. n)} follow: a store that reads pages in Java reads
   * what they will read now, the keys' reads side by side so that they wait on memory together;
   * others do nothing. Moves nothing: the cursor stays where it is.
   */
  default void warm(ByteBuffer[] keys, int n) {
  }

  /** The current key: read-only, big-endian, position 0. */
  ByteBuffer key();

  /** The current value: read-only, big-endian, position 0. */
  ByteBuffer val();

  @Override
  void close();
}
