package datalith.store;

import java.nio.ByteBuffer;
import java.util.ArrayList;

/**
 * The puts and deletes of one LMDB write transaction, copied out of the caller's buffers so that
 * they can be replayed whole (after the map grows, for one). Entries are laid out in heap chunks
 * as [op:1][db:1][keySize:2][valSize:4][key][val]. Used by the writer thread only.
 */
final class WriteLog {

  /** Receives the logged operations in order. */
  interface Replay {
    void put(SubDb db, ByteBuffer key, ByteBuffer val);

    void delete(SubDb db, ByteBuffer key);
  }

  private static final byte PUT = 1;
  private static final byte DELETE = 2;
  private static final int HEADER = 8;
  private static final int CHUNK = 64 * 1024;
  private static final int KEPT_CHUNKS = 16; // retained across transactions
  private static final SubDb[] DBS = SubDb.values();

  private final ArrayList<ByteBuffer> chunks = new ArrayList<>(); // heap, each filled to position
  private int current; // index of the chunk being filled
  private long bytes; // total logged, for sizing map growth
  private ByteBuffer key = ByteBuffer.allocateDirect(Errors.MAX_KEY_SIZE);
  private ByteBuffer val = ByteBuffer.allocateDirect(CHUNK); // grows for larger values

  /** Bytes logged since the last {@link #clear()}. */
  long bytes() {
    return bytes;
  }

  void put(SubDb db, ByteBuffer k, ByteBuffer v) {
    append(PUT, db, k, v);
  }

  void delete(SubDb db, ByteBuffer k) {
    append(DELETE, db, k, null);
  }

  /** Forgets every entry, keeping a few chunks for the next transaction. */
  void clear() {
    for (int i = chunks.size() - 1; i >= 0; i--) {
      if (i >= KEPT_CHUNKS || chunks.get(i).capacity() != CHUNK) {
        chunks.remove(i);
      } else {
        chunks.get(i).clear();
      }
    }
    current = 0;
    bytes = 0;
    if (val.capacity() > CHUNK) {
      val = ByteBuffer.allocateDirect(CHUNK);
    }
  }

  /** Calls {@code to} once per entry, in order, with direct buffers valid during the call. */
  void replay(Replay to) {
    for (int c = 0; c < chunks.size() && c <= current; c++) {
      ByteBuffer chunk = chunks.get(c);
      byte[] array = chunk.array();
      int end = chunk.position();
      for (int at = 0; at < end; ) {
        byte op = chunk.get(at);
        SubDb db = DBS[chunk.get(at + 1)];
        int keySize = Short.toUnsignedInt(chunk.getShort(at + 2));
        int valSize = chunk.getInt(at + 4);
        at += HEADER;
        key.clear();
        key.put(array, at, keySize).flip();
        at += keySize;
        if (op == PUT) {
          if (val.capacity() < valSize) {
            val = ByteBuffer.allocateDirect(Math.max(valSize, 2 * val.capacity()));
          }
          val.clear();
          val.put(array, at, valSize).flip();
          at += valSize;
          to.put(db, key, val);
        } else {
          to.delete(db, key);
        }
      }
    }
  }

  private void append(byte op, SubDb db, ByteBuffer k, ByteBuffer v) {
    int keySize = k.remaining();
    int valSize = v == null ? 0 : v.remaining();
    int size = HEADER + keySize + valSize;
    ByteBuffer chunk = chunkFor(size);
    int at = chunk.position();
    chunk.put(at, op);
    chunk.put(at + 1, (byte) db.ordinal());
    chunk.putShort(at + 2, (short) keySize);
    chunk.putInt(at + 4, valSize);
    chunk.put(at + HEADER, k, k.position(), keySize);
    if (v != null) {
      chunk.put(at + HEADER + keySize, v, v.position(), valSize);
    }
    chunk.position(at + size);
    bytes += size;
  }

  private ByteBuffer chunkFor(int size) {
    if (chunks.isEmpty()) {
      chunks.add(ByteBuffer.allocate(Math.max(CHUNK, size)));
      current = 0;
    }
    ByteBuffer chunk = chunks.get(current);
    if (chunk.remaining() >= size) {
      return chunk;
    }
    current++;
    if (current < chunks.size() && chunks.get(current).capacity() >= size) {
      return chunks.get(current);
    }
    ByteBuffer fresh = ByteBuffer.allocate(Math.max(CHUNK, size));
    chunks.add(current, fresh);
    return fresh;
  }
}
