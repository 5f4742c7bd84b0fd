package datalith.store;

import static datalith.store.BTree.MAX;
import static datalith.store.BTree.MIN;
import static datalith.store.BTree.child;
import static datalith.store.BTree.search;

import datalith.store.BTree.Branch;
import datalith.store.BTree.Leaf;
import datalith.store.BTree.Node;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Makes new versions of {@link BTree}s; owns the nodes it creates until it is dropped, and
 * changes them in place. One thread. A write transaction's, dropped at its end, or a store's that edits in
 * place, kept across commits that no read can see (see {@link MemStore}).
 */
final class BTreeEditor {
  private static final int FIRST_LEAF = 256; // bytes of keys a tree's first leaf has room for
  private static final int FIRST_SLAB = 64 << 10;
  private static final int LAST_SLAB = 8 << 20; // slabs double from the first up to this
  /**
   * Whether its leaves take their room from slabs it shares out, large arrays of many leaves'
   * keys (an editor in place's, {@link MemStore#openInPlace}: a staged import's trees live
   * through many young collections, and a slab grown large is allocated where they do not copy
   * it, G1's humongous regions); else each leaf has an array of its own. A slab lives while any
   * of its leaves does, and the room a leaf leaves for more is not reused: for stores whose
   * trees are dropped whole (a layered store's delta).
   */
  final boolean slabs;
  private byte[] slab;
  private int slabUsed;
  private int slabSize = FIRST_SLAB; // the next slab's
  private Node split; // the right half of the node just split, until its parent takes it
  private byte[] splitKey; // split's first key

  /** An editor whose leaves each have an array of their own. */
  BTreeEditor() {
    this(false);
  }

  /** An editor whose leaves share slabs ({@link #slabs}) when {@code slabs}. */
  BTreeEditor(boolean slabs) {
    this.slabs = slabs;
  }

  /** Gives {@code leaf} room for {@code capacity} bytes from the current slab, or a new one. */
  void share(Leaf leaf, int capacity) {
    if (slab == null || slabUsed + capacity > slab.length) {
      slab = new byte[Math.max(slabSize, capacity)];
      slabUsed = 0;
      slabSize = Math.min(2 * slabSize, LAST_SLAB);
    }
    leaf.placeIn(slab, slabUsed, capacity);
    slabUsed += capacity;
  }

  private Node editable(Node node) {
    if (node.editor != this) {
      return node.copy(this);
    }
    node.reopen(); // an editor in place may change a node that reads saw, once they are done
    return node;
  }

  /**
   * The tree {@code root} (may be null) with {@code val} under {@code key[off, off + len)}:
   * the key's bytes copied, {@code val} kept (read-only at position 0, {@link BTree#EMPTY}
   * when empty).
   */
  Node put(Node root, byte[] key, int off, int len, ByteBuffer val) {
    if (root == null) {
      Leaf leaf = new Leaf(this, Math.max(FIRST_LEAF, len));
      leaf.insert(0, key, off, len, val);
      return leaf;
    }
    Node left = insert(root, key, off, len, val);
    Node right = split;
    if (right == null) {
      return left;
    }
    split = null;
    byte[] leftKey = left instanceof Leaf l ? l.firstKey() : ((Branch) left).firstKey();
    Branch top = new Branch(this);
    top.insert(0, leftKey, left);
    top.insert(1, splitKey, right);
    return top;
  }

  /** The tree {@code root} (may be null) without {@code key[off, off + len)}; {@code root} when absent. */
  Node delete(Node root, byte[] key, int off, int len) {
    if (root == null) {
      return null;
    }
    Node node = remove(root, key, off, len);
    if (node == null) {
      return root;
    }
    while (node instanceof Branch && node.size == 1) {
      node = ((Branch) node).children[0];
    }
    return node.size == 0 ? null : node;
  }

  /** {@link BTree#search} of a put, tried first right after the last key added (a run's next). */
  private static int searchNear(Leaf leaf, byte[] key, int off, int len) {
    int h = leaf.lastAdded;
    int n = leaf.size;
    if (h < 0 || h >= n) {
      return search(leaf, key, off, len, 0, n);
    }
    if (leaf.compare(h, key, off, len) >= 0) {
      return search(leaf, key, off, len, 0, h);
    }
    if (h + 1 == n || leaf.compare(h + 1, key, off, len) >= 0) {
      return h + 1;
    }
    return search(leaf, key, off, len, h + 2, n);
  }

  /**
   * {@link BTree#child} of a put, tried first at the child the last put went to: searched back from
   * it when the key lies before it, else forward from it in steps that double (puts in key
   * order, as {@link MemWrites} makes them, go a few children on).
   */
  private static int childNear(Branch branch, byte[] key, int off, int len) {
    int h = branch.lastChild;
    int n = branch.size;
    if (h < 0 || h >= n) {
      return child(branch, key, off, len, 1, n);
    }
    if (h > 0 && compare(branch.keys[h], key, off, len) > 0) {
      return child(branch, key, off, len, 1, h);
    }
    int lo = h + 1; // keys [1, lo) are <= key
    for (int step = 1; ; step <<= 1) {
      int probe = lo + step - 1;
      if (probe >= n) {
        return child(branch, key, off, len, lo, n);
      }
      if (compare(branch.keys[probe], key, off, len) > 0) {
        return child(branch, key, off, len, lo, probe);
      }
      lo = probe + 1;
    }
  }

  private static int compare(byte[] k, byte[] key, int off, int len) {
    return Arrays.compareUnsigned(k, 0, k.length, key, off, off + len);
  }

  private Node insert(Node node, byte[] key, int off, int len, ByteBuffer val) {
    if (node instanceof Leaf) {
      int i = searchNear((Leaf) node, key, off, len);
      Leaf leaf = (Leaf) editable(node);
      if (i < leaf.size && leaf.equals(i, key, off, len)) {
        leaf.setVal(i, val);
        return leaf;
      }
      leaf.insert(i, key, off, len, val);
      int keep = keep(leaf, i);
      if (keep >= 0) {
        Leaf right = leaf.splitOff(this, keep);
        split(leaf, right, right.firstKey(), i, keep);
      }
      return leaf;
    }
    int i = childNear((Branch) node, key, off, len);
    Node child = insert(((Branch) node).children[i], key, off, len, val);
    Node right = split;
    split = null;
    Branch branch = (Branch) editable(node);
    branch.children[i] = child;
    branch.lastChild = i;
    if (right == null) {
      return branch;
    }
    // a branch's key 0 is its child 0's lower bound
    branch.insert(i + 1, splitKey, right);
    int keep = keep(branch, i + 1);
    if (keep >= 0) {
      Branch up = branch.splitOff(this, keep);
      split(branch, up, up.firstKey(), i + 1, keep);
    }
    return branch;
  }

  /**
   * Where {@code node}, after an entry was added at {@code at}, splits (the entries it keeps),
   * or -1 when it is not over MAX entries: in halves, or, when the entry continues a run (added
   * right after the one added before it, or last), after it, the new entry alone going right
   * when it is last.
   */
  private static int keep(Node node, int at) {
    boolean run = at == node.lastAdded + 1 || at == node.size - 1;
    node.lastAdded = at;
    if (node.size <= MAX) {
      return -1;
    }
    return run ? Math.min(at + 1, MAX) : node.size / 2;
  }

  /**
   * Records {@code node}'s split at {@code keep} into {@code right} (whose first key is
   * {@code rightKey}, read by the caller, where the kind is known) for its parent, and moves
   * the hint of where a run goes on ({@code lastAdded}, the entry added at {@code at}) to
   * {@code right} when the split moved that entry there.
   */
  private void split(Node node, Node right, byte[] rightKey, int at, int keep) {
    if (at >= keep) {
      node.lastAdded = -1;
      right.lastAdded = at - keep;
    }
    split = right;
    splitKey = rightKey;
  }

  /**
   * The node without {@code key[off, off + len)}, possibly underfull or empty; null when the key
   * is absent. A branch keeps no empty child: a child of one entry is common (a run's split
   * leaves the new entry alone in a node, {@link #keep}), its branch may hold it alone, and no
   * sibling then merges the emptied child away, so the branch drops it here (and, left empty
   * itself, is dropped by its parent, or by {@link #delete} at the root). A reader's cursor
   * takes every node it enters to hold an entry.
   */
  private Node remove(Node node, byte[] key, int off, int len) {
    if (node instanceof Leaf l) {
      int i = search(l, key, off, len, 0, l.size);
      if (i == l.size || !l.equals(i, key, off, len)) {
        return null;
      }
      Node leaf = editable(node);
      leaf.removeAt(i);
      return leaf;
    }
    Branch b = (Branch) node;
    int i = child(b, key, off, len, 1, b.size);
    Node child = remove(b.children[i], key, off, len);
    if (child == null) {
      return null;
    }
    Branch branch = (Branch) editable(node);
    branch.children[i] = child;
    if (child.size == 0) {
      branch.removeAt(i); // its key 0, when i was 0, becomes the next child's bound: still one
    } else if (child.size < MIN && branch.size > 1) {
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
    Node right = branch.children[l + 1];
    int total = left.size + right.size;
    if (total <= MAX) {
      left.appendFrom(right, 0, right.size);
      branch.removeAt(l + 1);
      return;
    }
    right = editable(right);
    int half = total / 2;
    if (left.size > half) {
      right.prependFrom(left, half, left.size - half);
      left.truncate(half);
    } else {
      int n = half - left.size;
      left.appendFrom(right, 0, n);
      right.removeFirst(n);
    }
    branch.children[l + 1] = right;
    branch.keys[l + 1] = right.firstKey();
  }
}
