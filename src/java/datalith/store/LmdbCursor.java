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
 * to cross to another page or seek elsewhere. A read transaction's pages never change. LMDB's own
 * cursor (its MDB_cursor struct) is read for its place on the page, and when it is found where it
 * was left, moved along the page by writing its index, so that stepping off the page is one call.
 *
 * <p>Nothing is read before it is checked: a page number must be one of the snapshot's data
 * pages in the file (see {@link LmdbReadTxn#isDataPage}), the page there must say it is that page,
 * of the kind expected (leaf or branch), with its bounds in order, and a node must lie in its page
 * with a key of at least one byte (a page read along has all its nodes checked at once, when it
 * is first read so); what LMDB returns is checked too ({@link LmdbReadTxn#check}). A page that
 * fails is damage: a {@code :store/corrupt} ex-info naming the sub-database and page.
 * When LMDB's structs do not read as {@link LmdbLayout} says (another LMDB), nothing is read in
 * Java and LMDB does every move.
 *
 * <p>Stepping off a leaf page to its neighbour is done in Java too: the path of branch pages from
 * the root to the leaf is read once from LMDB's cursor, then followed and kept here, so that a
 * long scan calls LMDB only to start. LMDB's cursor stays where it was meanwhile and is brought
 * to the current key (one seek) before any move LMDB makes.
 */
final class LmdbCursor implements Cursor {

  // pages and LMDB's cursor are read by LMDB 0.9's layout, see LmdbLayout
  /**
   * The page size whose pages are read in Java, the smallest system page: the page holding a key
   * is found from the key's address; on a system with larger pages, such as 16 KiB on Apple
   * silicon, LMDB does all the reading.
   */
  static final int PAGE_SIZE = 4096;
  private static final int PAGE_SHIFT = Integer.numberOfTrailingZeros(PAGE_SIZE);
  private static final int LAST_NODE = PAGE_SIZE - NODE_HEADER - 1; // with a key of one byte

  private final LmdbReadTxn txn;
  private final SubDb db;
  private LmdbReader.Slot slot; // null once closed
  private boolean positioned; // false before the first positioning and after running off an end
  private ByteBuffer key; // the cursor's key view while positioned, else null

  // the leaf page read in Java: page is its address, 0 when the cursor is not on one
  private long page;
  private long pgno; // its page number
  private int count; // its keys
  private boolean checked; // whether all its nodes were checked (see checkNodes)
  private int index; // the current key's place in it, -1 until needed
  private int lmdbIndex; // where LMDB's cursor is on it, -1 until needed, ELSEWHERE if not on it
  private long lmdbKey; // the address of LMDB's current key
  private static final int ELSEWHERE = -2;
  // the page numbers from the root to the leaf page (path[pathTop] == pgno when it is that
  // page's path) and the child taken on each branch page (the leaf's own entry is unused: index
  // is its place)
  private final long[] path = new long[CURSOR_DEPTH];
  private final int[] pathIndex = new int[CURSOR_DEPTH];
  private int pathTop = -1;

  LmdbCursor(LmdbReadTxn txn, SubDb db, LmdbReader.Slot slot) {
    this.txn = txn;
    this.db = db;
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

  /** The exception for damage found at page {@code at}. */
  private RuntimeException corrupt(long at, String message) {
    return txn.corrupt(db, at, message);
  }

  private RuntimeException failure(String what, LmdbException e) {
    return txn.failure(what + " in " + db, e);
  }

  /**
   * After a move of LMDB's cursor: takes its key, checked to lie in the file, and the leaf page
   * that holds it, checked to be a sound leaf page.
   */
  private boolean moved(boolean found, org.lmdbjava.Cursor<ByteBuffer> c) {
    positioned = found;
    page = 0;
    if (!found) {
      key = null;
      return false;
    }
    ByteBuffer k = txn.check(c.key(), db, "key");
    if (k.capacity() == 0 || k.capacity() > Errors.MAX_KEY_SIZE) {
      throw corrupt(-1, "LMDB read a key of " + k.capacity() + " bytes, which no page holds");
    }
    key = k;
    if (!txn.javaPages) {
      return true;
    }
    // the map starts on a page boundary, so the page holding k starts here and lies in one
    // system page with k (a node past the page's end is damage, found by the checks below)
    long at = ReadOnlyBufferProxy.base(k);
    long p = at & -PAGE_SIZE;
    long n = (p - txn.map) >> PAGE_SHIFT;
    enter(p, n, pageKeys(n, P_LEAF));
    index = -1;
    lmdbIndex = -1;
    lmdbKey = at;
    return true;
  }

  /**
   * The current key's place on the page, found from LMDB's key: LMDB's cursor knows its place
   * (mc_ki[mc_top]), else the node offsets are searched for it.
   */
  private void place() {
    if (index >= 0) {
      return;
    }
    int node = (int) (lmdbKey - page) - NODE_HEADER;
    int known = lmdbPlace();
    int i = known >= 0 && LmdbLayout.node(page, known) == node ? known : -1;
    for (int j = 0; i < 0 && j < count; j++) {
      if (LmdbLayout.node(page, j) == node) {
        i = j;
      }
    }
    if (i < 0 || keySize(node(i)) != key.limit()) {
      throw corrupt(pgno, "LMDB read a key that is no node of its page");
    }
    index = i;
    lmdbIndex = i;
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

  /**
   * Node {@code i} (< count) of the page, checked to lie in the page, past its header, with a
   * key of at least one byte (unless every node was, see {@link #checkNodes}): its offset in the
   * page << 16 | the size of its key (see {@link #offset}, {@link #keySize}).
   */
  private int node(int i) {
    int node = LmdbLayout.node(page, i); // i < count, so this lies in the page's header
    if (!checked && !sound(node)) {
      throw outside(i);
    }
    return node << 16 | LmdbLayout.keySize(page + node);
  }

  /**
   * Whether the node at {@code node} in the page lies in it: from PAGE_HEADER to LAST_NODE, so
   * that its header lies in the page, with a key of 1 to PAGE_SIZE - NODE_HEADER - node bytes,
   * so that it ends in the page (two unsigned comparisons).
   */
  private boolean sound(int node) {
    return Integer.compareUnsigned(node - PAGE_HEADER, LAST_NODE - PAGE_HEADER) <= 0
        && Integer.compareUnsigned(LmdbLayout.keySize(page + node) - 1, LAST_NODE - node) <= 0;
  }

  /**
   * Checks every node of the page, once, before it is read whole (stepped along, crossed to,
   * searched): its nodes then cost no check each. A page LMDB has just landed on is checked node
   * by node, as a seek elsewhere reads few of its nodes.
   */
  private void checkNodes() {
    if (!checked) {
      for (int i = 0; i < count; i++) {
        if (!sound(LmdbLayout.node(page, i))) {
          throw outside(i);
        }
      }
      checked = true;
    }
  }

  private static int offset(int node) {
    return node >>> 16;
  }

  private static int keySize(int node) {
    return node & 0xFFFF;
  }

  private RuntimeException outside(int i) {
    return corrupt(pgno, "A node (" + i + " of " + count + ") lies outside its page");
  }

  /** Makes key {@code i} of the page current. */
  private boolean at(int i) {
    int node = node(i);
    ByteBuffer k = slot.keyView;
    ReadOnlyBufferProxy.point(k, page + offset(node) + NODE_HEADER, keySize(node));
    index = i;
    key = k;
    positioned = true;
    return true;
  }

  @Override
  public long skipRun(ByteBuffer prefix) {
    if (!positioned || page == 0) {
      return 0;
    }
    place();
    if (index >= count - 1) {
      return 0;
    }
    checkNodes();
    ByteBuffer pv = slot.pageView;
    int last = KeyPrefix.lastOfRun(index, count - 1, i -> {
      int node = node(i);
      return KeyPrefix.at(pv, offset(node) + NODE_HEADER, keySize(node), prefix);
    });
    int moved = last - index;
    if (moved > 0) {
      at(last);
    }
    return moved;
  }

  /**
   * The number of keys of the snapshot's page {@code n}, checked to be a sound page of kind
   * {@code flags} (P_BRANCH or P_LEAF): a data page of the snapshot that says it is page n, of
   * that kind, with at least one key and its bounds in order.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when it is not
   */
  private int pageKeys(long n, int flags) {
    long p = txn.map + (n << PAGE_SHIFT);
    if (!txn.isDataPage(n) || LmdbLayout.pgno(p) != n || LmdbLayout.flags(p) != flags) {
      throw badPage(n, flags);
    }
    int lower = LmdbLayout.lower(p);
    int upper = LmdbLayout.upper(p);
    if (lower <= PAGE_HEADER || lower > upper || upper > PAGE_SIZE) {
      throw badPage(n, flags);
    }
    return (lower - PAGE_HEADER) >>> 1;
  }

  /** The exception for page {@code n}, not a sound page of kind {@code flags}: says why. */
  private RuntimeException badPage(long n, int flags) {
    String kind = flags == P_LEAF ? "leaf" : "branch";
    if (!txn.isDataPage(n)) {
      return corrupt(n, "A " + kind + " page number outside the file's pages");
    }
    long p = txn.map + (n << PAGE_SHIFT);
    if (LmdbLayout.pgno(p) != n || LmdbLayout.flags(p) != flags) {
      return corrupt(n, "Not the " + kind + " page expected (its header says page "
          + LmdbLayout.pgno(p) + ", flags " + LmdbLayout.flags(p) + ")");
    }
    return corrupt(n, "A " + kind + " page whose bounds are out of order (lower "
        + LmdbLayout.lower(p) + ", upper " + LmdbLayout.upper(p) + ")");
  }

  /** The page number that node {@code i} (< its keys) of branch page {@code n} points to. */
  private long child(long n, int i) {
    long p = txn.map + (n << PAGE_SHIFT);
    int node = LmdbLayout.node(p, i);
    if (node < LmdbLayout.upper(p) || node > PAGE_SIZE - NODE_HEADER) {
      throw corrupt(n, "A node (" + i + ") lies outside its branch page");
    }
    return LmdbLayout.childPgno(p + node);
  }

  /**
   * Whether {@link #path} leads to the current page, read from LMDB's cursor if need be: the
   * branch pages LMDB's cursor holds above it are LMDB's (in the map), checked like any other.
   */
  private boolean pathKnown() {
    if (pathTop >= 0 && path[pathTop] == pgno) {
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
      long b = LmdbLayout.cursorPage(a, l) - txn.map;
      long n = b >> PAGE_SHIFT;
      int i = LmdbLayout.cursorIndex(a, l);
      if (b != n << PAGE_SHIFT || i >= pageKeys(n, P_BRANCH)) {
        return false;
      }
      path[l] = n;
      pathIndex[l] = i;
    }
    path[top] = pgno;
    pathTop = top;
    return true;
  }

  /**
   * Moves to the first key of the next leaf page ({@code forward}) or the last key of the
   * previous one, along the branch pages: 1 when it did, 0 when there is no such page (the cursor
   * is then off the end, as LMDB leaves it), -1 when LMDB must make the move.
   *
   * <p>The descent takes pathTop - level steps, whatever the pages say, and every page on it is
   * checked; a branch that points back up the tree or across it is found by the order of keys:
   * the key reached must follow the current one.
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
      path[l + 1] = c;
      pathIndex[l + 1] = forward ? 0 : n - 1;
    }
    return land(forward, n);
  }

  /**
   * Makes the leaf page {@link #cross} reached, with {@code n} keys, current, at its first key
   * ({@code forward}) or its last, which must follow the current key in that direction.
   */
  private int land(boolean forward, int n) {
    long leaf = path[pathTop];
    ByteBuffer previous = key; // a view of its page, or LMDB's, both checked
    enter(txn.map + (leaf << PAGE_SHIFT), leaf, n);
    checkNodes(); // a page crossed to is read along
    int i = forward ? 0 : n - 1;
    int node = node(i);
    int order = ReadOnlyBufferProxy.compareUnsigned(page + offset(node) + NODE_HEADER,
        keySize(node), ReadOnlyBufferProxy.base(previous), previous.limit());
    if (forward ? order <= 0 : order >= 0) {
      throw corrupt(leaf, "A branch page leads to keys out of order");
    }
    lmdbIndex = ELSEWHERE;
    return at(i) ? 1 : 0;
  }

  /** Makes the checked leaf page {@code n} at {@code p}, with {@code keys} keys, current. */
  private void enter(long p, long n, int keys) {
    page = p;
    pgno = n;
    count = keys;
    checked = false;
    ByteBuffer pv = slot.pageView;
    ReadOnlyBufferProxy.point(pv, p, PAGE_SIZE);
    pv.order(ByteOrder.nativeOrder());
  }

  /** Brings LMDB's cursor to the current key, for a move that LMDB makes. */
  private void sync(org.lmdbjava.Cursor<ByteBuffer> c) {
    if (page == 0 || index == lmdbIndex) {
      return;
    }
    if (!c.get(key, GetOp.MDB_SET_KEY)) {
      throw corrupt(pgno, "LMDB does not find key " + index + " of the page");
    }
    lmdbIndex = index;
    lmdbKey = ReadOnlyBufferProxy.base(txn.check(c.key(), db, "key"));
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
    if (page != 0 && key.remaining() <= Errors.MAX_KEY_SIZE && key.remaining() > 0) {
      place();
      int i = search(key);
      if (i >= 0) {
        return at(i);
      }
    }
    try {
      return moved(slot.seek(key, txn), c);
    } catch (LmdbException e) {
      throw failure("Cannot seek", e);
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
    checkNodes();
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
    ReadOnlyBufferProxy.point(v, page + offset(node) + NODE_HEADER, keySize(node));
    return ReadOnlyBufferProxy.compareUnsigned(probe, v);
  }

  @Override
  public boolean first() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.first(), c);
    } catch (LmdbException e) {
      throw failure("Cannot move to the first key", e);
    }
  }

  @Override
  public boolean last() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    try {
      return moved(c.last(), c);
    } catch (LmdbException e) {
      throw failure("Cannot move to the last key", e);
    }
  }

  @Override
  public boolean next() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (!positioned) {
      return false;
    }
    if (page != 0) {
      place();
      if (index + 1 < count) {
        checkNodes();
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
      throw failure("Cannot move to the next key", e);
    }
  }

  @Override
  public boolean prev() {
    org.lmdbjava.Cursor<ByteBuffer> c = lmdb();
    if (!positioned) {
      return false;
    }
    if (page != 0) {
      place();
      if (index > 0) {
        checkNodes();
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
      throw failure("Cannot move to the previous key", e);
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
      long at = page + offset(node);
      int end = offset(node) + NODE_HEADER + keySize(node); // where the node's data starts
      int flags = LmdbLayout.nodeFlags(at);
      if (flags == 0) {
        long size = LmdbLayout.dataSize(at);
        if (end + size > PAGE_SIZE) {
          throw corrupt(pgno, "A value (of key " + index + ") lies outside its page");
        }
        ByteBuffer v = slot.valView;
        ReadOnlyBufferProxy.point(v, page + end, (int) size);
        return v;
      }
      // a value on overflow pages: LMDB reads their page number from the node's data
      if (flags != F_BIGDATA || end + Long.BYTES > PAGE_SIZE) {
        throw corrupt(pgno, "A node (" + index + ", flags " + flags + ") lies outside its page");
      }
      try {
        sync(c);
      } catch (LmdbException e) {
        throw failure("Cannot read a value", e);
      }
    }
    return txn.check(c.val(), db, "value");
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
