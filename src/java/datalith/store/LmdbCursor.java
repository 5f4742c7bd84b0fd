package datalith.store;

import static datalith.store.LmdbLayout.NODE_HEADER;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A cursor of an {@link LmdbReadTxn} that reads LMDB's pages in Java: LMDB's code is never
 * called. Its key and value are read-only views into the memory map, re-pointed on every move.
 *
 * <p>A call into LMDB through JNR costs about as much as reading a whole leaf page, and LMDB's C
 * code reads a page without checking it, so every move is made here from the map, by LMDB 0.9's
 * layout ({@link LmdbLayout}): seeks, first and last keys descend the tree from its root, and a
 * step off a leaf page follows the path of branch pages to the next or previous leaf (both by
 * {@link LmdbTree}, which keeps the path and checks every page before it reads it); moves within
 * a leaf page, and seeks to keys the current page holds, read that page only (unless the seek
 * was warmed: its descent is made already, and asking the current page would cost two reads of
 * it). A read transaction's pages never change.
 *
 * <p>Nothing is read before it is checked: pages as {@link LmdbTree} says; a node must lie in
 * its page with a key of at least one byte (each node checked as it is read, so that a seek, a
 * step or a run skipped over reads only the few nodes it needs of a page); a value must lie in its page or on the overflow pages it names. A
 * tree can lead to keys out of order only when it is damaged: a page crossed to must start past
 * the key the cursor left, and a seek must land on a key at least its probe. What fails is
 * damage: a {@code :store/corrupt} ex-info naming the sub-database and page.
 */
final class LmdbCursor implements Cursor {

  private final LmdbReadTxn txn;
  private final SubDb db;
  private LmdbReader.Slot slot; // null once closed
  private LmdbTree tree; // the slot's, opened on db at the first move, null until then
  private boolean positioned; // false before the first positioning and after running off an end
  private ByteBuffer key; // the cursor's key view while positioned, else null

  // the leaf page the cursor is on (the end of the tree's path): page is its address, 0 when the
  // cursor is not on one
  private long page;
  private long pgno; // its page number
  private int count; // its keys
  private int index; // the current key's place in it
  private long keyAt; // the current key's address in the page, and its size
  private int keySize;

  LmdbCursor(LmdbReadTxn txn, SubDb db, LmdbReader.Slot slot) {
    this.txn = txn;
    this.db = db;
    this.slot = slot;
  }

  /** The tree, opened once; throws once the cursor or its transaction is closed. */
  private LmdbTree tree() {
    txn.reader(); // throws once the transaction is closed
    LmdbReader.Slot s = slot;
    if (s == null) {
      throw txn.closed("The cursor");
    }
    LmdbTree t = tree;
    if (t == null) {
      t = s.tree;
      t.open(txn.pages, db);
      tree = t;
    }
    return t;
  }

  /**
   * Node {@code i} (< count) of the page, checked to lie in the page, past its header, with a
   * key of at least one byte: its offset in the page << 16 | the size of its key (see
   * {@link LmdbTree#leafNode}).
   */
  private int node(int i) {
    return tree.checkedLeafNode(pgno, page, i, count);
  }

  /** Makes key {@code i} of the page current. */
  private boolean at(int i) {
    return at(i, node(i));
  }

  /** {@link #at(int)} of key {@code i}, whose node (checked) is {@code node}. */
  private boolean at(int i, int node) {
    ByteBuffer k = slot.keyView;
    keyAt = page + LmdbTree.offset(node) + NODE_HEADER;
    keySize = LmdbTree.keySize(node);
    ReadOnlyBufferProxy.point(k, keyAt, keySize);
    index = i;
    key = k;
    positioned = true;
    return true;
  }

  /** Leaves the cursor unpositioned, off an end of the tree: false. */
  private boolean off() {
    positioned = false;
    key = null;
    page = 0;
    return false;
  }

  /** Makes the checked leaf page {@code n}, with {@code keys} keys, the current page. */
  private void enter(long n, int keys) {
    long p = tree.address(n);
    page = p;
    pgno = n;
    count = keys;
    ByteBuffer pv = slot.pageView;
    ReadOnlyBufferProxy.point(pv, p, tree.pageSize());
    pv.order(ByteOrder.nativeOrder());
  }

  /** Enters the leaf page the tree's last descent reached, with {@code keys} keys. */
  private void enterLeaf(int keys) {
    enter(tree.page(tree.depth() - 1), keys);
  }

  @Override
  public long skipRun(ByteBuffer prefix) {
    if (!positioned) {
      return 0;
    }
    tree();
    if (index >= count - 1) {
      return 0;
    }
    ByteBuffer pv = slot.pageView;
    int last = KeyPrefix.lastOfRun(index, count - 1, i -> {
      int node = node(i);
      return KeyPrefix.at(pv, LmdbTree.offset(node) + NODE_HEADER, LmdbTree.keySize(node),
          prefix);
    });
    int moved = last - index;
    if (moved > 0) {
      at(last);
    }
    return moved;
  }

  @Override
  public void warm(ByteBuffer[] keys, int n) {
    tree().warm(keys, n);
  }

  @Override
  public boolean seek(ByteBuffer probe) {
    LmdbTree t = tree();
    int warmed = t.warmed(probe);
    long found;
    if (warmed >= 0) {
      // the descent is made: the current page's first and last keys, which tell whether it
      // holds the probe, would cost two reads of a page a join has mostly left for good
      found = t.seekWarmed(warmed);
    } else {
      if (page != 0) {
        int i = search(probe);
        if (i >= 0) {
          return at(i);
        }
      }
      found = t.seekCold(probe);
    }
    int keys = LmdbTree.foundKeys(found);
    if (keys == 0) {
      return off();
    }
    enterLeaf(keys);
    int i = LmdbTree.foundPlace(found);
    if (i < keys) {
      return at(i);
    }
    // every key of the page is below the probe: the next page's first key is the one
    return cross(true, probe, false);
  }

  /**
   * The place of the first key {@code >= probe} on the current page when the page holds it (the
   * probe sorts after its first key and not after its last), else -1.
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

  /** The order of {@code probe} and key {@code i} of the page. */
  private int compare(ByteBuffer probe, int i) {
    int node = node(i);
    return tree.compare(probe, page + LmdbTree.offset(node) + NODE_HEADER,
        LmdbTree.keySize(node));
  }

  @Override
  public boolean first() {
    LmdbTree t = tree();
    int keys = t.first();
    if (keys == 0) {
      return off();
    }
    enterLeaf(keys);
    return at(0);
  }

  @Override
  public boolean last() {
    LmdbTree t = tree();
    int keys = t.last();
    if (keys == 0) {
      return off();
    }
    enterLeaf(keys);
    return at(keys - 1);
  }

  @Override
  public boolean next() {
    tree();
    if (!positioned) {
      return false;
    }
    if (index + 1 < count) {
      return step(index + 1, 1);
    }
    return cross(true, key, true);
  }

  @Override
  public boolean prev() {
    tree();
    if (!positioned) {
      return false;
    }
    if (index > 0) {
      return step(index - 1, -1);
    }
    return cross(false, key, true);
  }

  /**
   * Moves to key {@code i} of the page, the next ({@code direction} 1) or the previous (-1) of
   * the current one, which it must follow in that direction, else the page is damaged: a key
   * out of order would send a scan that seeks on from it (past a run, to a later key) back to
   * where it was, round forever (a flipped byte in an entity id did; {@link #cross} checks the
   * same between pages). One comparison of two keys of the page a step.
   */
  private boolean step(int i, int direction) {
    int to = node(i);
    int order = ReadOnlyBufferProxy.compareUnsigned(page + LmdbTree.offset(to) + NODE_HEADER,
        LmdbTree.keySize(to), keyAt, keySize);
    if (order * direction <= 0) {
      throw txn.corrupt(db, pgno, "A leaf page's keys out of order (key " + Math.max(i, index)
          + ")");
    }
    return at(i, to);
  }

  /**
   * Moves to the first key of the next leaf page ({@code forward}) or the last key of the
   * previous one; off the end when there is none. The key reached must follow {@code from} (the
   * key left, or a seek's probe, which it may equal unless {@code strict}) in that direction,
   * else the tree is damaged: a branch that points back along the tree would otherwise lead a
   * scan round forever.
   */
  private boolean cross(boolean forward, ByteBuffer from, boolean strict) {
    int keys = tree.cross(forward);
    if (keys == 0) {
      return off();
    }
    enterLeaf(keys);
    int i = forward ? 0 : keys - 1;
    int node = node(i);
    int order = tree.compare(from, page + LmdbTree.offset(node) + NODE_HEADER,
        LmdbTree.keySize(node));
    if (forward ? order > 0 || order == 0 && strict : order <= 0) {
      throw txn.corrupt(db, pgno, "A branch page leads to keys out of order");
    }
    return at(i);
  }

  // For LmdbTreeWrites, which writes this cursor's entries (merged with others, or alone) into
  // a new tree of the same file and takes the leaf pages the merge passes whole as they are.

  /** The id of the LMDB transaction whose snapshot this cursor reads. */
  long snapshotTxn() {
    return txn.reader().txn.getId();
  }

  /** The number of the leaf page the cursor is on when it is on the page's first key, else -1. */
  long leafStarted() {
    tree();
    return positioned && index == 0 ? pgno : -1;
  }

  /** The keys of the leaf page the cursor is on. */
  int leafKeys() {
    return count;
  }

  /**
   * Key {@code i} of the leaf page the cursor is on, checked to lie in it, as the slot's spare
   * view: valid until the next call of this or {@link #checkLeaf}, and while the cursor is open.
   */
  ByteBuffer leafKey(int i) {
    tree();
    int node = node(i);
    ByteBuffer v = slot.spareView;
    ReadOnlyBufferProxy.point(v, page + LmdbTree.offset(node) + NODE_HEADER,
        LmdbTree.keySize(node));
    return v;
  }

  /**
   * Checks the leaf page the cursor is on as a page taken into another tree must be: each node
   * in the page, the keys ascending, each value in the page or on overflow pages of the snapshot
   * that say they are its ({@link LmdbTree#overflow}). Gives each run of overflow pages to
   * {@code runs} (its first page and count); returns how many there are in all.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} for a page that does not
   */
  long checkLeaf(LmdbTakenPages runs) {
    tree();
    long overflow = 0;
    for (int i = 0; i < count; i++) {
      int node = node(i);
      long at = page + LmdbTree.offset(node);
      if (i > 0 && tree.compare(leafKey(i - 1), at + NODE_HEADER, LmdbTree.keySize(node)) >= 0) {
        throw txn.corrupt(db, pgno, "A leaf page's keys out of order (key " + i + ")");
      }
      int flags = LmdbLayout.nodeFlags(at);
      if (flags == LmdbLayout.F_BIGDATA) {
        int start = LmdbTree.offset(node) + NODE_HEADER + LmdbTree.keySize(node);
        if (start + Long.BYTES > tree.pageSize()) {
          throw txn.corrupt(db, pgno, "A node (" + i + ") lies outside its page");
        }
        long first = ReadOnlyBufferProxy.nativeLong(page + start);
        int pages = tree.overflow(pgno, i, first, LmdbLayout.dataSize(at));
        runs.add(first, pages);
        overflow += pages;
      } else {
        tree.value(pgno, node, i, slot.valView); // checks it lies in the page
      }
    }
    return overflow;
  }

  /**
   * Moves from the leaf page the cursor is on to the first key of the next one; false, off the
   * end, when there is none.
   */
  boolean skipLeaf() {
    tree();
    if (!positioned) {
      return false;
    }
    at(count - 1);
    return cross(true, key, true);
  }

  @Override
  public ByteBuffer key() {
    // The view is re-pointed by every move, so it only needs checking that the transaction is
    // still open: a closed one's reader may serve another transaction through the same view.
    ByteBuffer k = key;
    if (k != null && txn.isOpen()) {
      return k;
    }
    tree();
    throw new IllegalStateException("The cursor is not positioned");
  }

  @Override
  public ByteBuffer val() {
    tree();
    if (!positioned) {
      throw new IllegalStateException("The cursor is not positioned");
    }
    ByteBuffer v = slot.valView;
    tree.value(pgno, node(index), index, v);
    return v;
  }

  @Override
  public void close() {
    LmdbReader.Slot s = slot;
    if (s != null) {
      slot = null;
      key = null;
      page = 0;
      tree = null;
      if (txn.isOpen()) {
        txn.reader().giveBack(s);
      }
    }
  }
}
