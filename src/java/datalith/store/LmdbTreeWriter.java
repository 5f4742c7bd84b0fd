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
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Writes one B+tree of LMDB 0.9 ({@link LmdbLayout}) from its entries in key order, bottom up,
 * as {@code MDB_APPEND} would fill it: each leaf page takes nodes until the next does not fit,
 * then goes to the {@link LmdbPageSink}; a value whose node would pass LMDB's
 * {@code me_nodemax} ({@value #NODE_MAX} with pages of 4 KiB) goes on overflow pages first
 * (the node then holds their first page number, flagged F_BIGDATA, and the value's real size).
 * Once the leaves are written, each level of branch pages is built from the first keys of the
 * level below: node 0 of a branch page has an empty key, the others their child's first key,
 * and a branch page holds at least two children. The last level written is the root.
 *
 * <p>Nodes lie from the page's end down, each of an even size; the offsets after the page
 * header are in key order. The caller gives keys strictly ascending, of 1 to 511 bytes (a
 * store's cursor does). One thread.
 */
final class LmdbTreeWriter {
  /** LMDB's me_nodemax for pages of 4 KiB: ((4096 - 16) / 2 & -2) - 2. */
  static final int NODE_MAX = ((LmdbPageSink.PAGE - PAGE_HEADER) / 2 & -2) - 2;
  private static final int PAGE = LmdbPageSink.PAGE;

  /** The first key and page number of each page of a level, in key order. */
  private static final class Level {
    byte[] keys = new byte[1 << 12];
    int[] ends = new int[64]; // key i is keys[ends[i - 1] .. ends[i]) (from 0 for i = 0)
    long[] pages = new long[64];
    int count;

    void add(ByteBuffer key, long page) {
      int k = key.remaining();
      int start = count == 0 ? 0 : ends[count - 1];
      if (start + k > keys.length) {
        keys = Arrays.copyOf(keys, Math.max(2 * keys.length, start + k));
      }
      key.duplicate().get(keys, start, k);
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

  private final LmdbPageSink sink;
  private final String where; // the store's directory, for messages
  private final int nodeFlags; // of every leaf node whose value is not on overflow pages
  private final boolean integerKeys; // keys are native u64s, in numeric order (MDB_INTEGERKEY)
  private final ByteBuffer page = ByteBuffer.allocateDirect(PAGE).order(ByteOrder.nativeOrder());
  private Level level = new Level(); // the leaves written so far
  private ByteBuffer firstKey; // the leaf page being filled's first key, a copy
  // the last key added, a copy (limit 0: none yet)
  private final ByteBuffer previous = ByteBuffer.allocate(Errors.MAX_KEY_SIZE).limit(0);
  private int nodes; // on the leaf page being filled
  private int upper = PAGE; // its lowest node's offset
  private long entries;
  private long leafPages;
  private long branchPages;
  private final long overflowBefore;

  /**
   * A writer of a tree into {@code sink} whose leaf nodes have the flags {@code nodeFlags}, its
   * keys in unsigned byte order, or {@code integerKeys}: native u64s in numeric order.
   */
  LmdbTreeWriter(LmdbPageSink sink, int nodeFlags, boolean integerKeys, String where) {
    this.sink = sink;
    this.integerKeys = integerKeys;
    this.where = where;
    this.nodeFlags = nodeFlags;
    this.overflowBefore = sink.overflowPages();
  }

  private static int even(long n) {
    return (int) ((n + 1) & ~1L);
  }

  /**
   * Adds the entry {@code key} (1 to 511 bytes, past the last one added), {@code val}.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/key-size} for a key of another size,
   *     {@code :store/order} for one not past the last (nothing of the tree is then committed)
   */
  void add(ByteBuffer key, ByteBuffer val) throws IOException {
    Errors.checkKey(where, key);
    checkOrder(key);
    int k = key.remaining();
    long d = val.remaining();
    boolean big = NODE_HEADER + k + d > NODE_MAX;
    int size = even(NODE_HEADER + k + (big ? 8 : d));
    if (nodes > 0 && upper - size < PAGE_HEADER + 2 * (nodes + 1)) {
      finishLeaf();
    }
    if (nodes == 0) {
      firstKey = ByteBuffer.allocate(k).put(0, key, key.position(), k);
    }
    long overflow = big ? sink.overflow(val) : 0; // numbered before the leaf page
    upper -= size;
    page.putShort(upper, (short) d).putShort(upper + 2, (short) (d >>> 16))
        .putShort(upper + 4, (short) (big ? F_BIGDATA : nodeFlags)).putShort(upper + 6, (short) k)
        .put(upper + NODE_HEADER, key, key.position(), k);
    if (big) {
      page.putLong(upper + NODE_HEADER + k, overflow);
    } else {
      page.put(upper + NODE_HEADER + k, val, val.position(), (int) d);
    }
    page.putShort(PAGE_HEADER + 2 * nodes, (short) upper);
    nodes++;
    entries++;
  }

  /** Throws unless {@code key} sorts after the last key added (unsigned bytes), and keeps it. */
  private void checkOrder(ByteBuffer key) {
    if (integerKeys && key.remaining() != Long.BYTES) {
      throw Errors.error(Errors.KEY_SIZE, where, "An integer key of " + key.remaining()
          + " bytes", null);
    }
    if (previous.hasRemaining() && compare(previous, key) >= 0) {
      throw Errors.error(Errors.ORDER, where, "The entries to write are not in ascending key"
          + " order", null);
    }
    previous.clear().put(0, key, key.position(), key.remaining()).limit(key.remaining());
  }

  /**
   * Unsigned lexicographic comparison of the remaining bytes of {@code a} and {@code b}, or of
   * their native u64s with integer keys.
   */
  private int compare(ByteBuffer a, ByteBuffer b) {
    if (integerKeys) {
      return Long.compareUnsigned(a.order(ByteOrder.nativeOrder()).getLong(a.position()),
          b.duplicate().order(ByteOrder.nativeOrder()).getLong(b.position()));
    }
    int i = a.mismatch(b);
    if (i < 0) {
      return 0;
    }
    if (i == a.remaining() || i == b.remaining()) {
      return a.remaining() - b.remaining();
    }
    return Byte.toUnsignedInt(a.get(a.position() + i))
        - Byte.toUnsignedInt(b.get(b.position() + i));
  }

  private void finishLeaf() throws IOException {
    level.add(firstKey, finish(P_LEAF));
    leafPages++;
  }

  /** Writes the page being filled, of kind {@code flags}, and starts the next; its number. */
  private long finish(int flags) throws IOException {
    int lower = PAGE_HEADER + 2 * nodes;
    page.putShort(8, (short) 0).putShort(PAGE_FLAGS, (short) flags)
        .putShort(PAGE_LOWER, (short) lower).putShort(PAGE_UPPER, (short) upper);
    page.put(lower, LmdbPageSink.ZEROS, 0, upper - lower); // no stale bytes in the file
    long n = sink.page(page);
    nodes = 0;
    upper = PAGE;
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
        .putLong(MD_OVERFLOW_PAGES, sink.overflowPages() - overflowBefore)
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
    int used = PAGE;
    for (int i = 0; i < n; i++) {
      int size = branchNode(below.keySize(i));
      if (i == 0 || used + size > PAGE) {
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
        page.putShort(PAGE_HEADER + 2 * nodes, (short) upper);
        nodes++;
      }
      int first = starts[p];
      up.add(ByteBuffer.wrap(below.keys, below.start(first), below.keySize(first)),
          finish(P_BRANCH));
      branchPages++;
    }
    return up;
  }
}
