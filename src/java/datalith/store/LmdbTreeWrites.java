package datalith.store;

import static datalith.store.LmdbLayout.MD_DEPTH;
import static datalith.store.LmdbLayout.MD_OVERFLOW_PAGES;
import static datalith.store.LmdbLayout.MD_ROOT;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The sub-databases' trees of an {@link LmdbDirectCommit}, written on two threads: the caller
 * goes through them in {@link SubDb} order, from the first on, and writes each one no one took
 * straight into the file's {@link LmdbPageSink}; a helper thread goes through them from the
 * last on and writes each one no one took, of those whose source is a MemStore's
 * ({@link MemCursor}), into a sink of its own in memory, until it meets a tree the caller took.
 * When the caller comes to a tree the helper took, it waits for it and appends it, renumbered
 * ({@link LmdbPageSink#append}). So the file's pages are those of one thread writing every tree
 * in order, byte for byte, whoever wrote which.
 *
 * <p>The helper reads the MemStore's immutable B+trees, never the source transaction, which
 * belongs to the caller: the caller opened every cursor, and closes them once the helper has
 * ended. An error on either thread stops both; the caller throws it once the helper has ended,
 * and nothing is committed.
 */
final class LmdbTreeWrites {
  /**
   * The system property that, when every tree's source is a MemStore's, fixes the split that
   * timing picks otherwise: the caller writes that many trees, the helper the rest. For tests.
   */
  static final String CALLER_TREES_PROPERTY = "datalith.replace.caller-trees";
  private static final byte FREE = 0;
  private static final byte CALLER = 1;
  private static final byte HELPER = 2;

  private final ReadTxn source;
  private final String where;
  private final LmdbTakenPages taken; // null: no page of the old trees is taken
  private final SubDb[] dbs = SubDb.values();
  private final ByteBuffer[] records = new ByteBuffer[dbs.length];
  private final BTree.Node[] roots = new BTree.Node[dbs.length]; // null: not a MemStore's
  private int callerTrees; // the caller takes trees before it only, unless there is no helper
  private int helperFrom; // the helper takes trees from it on only
  private boolean helping; // a helper was started
  private final int pageSize; // the sink's, for the helper's trees in memory
  private final byte[] takenBy = new byte[dbs.length]; // guarded by this
  private final LmdbPageSink[] kept = new LmdbPageSink[dbs.length]; // the helper's; by this
  private Throwable failure; // the helper's; guarded by this
  private volatile boolean stop; // either thread failed: the other stops
  private boolean interrupted; // the caller was interrupted while it waited for the helper

  private LmdbTreeWrites(ReadTxn source, String where, LmdbTakenPages taken, int pageSize) {
    this.source = source;
    this.pageSize = pageSize;
    this.where = where;
    this.taken = taken;
  }

  /**
   * Writes every sub-database's tree of {@code source} into {@code sink}; returns their MDB_db
   * records, by {@link SubDb#ordinal()}. Sets {@code interrupted[0]}, rather than the thread's
   * interrupt status (it would close the file's channel), when interrupted while it waited.
   * With {@code taken} (else null), a tree the caller writes from a cursor of the file's last
   * commit (transaction {@code taken.txn}), alone or under a staged delta
   * ({@link MergedCursor}), takes that commit's leaf pages that it passes whole as they are,
   * noting them there ({@link #addTaking}).
   *
   * @throws clojure.lang.ExceptionInfo as {@link LmdbTreeWriter#add(ByteBuffer, ByteBuffer)}
   */
  static ByteBuffer[] write(LmdbPageSink sink, ReadTxn source, String where,
      LmdbTakenPages taken, boolean[] interrupted) throws IOException {
    LmdbTreeWrites w = new LmdbTreeWrites(source, where, taken, sink.pageSize());
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
        if (source.ready(db)) { // the others are the caller's, opened when it comes to them
          cursors[db.ordinal()] = open(db.ordinal());
        }
      }
      callerTrees = dbs.length;
      Integer split = Integer.getInteger(CALLER_TREES_PROPERTY);
      if (split != null && Arrays.stream(roots).allMatch(Objects::nonNull)) {
        callerTrees = Math.max(0, Math.min(split, dbs.length));
        helperFrom = callerTrees;
      }
      if (Arrays.stream(roots).anyMatch(Objects::nonNull)) {
        helper = new Thread(this::helpFromTheBack, "datalith-tree-writer");
        helper.setDaemon(true);
        try {
          helper.start();
          helping = true;
        } catch (OutOfMemoryError e) { // no thread to be had: the caller writes every tree
          helper = null;
        }
      }
      for (int i = 0; i < dbs.length; i++) {
        if (take(i, CALLER)) {
          if (cursors[i] == null) {
            cursors[i] = open(i);
          }
          records[i] = writeTree(sink, i, cursors[i]);
        } else {
          append(sink, i, awaitHelper(i));
        }
      }
      join(helper);
      helper = null;
      synchronized (this) {
        if (failure != null) {
          throw rethrown(failure);
        }
      }
    } catch (RuntimeException | Error | IOException e) {
      stop = true;
      throw e;
    } finally {
      join(helper);
      for (Cursor c : cursors) {
        if (c != null) {
          c.close();
        }
      }
    }
  }

  /** A cursor of tree {@code i}; a MemStore's root is noted, for its leaves to be read whole. */
  private Cursor open(int i) {
    Cursor c = source.cursor(dbs[i]);
    if (c instanceof MemCursor m) {
      synchronized (this) {
        roots[i] = m.root();
      }
    }
    return c;
  }

  /**
   * Whether {@code who} takes tree {@code i}: no one took it, and the caller may (within its
   * share, or there is no helper), or the helper may (a MemStore's, within its share).
   */
  private synchronized boolean take(int i, byte who) {
    boolean may = who == CALLER ? i < callerTrees || !helping
        : roots[i] != null && i >= helperFrom;
    if (takenBy[i] != FREE || !may) {
      return false;
    }
    takenBy[i] = who;
    return true;
  }

  /** Waits for the helper's tree {@code i}: its pages in memory, numbered from 0. */
  private synchronized LmdbPageSink awaitHelper(int i) throws IOException {
    while (kept[i] == null && failure == null) {
      try {
        wait();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (failure != null) {
      throw rethrown(failure);
    }
    LmdbPageSink pages = kept[i];
    kept[i] = null; // its pages may go once appended
    return pages;
  }

  /** Appends the helper's tree {@code i}, {@code pages}, and renumbers its record's root. */
  private void append(LmdbPageSink sink, int i, LmdbPageSink pages) throws IOException {
    ByteBuffer record = records[i];
    long base = sink.append(pages, record.getLong(MD_OVERFLOW_PAGES) > 0);
    if (record.getShort(MD_DEPTH) > 0) {
      record.putLong(MD_ROOT, record.getLong(MD_ROOT) + base);
    }
  }

  /** The helper's work: trees from the last on, until one the caller took. */
  private void helpFromTheBack() {
    try {
      for (int i = dbs.length - 1; i >= 0 && !stop; i--) {
        synchronized (this) {
          if (takenBy[i] == CALLER) {
            return; // so are all before it, or they are taken by now
          }
        }
        if (take(i, HELPER)) {
          LmdbPageSink memory = LmdbPageSink.inMemory(pageSize);
          LmdbTreeWriter tree = new LmdbTreeWriter(memory, 0, false, where);
          addLeaves(tree, roots[i]);
          ByteBuffer record = tree.finish();
          synchronized (this) {
            records[i] = record;
            kept[i] = memory;
            notifyAll();
          }
        }
      }
    } catch (Throwable t) { // the caller throws it
      synchronized (this) {
        failure = t;
        stop = true;
        notifyAll();
      }
    }
  }

  private ByteBuffer writeTree(LmdbPageSink sink, int i, Cursor c) throws IOException {
    LmdbTreeWriter tree = new LmdbTreeWriter(sink, 0, false, where);
    LmdbCursor base = baseOf(c);
    if (roots[i] != null) {
      addLeaves(tree, roots[i]);
    } else if (base != null && c instanceof MergedCursor m && m.top() instanceof MemCursor top
        && m.gone() instanceof MemCursor gone) {
      mergeTaking(tree, base, top.root(), gone.root());
    } else if (base == c) {
      addTaking(tree, base);
    } else {
      for (boolean more = c.first(); more; more = c.next()) {
        tree.add(c.key(), c.val());
      }
    }
    return tree.finish();
  }

  /**
   * The cursor of the last commit's snapshot that {@code c} is, or merges a delta over, when
   * its pages may be taken; else null.
   */
  private LmdbCursor baseOf(Cursor c) {
    Cursor b = c instanceof MergedCursor ? ((MergedCursor) c).base() : c;
    return taken != null && b instanceof LmdbCursor && ((LmdbCursor) b).snapshotTxn() == taken.txn
        ? (LmdbCursor) b : null;
  }

  /**
   * Adds the entries of {@code base}, the last commit's own tree with nothing laid over it,
   * each of its leaf pages taken as it is ({@link #take}).
   */
  private void addTaking(LmdbTreeWriter tree, LmdbCursor base) throws IOException {
    for (boolean more = base.first(); more && !stop; ) {
      more = take(tree, base, base.leafStarted());
    }
  }

  /**
   * Takes leaf page {@code page}, which {@code base} is on at its first key, into {@code tree} as
   * it is: the file's page becomes a leaf of the new tree, checked first
   * ({@link LmdbCursor#checkLeaf}), and neither it nor its overflow pages (noted with it) are
   * written again; the leaf being filled before it is written as it is, so a run of taken pages
   * costs the new tree one leaf less full than the rest at most. Moves base to the next page's
   * first key: whether there is one.
   */
  private boolean take(LmdbTreeWriter tree, LmdbCursor base, long page) throws IOException {
    long overflow = base.checkLeaf(taken);
    taken.add(page, 1);
    tree.addPage(page, base.key(), base.leafKey(base.leafKeys() - 1), base.leafKeys(), overflow);
    return base.skipLeaf();
  }

  /**
   * Adds the entries beneath {@code node} (null: none), a MemStore snapshot's immutable B+tree,
   * in key order: its leaves' keys and values, left to right, without a cursor's key views.
   * Stops, the tree unfinished, once {@link #stop} is set.
   */
  private void addLeaves(LmdbTreeWriter tree, BTree.Node node) throws IOException {
    for (BTree.Leaf leaf : Leaves.of(node)) {
      if (stop) {
        return;
      }
      tree.addLeaf(leaf);
    }
  }

  /**
   * {@link #addTaking} of a merge (as {@link MergedCursor}'s) whose writes and deletions are a
   * MemStore's immutable
   * B+trees, {@code top} and {@code gone} (null: empty), as {@link MergedCursor} merges them
   * over {@code base}, read from their leaves' arrays of keys rather than through cursors (whose key
   * views, two objects a key, cost more than the merge): each key of top, and each of base's
   * that gone does not hold and top does not shadow, in key order.
   */
  private void mergeTaking(LmdbTreeWriter tree, LmdbCursor base, BTree.Node top,
      BTree.Node gone) throws IOException {
    Leaves puts = new Leaves(top);
    Leaves deleted = new Leaves(gone);
    byte[] baseKey = new byte[Errors.MAX_KEY_SIZE];
    byte[] lastKey = new byte[Errors.MAX_KEY_SIZE];
    boolean more = base.first();
    while ((more || puts.more()) && !stop) {
      if (!more) {
        puts.addTo(tree);
        puts.next();
        continue;
      }
      int n = copy(base.key(), baseKey);
      while (deleted.more() && deleted.compare(baseKey, n) < 0) {
        deleted.next();
      }
      if (deleted.more() && deleted.compare(baseKey, n) == 0) {
        deleted.next();
        more = base.next();
        continue;
      }
      int c = puts.more() ? puts.compare(baseKey, n) : 1;
      if (c <= 0) {
        puts.addTo(tree);
        puts.next();
        if (c == 0) {
          more = base.next();
        }
        continue;
      }
      long page = base.leafStarted();
      if (page >= 0) {
        int m = copy(base.leafKey(base.leafKeys() - 1), lastKey);
        if ((!puts.more() || puts.compare(lastKey, m) > 0)
            && (!deleted.more() || deleted.compare(lastKey, m) > 0)) {
          more = take(tree, base, page);
          continue;
        }
      }
      tree.add(base.key(), base.val());
      more = base.next();
    }
  }

  /** Copies {@code key}'s remaining bytes (at most 511) into {@code into}; their number. */
  private int copy(ByteBuffer key, byte[] into) {
    int n = key.remaining();
    Errors.checkKeySize(where, n);
    key.get(key.position(), into, 0, n);
    return n;
  }

  /** The entries of a MemStore's immutable B+tree (null: none), first to last, by leaf. */
  private static final class Leaves {
    private final List<BTree.Leaf> leaves;
    private int leaf = -1;
    private int i;
    private BTree.Leaf current; // the current key's leaf, null past the last

    Leaves(BTree.Node root) {
      leaves = of(root);
      nextLeaf();
    }

    /** The leaves of entries beneath {@code root} (null: none), left to right. */
    static List<BTree.Leaf> of(BTree.Node root) {
      List<BTree.Leaf> into = new ArrayList<>();
      collect(root, into);
      return into;
    }

    private static void collect(BTree.Node node, List<BTree.Leaf> into) {
      if (node instanceof BTree.Leaf l) {
        if (l.size > 0) {
          into.add(l);
        }
      } else if (node != null) {
        BTree.Branch b = (BTree.Branch) node;
        for (int c = 0; c < b.size; c++) {
          collect(b.children[c], into);
        }
      }
    }

    private void nextLeaf() {
      leaf++;
      i = 0;
      current = leaf < leaves.size() ? leaves.get(leaf) : null;
    }

    /** Whether there is a current entry: not past the last. */
    boolean more() {
      return current != null;
    }

    /** Compares the current key with {@code key[0 .. n)}, unsigned. */
    int compare(byte[] key, int n) {
      return current.compare(i, key, 0, n);
    }

    /** Adds the current entry to {@code tree}, its key kept (the leaf is immutable). */
    void addTo(LmdbTreeWriter tree) throws IOException {
      tree.addKept(current.data(), current.keyStart(i), current.keyLength(i), current.val(i));
    }

    void next() {
      if (++i == current.size) {
        nextLeaf();
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
