package datalith.store;

import static datalith.store.LmdbLayout.DB_RECORD;
import static datalith.store.LmdbLayout.F_BIGDATA;
import static datalith.store.LmdbLayout.MD_BRANCH_PAGES;
import static datalith.store.LmdbLayout.MD_DEPTH;
import static datalith.store.LmdbLayout.MD_ENTRIES;
import static datalith.store.LmdbLayout.MD_LEAF_PAGES;
import static datalith.store.LmdbLayout.MD_OVERFLOW_PAGES;
import static datalith.store.LmdbLayout.MD_ROOT;
import static datalith.store.LmdbLayout.NODE_HEADER;
import static datalith.store.LmdbLayout.PAGE_FLAGS;
import static datalith.store.LmdbLayout.PAGE_HEADER;
import static datalith.store.LmdbLayout.PAGE_LOWER;
import static datalith.store.LmdbLayout.PAGE_UPPER;
import static datalith.store.LmdbLayout.P_BRANCH;
import static datalith.store.LmdbLayout.P_INVALID;
import static datalith.store.LmdbLayout.P_LEAF;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Writes one B+tree of LMDB 0.9 ({@link LmdbLayout}) from its entries in key order, bottom up, as
 * {@code MDB_APPEND} would fill it: each leaf page takes nodes until the next does not fit, then
 * goes to the {@link LmdbPageSink}; a value whose node would pass LMDB's {@code me_nodemax} ({@link
 * #nodeMax}: 2,038 bytes with pages of 4 KiB) goes on overflow pages first (the node then holds
 * their first page number, flagged F_BIGDATA, and the value's real size). Once the leaves are
 * written, each level of branch pages is built from the first keys of the level below: node 0 of a
 * branch page has an empty key, the others their child's first key, and a branch page holds at
 * least two children. The last level written is the root.
 *
 * <p>Nodes lie from the page's end down, each of an even size; the offsets after the page
 * header are in key order. The caller gives keys strictly ascending, of 1 to 511 bytes (a
 * store's cursor does). One thread.
 */
final class LmdbTreeWriter {
  /** The first key and page number of each page of a level, in key order. */
  private static final class Level {
    byte[] keys = new byte[1 << 12];
    int[] ends = new int[64]; // key i is keys[ends[i - 1] .. ends[i]) (from 0 for i = 0)
    long[] pages = new long[64];
    int count;

    /** Adds the page {@code page} whose first key is {@code key[from .. from + k)}. */
    void add(byte[] key, int from, int k, long page) {
      int start = count == 0 ? 0 : ends[count - 1];
      if (start + k > keys.length) {
        keys = Arrays.copyOf(keys, Math.max(2 * keys.length, start + k));
      }
      System.arraycopy(key, from, keys, start, k);
      if (count == ends.length) {
        ends = Arrays.copyOf(ends, 2 * count);
        pages = Arrays.copyOf(pages, 2 * count);
      }
      ends[count] = start + k;
      pages[count] = page;
      count++;
    }

    int start(int i) {
      return i == 0 ? 0 : ends[i - 1];
    }

    int keySize(int i) {
      return ends[i] - start(i);
    }
  }

  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.nativeOrder());
  private static final VarHandle SHORTS =
      MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.nativeOrder());

  private final LmdbPageSink sink;
  private final String where; // the store's directory, for messages
  private final int nodeFlags; // of every leaf node whose value is not on overflow pages
  private final boolean integerKeys; // keys are native u64s, in numeric order (MDB_INTEGERKEY)
  private final int pageSize; // its sink's
  private final int nodeMax; // LMDB's me_nodemax for pages of that size
  private final ByteBuffer page;
  private Level level = new Level(); // the leaves written so far
  private byte[] firstKey; // the leaf page being filled's first key is firstKey[firstAt ..
  private int firstAt; // firstAt + firstSize)
  private int firstSize;
  // the copies of keys given as buffers: the last one's and the one before (see add)
  private final byte[][] copies = {new byte[Errors.MAX_KEY_SIZE], new byte[Errors.MAX_KEY_SIZE]};
  private byte[] previous; // the last key added is previous[previousAt .. + previousSize); null:
  private int previousAt; // none yet
  private int previousSize;
  private int nodes; // on the leaf page being filled
  private int upper; // its lowest node's offset
  private long entries;
  private long leafPages;
  private long branchPages;
  private final long overflowBefore;
  private long takenOverflow; // the overflow pages of the leaf pages taken as they are

  /**
   * A writer of a tree into {@code sink} whose leaf nodes have the flags {@code nodeFlags}, its
   * keys in unsigned byte order, or {@code integerKeys}: native u64s in numeric order.
   */
  LmdbTreeWriter(LmdbPageSink sink, int nodeFlags, boolean integerKeys, String where) {
    this.sink = sink;
    this.pageSize = sink.pageSize();
    this.nodeMax = nodeMax(pageSize);
    this.page = ByteBuffer.allocate(pageSize).order(ByteOrder.nativeOrder());
    this.upper = pageSize;
    this.integerKeys = integerKeys;
    this.where = where;
    this.nodeFlags = nodeFlags;
    this.overflowBefore = sink.overflowPages();
  }

  /** LMDB's me_nodemax for pages of {@code pageSize} bytes: ((pageSize - 16) / 2 & -2) - 2. */
  static int nodeMax(int pageSize) {
    return ((pageSize - PAGE_HEADER) / 2 & -2) - 2;
  }

  private static int even(long n) {
    return (int) ((n + 1) & ~1L);
  }

  /**
   * Adds the entry {@code key} (its remaining bytes: 1 to 511, past the last key added),
   * {@code val}; both are read before the call returns.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/key-size} for a key of another size,
   *     {@code :store/order} for one not past the last (nothing of the tree is then committed)
   */
  void add(ByteBuffer key, ByteBuffer val) throws IOException {
    int k = key.remaining();
    Errors.checkKeySize(where, k);
    byte[] copy = copies[(int) entries & 1]; // not previous's: that is the other one
    key.get(key.position(), copy, 0, k);
    add(copy, 0, k, false, val);
  }

  /**
   * Adds the entries of {@code leaf}, a MemStore's immutable leaf, each as its key (1 to 511
   * bytes, past the last key added) and value; the leaf's array of keys is kept, unchanged by
   * the caller, until {@link #finish()}, and the values read before the call returns. The way
   * of a source whose keys are in arrays already: no copy of the keys. Their sizes are checked
   * first, all of them.
   *
   * @throws clojure.lang.ExceptionInfo as {@link #add(ByteBuffer, ByteBuffer)}
   */
  void addLeaf(BTree.Leaf leaf) throws IOException {
    int n = leaf.size;
    for (int i = 0; i < n; i++) {
      Errors.checkKeySize(where, leaf.keyLength(i));
    }
    byte[] data = leaf.data();
    for (int i = 0; i < n; i++) {
      add(data, leaf.keyStart(i), leaf.keyLength(i), true, leaf.val(i));
    }
  }

  /**
   * Adds leaf page {@code pgno} of the file as it is (a page of the tree this one replaces, the
   * sink's file's), with its {@code keys} entries from {@code first} to {@code last} (past the
   * last key added) and the {@code overflow} pages its values lie on, which stay where they are.
   * The leaf being filled is written first, however full. The caller checked the page
   * ({@link LmdbCursor#checkLeaf}); {@code first} and {@code last} are read before the call
   * returns.
   *
   * @throws clojure.lang.ExceptionInfo as {@link #add(ByteBuffer, ByteBuffer)}
   */
  void addPage(long pgno, ByteBuffer first, ByteBuffer last, int keys, long overflow)
      throws IOException {
    if (sink.keepsPages()) {
      throw new IllegalStateException("A page of the file taken into a tree kept in memory");
    }
    int k = first.remaining();
    Errors.checkKeySize(where, k);
    byte[] f = new byte[k];
    first.get(first.position(), f);
    checkOrder(f, 0, k);
    int m = last.remaining();
    Errors.checkKeySize(where, m);
    byte[] l = copies[(int) (entries + keys - 1) & 1]; // the next add's copy is the other one
    last.get(last.position(), l, 0, m);
    if (keys > 1) {
      checkOrder(l, 0, m);
    }
    if (nodes > 0) {
      finishLeaf();
    }
    level.add(f, 0, k, pgno);
    previous = l;
    previousAt = 0;
    previousSize = m;
    leafPages++;
    entries += keys;
    takenOverflow += overflow;
  }

  /**
   * Adds the entry {@code key[at .. at + k)} (the array kept unchanged by the caller until
   * {@link #finish()}, as {@link #addLeaf}'s), {@code val} (read before the call returns).
   *
   * @throws clojure.lang.ExceptionInfo as {@link #add(ByteBuffer, ByteBuffer)}
   */
  void addKept(byte[] key, int at, int k, ByteBuffer val) throws IOException {
    Errors.checkKeySize(where, k);
    add(key, at, k, true, val);
  }

  /**
   * Adds {@code key[at .. at + k)}, {@code val}; {@code kept}: the array is kept unchanged until
   * {@link #finish()} (else it is copied when it is a leaf page's first key).
   */
  private void add(byte[] key, int at, int k, boolean kept, ByteBuffer val) throws IOException {
    checkOrder(key, at, k);
    long d = val.remaining();
    boolean big = NODE_HEADER + k + d > nodeMax;
    long bytes = NODE_HEADER + k + (big ? 8 : d);
    int size = even(bytes);
    if (nodes > 0 && upper - size < PAGE_HEADER + 2 * (nodes + 1)) {
      finishLeaf();
    }
    if (nodes == 0) {
      firstKey = kept ? key : Arrays.copyOfRange(key, at, at + k);
      firstAt = kept ? at : 0;
      firstSize = k;
    }
    long overflow = big ? sink.overflow(val) : 0; // numbered before the leaf page
    upper -= size;
    byte[] p = page.array(); // written through, not the buffer's checked puts: once an entry
    SHORTS.set(p, upper, (short) d);
    SHORTS.set(p, upper + 2, (short) (d >>> 16));
    SHORTS.set(p, upper + 4, (short) (big ? F_BIGDATA : nodeFlags));
    SHORTS.set(p, upper + 6, (short) k);
    System.arraycopy(key, at, p, upper + NODE_HEADER, k);
    if (big) {
      LONGS.set(p, upper + NODE_HEADER + k, overflow);
    } else if (d > 0) {
      val.get(val.position(), p, upper + NODE_HEADER + k, (int) d);
    }
    if (size != bytes) {
      p[upper + size - 1] = 0; // the pad: no stale byte in the file
    }
    SHORTS.set(p, PAGE_HEADER + 2 * nodes, (short) upper);
    nodes++;
    entries++;
  }

  /**
   * Throws unless {@code key[at .. at + k)} sorts after the last key added (unsigned bytes, or
   * native u64s with integer keys), and makes it the last.
   */
  private void checkOrder(byte[] key, int at, int k) {
    if (integerKeys && k != Long.BYTES) {
      throw Errors.error(Errors.KEY_SIZE, where, "An integer key of " + k + " bytes", null);
    }
    if (previous != null && compare(previous, previousAt, previousSize, key, at, k) >= 0) {
      throw Errors.error(Errors.ORDER, where, "The entries to write are not in ascending key"
          + " order", null);
    }
    previous = key;
    previousAt = at;
    previousSize = k;
  }

  /**
   * Unsigned comparison of {@code a[i .. i + m)} and {@code b[j .. j + n)} as the tree orders
   * keys.
   */
  private int compare(byte[] a, int i, int m, byte[] b, int j, int n) {
    if (integerKeys) {
      return Long.compareUnsigned((long) LONGS.get(a, i), (long) LONGS.get(b, j));
    }
    return Arrays.compareUnsigned(a, i, i + m, b, j, j + n);
  }

  private void finishLeaf() throws IOException {
    level.add(firstKey, firstAt, firstSize, finish(P_LEAF));
    leafPages++;
  }

  /** Writes the page being filled, of kind {@code flags}, and starts the next; its number. */
  private long finish(int flags) throws IOException {
    int lower = PAGE_HEADER + 2 * nodes;
    page.putShort(8, (short) 0).putShort(PAGE_FLAGS, (short) flags)
        .putShort(PAGE_LOWER, (short) lower).putShort(PAGE_UPPER, (short) upper);
    Arrays.fill(page.array(), lower, upper, (byte) 0); // no stale bytes in the file
    long n = sink.page(page);
    nodes = 0;
    upper = pageSize;
    return n;
  }

  /**
   * Writes the leaf page being filled and the branch pages above the leaves; returns the tree's
   * MDB_db record (native order): flags 0, its depth, page counts, entries and root
   * (P_INVALID and depth 0 for a tree without entries).
   */
  ByteBuffer finish() throws IOException {
    if (nodes > 0) {
      finishLeaf();
    }
    int depth = level.count == 0 ? 0 : 1;
    while (level.count > 1) {
      level = branches(level);
      depth++;
    }
    ByteBuffer r = ByteBuffer.allocate(DB_RECORD).order(ByteOrder.nativeOrder());
    r.putShort(MD_DEPTH, (short) depth).putLong(MD_BRANCH_PAGES, branchPages)
        .putLong(MD_LEAF_PAGES, leafPages)
        .putLong(MD_OVERFLOW_PAGES, sink.overflowPages() - overflowBefore + takenOverflow)
        .putLong(MD_ENTRIES, entries).putLong(MD_ROOT, depth == 0 ? P_INVALID : level.pages[0]);
    return r;
  }

  private static int branchNode(int keySize) {
    return even(NODE_HEADER + keySize) + 2;
  }

  /** The level of branch pages over {@code below}'s pages (two or more). */
  private Level branches(Level below) throws IOException {
    int n = below.count;
    // greedy: page p holds children starts[p] .. starts[p + 1] - 1
    int[] starts = new int[n + 1];
    int pages = 0;
    int used = pageSize;
    for (int i = 0; i < n; i++) {
      int size = branchNode(below.keySize(i));
      if (i == 0 || used + size > pageSize) {
        starts[pages++] = i;
        used = PAGE_HEADER + branchNode(0);
      } else {
        used += size;
      }
    }
    if (pages > 1 && starts[pages - 1] == n - 1) {
      starts[pages - 1]--; // the last page's one child gets a sibling from the page before
    }
    starts[pages] = n;
    Level up = new Level();
    for (int p = 0; p < pages; p++) {
      for (int i = starts[p]; i < starts[p + 1]; i++) {
        int k = i == starts[p] ? 0 : below.keySize(i);
        long child = below.pages[i];
        upper -= even(NODE_HEADER + k);
        page.putShort(upper, (short) child).putShort(upper + 2, (short) (child >>> 16))
            .putShort(upper + 4, (short) (child >>> 32)).putShort(upper + 6, (short) k)
            .put(upper + NODE_HEADER, below.keys, below.start(i), k);
        if ((k & 1) != 0) {
          page.put(upper + NODE_HEADER + k, (byte) 0); // the pad: no stale byte in the file
        }
        page.putShort(PAGE_HEADER + 2 * nodes, (short) upper);
        nodes++;
      }
      int first = starts[p];
      up.add(below.keys, below.start(first), below.keySize(first), finish(P_BRANCH));
      branchPages++;
    }
    return up;
  }
}
