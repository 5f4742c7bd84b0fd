package datalith.store;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A persistent B+tree of (key, value) entries sorted by unsigned lexicographic key order: the
 * sorted map behind each sub-database of a {@link MemStore}. Updates copy the path from the root
 * to the changed leaf; nodes created by the current {@link Editor} are updated in place, so a
 * write transaction copies each node at most once. A node is immutable once its editor is done,
 * or, for the editors of a store that edits in place ({@link MemStore#openInPlace}, one a tree,
 * which no other tree's shares nodes with), while a read may see it: an editor changes its nodes
 * only when no read is open. An editor is used by one thread at a time.
 *
 * <p>A branch's key {@code i > 0} is a lower bound of child {@code i}: every key beneath child
 * {@code i} is {@code >=} it, and every key beneath child {@code i - 1} is {@code <} it (LMDB's
 * layout). Key 0 is never compared: child 0 takes every key below key 1. A key between two leaves
 * thus goes to the left one, at its end. A node that overflows while a run of ascending keys is
 * added to it splits where the run is: the keys after the run go to a new right node, so that the
 * run appends to the left one; one that overflows by an append splits into a full left node and
 * the new entry alone. Runs (new entities' datoms, in every index) thus leave full nodes behind.
 */
final class BTree {

  static final int MAX = 64; // most keys in a leaf, most children in a branch
  static final int MIN = MAX / 2; // fewest before a delete rebalances, except in the root
  /** The empty value: read-only, shared. */
  static final ByteBuffer EMPTY = ByteBuffer.allocate(0).asReadOnlyBuffer();

  private BTree() {}

  /** A node; {@code keys[0..size)} are sorted, capacity MAX + 1 to hold a key before a split. */
  abstract static class Node {
    final Editor editor; // the editor that may still change this node in place
    final byte[][] keys; // leaf: its keys; branch: a lower bound of each child (see BTree)
    int size;
    int lastAdded = -1; // where its editor added an entry last, or -1 (a hint: a run steps by 1)

    Node(Editor editor) {
      this.editor = editor;
      this.keys = new byte[MAX + 1][];
    }

    /** A node of the same kind, empty. */
    abstract Node empty(Editor editor);

    /** Copies entries [from, from + count) to {@code to} at {@code at}; overlap is fine. */
    abstract void move(int from, Node to, int at, int count);

    /** Drops references in slots [from, to) so that removed entries can be collected. */
    abstract void clear(int from, int to);

    /** Forgets what reads made of it, before its editor changes it again in place. */
    void reopen() {}

    Node copy(Editor editor) {
      Node n = empty(editor);
      move(0, n, 0, size);
      n.size = size;
      n.lastAdded = lastAdded;
      return n;
    }

    void removeAt(int i) {
      move(i + 1, this, i, size - i - 1);
      size--;
      clear(size, size + 1);
    }
  }

  /**
   * A leaf: keys and their values (read-only buffers at position 0, shared with readers). The
   * read-only views of its keys are made on the first read of the leaf, once it is immutable.
   * A leaf whose values are all empty (an index's) has no array of values, which halves a copy.
   */
  static final class Leaf extends Node {
    private ByteBuffer[] vals; // null while every value is EMPTY
    private volatile ByteBuffer[] keyViews; // null until read; then views of keys[0..size)

    Leaf(Editor editor) {
      super(editor);
    }

    /**
     * Read-only views (position 0) of {@code keys[0..size)}, made by the first call. Only for a
     * leaf no editor changes meanwhile: any thread may call it, and racing calls make equal
     * views. An edit in place drops them ({@link #reopen}).
     */
    ByteBuffer[] keyViews() {
      ByteBuffer[] views = keyViews;
      if (views == null) {
        views = new ByteBuffer[size];
        for (int i = 0; i < size; i++) {
          views[i] = ByteBuffer.wrap(keys[i]).asReadOnlyBuffer();
        }
        keyViews = views; // volatile: a reader of the array sees its views whole
      }
      return views;
    }

    @Override
    void reopen() {
      if (keyViews != null) {
        keyViews = null; // views of keys read before this edit
      }
    }

    /** The value of entry {@code i}. */
    ByteBuffer val(int i) {
      return vals == null ? EMPTY : vals[i];
    }

    void setVal(int i, ByteBuffer val) {
      if (vals != null || val != EMPTY) {
        values()[i] = val;
      }
    }

    /** The array of values, made (every slot EMPTY) when there is none. */
    private ByteBuffer[] values() {
      if (vals == null) {
        vals = new ByteBuffer[MAX + 1];
        Arrays.fill(vals, EMPTY);
      }
      return vals;
    }

    @Override
    Node empty(Editor editor) {
      return new Leaf(editor);
    }

    @Override
    void move(int from, Node to, int at, int count) {
      Leaf leaf = (Leaf) to;
      System.arraycopy(keys, from, leaf.keys, at, count);
      if (vals != null) {
        System.arraycopy(vals, from, leaf.values(), at, count);
      } else if (leaf.vals != null) {
        Arrays.fill(leaf.vals, at, at + count, EMPTY);
      }
    }

    @Override
    void clear(int from, int to) {
      Arrays.fill(keys, from, to, null);
      if (vals != null) {
        Arrays.fill(vals, from, to, null);
      }
    }
  }

  /** A branch: children, each with a lower bound of the keys beneath it. */
  static final class Branch extends Node {
    final Node[] children = new Node[MAX + 1];
    int lastChild = -1; // the child its editor's last put went to, or -1 (a hint)

    Branch(Editor editor) {
      super(editor);
    }

    @Override
    Node empty(Editor editor) {
      return new Branch(editor);
    }

    @Override
    Node copy(Editor editor) {
      Branch b = (Branch) super.copy(editor);
      b.lastChild = lastChild;
      return b;
    }

    @Override
    void move(int from, Node to, int at, int count) {
      Branch branch = (Branch) to;
      System.arraycopy(keys, from, branch.keys, at, count);
      System.arraycopy(children, from, branch.children, at, count);
    }

    @Override
    void clear(int from, int to) {
      Arrays.fill(keys, from, to, null);
      Arrays.fill(children, from, to, null);
    }
  }

  /** Index of the first key {@code >= key[0..length)} in the leaf {@code node}, or its size. */
  static int search(Node node, byte[] key, int length) {
    return search(node, key, length, 0, node.size);
  }

  /**
   * Index of the first key {@code >= key[0..length)} in the leaf {@code node} among
   * {@code [lo, hi)}, or {@code hi}, given that those before {@code lo} are less and those from
   * {@code hi} on are not.
   */
  private static int search(Node node, byte[] key, int length, int lo, int hi) {
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      byte[] k = node.keys[mid];
      if (Arrays.compareUnsigned(k, 0, k.length, key, 0, length) < 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * Index of the child of the branch {@code node} whose keys range over {@code key[0..length)}:
   * the last child whose lower bound is {@code <=} it, or child 0.
   */
  static int child(Node node, byte[] key, int length) {
    return child(node, key, length, 1, node.size); // key 0 is never compared
  }

  /**
   * {@link #child} among children {@code [lo - 1, hi)}, given that keys {@code [1, lo)} are
   * {@code <=} {@code key[0..length)} and those from {@code hi} on are greater.
   */
  private static int child(Node node, byte[] key, int length, int lo, int hi) {
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      byte[] k = node.keys[mid];
      if (Arrays.compareUnsigned(k, 0, k.length, key, 0, length) <= 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo - 1;
  }

  /** The value under {@code key[0..length)} in the tree {@code root} (may be null), or null. */
  static ByteBuffer get(Node root, byte[] key, int length) {
    if (root == null) {
      return null;
    }
    Node node = root;
    while (node instanceof Branch) {
      node = ((Branch) node).children[child(node, key, length)];
    }
    int i = search(node, key, length);
    if (i == node.size) {
      return null;
    }
    byte[] k = node.keys[i];
    return Arrays.equals(k, 0, k.length, key, 0, length) ? ((Leaf) node).val(i) : null;
  }

  /**
   * The tree of {@code keys[0..n)}, strictly ascending, each with the empty value (an index's),
   * built bottom up: the keys spread evenly over as few leaves as hold them, then each level of
   * branches over the one below likewise, every node but the root at least half full. Its
   * nodes belong to no editor: immutable. Null when {@code n} is 0.
   */
  static Node build(byte[][] keys, int n) {
    if (n == 0) {
      return null;
    }
    Node[] level = new Node[(n + MAX - 1) / MAX];
    int count = level.length;
    for (int i = 0, from = 0; i < count; i++) {
      int to = (int) ((long) n * (i + 1) / count);
      Leaf leaf = new Leaf(null);
      System.arraycopy(keys, from, leaf.keys, 0, to - from);
      leaf.size = to - from;
      level[i] = leaf;
      from = to;
    }
    while (count > 1) {
      int parents = (count + MAX - 1) / MAX;
      for (int i = 0, from = 0; i < parents; i++) {
        int to = (int) ((long) count * (i + 1) / parents);
        Branch branch = new Branch(null);
        for (int c = from; c < to; c++) {
          branch.children[c - from] = level[c];
          branch.keys[c - from] = level[c].keys[0];
        }
        branch.size = to - from;
        level[i] = branch;
        from = to;
      }
      count = parents;
    }
    return level[0];
  }

  /**
   * Makes new tree versions; owns the nodes it creates until it is dropped, and changes them in
   * place. One thread. A write transaction's, dropped at its end, or a store's that edits in
   * place, kept across commits that no read can see (see {@link MemStore}).
   */
  static final class Editor {
    private Node split; // the right half of the node just split, until its parent takes it

    private Node editable(Node node) {
      if (node.editor != this) {
        return node.copy(this);
      }
      node.reopen(); // an editor in place may change a node that reads saw, once they are done
      return node;
    }

    /**
     * The tree {@code root} (may be null) with {@code val} under {@code key}, both kept, not
     * copied: {@code val} read-only at position 0, {@link BTree#EMPTY} when empty.
     */
    Node put(Node root, byte[] key, ByteBuffer val) {
      if (root == null) {
        Leaf leaf = new Leaf(this);
        leaf.keys[0] = key;
        leaf.setVal(0, val);
        leaf.size = 1;
        return leaf;
      }
      Node left = insert(root, key, val);
      Node right = split;
      if (right == null) {
        return left;
      }
      split = null;
      Branch top = new Branch(this);
      top.keys[0] = left.keys[0];
      top.children[0] = left;
      top.keys[1] = right.keys[0];
      top.children[1] = right;
      top.size = 2;
      return top;
    }

    /** The tree {@code root} (may be null) without {@code key}; {@code root} when absent. */
    Node delete(Node root, byte[] key) {
      if (root == null) {
        return null;
      }
      Node node = remove(root, key);
      if (node == null) {
        return root;
      }
      while (node instanceof Branch && node.size == 1) {
        node = ((Branch) node).children[0];
      }
      return node.size == 0 ? null : node;
    }

    /** {@link #search} of a put, tried first right after the last key added (a run's next). */
    private static int searchNear(Node leaf, byte[] key) {
      int h = leaf.lastAdded;
      int n = leaf.size;
      if (h < 0 || h >= n) {
        return search(leaf, key, key.length);
      }
      if (Arrays.compareUnsigned(leaf.keys[h], key) >= 0) {
        return search(leaf, key, key.length, 0, h);
      }
      if (h + 1 == n || Arrays.compareUnsigned(leaf.keys[h + 1], key) >= 0) {
        return h + 1;
      }
      return search(leaf, key, key.length, h + 2, n);
    }

    /**
     * {@link #child} of a put, tried first at the child the last put went to: searched back from
     * it when the key lies before it, else forward from it in steps that double (puts in key
     * order, as {@link MemWrites} makes them, go a few children on).
     */
    private static int childNear(Branch branch, byte[] key) {
      int h = branch.lastChild;
      int n = branch.size;
      if (h < 0 || h >= n) {
        return child(branch, key, key.length);
      }
      if (h > 0 && Arrays.compareUnsigned(branch.keys[h], key) > 0) {
        return child(branch, key, key.length, 1, h);
      }
      int lo = h + 1; // keys [1, lo) are <= key
      for (int step = 1; ; step <<= 1) {
        int probe = lo + step - 1;
        if (probe >= n) {
          return child(branch, key, key.length, lo, n);
        }
        if (Arrays.compareUnsigned(branch.keys[probe], key) > 0) {
          return child(branch, key, key.length, lo, probe);
        }
        lo = probe + 1;
      }
    }

    private Node insert(Node node, byte[] key, ByteBuffer val) {
      if (node instanceof Leaf) {
        int i = searchNear(node, key);
        Leaf leaf = (Leaf) editable(node);
        if (i < leaf.size && Arrays.equals(leaf.keys[i], key)) {
          leaf.setVal(i, val);
          return leaf;
        }
        leaf.move(i, leaf, i + 1, leaf.size - i);
        leaf.keys[i] = key;
        leaf.setVal(i, val);
        leaf.size++;
        return added(leaf, i);
      }
      int i = childNear((Branch) node, key);
      Node child = insert(((Branch) node).children[i], key, val);
      Node right = split;
      split = null;
      Branch branch = (Branch) editable(node);
      branch.children[i] = child;
      branch.lastChild = i;
      if (right == null) {
        return branch;
      }
      branch.move(i + 1, branch, i + 2, branch.size - i - 1);
      branch.children[i + 1] = right;
      branch.keys[i + 1] = right.keys[0]; // a branch's key 0 is its child 0's lower bound
      branch.size++;
      return added(branch, i + 1);
    }

    /**
     * {@code node} after an entry was added at {@code at}, split when over MAX entries: in
     * halves, or, when the entry continues a run (added right after the one added before it, or
     * last), after it, the new entry alone going right when it is last.
     */
    private Node added(Node node, int at) {
      boolean run = at == node.lastAdded + 1 || at == node.size - 1;
      node.lastAdded = at;
      if (node.size > MAX) {
        Node right = node.empty(this);
        int keep = run ? Math.min(at + 1, MAX) : node.size / 2;
        node.move(keep, right, 0, node.size - keep);
        right.size = node.size - keep;
        node.clear(keep, node.size);
        node.size = keep;
        if (at >= keep) {
          node.lastAdded = -1;
          right.lastAdded = at - keep;
        }
        split = right;
      }
      return node;
    }

    /** The node without {@code key}, possibly underfull; null when the key is absent. */
    private Node remove(Node node, byte[] key) {
      if (node instanceof Leaf) {
        int i = search(node, key, key.length);
        if (i == node.size || !Arrays.equals(node.keys[i], key)) {
          return null;
        }
        Node leaf = editable(node);
        leaf.removeAt(i);
        return leaf;
      }
      int i = child(node, key, key.length);
      Node child = remove(((Branch) node).children[i], key);
      if (child == null) {
        return null;
      }
      Branch branch = (Branch) editable(node);
      branch.children[i] = child;
      if (child.size < MIN && branch.size > 1) {
        rebalance(branch, i > 0 ? i - 1 : i);
      }
      return branch;
    }

    /**
     * Merges or evens out children {@code l} and {@code l + 1} of {@code branch}. Child
     * {@code l}'s lower bound still holds after either; child {@code l + 1}'s becomes its new
     * key 0 (its least key, or for a branch, its first child's lower bound).
     */
    private void rebalance(Branch branch, int l) {
      Node left = editable(branch.children[l]);
      branch.children[l] = left;
      int total = left.size + branch.children[l + 1].size;
      if (total <= MAX) {
        Node right = branch.children[l + 1];
        right.move(0, left, left.size, right.size);
        left.size = total;
        branch.removeAt(l + 1);
      } else {
        Node right = editable(branch.children[l + 1]);
        int half = total / 2;
        if (left.size > half) {
          int n = left.size - half;
          right.move(0, right, n, right.size);
          left.move(half, right, 0, n);
          left.clear(half, left.size);
        } else {
          int n = half - left.size;
          right.move(0, left, left.size, n);
          right.move(n, right, 0, right.size - n);
          right.clear(right.size - n, right.size);
        }
        right.size = total - half;
        left.size = half;
        branch.children[l + 1] = right;
        branch.keys[l + 1] = right.keys[0];
      }
    }
  }
}
