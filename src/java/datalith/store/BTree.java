package datalith.store;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A persistent B+tree of (key, value) entries sorted by unsigned lexicographic key order: the
 * sorted map behind each sub-database of a {@link MemStore}. Updates copy the path from the root
 * to the changed leaf; nodes created by the current {@link Editor} are updated in place, so a
 * write transaction copies each node at most once. A node is immutable once its editor is done.
 */
final class BTree {

  static final int MAX = 64; // most keys in a leaf, most children in a branch
  static final int MIN = MAX / 2; // fewest, except in the root

  private BTree() {}

  /** A node; {@code keys[0..size)} are sorted, capacity MAX + 1 to hold a key before a split. */
  abstract static class Node {
    final Editor editor; // the editor that may still change this node in place
    final byte[][] keys; // leaf: its keys; branch: the greatest key under each child
    int size;

    Node(Editor editor) {
      this.editor = editor;
      this.keys = new byte[MAX + 1][];
    }

    byte[] maxKey() {
      return keys[size - 1];
    }

    /** A node of the same kind, empty. */
    abstract Node empty(Editor editor);

    /** Copies entries [from, from + count) to {@code to} at {@code at}; overlap is fine. */
    abstract void move(int from, Node to, int at, int count);

    /** Drops references in slots [from, to) so that removed entries can be collected. */
    abstract void clear(int from, int to);

    Node copy(Editor editor) {
      Node n = empty(editor);
      move(0, n, 0, size);
      n.size = size;
      return n;
    }

    void removeAt(int i) {
      move(i + 1, this, i, size - i - 1);
      size--;
      clear(size, size + 1);
    }
  }

  /** A leaf: keys with their read-only views and values, shared with readers. */
  static final class Leaf extends Node {
    final ByteBuffer[] keyViews = new ByteBuffer[MAX + 1]; // read-only, position 0
    final ByteBuffer[] vals = new ByteBuffer[MAX + 1]; // read-only, position 0

    Leaf(Editor editor) {
      super(editor);
    }

    @Override
    Node empty(Editor editor) {
      return new Leaf(editor);
    }

    @Override
    void move(int from, Node to, int at, int count) {
      Leaf leaf = (Leaf) to;
      System.arraycopy(keys, from, leaf.keys, at, count);
      System.arraycopy(keyViews, from, leaf.keyViews, at, count);
      System.arraycopy(vals, from, leaf.vals, at, count);
    }

    @Override
    void clear(int from, int to) {
      Arrays.fill(keys, from, to, null);
      Arrays.fill(keyViews, from, to, null);
      Arrays.fill(vals, from, to, null);
    }
  }

  /** A branch: children, each with the greatest key beneath it. */
  static final class Branch extends Node {
    final Node[] children = new Node[MAX + 1];

    Branch(Editor editor) {
      super(editor);
    }

    @Override
    Node empty(Editor editor) {
      return new Branch(editor);
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

  /** Index of the first key {@code >= key[0..length)} in {@code node}, or its size. */
  static int search(Node node, byte[] key, int length) {
    int lo = 0;
    int hi = node.size;
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

  /** The value under {@code key[0..length)} in the tree {@code root} (may be null), or null. */
  static ByteBuffer get(Node root, byte[] key, int length) {
    Node node = root;
    while (node != null) {
      int i = search(node, key, length);
      if (i == node.size) {
        return null;
      }
      if (node instanceof Leaf) {
        byte[] k = node.keys[i];
        return Arrays.equals(k, 0, k.length, key, 0, length) ? ((Leaf) node).vals[i] : null;
      }
      node = ((Branch) node).children[i];
    }
    return null;
  }

  /** Makes new tree versions; owns the nodes it creates until it is dropped. One thread. */
  static final class Editor {
    private Node split; // the right half of the node just split, until its parent takes it

    private Node editable(Node node) {
      return node.editor == this ? node : node.copy(this);
    }

    /** The tree {@code root} (may be null) with {@code val} under {@code key}. */
    Node put(Node root, byte[] key, ByteBuffer keyView, ByteBuffer val) {
      if (root == null) {
        Leaf leaf = new Leaf(this);
        leaf.keys[0] = key;
        leaf.keyViews[0] = keyView;
        leaf.vals[0] = val;
        leaf.size = 1;
        return leaf;
      }
      Node left = insert(root, key, keyView, val);
      Node right = split;
      if (right == null) {
        return left;
      }
      split = null;
      Branch top = new Branch(this);
      top.keys[0] = left.maxKey();
      top.children[0] = left;
      top.keys[1] = right.maxKey();
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

    private Node insert(Node node, byte[] key, ByteBuffer keyView, ByteBuffer val) {
      int i = search(node, key, key.length);
      if (node instanceof Leaf) {
        Leaf leaf = (Leaf) editable(node);
        if (i < leaf.size && Arrays.equals(leaf.keys[i], key)) {
          leaf.vals[i] = val;
          return leaf;
        }
        leaf.move(i, leaf, i + 1, leaf.size - i);
        leaf.keys[i] = key;
        leaf.keyViews[i] = keyView;
        leaf.vals[i] = val;
        leaf.size++;
        return splitIfFull(leaf);
      }
      if (i == node.size) {
        i--; // greater than every key: goes to the last child
      }
      Node child = insert(((Branch) node).children[i], key, keyView, val);
      Node right = split;
      split = null;
      Branch branch = (Branch) editable(node);
      branch.children[i] = child;
      branch.keys[i] = child.maxKey();
      if (right == null) {
        return branch;
      }
      branch.move(i + 1, branch, i + 2, branch.size - i - 1);
      branch.children[i + 1] = right;
      branch.keys[i + 1] = right.maxKey();
      branch.size++;
      return splitIfFull(branch);
    }

    private Node splitIfFull(Node node) {
      if (node.size > MAX) {
        Node right = node.empty(this);
        int half = node.size / 2;
        node.move(half, right, 0, node.size - half);
        right.size = node.size - half;
        node.clear(half, node.size);
        node.size = half;
        split = right;
      }
      return node;
    }

    /** The node without {@code key}, possibly underfull; null when the key is absent. */
    private Node remove(Node node, byte[] key) {
      int i = search(node, key, key.length);
      if (i == node.size) {
        return null;
      }
      if (node instanceof Leaf) {
        if (!Arrays.equals(node.keys[i], key)) {
          return null;
        }
        Node leaf = editable(node);
        leaf.removeAt(i);
        return leaf;
      }
      Node child = remove(((Branch) node).children[i], key);
      if (child == null) {
        return null;
      }
      Branch branch = (Branch) editable(node);
      branch.children[i] = child;
      if (child.size < MIN && branch.size > 1) {
        rebalance(branch, i > 0 ? i - 1 : i);
      } else if (child.size > 0) {
        branch.keys[i] = child.maxKey();
      }
      return branch;
    }

    /** Merges or evens out children {@code l} and {@code l + 1} of {@code branch}. */
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
        branch.keys[l + 1] = right.maxKey();
      }
      branch.keys[l] = left.maxKey();
    }
  }
}
