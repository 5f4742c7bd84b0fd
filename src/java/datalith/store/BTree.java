package datalith.store;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A persistent B+tree of (key, value) entries sorted by unsigned lexicographic key order: the
 * sorted map behind each sub-database of a {@link MemStore}. Updates copy the path from the root
 * to the changed leaf; nodes created by the current {@link BTreeEditor} are updated in place, so a
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
 *
 * <p>Every node holds an entry: an empty tree is null, and a delete drops a node it empties (a
 * node of one entry, which such a split leaves, may be its branch's only child, with no sibling
 * to merge it away). A node below the root may hold fewer than {@code MIN}.
 */
final class BTree {

  static final int MAX = 64; // most keys in a leaf, most children in a branch
  static final int MIN = MAX / 2; // fewest before a delete rebalances, except in the root
  /** The empty value: read-only, shared. */
  static final ByteBuffer EMPTY = ByteBuffer.allocate(0).asReadOnlyBuffer();

  private BTree() {}

  /** A node: {@code size} entries, sorted; room for MAX + 1, to hold one before a split. */
  abstract static class Node {
    final BTreeEditor editor; // the editor that may still change this node in place
    int size;
    int lastAdded = -1; // where its editor added an entry last, or -1 (a hint: a run steps by 1)

    Node(BTreeEditor editor) {
      this.editor = editor;
    }

    /** A copy owned by {@code editor}. */
    abstract Node copy(BTreeEditor editor);

    /** A node of the same kind, empty, owned by {@code editor}, with room for this one's entries. */
    abstract Node empty(BTreeEditor editor);

    /** Appends {@code src}'s entries {@code [from, from + count)} (a node of this kind). */
    abstract void appendFrom(Node src, int from, int count);

    /** Puts {@code src}'s entries {@code [from, from + count)} before this node's. */
    abstract void prependFrom(Node src, int from, int count);

    /** Drops the entries from {@code n} on. */
    abstract void truncate(int n);

    /** Drops the first {@code n} entries. */
    abstract void removeFirst(int n);

    /** Drops entry {@code i}. */
    abstract void removeAt(int i);

    /** Its first key (a leaf's copied out): the lower bound a parent keeps for it. */
    abstract byte[] firstKey();

    /** Forgets what reads made of it, before its editor changes it again in place. */
    void reopen() {}

    /**
     * The entries from {@code keep} on, moved to a new node of this kind owned by
     * {@code editor}; this one keeps those before. Each kind has its own, whose calls are bound
     * to that kind (an editor's split of a leaf and of a branch then share no call site whose
     * receiver the JIT guesses from the first splits, which are leaves').
     */
    abstract Node splitOff(BTreeEditor editor, int keep);
  }

  /**
   * A leaf: keys and their values (read-only buffers at position 0, shared with readers). Its
   * keys lie back to back in one stretch of an array, key {@code i} at
   * {@code data[offs[i], offs[i + 1])}, the stretch's room ending at {@code end}: an index's
   * entries are small and many, and one stretch a leaf rather than one array a key makes fewer
   * objects for the collector to copy, no allocation a put, and neighbours that share cache
   * lines. The array is the leaf's own, or a slab its editor shares out among its leaves
   * ({@link BTreeEditor#slabs}). The read-only views of its keys are made on the first read of the
   * leaf, once it is immutable. A leaf whose values are all empty (an index's) has no array of
   * values, which halves a copy.
   */
  static final class Leaf extends Node {
    private byte[] data;
    private int end; // its room in data is [offs[0], end)
    private final int[] offs = new int[MAX + 2]; // offs[size]: the end of its last key
    private ByteBuffer[] vals; // null while every value is EMPTY
    private volatile ByteBuffer[] keyViews; // null until read; then views of its keys

    /** A leaf owned by {@code editor} (null: none, immutable) with room for {@code capacity} bytes. */
    Leaf(BTreeEditor editor, int capacity) {
      super(editor);
      room(capacity);
    }

    /** Takes fresh room for {@code capacity} bytes (its keys not kept: the caller moves them). */
    private void room(int capacity) {
      if (editor != null && editor.slabs) {
        editor.share(this, capacity);
      } else {
        placeIn(new byte[capacity], 0, capacity);
      }
    }

    /** Its keys' room: {@code [at, at + capacity)} of {@code array} (its keys not kept). */
    void placeIn(byte[] array, int at, int capacity) {
      data = array;
      offs[0] = at;
      end = at + capacity;
    }

    /** The array its keys lie in, valid until its next edit. */
    byte[] data() {
      return data;
    }

    /** Where key {@code i} starts in {@link #data}; {@code keyStart(size)} is where the last ends. */
    int keyStart(int i) {
      return offs[i];
    }

    /** The length of key {@code i}. */
    int keyLength(int i) {
      return offs[i + 1] - offs[i];
    }

    /** The bytes of its keys, all of them. */
    int bytes() {
      return offs[size] - offs[0];
    }

    /** A copy of key {@code i}. */
    byte[] key(int i) {
      return Arrays.copyOfRange(data, offs[i], offs[i + 1]);
    }

    /** Compares key {@code i} with {@code key[off, off + len)}, unsigned. */
    int compare(int i, byte[] key, int off, int len) {
      return Arrays.compareUnsigned(data, offs[i], offs[i + 1], key, off, off + len);
    }

    /** Whether key {@code i} equals {@code key[off, off + len)}. */
    boolean equals(int i, byte[] key, int off, int len) {
      return Arrays.equals(data, offs[i], offs[i + 1], key, off, off + len);
    }

    /**
     * Read-only views (position 0) of its keys, made by the first call. Only for a leaf no
     * editor changes meanwhile: any thread may call it, and racing calls make equal views. An
     * edit in place drops them ({@link #reopen}).
     */
    ByteBuffer[] keyViews() {
      ByteBuffer[] views = keyViews;
      if (views == null) {
        views = new ByteBuffer[size];
        ByteBuffer all = ByteBuffer.wrap(data).asReadOnlyBuffer();
        for (int i = 0; i < size; i++) {
          views[i] = all.slice(offs[i], offs[i + 1] - offs[i]);
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
        fillEmpty(vals, 0, vals.length);
      }
      return vals;
    }

    /** Makes room for {@code more} bytes of keys: moves them to more room when they lack it. */
    private void reserve(int more) {
      int base = offs[0];
      int used = offs[size] - base;
      if (offs[size] + more > end) {
        byte[] from = data;
        room(Math.max(2 * (end - base), used + more));
        System.arraycopy(from, base, data, offs[0], used);
        int shift = offs[0] - base;
        for (int j = 1; j <= size; j++) {
          offs[j] += shift;
        }
      }
    }

    /** Inserts {@code key[off, off + len)} with {@code val} as entry {@code i}. */
    void insert(int i, byte[] key, int off, int len, ByteBuffer val) {
      reserve(len);
      int at = offs[i];
      System.arraycopy(data, at, data, at + len, offs[size] - at);
      System.arraycopy(key, off, data, at, len);
      for (int j = size; j > i; j--) {
        offs[j + 1] = offs[j] + len;
      }
      offs[i + 1] = at + len;
      if (vals != null) {
        System.arraycopy(vals, i, vals, i + 1, size - i);
      }
      size++;
      if (vals != null || val != EMPTY) {
        values()[i] = val;
      }
    }

    @Override
    Node copy(BTreeEditor editor) {
      int used = bytes();
      Leaf n = new Leaf(editor, used + 256); // room for the puts that made the copy
      int base = n.offs[0];
      System.arraycopy(data, offs[0], n.data, base, used);
      for (int j = 1; j <= size; j++) {
        n.offs[j] = offs[j] - offs[0] + base;
      }
      if (vals != null) {
        n.vals = vals.clone();
      }
      n.size = size;
      n.lastAdded = lastAdded;
      return n;
    }

    @Override
    Leaf empty(BTreeEditor editor) {
      // room for as many bytes as this one holds (a split's: one over full), not all its room:
      // a leaf's room is all of it, spare room included, for a collection to copy
      return new Leaf(editor, bytes());
    }

    @Override
    void appendFrom(Node node, int from, int count) {
      Leaf src = (Leaf) node;
      int start = src.offs[from];
      int bytes = src.offs[from + count] - start;
      reserve(bytes);
      int last = offs[size];
      System.arraycopy(src.data, start, data, last, bytes);
      for (int j = 1; j <= count; j++) {
        offs[size + j] = last + src.offs[from + j] - start;
      }
      copyVals(src, from, size, count);
      size += count;
    }

    @Override
    void prependFrom(Node node, int from, int count) {
      Leaf src = (Leaf) node;
      int start = src.offs[from];
      int bytes = src.offs[from + count] - start;
      reserve(bytes);
      int base = offs[0];
      System.arraycopy(data, base, data, base + bytes, offs[size] - base);
      System.arraycopy(src.data, start, data, base, bytes);
      for (int j = size; j >= 0; j--) {
        offs[j + count] = offs[j] + bytes;
      }
      for (int j = 0; j < count; j++) {
        offs[j] = base + src.offs[from + j] - start;
      }
      if (vals != null) {
        System.arraycopy(vals, 0, vals, count, size);
      }
      copyVals(src, from, 0, count);
      size += count;
    }

    /** Sets values {@code [at, at + count)} to {@code src}'s from {@code from}. */
    private void copyVals(Leaf src, int from, int at, int count) {
      if (src.vals != null) {
        System.arraycopy(src.vals, from, values(), at, count);
      } else if (vals != null) {
        fillEmpty(vals, at, at + count);
      }
    }

    @Override
    void truncate(int n) {
      if (vals != null) {
        clear(vals, n, size);
      }
      size = n;
    }

    @Override
    void removeFirst(int n) {
      int base = offs[0];
      int bytes = offs[n] - base;
      System.arraycopy(data, offs[n], data, base, offs[size] - offs[n]);
      for (int j = 0; j + n <= size; j++) {
        offs[j] = offs[j + n] - bytes;
      }
      if (vals != null) {
        System.arraycopy(vals, n, vals, 0, size - n);
        clear(vals, size - n, size);
      }
      size -= n;
    }

    @Override
    void removeAt(int i) {
      int at = offs[i];
      int len = offs[i + 1] - at;
      System.arraycopy(data, at + len, data, at, offs[size] - at - len);
      for (int j = i + 1; j < size; j++) {
        offs[j] = offs[j + 1] - len;
      }
      if (vals != null) {
        System.arraycopy(vals, i + 1, vals, i, size - i - 1);
        vals[size - 1] = null;
      }
      size--;
    }

    @Override
    Leaf splitOff(BTreeEditor editor, int keep) {
      Leaf right = empty(editor);
      right.appendFrom(this, keep, size - keep);
      truncate(keep);
      return right;
    }

    @Override
    byte[] firstKey() {
      return key(0);
    }
  }

  /** A branch: children, each with a lower bound of the keys beneath it. */
  static final class Branch extends Node {
    final byte[][] keys = new byte[MAX + 1][]; // a lower bound of each child (see BTree)
    final Node[] children = new Node[MAX + 1];
    int lastChild = -1; // the child its editor's last put went to, or -1 (a hint)

    Branch(BTreeEditor editor) {
      super(editor);
    }

    @Override
    Branch empty(BTreeEditor editor) {
      return new Branch(editor);
    }

    @Override
    Branch splitOff(BTreeEditor editor, int keep) {
      Branch right = empty(editor);
      right.appendFrom(this, keep, size - keep);
      truncate(keep);
      return right;
    }

    @Override
    Node copy(BTreeEditor editor) {
      Branch b = new Branch(editor);
      b.appendFrom(this, 0, size);
      b.lastAdded = lastAdded;
      b.lastChild = lastChild;
      return b;
    }

    /** Inserts child {@code i}, {@code child}, with lower bound {@code key}. */
    void insert(int i, byte[] key, Node child) {
      System.arraycopy(keys, i, keys, i + 1, size - i);
      System.arraycopy(children, i, children, i + 1, size - i);
      keys[i] = key;
      children[i] = child;
      size++;
    }

    @Override
    void appendFrom(Node node, int from, int count) {
      Branch src = (Branch) node;
      System.arraycopy(src.keys, from, keys, size, count);
      System.arraycopy(src.children, from, children, size, count);
      size += count;
    }

    @Override
    void prependFrom(Node node, int from, int count) {
      Branch src = (Branch) node;
      System.arraycopy(keys, 0, keys, count, size);
      System.arraycopy(children, 0, children, count, size);
      System.arraycopy(src.keys, from, keys, 0, count);
      System.arraycopy(src.children, from, children, 0, count);
      size += count;
    }

    @Override
    void truncate(int n) {
      clear(keys, n, size);
      clear(children, n, size);
      size = n;
    }

    @Override
    void removeFirst(int n) {
      System.arraycopy(keys, n, keys, 0, size - n);
      System.arraycopy(children, n, children, 0, size - n);
      truncate(size - n);
    }

    @Override
    void removeAt(int i) {
      System.arraycopy(keys, i + 1, keys, i, size - i - 1);
      System.arraycopy(children, i + 1, children, i, size - i - 1);
      truncate(size - 1);
    }

    @Override
    byte[] firstKey() {
      return keys[0];
    }
  }

  /*
   * The nodes' own loops rather than Arrays.fill: that one method's profile, shared by every
   * caller in the process with arrays of every type, made the JIT's compiled puts trap and be
   * compiled again each time a new caller's array came (a cold bulk import's puts were compiled
   * four to six times).
   */

  /** Sets {@code a[from, to)} to {@link #EMPTY}. */
  private static void fillEmpty(ByteBuffer[] a, int from, int to) {
    for (int i = from; i < to; i++) {
      a[i] = EMPTY;
    }
  }

  /** Sets {@code a[from, to)} to null. */
  static void clear(Object[] a, int from, int to) {
    for (int i = from; i < to; i++) {
      a[i] = null;
    }
  }

  /** Index of the first key {@code >= key[0..length)} in {@code leaf}, or its size. */
  static int search(Node leaf, byte[] key, int length) {
    return search((Leaf) leaf, key, 0, length, 0, leaf.size);
  }

  /**
   * Index of the first key {@code >= key[off, off + len)} in {@code leaf} among
   * {@code [lo, hi)}, or {@code hi}, given that those before {@code lo} are less and those from
   * {@code hi} on are not.
   */
  static int search(Leaf leaf, byte[] key, int off, int len, int lo, int hi) {
    byte[] data = leaf.data;
    int[] offs = leaf.offs;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (Arrays.compareUnsigned(data, offs[mid], offs[mid + 1], key, off, off + len) < 0) {
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
    return child((Branch) node, key, 0, length, 1, node.size); // key 0 is never compared
  }

  /**
   * {@link #child} of {@code key[off, off + len)} among children {@code [lo - 1, hi)}, given
   * that keys {@code [1, lo)} are {@code <=} it and those from {@code hi} on are greater.
   */
  static int child(Branch node, byte[] key, int off, int len, int lo, int hi) {
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      byte[] k = node.keys[mid];
      if (Arrays.compareUnsigned(k, 0, k.length, key, off, off + len) <= 0) {
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
    while (node instanceof Branch b) {
      node = b.children[child(b, key, 0, length, 1, b.size)];
    }
    Leaf leaf = (Leaf) node;
    int i = search(leaf, key, 0, length, 0, leaf.size);
    return i < leaf.size && leaf.equals(i, key, 0, length) ? leaf.val(i) : null;
  }

  /** The leaves of the tree under {@code root} (may be null: none), in key order. */
  static List<Leaf> leaves(Node root) {
    List<Leaf> into = new ArrayList<>();
    if (root != null) {
      addLeaves(root, into);
    }
    return into;
  }

  private static void addLeaves(Node node, List<Leaf> into) {
    if (node instanceof Branch b) {
      for (int i = 0; i < b.size; i++) {
        addLeaves(b.children[i], into);
      }
    } else {
      into.add((Leaf) node);
    }
  }

  /**
   * The tree of the {@code n} keys in {@code data}, key {@code i} at
   * {@code data[offs[i], offs[i + 1])}, strictly ascending, each with the empty value (an
   * index's), built bottom up: the keys spread evenly over as few leaves as hold them, then each
   * level of branches over the one below likewise, every node but the root at least half full.
   * Its nodes belong to no editor: immutable. Null when {@code n} is 0.
   */
  static Node build(byte[] data, int[] offs, int n) {
    if (n == 0) {
      return null;
    }
    Node[] level = new Node[(n + MAX - 1) / MAX];
    int count = level.length;
    for (int i = 0, from = 0; i < count; i++) {
      int to = (int) ((long) n * (i + 1) / count);
      int start = offs[from];
      Leaf leaf = new Leaf(null, offs[to] - start);
      System.arraycopy(data, start, leaf.data, 0, offs[to] - start);
      for (int j = from; j <= to; j++) {
        leaf.offs[j - from] = offs[j] - start;
      }
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
          branch.keys[c - from] = level[c].firstKey();
        }
        branch.size = to - from;
        level[i] = branch;
        from = to;
      }
      count = parents;
    }
    return level[0];
  }
}
