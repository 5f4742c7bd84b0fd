package datalith.store;

import static datalith.store.LmdbLayout.CURSOR_DEPTH;
import static datalith.store.LmdbLayout.F_BIGDATA;
import static datalith.store.LmdbLayout.NODE_HEADER;
import static datalith.store.LmdbLayout.PAGE_HEADER;
import static datalith.store.LmdbLayout.P_BRANCH;
import static datalith.store.LmdbLayout.P_LEAF;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.lmdbjava.GetOp;
import org.lmdbjava.LmdbException;

/**
 * A cursor of an {@link LmdbReadTxn}: a handle on one of its reader's pooled LMDB cursors. Its
 * key and value are read-only views into the memory map, re-pointed on every move.
 *
 * <p>A call into LMDB through JNR costs about as much as reading a whole leaf page, so once the
 * LMDB cursor has landed on a leaf page this cursor reads that page itself: moves within the
 * page, and seeks to keys the page holds, are done in Java from the map, and LMDB is called only
 * to cross to another page or seek elsewhere. A read transaction's pages never change, and every
 * page is checked against LMDB's layout before it is read this way; a page that does not match
 * (another LMDB version, a page of another kind) is left to LMDB. LMDB's own cursor (its
 * MDB_cursor struct) is read for its place on the page, and when it is found where it was left,
 * moved along the page by writing its index, so that stepping off the page is one call.
 *
 * <p>Stepping off a leaf page to its neighbour is done in Java too: the path of branch pages from
 * the root to the leaf is read once from LMDB's cursor, then followed and kept here, so that a
 * long scan calls LMDB only to start. LMDB's cursor stays where it was meanwhile and is brought
 * to the current key (one seek) before any move LMDB makes.
 */
final class LmdbCursor implements Cursor {

  // pages and LMDB's cursor are read by LMDB 0.9's layout, see LmdbLayout
  // LMDB's page size is the system's; pages of this size are read in Java (on a system with
  // larger pages, such as 16 KiB on Apple silicon, LMDB does all the reading)
  private static final int SMALLEST_SYSTEM_PAGE = 4096;

  private final LmdbReadTxn txn;
  private LmdbReader.Slot slot; // null once closed
  private boolean positioned; // false before the first positioning and after running off an end
  private ByteBuffer key; // the cursor's key view while positioned, else null

  // the leaf page read in Java: page is its address, 0 when the cursor is not on one
  private long page;
  private int count; // its keys
  private int index; // the current key's place in it, -1 until needed
  private int lmdbIndex; // where LMDB's cursor is on it, -1 until needed, ELSEWHERE if not on it
  private long lmdbKey; // the address of LMDB's current key
  private static final int ELSEWHERE = -2;
  // the pages from the root to the leaf page (path[pathTop] == page when it is that page's path)
  // and the child taken on each branch page (the leaf's own entry is unused: index is its place)
  private final long[] path = new long[CURSOR_DEPTH];
  private final int[] pathIndex = new int[CURSOR_DEPTH];
  private int pathTop = -1;

  LmdbCursor(LmdbReadTxn txn, LmdbReader.Slot slot) {
    this.txn = txn;
    this.slot = slot;
  }

  private org.lmdbjava.Cursor<ByteBuffer> lmdb() {
    txn.reader(); // throws once the transaction is closed
    LmdbReader.Slot s = slot;
    if (s == null) {
      throw txn.closed("The cursor");
    }
    return s.cursor;
  }

  /** After a move of LMDB's cursor: takes its key and the leaf page that holds it. */
  private boolean moved(boolean found, org.lmdbjava.Cursor<ByteBuffer> c) {
    positioned = found;
    page = 0;
    if (!found) {
      key = null;
      return false;
    }
    ByteBuffer k = c.key();
    key = k;
    int ps = txn.pageSize;
    long at = ReadOnlyBufferProxy.base(k);
    if (ps != SMALLEST_SYSTEM_PAGE) {
      return true;
    }
    // the map starts on a boundary of the system's pages, so the page holding k starts here and
    // lies in one system page with k
    long p = at & -ps;
    long pgno = LmdbLayout.pgno(p);
    // the first page seen tells where the map starts; a page not where that puts it is not read
    int n = txn.mapAddress(p, pgno) == p - pgno * ps ? pageKeys(p, P_LEAF) : -1;
    if (n < 0) {
      return true;
    }
    enter(p, n);
    index = -1;
    lmdbIndex = -1;
    lmdbKey = at;
    return true;
  }

  /** The current key's place on the page, found from LMDB's key; false if it is not there. */
  private boolean placed() {
    if (index >= 0) {
      return true;
    }
    int node = (int) (lmdbKey - page) - NODE_HEADER;
    // LMDB's cursor knows its place (mc_ki[mc_top]); else the node offsets are searched for it
    int known = lmdbPlace();
    int from = known >= 0 ? known : 0;
    int to = known >= 0 ? known + 1 : count;
    for (int i = from; i < to; i++) {
      if (LmdbLayout.node(page, i) == node) {
        if (LmdbLayout.keySize(page + node) != key.limit()) {
          break;
        }
        index = i;
        lmdbIndex = i;
        return true;
      }
    }
    page = 0; // not the layout this reads: leave the page to LMDB
    return false;
  }

  /** LMDB's cursor's index on the page, read from its MDB_cursor when that is on it; else -1. */
  private int lmdbPlace() {
    long a = slot.address;
    if (a == 0) {
      return -1;
    }
    int top = LmdbLayout.cursorTop(a);
    if (top >= CURSOR_DEPTH || LmdbLayout.cursorPage(a, top) != page) {
      return -1;
    }
    int i = LmdbLayout.cursorIndex(a, top);
    return i < count ? i : -1;
  }

  /** The offset of node {@code i} on the page, checked to lie within it. */
  private int node(int i) {
    // i < count, so its offset lies in the page's header; the node is checked to lie in the page
    long p = page;
    int node = LmdbLayout.node(p, i);
    if (node < PAGE_HEADER || node + NODE_HEADER + LmdbLayout.keySize(p + node) > txn.pageSize) {
      throw new IllegalStateException("LMDB page " + page + " has a node out of bounds");
    }
    return node;
  }

  /** Makes key {@code i} of the page current. */
  private boolean at(int i) {
    int node = node(i);
    ByteBuffer k = slot.keyView;
    ReadOnlyBufferProxy.point(k, page + node + NODE_HEADER, LmdbLayout.keySize(page + node));
    index = i;
    key = k;
    positioned = true;
    return true;
  }

  @Override
  public long skipRun(ByteBuffer prefix) {
    if (!positioned || page == 0 || !placed() || index >= count - 1) {
      return 0;
    }
    ByteBuffer pv = slot.pageView;
    int last = KeyPrefix.lastOfRun(index, count - 1, i -> {
      int node = node(i);
      return KeyPrefix.at(pv, node + NODE_HEADER, LmdbLayout.keySize(page + node), prefix);
    });
    int moved = last - index;
    if (moved > 0) {
      at(last);
    }
    return moved;
  }

  /**
   * The number of keys of the map's page at address {@code p} when it is a page of kind
   * {@code flags} (P_BRANCH or P_LEAF) whose header is sound; else -1.
   */
  private int pageKeys(long p, int flags) {
    long base = txn.pageAddress(0);
    long pgno = (p - base) >> txn.pageShift;
    if (base == 0 || txn.pageShift < 0 || p != txn.pageAddress(pgno)
        || LmdbLayout.pgno(p) != pgno || LmdbLayout.flags(p) != flags) {
      return -1;
    }
    int lower = LmdbLayout.lower(p);
    int upper = LmdbLayout.upper(p);
    if (lower <= PAGE_HEADER || lower > upper || upper > txn.pageSize) {
      return -1;
    }
    return (lower - PAGE_HEADER) >>> 1;
  }

  /** The address of the page node {@code i} of branch page {@code p} points to, or 0. */
  private long child(long p, int i) {
    int node = LmdbLayout.node(p, i);
    if (node < PAGE_HEADER || node + NODE_HEADER > txn.pageSize) {
      return 0;
    }
    return txn.pageAddress(LmdbLayout.childPgno(p + node));
  }

  /** Whether {@link #path} leads to the current page, read from LMDB's cursor if need be. */
  private boolean pathKnown() {
    if (pathTop >= 0 && path[pathTop] == page) {
      return true;
    }
    pathTop = -1;
    long a = slot.address;
    if (a == 0) {
      return false;
    }
    int top = LmdbLayout.cursorTop(a);
    if (top < 1 || top >= CURSOR_DEPTH || LmdbLayout.cursorPage(a, top) != page) {
      return false; // a tree of one page, or LMDB's cursor is not on this page
    }
    for (int l = 0; l < top; l++) {
      long b = LmdbLayout.cursorPage(a, l);
      int i = LmdbLayout.cursorIndex(a, l);
      if (i >= pageKeys(b, P_BRANCH)) {
        return false;
      }
      path[l] = b;
      pathIndex[l] = i;
    }
    path[top] = page;
    pathTop = top;
    return true;
  }

  /**
   * Moves to the first key of the next leaf page ({@code forward}) or the last key of the
   * previous one, along the branch pages: 1 when it did, 0 when there is no such page (the cursor
   * is then off the end, as LMDB leaves it), -1 when LMDB must make the move.
   */
  private int cross(boolean forward) {
    if (!pathKnown()) {
      return -1;
    }
    int d = forward ? 1 : -1;
    int level = pathTop - 1;
    while (level >= 0) {
      int i = pathIndex[level] + d;
      if (i >= 0 && i < pageKeys(path[level], P_BRANCH)) {
        break;
      }
      level--;
    }
    if (level < 0) {
      positioned = false;
      key = null;
      page = 0;
      return 0;
    }
    // down from the branch page that has a neighbour, along its edge nearest the old leaf
    pathIndex[level] += d;
    int n = 0;
    for (int l = level; l < pathTop; l++) {
      long c = child(path[l], pathIndex[l]);
      n = pageKeys(c, l + 1 == pathTop ? P_LEAF : P_BRANCH);
      if (n <= 0) {
        pathTop = -1; // not a layout this reads: LMDB makes the move
        return -1;
      }
      path[l + 1] = c;
      pathIndex[l + 1] = forward ? 0 : n - 1;
    }
    enter(path[pathTop], n);
    lmdbIndex = ELSEWHERE;
    return at(forward ? 0 : n - 1) ? 1 : 0;
  }

  /** Makes the checked leaf page at {@code p}, with {@code n} keys, the one read in Java. */
  private void enter(long p, int n) {
    page = p;
    count = n;
    ByteBuffer pv = slot.pageView;
    ReadOnlyBufferProxy.point(pv, p, txn.pageSize);
    pv.order(ByteOrder.nativeOrder());
  }

  /** Brings LMDB's cursor to the current key, for a move that LMDB makes. */
  private void sync(org.lmdbjava.Cursor<ByteBuffer> c) {
    if (page == 0 || index == lmdbIndex) {
      return;
    }
    if (!c.get(key, GetOp.MDB_SET_KEY)) {
      throw new IllegalStateException("LMDB lost key " + index + " of page " + page);
    }
    lmdbIndex = index;
    lmdbKey = ReadOnlyBufferProxy.base(c.key());
  }

  /**
   * Like {@link #sync} before LMDB steps off the page: when LMDB's cursor is found where it was
   * left (its leaf page is this page and its index there is lmdbIndex), moving it along its page
   * is writing the current index into it, as LMDB's own step within a page does.
   */
  private void syncToStep(org.lmdbjava.Cursor<ByteBuffer> c) {
    if (page != 0 && index != lmdbIndex && lmdbPlace() == lmdbIndex) {
      long a = slot.address;
      LmdbLayout.setCursorIndex(a, LmdbLayout.cursorTop(a), index);
      lmdbIndex = index;
      lmdbKey = ReadOnlyBufferProxy.base(key);
      return;
    }
    sync(c);
  }

  @Override
  public boolean seek(ByteBuffer key) {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (page != 0 && key.remaining() <= Errors.MAX_KEY_SIZE && key.remaining() > 0 && placed()) {
      int i = search(key);
      if (i >= 0) {
        return at(i);
      }
    }
    try {
      return moved(slot.seek(key), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot seek", e);
    }
  }

  /**
   * The place of the first key {@code >= probe} on the page when the page holds it (the probe
   * sorts after its first key and not after its last), else -1.
   */
  private int search(ByteBuffer probe) {
    if (compare(probe, 0) < 0 || compare(probe, count - 1) > 0) {
      return -1;
    }
    int lo = 0; // compare(probe, lo) >= 0
    int hi = count - 1; // compare(probe, hi) <= 0
    while (hi - lo > 1) {
      int mid = (lo + hi) >>> 1;
      int d = compare(probe, mid);
      if (d == 0) {
        return mid;
      }
      if (d < 0) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return compare(probe, lo) == 0 ? lo : hi;
  }

  private int compare(ByteBuffer probe, int i) {
    int node = node(i);
    ByteBuffer v = slot.nodeView;
    ReadOnlyBufferProxy.point(v, page + node + NODE_HEADER, LmdbLayout.keySize(page + node));
    return ReadOnlyBufferProxy.compareUnsigned(probe, v);
  }

  @Override
  public boolean first() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.first(), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the first key", e);
    }
  }

  @Override
  public boolean last() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.last(), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the last key", e);
    }
  }

  @Override
  public boolean next() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (!positioned) {
      return false;
    }
    if (page != 0 && placed()) {
      if (index + 1 < count) {
        return at(index + 1);
      }
      int crossed = cross(true);
      if (crossed >= 0) {
        return crossed == 1;
      }
    }
    try {
      syncToStep(c);
      return moved(c.next(), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the next key", e);
    }
  }

  @Override
  public boolean prev() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (!positioned) {
      return false;
    }
    if (page != 0 && placed()) {
      if (index > 0) {
        return at(index - 1);
      }
      int crossed = cross(false);
      if (crossed >= 0) {
        return crossed == 1;
      }
    }
    try {
      syncToStep(c);
      return moved(c.prev(), c);
    } catch (LmdbException e) {
      throw txn.failure("Cannot move to the previous key", e);
    }
  }

  @Override
  public ByteBuffer key() {
    // The view is re-pointed by every move, so it only needs checking that the transaction is
    // still open: a closed one's reader may serve another transaction through the same view.
    ByteBuffer k = key;
    if (k != null && txn.isOpen()) {
      return k;
    }
    lmdb();
    throw new IllegalStateException("The cursor is not positioned");
  }

  @Override
  public ByteBuffer val() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (!positioned) {
      throw new IllegalStateException("The cursor is not positioned");
    }
    if (page != 0 && index != lmdbIndex) {
      int node = node(index);
      long at = page + node;
      if ((LmdbLayout.nodeFlags(at) & F_BIGDATA) == 0) {
        int ksize = LmdbLayout.keySize(at);
        int size = LmdbLayout.dataSize(at);
        if (node + NODE_HEADER + ksize + size > txn.pageSize) {
          throw new IllegalStateException("LMDB page " + page + " has a value out of bounds");
        }
        ByteBuffer v = slot.valView;
        ReadOnlyBufferProxy.point(v, at + NODE_HEADER + ksize, size);
        return v;
      }
      try {
        sync(c);
      } catch (LmdbException e) {
        throw txn.failure("Cannot read a value", e);
      }
    }
    return c.val();
  }

  @Override
  public void close() {
    LmdbReader.Slot s = slot;
    if (s != null) {
      slot = null;
      key = null;
      page = 0;
      if (txn.isOpen()) {
        txn.reader().giveBack(s);
      }
    }
  }
}
