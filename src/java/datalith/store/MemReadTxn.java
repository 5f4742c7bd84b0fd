package datalith.store;

import java.nio.ByteBuffer;

/** A snapshot of a {@link MemStore}: the tree roots current when it began. One thread at a time. */
final class MemReadTxn implements ReadTxn {

  private BTree.Node[] roots; // by SubDb ordinal, never modified; null once closed
  private final MemStore counted; // told of the close: it counts its open reads; or null
  // the commit's apply in the background, whose trees are read once their writes are in; or null
  private final MemWrites.Background background;
  private byte[] probe = new byte[0]; // the get key, copied

  MemReadTxn(BTree.Node[] roots, MemStore counted) {
    this(roots, counted, null);
  }

  MemReadTxn(BTree.Node[] roots, MemStore counted, MemWrites.Background background) {
    this.roots = roots;
    this.counted = counted;
    this.background = background;
  }

  /** The root of {@code db}'s tree (null when empty), once its writes are in. */
  BTree.Node root(SubDb db) {
    BTree.Node[] r = roots();
    if (background != null) {
      background.awaitTree(db.ordinal());
    }
    return r[db.ordinal()];
  }

  BTree.Node[] roots() {
    BTree.Node[] r = roots;
    if (r == null) {
      throw Errors.closed("mem", "The read transaction");
    }
    return r;
  }

  /** Whether {@code db} holds no key in this snapshot. */
  boolean isEmpty(SubDb db) {
    return root(db) == null;
  }

  @Override
  public Cursor cursor(SubDb db) {
    return new MemCursor(this, root(db));
  }

  @Override
  public ByteBuffer get(SubDb db, ByteBuffer key) {
    BTree.Node root = root(db);
    int length = key.remaining();
    if (probe.length < length) {
      probe = new byte[Math.max(length, 32)];
    }
    key.get(key.position(), probe, 0, length);
    return BTree.get(root, probe, length);
  }

  @Override
  public void close() {
    if (roots != null) {
      roots = null;
      if (counted != null) {
        counted.readClosed();
      }
    }
  }
}
