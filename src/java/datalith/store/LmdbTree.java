package datalith.store;

import static datalith.store.LmdbLayout.CURSOR_DEPTH;
import static datalith.store.LmdbLayout.F_BIGDATA;
import static datalith.store.LmdbLayout.NODE_HEADER;
import static datalith.store.LmdbLayout.PAGE_HEADER;
import static datalith.store.LmdbLayout.P_BRANCH;
import static datalith.store.LmdbLayout.P_LEAF;
import static datalith.store.LmdbLayout.P_OVERFLOW;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;

/**
 * One path down an LMDB B-tree, read in Java from its root page to a leaf page, every page
 * checked before it is read: the descent behind a cursor's seeks, first and last keys and its
 * crossings from one leaf page to the next, and behind point reads. LMDB's own code reads no
 * page of a read transaction (see {@link LmdbSnapshot}).
 *
 * <p>A branch page's node {@code i} points to the subtree of the keys from its key up to the
 * next node's key; node 0's key is not read (LMDB leaves it empty): its subtree holds every key
 * below node 1's. A seek takes, on each branch page, the last node whose key is at most the
 * probe (node 0 when there is none), as LMDB does, and on the leaf page the first key at least
 * the probe; when the leaf page has none, the caller crosses to the next one.
 *
 * <p>Checks: a page number must be one of the snapshot's data pages in the file (see
 * {@link LmdbSnapshot#isDataPage}); the page there must say it is that page, be of the kind the
 * tree's recorded depth expects at its level (branch pages above the last level, a leaf page
 * on it: so a descent takes exactly depth steps, whatever the pages say), hold at least one
 * key, and have its bounds in order; a branch node read must lie between the page's upper
 * bound and its end, and a key read must lie in its page and have at least one byte. A value
 * must lie in its page, or on overflow pages of the snapshot that say they are. What fails is
 * damage: a {@code :store/corrupt} ex-info naming the sub-database and page. Pages are of
 * the store's size, LMDB's system page size when the file was made (4 KiB on x86-64 Linux,
 * 16 KiB on Apple silicon; 512 bytes to 32 KiB, which {@code LmdbFiles} checks at open).
 *
 * <p>After a descent, {@code path[0 .. depth - 1]} are checked pages from the root to a leaf
 * page, and {@code index[l]} is the child taken on the branch page {@code path[l]}. One thread
 * at a time.
 */
final class LmdbTree {

  private static final int FIRST = 0;
  private static final int LAST = 1;
  private static final int PROBE = 2;

  private LmdbSnapshot snap;
  private SubDb db; // null: the main database
  private int pageSize; // the snapshot's
  private int pageShift;
  private int lastNode; // the last offset of a node with a key of one byte
  private long root;
  private int depth; // 0: an empty tree
  private final long[] path = new long[CURSOR_DEPTH];
  private final int[] index = new int[CURSOR_DEPTH];
  private final ByteBuffer view = ReadOnlyBufferProxy.newView(); // a key, to compare heap probes
  // the descents of the last warm(), which seeks of the same probes take over: per probe, its
  // bytes, its pages from the root and the children taken; entries warmNext .. warmCount - 1
  // are not used yet
  private byte[][] warmKeys = new byte[0][];
  private long[][] warmPath = new long[0][];
  private int[][] warmIndex = new int[0][];
  private int[] warmPlace = new int[0]; // per probe, its place on its leaf page (lowerBound's)
  private int warmCount;
  private int warmNext;

  /** Opens the tree of {@code db} in snapshot {@code s}. */
  void open(LmdbSnapshot s, SubDb db) {
    long record = s.record(db);
    open(s, db, LmdbSnapshot.root(record), LmdbSnapshot.depth(record));
  }

  /**
   * Opens the tree of {@code db} (null: the main database) with root page {@code root} and
   * {@code depth} levels (0: empty), both checked by the caller to be a tree's (depth at most
   * {@link LmdbLayout#CURSOR_DEPTH}).
   */
  void open(LmdbSnapshot s, SubDb db, long root, int depth) {
    this.snap = s;
    this.db = db;
    this.pageShift = s.pageShift();
    this.pageSize = 1 << pageShift;
    this.lastNode = pageSize - NODE_HEADER - 1;
    this.root = root;
    this.depth = depth;
    warmCount = 0;
  }

  /** Forgets the snapshot: the tree reads nothing until opened again. */
  void detach() {
    snap = null;
    warmCount = 0;
  }

  /** The tree's levels, 0 when it is empty. */
  int depth() {
    return depth;
  }

  /** The page number at {@code level} of the last descent (depth - 1: its leaf page). */
  long page(int level) {
    return path[level];
  }

  /** The child taken on the branch page at {@code level} of the last descent. */
  int child(int level) {
    return index[level];
  }

  /** The address of page {@code n}, which must have been checked. */
  long address(long n) {
    return snap.map + (n << pageShift);
  }

  /** The size of the tree's pages. */
  int pageSize() {
    return pageSize;
  }

  /** The number of keys of the leaf page reached by descending along the first keys; 0: empty. */
  int first() {
    return start(FIRST, null);
  }

  /** As {@link #first}, along the last keys. */
  int last() {
    return start(LAST, null);
  }

  /**
   * Descends to the leaf page where {@code probe} belongs, as LMDB's search reaches it, and
   * returns its number of keys and the place there of its first key at least the probe (the
   * number of keys when there is none, as {@link #lowerBound}): {@code keys << 32 | place}, read
   * by {@link #foundKeys} and {@link #foundPlace}; 0 when the tree is empty.
   */
  long seek(ByteBuffer probe) {
    int k = warmed(probe);
    return k >= 0 ? seekWarmed(k) : seekCold(probe);
  }

  /**
   * The entry of the last {@link #warm} that holds {@code probe}'s descent, not taken yet by a
   * seek; -1 when there is none.
   */
  int warmed(ByteBuffer probe) {
    for (int k = warmNext; k < warmCount; k++) {
      if (sameBytes(probe, warmKeys[k])) {
        return k;
      }
    }
    return -1;
  }

  /** {@link #seek} of the probe of {@link #warmed}'s entry {@code k}: takes that descent over. */
  long seekWarmed(int k) {
    // warm() made this very descent and search of the leaf page: checked as they were read
    warmNext = k + 1;
    System.arraycopy(warmPath[k], 0, path, 0, depth);
    System.arraycopy(warmIndex[k], 0, index, 0, depth - 1);
    return found(keys(path[depth - 1], P_LEAF), warmPlace[k]);
  }

  /** {@link #seek} by a descent from the root. */
  long seekCold(ByteBuffer probe) {
    int keys = start(PROBE, probe);
    return keys == 0 ? 0 : found(keys, lowerBound(path[depth - 1], keys, probe));
  }

  private static long found(int keys, int place) {
    return (long) keys << 32 | place;
  }

  /** The number of keys of the leaf page of {@link #seek}'s result; 0: the tree is empty. */
  static int foundKeys(long found) {
    return (int) (found >>> 32);
  }

  /** The place on the leaf page of {@link #seek}'s result. */
  static int foundPlace(long found) {
    return (int) found;
  }

  private static boolean sameBytes(ByteBuffer probe, byte[] k) {
    int n = probe.remaining();
    if (n != k.length) {
      return false;
    }
    int at = probe.position();
    for (int i = 0; i < n; i++) {
      if (probe.get(at + i) != k[i]) {
        return false;
      }
    }
    return true;
  }

  private int start(int mode, ByteBuffer probe) {
    if (depth == 0) {
      return 0;
    }
    path[0] = root;
    return down(0, mode, probe);
  }

  /** Descends from the page at {@code level} to the last level; the leaf page's keys. */
  private int down(int level, int mode, ByteBuffer probe) {
    int leaf = depth - 1;
    for (int l = level; l < leaf; l++) {
      long n = path[l];
      int keys = keys(n, P_BRANCH);
      int i = mode == FIRST ? 0 : mode == LAST ? keys - 1 : route(n, keys, probe);
      index[l] = i;
      path[l + 1] = child(n, i);
    }
    return keys(path[leaf], P_LEAF);
  }

  /**
   * Makes the descents of seeks of {@code probes[0 .. n)} (each probe's bytes from its position
   * to its limit) now, side by side: one binary-search step of each probe in turn, level by
   * level, so that the cache misses of the probes overlap where a seek's follow one another.
   * A later {@link #seek} of one of those probes takes its descent and its place on the leaf
   * page over. It reads what the seeks would, checked as they check it, leaves the path as it
   * was, and stops at the first damage (keeping no descent), which the seeks then meet and
   * report.
   */
  void warm(ByteBuffer[] probes, int n) {
    warmCount = 0;
    warmNext = 0;
    if (depth == 0 || n <= 0) {
      return;
    }
    if (warmKeys.length < n) {
      warmKeys = new byte[n][];
      warmPath = new long[n][CURSOR_DEPTH];
      warmIndex = new int[n][CURSOR_DEPTH];
      warmPlace = new int[n];
    }
    long[] page = new long[n];
    int[] lo = new int[n];
    int[] hi = new int[n];
    java.util.Arrays.fill(page, root);
    try {
      for (int l = 0; l < depth; l++) {
        boolean leaf = l == depth - 1;
        for (int k = 0; k < n; k++) {
          warmPath[k][l] = page[k];
          lo[k] = leaf ? -1 : 0; // as lowerBound and route start
          hi[k] = keys(page[k], leaf ? P_LEAF : P_BRANCH);
        }
        for (boolean more = true; more; ) {
          more = false;
          for (int k = 0; k < n; k++) {
            if (hi[k] - lo[k] > 1) {
              more = true;
              int mid = (lo[k] + hi[k]) >>> 1;
              if (leaf ? warmLeafStep(page[k], mid, probes[k]) : warmBranchStep(page[k], mid,
                  probes[k])) {
                lo[k] = mid;
              } else {
                hi[k] = mid;
              }
            }
          }
        }
        for (int k = 0; k < n; k++) {
          if (leaf) {
            warmPlace[k] = hi[k];
          } else {
            warmIndex[k][l] = lo[k];
            page[k] = child(page[k], lo[k]);
          }
        }
      }
    } catch (RuntimeException damage) {
      return; // the seeks meet it again and report it
    }
    for (int k = 0; k < n; k++) {
      ByteBuffer b = probes[k];
      byte[] bytes = new byte[b.remaining()];
      b.get(b.position(), bytes);
      warmKeys[k] = bytes;
    }
    warmCount = n;
  }

  /** Whether key {@code mid} of checked branch page {@code n} is at most the probe (route's step). */
  private boolean warmBranchStep(long n, int mid, ByteBuffer probe) {
    long p = address(n);
    int node = branchNode(n, p, mid);
    int size = LmdbLayout.keySize(p + node);
    if (size == 0 || size > pageSize - NODE_HEADER - node) {
      throw corrupt(n, "A key (of node " + mid + ") lies outside its branch page");
    }
    return compare(probe, p + node + NODE_HEADER, size) >= 0;
  }

  /** Whether key {@code mid} of checked leaf page {@code n} is below the probe (lowerBound's step). */
  private boolean warmLeafStep(long n, int mid, ByteBuffer probe) {
    long p = address(n);
    int node = checkedLeafNode(n, p, mid, mid + 1);
    return compare(probe, p + offset(node) + NODE_HEADER, keySize(node)) > 0;
  }

  /**
   * Moves the path to the next leaf page ({@code forward}) or the previous one, along the
   * branch pages: that page's keys, or 0 when there is none (the path is then as it was).
   */
  int cross(boolean forward) {
    int d = forward ? 1 : -1;
    int level = depth - 2;
    while (level >= 0) {
      int i = index[level] + d;
      if (i >= 0 && i < keys(path[level], P_BRANCH)) {
        break;
      }
      level--;
    }
    if (level < 0) {
      return 0;
    }
    index[level] += d;
    path[level + 1] = child(path[level], index[level]);
    return down(level + 1, forward ? FIRST : LAST, null);
  }

  /**
   * The number of keys of the snapshot's page {@code n}, checked to be a sound page of kind
   * {@code flags} (P_BRANCH or P_LEAF): a data page of the snapshot that says it is page n, of
   * that kind, with at least one key and its bounds in order.
   */
  int keys(long n, int flags) {
    if (!snap.isDataPage(n)) {
      throw badPage(n, flags);
    }
    long p = address(n);
    int lower = LmdbLayout.lower(p);
    int upper = LmdbLayout.upper(p);
    if (LmdbLayout.pgno(p) != n || LmdbLayout.flags(p) != flags
        || lower <= PAGE_HEADER || lower > upper || upper > pageSize) {
      throw badPage(n, flags);
    }
    return (lower - PAGE_HEADER) >>> 1;
  }

  /** The exception for page {@code n}, not a sound page of kind {@code flags}: says why. */
  private RuntimeException badPage(long n, int flags) {
    String kind = flags == P_LEAF ? "leaf" : "branch";
    if (!snap.isDataPage(n)) {
      return corrupt(n, "A " + kind + " page number outside the file's pages");
    }
    long p = address(n);
    if (LmdbLayout.pgno(p) != n || LmdbLayout.flags(p) != flags) {
      return corrupt(n, "Not the " + kind + " page expected (its header says page "
          + LmdbLayout.pgno(p) + ", flags " + LmdbLayout.flags(p) + ")");
    }
    return corrupt(n, "A " + kind + " page whose bounds are out of order or hold no key (lower "
        + LmdbLayout.lower(p) + ", upper " + LmdbLayout.upper(p) + ")");
  }

  /** The exception for damage found at page {@code n} (-1: unknown) of this tree. */
  RuntimeException corrupt(long n, String message) {
    return snap.corrupt(db, n, db == null
        ? message + " (in the main database, which records the sub-databases)" : message);
  }

  /**
   * The offset of node {@code i} (below the keys) of the checked branch page {@code n}, checked
   * to lie between the page's upper bound and its end.
   */
  private int branchNode(long n, long p, int i) {
    int node = LmdbLayout.node(p, i);
    if (node < LmdbLayout.upper(p) || node > pageSize - NODE_HEADER) {
      throw corrupt(n, "A node (" + i + ") lies outside its branch page");
    }
    return node;
  }

  /** The page number that node {@code i} (below its keys) of the checked branch page n points to. */
  private long child(long n, int i) {
    long p = address(n);
    return LmdbLayout.childPgno(p + branchNode(n, p, i));
  }

  /**
   * The child of the checked branch page {@code n} (with {@code keys} keys) whose subtree holds
   * {@code probe}: the last node from 1 on whose key is at most the probe, else node 0.
   */
  private int route(long n, int keys, ByteBuffer probe) {
    long p = address(n);
    int lo = 0; // node lo's key <= probe (node 0's counts as below every key)
    int hi = keys; // node hi's key > probe (keys: past the last)
    while (hi - lo > 1) {
      int mid = (lo + hi) >>> 1;
      int node = branchNode(n, p, mid);
      int size = LmdbLayout.keySize(p + node);
      if (size == 0 || size > pageSize - NODE_HEADER - node) {
        throw corrupt(n, "A key (of node " + mid + ") lies outside its branch page");
      }
      if (compare(probe, p + node + NODE_HEADER, size) >= 0) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * Node {@code i} (below the keys) of the checked leaf page at {@code p}: its offset << 16 |
   * its key's size, or -1 when it does not lie in the page past the header with a key of at
   * least one byte (two unsigned comparisons).
   */
  int leafNode(long p, int i) {
    int node = LmdbLayout.node(p, i); // i is below the keys, so this lies in the page's header
    if (Integer.compareUnsigned(node - PAGE_HEADER, lastNode - PAGE_HEADER) > 0) {
      return -1; // its header would not lie in the page: its key size is not read
    }
    int size = LmdbLayout.keySize(p + node);
    return Integer.compareUnsigned(size - 1, lastNode - node) <= 0 ? node << 16 | size : -1;
  }

  static int offset(int node) {
    return node >>> 16;
  }

  static int keySize(int node) {
    return node & 0xFFFF;
  }

  /** The exception for node {@code i} of leaf page {@code n}, which lies outside it. */
  RuntimeException outside(long n, int i, int keys) {
    return corrupt(n, "A node (" + i + " of " + keys + ") lies outside its page");
  }

  /** {@link #leafNode}, or the exception when it does not lie in the page. */
  int checkedLeafNode(long n, long p, int i, int keys) {
    int node = leafNode(p, i);
    if (node < 0) {
      throw outside(n, i, keys);
    }
    return node;
  }

  /**
   * The place of the first key at least {@code probe} on the checked leaf page {@code n}, with
   * {@code keys} keys; {@code keys} when there is none.
   */
  int lowerBound(long n, int keys, ByteBuffer probe) {
    long p = address(n);
    int lo = -1; // key lo < probe (-1: before the first)
    int hi = keys; // key hi >= probe (keys: past the last)
    while (hi - lo > 1) {
      int mid = (lo + hi) >>> 1;
      int node = checkedLeafNode(n, p, mid, keys);
      if (compare(probe, p + offset(node) + NODE_HEADER, keySize(node)) > 0) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return hi;
  }

  /**
   * Unsigned order of {@code probe}'s remaining bytes and the {@code size} at {@code key}. A
   * direct probe's bytes are read at its address, with {@code probe} kept reachable until they
   * are read: otherwise a collection in the comparison could free a caller's probe that nothing
   * else holds (its cleaner runs at once), and the comparison read freed memory.
   */
  int compare(ByteBuffer probe, long key, int size) {
    if (probe.isDirect()) {
      try {
        return ReadOnlyBufferProxy.compareUnsigned(ReadOnlyBufferProxy.base(probe)
            + probe.position(), probe.remaining(), key, size);
      } finally {
        Reference.reachabilityFence(probe);
      }
    }
    ReadOnlyBufferProxy.point(view, key, size);
    return ReadOnlyBufferProxy.compareUnsigned(probe, view);
  }

  /**
   * Points {@code into} at the value of node {@code node} (an offset << 16 | key size from
   * {@link #leafNode}), key {@code i}, of the checked leaf page {@code n}: in the page, or on
   * overflow pages, each checked.
   */
  void value(long n, int node, int i, ByteBuffer into) {
    long at = address(n) + offset(node);
    int start = offset(node) + NODE_HEADER + keySize(node); // where the node's data starts
    int flags = LmdbLayout.nodeFlags(at);
    long size = LmdbLayout.dataSize(at);
    if (flags == 0) {
      if (start + size > pageSize) {
        throw corrupt(n, "A value (of key " + i + ") lies outside its page");
      }
      ReadOnlyBufferProxy.point(into, address(n) + start, (int) size);
      return;
    }
    if (flags != F_BIGDATA || start + Long.BYTES > pageSize) {
      throw corrupt(n, "A node (" + i + ", flags " + flags + ") lies outside its page");
    }
    long first = ReadOnlyBufferProxy.nativeLong(address(n) + start);
    overflow(n, i, first, size);
    ReadOnlyBufferProxy.point(into, address(first) + PAGE_HEADER, (int) size);
  }

  /**
   * Checks the overflow pages from {@code first} that hold the value of {@code size} bytes of
   * key {@code i} of leaf page {@code n}: all of them (as many as their first page says) pages
   * of the snapshot, the first saying it is that page and an overflow page, and the value
   * within them. Returns their number.
   */
  int overflow(long n, int i, long first, long size) {
    long needed = LmdbLayout.overflowPages(size, pageSize);
    String of = " (of key " + i + ", " + size + " bytes, from page " + first + ")";
    if (size > Integer.MAX_VALUE - pageSize || !snap.isDataPage(first)) {
      throw corrupt(n, "A value on overflow pages outside the file's pages" + of);
    }
    long p = address(first);
    long pages = Integer.toUnsignedLong(ReadOnlyBufferProxy.nativeInt(p + LmdbLayout.PAGE_PAGES));
    if (LmdbLayout.pgno(p) != first || LmdbLayout.flags(p) != P_OVERFLOW || pages < needed) {
      throw corrupt(n, "A value on pages that are not its overflow pages" + of);
    }
    if (!snap.isDataPage(first + pages - 1)) {
      throw corrupt(n, "A value on overflow pages past the file's pages" + of);
    }
    return (int) Math.min(pages, Integer.MAX_VALUE);
  }
}
