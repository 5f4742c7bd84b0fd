package datalith.store;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A {@link MemStore} write transaction's puts and deletes, kept in the order made and applied to
 * the trees in key order at commit (by the keys' first {@code PREFIX} bytes; as {@link LmdbWrite}
 * applies its log to LMDB). A transaction's
 * datoms come entity by entity, which scatters their keys over the AEVT, AVET and VAET trees, and
 * a put there descends from the root with a binary search at every level; in key order, the keys
 * of one attribute (AEVT), of one value (AVET) or to one entity (VAET) come as runs, and each put
 * continues where the last one went ({@link BTree}'s hints). Writes of one key keep their order:
 * the sort is stable. Its arrays are kept from one transaction to the next (one writer at a
 * time): used by the thread holding the write transaction only.
 */
final class MemWrites extends EntrySort {
  // the bytes of a key kept with its entry as numbers, the whole of its sort key: enough to tell
  // apart the index keys of most datoms (an AVET key of a ref is 33 bytes, its datom's e ends at
  // 25; values that share their first bytes tie), and few: a datom's keys are rarely shorter,
  // so each number is one read of the key (6, tried before, cost twice as much to make, and more
  // to sort, for no faster puts)
  private static final int LONGS = 4;
  private static final int PREFIX = 8 * LONGS;
  private static final VarHandle LONG_AT =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
  private static final int INITIAL_ENTRIES = 1024;
  private static final int KEPT_ENTRIES = 256 * 1024; // arrays kept up to this size

  // per entry, in the order made: its key, its value (null for a delete), its sub-database's
  // ordinal and its key's first PREFIX bytes as LONGS numbers
  private int count;
  private byte[][] keys = new byte[INITIAL_ENTRIES][];
  private ByteBuffer[] vals = new ByteBuffer[INITIAL_ENTRIES];
  private byte[] dbs = new byte[INITIAL_ENTRIES];
  private long[] prefixes = new long[LONGS * INITIAL_ENTRIES];
  private int[] order = new int[INITIAL_ENTRIES]; // entry numbers, sorted at commit
  private int[] other = new int[INITIAL_ENTRIES]; // the merge sort's second array

  /** Logs the put of {@code key} (kept, not copied) with {@code val} into {@code db}. */
  void put(SubDb db, byte[] key, ByteBuffer val) {
    add(db, key, val);
  }

  /** Logs the delete of {@code key} (kept, not copied) from {@code db}. */
  void delete(SubDb db, byte[] key) {
    add(db, key, null);
  }

  /** Applies the writes to {@code roots} (indexed by sub-database ordinal), in key order. */
  void apply(BTree.Editor editor, BTree.Node[] roots) {
    int[] inKeyOrder = sorted();
    for (int i = 0; i < count; i++) {
      int x = inKeyOrder[i];
      int d = dbs[x];
      roots[d] = vals[x] == null ? editor.delete(roots[d], keys[x])
          : editor.put(roots[d], keys[x], vals[x]);
    }
  }

  /** Forgets the writes, for the next transaction; drops the arrays when they grew large. */
  void clear() {
    if (keys.length > KEPT_ENTRIES) {
      keys = new byte[INITIAL_ENTRIES][];
      vals = new ByteBuffer[INITIAL_ENTRIES];
      dbs = new byte[INITIAL_ENTRIES];
      prefixes = new long[LONGS * INITIAL_ENTRIES];
      order = new int[INITIAL_ENTRIES];
      other = new int[INITIAL_ENTRIES];
    } else {
      Arrays.fill(keys, 0, count, null);
      Arrays.fill(vals, 0, count, null);
    }
    count = 0;
  }

  private void add(SubDb db, byte[] key, ByteBuffer val) {
    if (count == keys.length) {
      keys = Arrays.copyOf(keys, 2 * count);
      vals = Arrays.copyOf(vals, 2 * count);
      dbs = Arrays.copyOf(dbs, 2 * count);
      prefixes = Arrays.copyOf(prefixes, 2 * LONGS * count);
    }
    keys[count] = key;
    vals[count] = val;
    dbs[count] = (byte) db.ordinal();
    for (int i = 0; i < LONGS; i++) {
      prefixes[LONGS * count + i] = prefix(key, 8 * i);
    }
    count++;
  }

  /** Bytes {@code from..from+8} of {@code key}, big-endian, zeros past its end. */
  private static long prefix(byte[] key, int from) {
    int n = key.length;
    if (n >= from + 8) {
      return (long) LONG_AT.get(key, from);
    }
    if (n <= from) {
      return 0;
    }
    if (n >= 8) { // the key's last 8 bytes, shifted so that byte from leads and zeros follow
      return (long) LONG_AT.get(key, n - 8) << 8 * (from + 8 - n);
    }
    long p = 0;
    for (int i = from; i < from + 8; i++) {
      p = p << 8 | (i < n ? key[i] & 0xFF : 0);
    }
    return p;
  }

  /** The entries by sub-database, then key prefix, then the order they were made in. */
  private int[] sorted() {
    if (order.length < count) {
      order = new int[keys.length];
      other = new int[keys.length];
    }
    return sortEntries(dbs, count, order, other);
  }

  /**
   * The order of entries {@code x} and {@code y} of one sub-database: by their keys' first
   * {@code PREFIX} bytes as numbers, then by number. Keys that tie there keep the order they were
   * made in: the trees take keys in any order (key order only makes runs), and one key's writes
   * must keep theirs.
   */
  @Override
  int compare(int x, int y) {
    int c = comparePrefixes(prefixes, LONGS, x, y);
    return c != 0 ? c : Integer.compare(x, y);
  }
}
