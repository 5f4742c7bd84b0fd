package datalith.store;

import static datalith.store.LmdbLayout.MD_DEPTH;
import static datalith.store.LmdbLayout.MD_OVERFLOW_PAGES;
import static datalith.store.LmdbLayout.MD_ROOT;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;

/**
 * The sub-databases' trees of an {@link LmdbDirectCommit}, written on two threads: the caller
 * writes them in {@link SubDb} order, from the first on, straight into the file's
 * {@link LmdbPageSink}; a helper thread writes them from the last on, each into a sink of its
 * own in memory, until the two meet. The caller then appends the helper's trees in order,
 * renumbered ({@link LmdbPageSink#append}). The file's pages are those of one thread writing
 * every tree in order, byte for byte, whoever wrote which.
 *
 * <p>The helper takes only sub-databases whose source is a MemStore's ({@link MemCursor}): it
 * reads their immutable B+trees, never the source transaction, which belongs to the caller;
 * the caller opened their cursors and closes them after the helper has ended. An error on
 * either thread ends both, and the caller throws it once the helper has ended; nothing is then
 * committed.
 */
final class LmdbTreeWrites {
  /**
   * The system property that, when the helper may take every tree (a MemStore's source), fixes
   * the split that timing picks otherwise: the caller writes that many trees, the helper the
   * rest. For tests.
   */
  static final String CALLER_TREES_PROPERTY = "datalith.replace.caller-trees";

  private final ReadTxn source;
  private final String where;
  private final SubDb[] dbs = SubDb.values();
  private final ByteBuffer[] records = new ByteBuffer[dbs.length];
  private final LmdbPageSink[] kept = new LmdbPageSink[dbs.length]; // the helper's trees
  private final BTree.Node[] roots = new BTree.Node[dbs.length]; // the helper may take these
  private int callerTrees; // the most trees the caller claims
  private int helperFloor; // the first tree the helper may claim
  private int front; // the trees before are the caller's; guarded by this
  private int back; // the trees from here on are the helper's; guarded by this
  private volatile boolean stop; // the caller failed: the helper stops
  private Throwable failure; // the helper's; read after it ended
  private boolean interrupted; // the caller was interrupted while it waited for the helper

  private LmdbTreeWrites(ReadTxn source, String where) {
    this.source = source;
    this.where = where;
    this.back = dbs.length;
  }

  /**
   * Writes every sub-database's tree of {@code source} into {@code sink}; returns their MDB_db
   * records, by {@link SubDb#ordinal()}. Sets the caller's interrupt status only once done, when
   * it was interrupted meanwhile (it would close the file's channel).
   *
   * @throws clojure.lang.ExceptionInfo as {@link LmdbTreeWriter#add(ByteBuffer, ByteBuffer)}
   */
  static ByteBuffer[] write(LmdbPageSink sink, ReadTxn source, String where,
      boolean[] interrupted) throws IOException {
    LmdbTreeWrites w = new LmdbTreeWrites(source, where);
    try {
      w.writeAll(sink);
    } finally {
      interrupted[0] |= w.interrupted;
    }
    return w.records;
  }

  private void writeAll(LmdbPageSink sink) throws IOException {
    Cursor[] cursors = new Cursor[dbs.length];
    Thread helper = null;
    try {
      for (SubDb db : dbs) {
        cursors[db.ordinal()] = source.cursor(db);
        if (cursors[db.ordinal()] instanceof MemCursor) {
          roots[db.ordinal()] = ((MemCursor) cursors[db.ordinal()]).root();
        }
      }
      callerTrees = dbs.length;
      if (Arrays.stream(roots).allMatch(Objects::nonNull)) {
        Integer split = Integer.getInteger(CALLER_TREES_PROPERTY);
        if (split != null) {
          callerTrees = Math.max(0, Math.min(split, dbs.length));
          helperFloor = callerTrees;
        }
      }
      if (roots[dbs.length - 1] != null) {
        helper = new Thread(this::helpFromTheBack, "datalith-tree-writer");
        helper.setDaemon(true);
        helper.start();
      }
      for (int i = claimFront(); i >= 0; i = claimFront()) {
        records[i] = writeTree(sink, i, cursors[i]);
      }
      join(helper);
      helper = null;
      if (failure != null) {
        throw rethrown(failure);
      }
      for (int i = back; i < dbs.length; i++) {
        long base = sink.append(kept[i], records[i].getLong(MD_OVERFLOW_PAGES) > 0);
        kept[i] = null; // its pages may go before the next is appended
        if (records[i].getShort(MD_DEPTH) > 0) {
          records[i].putLong(MD_ROOT, records[i].getLong(MD_ROOT) + base);
        }
      }
    } finally {
      stop = true;
      join(helper);
      for (Cursor c : cursors) {
        if (c != null) {
          c.close();
        }
      }
    }
  }

  /** The next tree for the caller, or -1 once every tree is taken. */
  private synchronized int claimFront() {
    return front < back && front < callerTrees ? front++ : -1;
  }

  /** The next tree for the helper, from the last on, or -1: every tree taken, or not a MemStore's. */
  private synchronized int claimBack() {
    return front < back && back > helperFloor && roots[back - 1] != null ? --back : -1;
  }

  private void helpFromTheBack() {
    try {
      for (int i = claimBack(); i >= 0 && !stop; i = claimBack()) {
        LmdbPageSink memory = LmdbPageSink.inMemory();
        LmdbTreeWriter tree = new LmdbTreeWriter(memory, 0, false, where);
        addLeaves(tree, roots[i]);
        records[i] = tree.finish();
        kept[i] = memory;
      }
    } catch (Throwable t) { // the caller throws it
      failure = t;
      stop = true;
    }
  }

  private ByteBuffer writeTree(LmdbPageSink sink, int i, Cursor c) throws IOException {
    LmdbTreeWriter tree = new LmdbTreeWriter(sink, 0, false, where);
    if (roots[i] != null) {
      addLeaves(tree, roots[i]);
    } else {
      for (boolean more = c.first(); more; more = c.next()) {
        tree.add(c.key(), c.val());
      }
    }
    return tree.finish();
  }

  /**
   * Adds the entries beneath {@code node} (null: none), a MemStore snapshot's immutable B+tree,
   * in key order: its leaves' keys and values, left to right, without a cursor's key views.
   * Stops, the tree unfinished, once {@link #stop} is set.
   */
  private void addLeaves(LmdbTreeWriter tree, BTree.Node node) throws IOException {
    if (node instanceof BTree.Leaf) {
      tree.addLeaf((BTree.Leaf) node);
    } else if (node != null && !stop) {
      BTree.Branch branch = (BTree.Branch) node;
      for (int i = 0; i < branch.size; i++) {
        addLeaves(tree, branch.children[i]);
      }
    }
  }

  /** Waits for {@code helper} (null: none) to end, whatever interrupts the wait. */
  private void join(Thread helper) {
    while (helper != null) {
      try {
        helper.join();
        return;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
  }

  private static RuntimeException rethrown(Throwable t) throws IOException {
    if (t instanceof IOException) {
      throw (IOException) t;
    }
    if (t instanceof Error) {
      throw (Error) t;
    }
    return (RuntimeException) t;
  }
}
