package datalith.store;

import java.nio.ByteBuffer;

/**
 * What a write transaction expects a key to hold when it commits ({@link WriteTxn#expect}):
 * copies of the caller's buffers, checked against the store's state at commit.
 */
final class Expected {
  final SubDb db;
  private final byte[] key;
  private final byte[] val; // null: the key is expected absent

  Expected(String where, SubDb db, ByteBuffer key, ByteBuffer val) {
    Errors.checkKey(where, key);
    this.db = db;
    this.key = bytes(key);
    this.val = val == null ? null : bytes(val);
  }

  /** The key, in a new heap array. */
  byte[] key() {
    return key.clone();
  }

  /** The key in a new direct buffer (LMDB reads keys from native memory). */
  ByteBuffer directKey() {
    return ByteBuffer.allocateDirect(key.length).put(key).flip();
  }

  /** Throws {@code :store/conflict} unless {@code found} (null: absent) is the expected value. */
  void check(String where, ByteBuffer found) {
    boolean holds = found == null ? val == null : val != null && found.equals(ByteBuffer.wrap(val));
    if (!holds) {
      throw Errors.conflict(where, db, key, val, found == null ? null : bytes(found));
    }
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.get(b.position(), out);
    return out;
  }
}
