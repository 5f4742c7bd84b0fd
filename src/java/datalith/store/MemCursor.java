package datalith.store;

import java.nio.ByteBuffer;

/**
 * A cursor over one tree of a {@link MemStore} snapshot: a stack of (node, index) from the root
 * to the current leaf. Moving allocates nothing, except on the first read of a leaf, which makes
 * its key views once for every reader ({@link BTree.Leaf#keyViews}); key and value are shared
 * read-only buffers.
 */
final class MemCursor implements Cursor {

  private final MemReadTxn txn;
  private final BTree.Node root; // may be null: the tree is empty
  private final BTree.Node[] path; // path[l] is the node at level l, the root at 0
  private final int[] index; // index[l] is the position in path[l]
  private int leaf = -1; // level of the current leaf in path, -1 when not positioned
  private ByteBuffer[] keys; // path[leaf]'s key views, while positioned
  private byte[] probe = new byte[0]; // the seek key, copied
  private boolean open = true;

  MemCursor(MemReadTxn txn, BTree.Node root) {
    this.txn = txn;
    this.root = root;
    int depth = 0; // every leaf is at the same depth
    for (BTree.Node n = root; n != null; depth++) {
      n = n instanceof BTree.Branch ? ((BTree.Branch) n).children[0] : null;
    }
    this.path = new BTree.Node[depth];
    this.index = new int[depth];
  }

  /**
   * The root of the tree this cursor reads (null: empty), immutable: for a reader that walks
   * the leaves' arrays of keys itself ({@link LmdbDirectCommit}), valid while the transaction is.
   *
   * @throws IllegalStateException when the cursor or its transaction is closed
   */
  BTree.Node root() {
    check();
    return root;
  }

  private void check() {
    txn.roots(); // throws once the transaction is closed
    if (!open) {
      throw Errors.closed("mem", "The cursor");
    }
  }

  private boolean invalid() {
    leaf = -1;
    return false;
  }

  /** Descends from {@code node} at {@code level} along first (or last) children. */
  private boolean descend(BTree.Node node, int level, boolean first) {
    BTree.Node n = node;
    int l = level;
    while (true) {
      int i = first ? 0 : n.size - 1;
      path[l] = n;
      index[l] = i;
      if (n instanceof BTree.Leaf) {
        return enter(l);
      }
      n = ((BTree.Branch) n).children[i];
      l++;
    }
  }

  /** Makes {@code path[level]}, a leaf, the current one. */
  private boolean enter(int level) {
    leaf = level;
    keys = ((BTree.Leaf) path[level]).keyViews();
    return true;
  }

  @Override
  public boolean seek(ByteBuffer key) {
    check();
    int length = key.remaining();
    if (probe.length < length) {
      probe = new byte[Math.max(length, 32)];
    }
    key.get(key.position(), probe, 0, length);
    if (root == null) {
      return invalid();
    }
    BTree.Node n = root;
    int l = 0;
    for (; n instanceof BTree.Branch; l++) {
      int i = BTree.child(n, probe, length);
      path[l] = n;
      index[l] = i;
      n = ((BTree.Branch) n).children[i];
    }
    path[l] = n;
    index[l] = BTree.search(n, probe, length);
    enter(l);
    // every key of the leaf is below the probe: the first key of the next leaf is the one
    return index[l] < n.size || nextLeaf();
  }

  @Override
  public boolean first() {
    check();
    return root == null ? invalid() : descend(root, 0, true);
  }

  @Override
  public boolean last() {
    check();
    return root == null ? invalid() : descend(root, 0, false);
  }

  @Override
  public boolean next() {
    check();
    if (leaf < 0) {
      return false;
    }
    if (++index[leaf] < path[leaf].size) {
      return true;
    }
    return nextLeaf();
  }

  /** Moves to the first key of the leaf after the current one, or invalid. */
  private boolean nextLeaf() {
    for (int l = leaf - 1; l >= 0; l--) {
      if (index[l] + 1 < path[l].size) {
        index[l]++;
        return descend(((BTree.Branch) path[l]).children[index[l]], l + 1, true);
      }
    }
    return invalid();
  }

  @Override
  public boolean prev() {
    check();
    if (leaf < 0) {
      return false;
    }
    if (--index[leaf] >= 0) {
      return true;
    }
    for (int l = leaf - 1; l >= 0; l--) {
      if (index[l] > 0) {
        index[l]--;
        return descend(((BTree.Branch) path[l]).children[index[l]], l + 1, false);
      }
    }
    return invalid();
  }

  @Override
  public long skipRun(ByteBuffer prefix) {
    check();
    if (leaf < 0) {
      return 0;
    }
    ByteBuffer[] views = keys;
    int from = index[leaf];
    if (from >= views.length - 1) {
      return 0;
    }
    int last = KeyPrefix.lastOfRun(from, views.length - 1,
        i -> KeyPrefix.at(views[i], 0, views[i].limit(), prefix));
    index[leaf] = last;
    return last - from;
  }

  private void checkPositioned() {
    check();
    if (leaf < 0) {
      throw new IllegalStateException("The cursor is not positioned");
    }
  }

  @Override
  public ByteBuffer key() {
    checkPositioned();
    return keys[index[leaf]];
  }

  @Override
  public ByteBuffer val() {
    checkPositioned();
    return ((BTree.Leaf) path[leaf]).val(index[leaf]);
  }

  @Override
  public void close() {
    open = false;
  }
}
