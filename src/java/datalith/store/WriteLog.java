package datalith.store;

import java.nio.ByteBuffer;
import java.util.ArrayList;

/**
 * The puts and deletes of one LMDB write transaction, copied out of the caller's buffers so that
 * they can be replayed whole (after the map grows, for one). Entries are laid out in heap chunks
 * as [op:1][db:1][keySize:2][valSize:4][key][val]. Used by the writer thread only.
 */
final class WriteLog {

  /**
   * Receives the logged operations sorted by sub-database, and by key within each (LMDB's order:
   * unsigned bytes, a prefix first); one key's operations keep the order they were logged in.
   * Buffers are valid during the call only.
   */
  interface Replay {
    /**
     * {@code nextPut}: the key of the next operation when it is a put into the same
     * sub-database (its value is {@code nextValSize} bytes), else null.
     */
    void put(SubDb db, ByteBuffer key, ByteBuffer val, ByteBuffer nextPut, int nextValSize);

    void delete(SubDb db, ByteBuffer key);

    /** Called after the last operation on {@code db}. */
    void end(SubDb db);
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

  /** Calls {@code to} once per entry, in the order {@link Replay} describes. */
  void replay(Replay to) {
    long[] order = sorted();
    for (int i = 0; i < order.length; i++) {
      ByteBuffer chunk = chunks.get((int) (order[i] >>> 32));
      byte[] array = chunk.array();
      int at = (int) order[i];
      byte op = array[at];
      SubDb db = DBS[array[at + 1]];
      int keySize = keySize(array, at);
      int valSize = chunk.getInt(at + 4);
      key.clear();
      key.put(array, at + HEADER, keySize).flip();
      if (op == PUT) {
        if (val.capacity() < valSize) {
          val = ByteBuffer.allocateDirect(Math.max(valSize, 2 * val.capacity()));
        }
        val.clear();
        val.put(array, at + HEADER + keySize, valSize).flip();
        ByteBuffer nextPut = null;
        int nextValSize = 0;
        if (i + 1 < order.length) {
          ByteBuffer next = chunks.get((int) (order[i + 1] >>> 32));
          int nat = (int) order[i + 1];
          if (next.get(nat) == PUT && next.get(nat + 1) == db.ordinal()) {
            nextPut = next.duplicate().limit(nat + HEADER + keySize(next.array(), nat))
                .position(nat + HEADER);
            nextValSize = next.getInt(nat + 4);
          }
        }
        to.put(db, key, val, nextPut, nextValSize);
      } else {
        to.delete(db, key);
      }
      if (i + 1 == order.length || dbOf(order[i + 1]) != db) {
        to.end(db);
      }
    }
  }

  /** The sub-database of entry {@code entry} (chunk index << 32 | offset). */
  private SubDb dbOf(long entry) {
    return DBS[chunks.get((int) (entry >>> 32)).get((int) entry + 1)];
  }

  private static int keySize(byte[] array, int at) {
    return (array[at + 2] & 0xFF) << 8 | (array[at + 3] & 0xFF);
  }

  /**
   * The entries (chunk index << 32 | offset) sorted by sub-database, then key; a stable sort, so
   * that one key's entries keep their order.
   */
  private long[] sorted() {
    int n = 0;
    for (int c = 0; c < chunks.size() && c <= current; c++) {
      ByteBuffer chunk = chunks.get(c);
      for (int at = 0; at < chunk.position(); at = next(chunk, at)) {
        n++;
      }
    }
    long[] order = new long[n];
    n = 0;
    for (int c = 0; c < chunks.size() && c <= current; c++) {
      ByteBuffer chunk = chunks.get(c);
      for (int at = 0; at < chunk.position(); at = next(chunk, at)) {
        order[n++] = (long) c << 32 | at;
      }
    }
    // a merge sort, stable, of the primitive entries: runs of RUN by insertion, then merges
    for (int lo = 0; lo < n; lo += RUN) {
      int hi = Math.min(lo + RUN, n);
      for (int i = lo + 1; i < hi; i++) {
        long x = order[i];
        int j = i - 1;
        for (; j >= lo && compare(order[j], x) > 0; j--) {
          order[j + 1] = order[j];
        }
        order[j + 1] = x;
      }
    }
    long[] other = new long[n];
    for (int width = RUN; width < n; width *= 2) {
      for (int lo = 0; lo < n; lo += 2 * width) {
        int mid = Math.min(lo + width, n);
        int hi = Math.min(lo + 2 * width, n);
        int i = lo;
        int j = mid;
        int k = lo;
        while (i < mid && j < hi) {
          other[k++] = compare(order[i], order[j]) <= 0 ? order[i++] : order[j++];
        }
        System.arraycopy(order, i, other, k, mid - i);
        System.arraycopy(order, j, other, k + mid - i, hi - j);
      }
      long[] t = order;
      order = other;
      other = t;
    }
    return order;
  }

  private static final int RUN = 16;

  /** The order of entries {@code x} and {@code y}: by sub-database, then by key as LMDB's. */
  private int compare(long x, long y) {
    byte[] a = chunks.get((int) (x >>> 32)).array();
    byte[] b = chunks.get((int) (y >>> 32)).array();
    int ax = (int) x;
    int by = (int) y;
    if (a[ax + 1] != b[by + 1]) {
      return Integer.compare(a[ax + 1], b[by + 1]);
    }
    return java.util.Arrays.compareUnsigned(a, ax + HEADER, ax + HEADER + keySize(a, ax),
        b, by + HEADER, by + HEADER + keySize(b, by));
  }

  /** The offset of the entry after the one at {@code at}. */
  private static int next(ByteBuffer chunk, int at) {
    return at + HEADER + keySize(chunk.array(), at) + chunk.getInt(at + 4); // a delete's is 0
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
