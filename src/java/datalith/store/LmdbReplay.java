package datalith.store;

import static datalith.store.LmdbLayout.CURSOR_DEPTH;
import static datalith.store.LmdbLayout.F_BIGDATA;
import static datalith.store.LmdbLayout.NODE_HEADER;
import static datalith.store.LmdbLayout.PAGE_HEADER;
import static datalith.store.LmdbLayout.P_DIRTY;
import static datalith.store.LmdbLayout.P_LEAF;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.lmdbjava.Cursor;
import org.lmdbjava.Dbi;
import org.lmdbjava.PutFlags;
import org.lmdbjava.Txn;

/**
 * Applies a {@link WriteLog} to an LMDB write transaction, in key order, keeping leaf pages full
 * where keys arrive in runs.
 *
 * <p>LMDB splits a full leaf page in the middle, unless the new key goes at the page's end: then
 * the old page stays full and the new key starts the next one. The datoms of new entities go at
 * the end of each attribute's keys in AEVT and AVET, in the middle of the tree, on a page that
 * also holds the next attribute's (or value's) first keys, so every split there was a middle one
 * and those indexes had their pages half full: 45 AEVT keys a page where 83 fit, twice the pages
 * for a scan to read.
 *
 * <p>So when a put lands in the right half of a page left too full for the next put, and the
 * next put goes right after it, before the page's next key, the keys after it on the page are
 * taken out and put back once the log's keys have passed them. The run is then written at the
 * page's end, and LMDB fills each page before it starts the next. A lone put moves nothing.
 *
 * <p>Pages are read as {@link LmdbCursor} reads them, by LMDB 0.9's layout, checked first; a page
 * this cannot read soundly is left to LMDB as it is. A value on an overflow page is read through
 * LMDB (a key next to a run may hold one: the run still fills its pages). The page is
 * the one LMDB's cursor holds after the put (LMDB's copy, or a page of the map), so every read is
 * kept within its {@code pageSize} bytes. With the store's {@code "page-reader" "lmdb"}, no page
 * is read and LMDB alone places every key.
 */
final class LmdbReplay implements WriteLog.Replay, AutoCloseable {
  // no flags: null rather than an empty array, which lmdbjava masks with a stream on every put
  private static final PutFlags[] NO_FLAGS = null;
  private final List<Dbi<ByteBuffer>> dbis; // by SubDb ordinal
  private final Txn<ByteBuffer> txn;
  private final int pageSize;
  private final boolean fillPages; // false: every put is LMDB's alone, no page is read in Java
  private final String where; // the store, for messages
  @SuppressWarnings("unchecked")
  private final Cursor<ByteBuffer>[] cursors = new Cursor[SubDb.values().length];
  private final long[] addresses = new long[cursors.length]; // of their MDB_cursor structs
  // the keys taken off pages, with their values, to put back
  private final TreeMap<byte[], byte[]> moved = new TreeMap<>(Arrays::compareUnsigned);
  private final ByteBuffer view = ReadOnlyBufferProxy.newView();
  // a moved key and its value, put back: made by the first move (most commits move none)
  private ByteBuffer k;
  private ByteBuffer v;

  LmdbReplay(List<Dbi<ByteBuffer>> dbis, Txn<ByteBuffer> txn, int pageSize, boolean fillPages,
      String where) {
    this.dbis = dbis;
    this.txn = txn;
    this.pageSize = pageSize;
    this.fillPages = fillPages;
    this.where = where;
  }

  @Override
  public void put(SubDb db, ByteBuffer key, ByteBuffer val, ByteBuffer nextPut, int nextValSize) {
    putBackUpTo(db, key);
    if (nextPut == null && cursors[db.ordinal()] == null) {
      // a sub-database's one put (a small commit's): LMDB's own put, its cursor on its stack,
      // rather than a cursor of lmdbjava's made and closed for it
      dbis.get(db.ordinal()).put(txn, key, val, NO_FLAGS);
      return;
    }
    Cursor<ByteBuffer> c = cursor(db);
    c.put(key, val, NO_FLAGS);
    if (nextPut != null) {
      makeRoomAfter(db, nextPut, nextValSize);
    }
  }

  @Override
  public void delete(SubDb db, ByteBuffer key) {
    putBackUpTo(db, key);
    dbis.get(db.ordinal()).delete(txn, key);
  }

  @Override
  public void end(SubDb db) {
    putBackUpTo(db, null);
  }

  /** Puts back the moved keys that sort at or before {@code key} (all of them: null). */
  private void putBackUpTo(SubDb db, ByteBuffer key) {
    while (!moved.isEmpty()) {
      if (key != null && compare(moved.firstKey(), key) > 0) {
        return;
      }
      Map.Entry<byte[], byte[]> e = moved.pollFirstEntry();
      byte[] mk = e.getKey();
      byte[] mv = e.getValue();
      direct(mv.length);
      k.clear();
      k.put(mk).flip();
      v.clear();
      v.put(mv).flip();
      cursor(db).put(k, v, NO_FLAGS);
    }
  }

  /**
   * After a put: when the next put into {@code db} goes right after it on its page, which has no
   * room for it, and the keys after it are at most half the page, takes them off the page.
   */
  private void makeRoomAfter(SubDb db, ByteBuffer nextPut, int nextValSize) {
    long a = addresses[db.ordinal()];
    if (a == 0) {
      return;
    }
    int top = LmdbLayout.cursorTop(a);
    if (top < 0 || top >= CURSOR_DEPTH) {
      return;
    }
    long p = LmdbLayout.cursorPage(a, top);
    int i = LmdbLayout.cursorIndex(a, top);
    // a leaf, dirty or not (a write transaction's copy); no other kind
    if (p == 0 || (LmdbLayout.flags(p) & ~P_DIRTY) != P_LEAF) {
      return;
    }
    int lower = LmdbLayout.lower(p);
    int upper = LmdbLayout.upper(p);
    if (lower < PAGE_HEADER || upper < lower || upper > pageSize) {
      return;
    }
    int count = (lower - PAGE_HEADER) >>> 1;
    int need = 2 + ((NODE_HEADER + nextPut.remaining() + nextValSize + 1) & ~1); // even, as LMDB
    if (i + 1 >= count || i < count / 2 || upper - lower >= need) {
      return;
    }
    int n = count - 1 - i;
    byte[][] keys = new byte[n][];
    byte[][] vals = new byte[n][]; // null: on an overflow page, read through LMDB below
    for (int j = 0; j < n; j++) {
      int node = LmdbLayout.node(p, i + 1 + j);
      if (node < lower || node + NODE_HEADER > pageSize
          || (LmdbLayout.nodeFlags(p + node) & ~F_BIGDATA) != 0) {
        return; // out of bounds, or not a plain entry: left to LMDB
      }
      boolean big = LmdbLayout.nodeFlags(p + node) == F_BIGDATA;
      int ksize = LmdbLayout.keySize(p + node);
      long dsize = LmdbLayout.dataSize(p + node);
      long onPage = big ? Long.BYTES : dsize; // a big value's node holds its page's number
      if (ksize == 0 || dsize > Integer.MAX_VALUE
          || node + NODE_HEADER + ksize + onPage > pageSize) {
        return;
      }
      keys[j] = copy(p + node + NODE_HEADER, ksize);
      vals[j] = big ? null : copy(p + node + NODE_HEADER + ksize, (int) dsize);
      if (j == 0 && compare(nextPut, keys[0]) >= 0) {
        return; // the next put goes past the page's next key
      }
    }
    Dbi<ByteBuffer> dbi = dbis.get(db.ordinal());
    direct(0);
    for (int j = 0; j < n; j++) {
      if (vals[j] == null) { // LMDB's read of its overflow page, bounds and all
        k.clear();
        k.put(keys[j]).flip();
        ByteBuffer big = dbi.get(txn, k);
        if (big == null) {
          throw Errors.corrupt(where, db, LmdbLayout.pgno(p),
              "LMDB does not find a key of the page it is writing");
        }
        vals[j] = new byte[big.remaining()];
        big.get(big.position(), vals[j]);
      }
    }
    for (byte[] key : keys) {
      k.clear();
      k.put(key).flip();
      if (!dbi.delete(txn, k)) {
        throw Errors.corrupt(where, db, LmdbLayout.pgno(p),
            "LMDB does not find a key of the page it is writing");
      }
    }
    for (int j = 0; j < n; j++) {
      moved.put(keys[j], vals[j]);
    }
  }

  /** Makes {@link #k} and {@link #v} direct buffers of room for any key and a value this large. */
  private void direct(int valSize) {
    if (k == null) {
      k = ByteBuffer.allocateDirect(Errors.MAX_KEY_SIZE);
    }
    if (v == null || v.capacity() < valSize) {
      v = ByteBuffer.allocateDirect(Math.max(valSize, v == null ? 256 : 2 * v.capacity()));
    }
  }

  private byte[] copy(long address, int size) {
    byte[] out = new byte[size];
    if (size > 0) {
      ReadOnlyBufferProxy.point(view, address, size);
      view.get(0, out);
    }
    return out;
  }

  /** LMDB's order of keys: unsigned bytes, a prefix first. */
  private static int compare(byte[] a, ByteBuffer b) {
    int bp = b.position();
    int n = Math.min(a.length, b.remaining());
    for (int i = 0; i < n; i++) {
      int d = (a[i] & 0xFF) - (b.get(bp + i) & 0xFF);
      if (d != 0) {
        return d;
      }
    }
    return a.length - b.remaining();
  }

  private static int compare(ByteBuffer a, byte[] b) {
    return -compare(b, a);
  }

  private Cursor<ByteBuffer> cursor(SubDb db) {
    Cursor<ByteBuffer> c = cursors[db.ordinal()];
    if (c == null) {
      c = dbis.get(db.ordinal()).openCursor(txn);
      cursors[db.ordinal()] = c;
      addresses[db.ordinal()] = fillPages ? LmdbPointers.cursor(c) : 0;
    }
    return c;
  }

  /** Closes the cursors: before the transaction commits or aborts. */
  @Override
  public void close() {
    for (int i = 0; i < cursors.length; i++) {
      if (cursors[i] != null) {
        cursors[i].close();
        cursors[i] = null;
      }
    }
  }
}
