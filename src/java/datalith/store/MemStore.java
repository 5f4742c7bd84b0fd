package datalith.store;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;

/**
 * The in-memory {@link Store}, for {@code (d/connect :mem)} and tests; it behaves like
 * {@link LmdbStore} but keeps nothing on disk. Each sub-database is a persistent B+tree; a read
 * transaction captures the current roots (one volatile read, no lock), a write transaction builds
 * new roots and publishes them all at once on commit.
 *
 * <p>Buffers returned by reads are the stored entries themselves: read-only, position 0, and
 * shared by every reader, so callers must read them with absolute gets (or read a
 * {@code duplicate()}) and leave their position and limit alone.
 *
 * <p>Thread-safe. Each transaction is used by one thread at a time.
 *
 * <p>In place ({@link #openInPlace}): for a store whose owner seldom reads across a commit (a
 * {@link LayeredStore}'s delta, which a staging commits thousands of transactions into), a
 * commit that finds no read transaction open edits the trees in place: one editor a tree makes
 * every such commit, so a node it made is changed where it lies rather than copied (no reader can
 * see the change: a read begun meanwhile waits for the commit). A commit that finds a read open
 * copies what it changes, as every commit of {@link #open} does, so that read keeps its snapshot;
 * the trees it shares with the copies are only edited in place once no read is open.
 *
 * <p>A commit in place of many writes ({@code MemWrites.forBackground}: a staging's chunk)
 * applies the trees of few writes itself (META's, which the next snapshot reads at once), then
 * returns once the others are handed to two helper threads, each applying the next tree (largest
 * first) while the committer goes on (a staged import's next chunk runs its transactor
 * meanwhile); a read of a tree not yet written waits for it, and the next commit for all of
 * them. The next write
 * transaction logs into a second set of arrays, so that nothing waits before its commit.
 */
public final class MemStore implements Store {

  private static final String WHERE = "mem";

  private final Semaphore writer = new Semaphore(1, true); // held by the open write transaction
  private volatile BTree.Node[] roots = new BTree.Node[SubDb.values().length]; // never modified
  private volatile boolean closed;
  private volatile Thread writerThread; // the thread that began the open write transaction
  private MemWrites writes = new MemWrites(); // the next write transaction's (writer's)
  private MemWrites spare; // in place: the other one, which a background apply may hold
  private volatile MemWrites.Background background; // the last commit's apply, or null
  private final BTreeEditor[] inPlace; // a tree's edits it when no read is open; null: never
  private final Object reads = new Object(); // guards openReads, and in-place commits
  private int openReads; // read transactions begun and not closed (in place only)
  private long inPlaceCommits; // commits that edited the trees in place (guarded by reads)

  private MemStore(BTreeEditor[] inPlace) {
    this.inPlace = inPlace;
  }

  /** A new, empty in-memory store: every commit copies the nodes it changes. */
  public static MemStore open() {
    return new MemStore(null);
  }

  /**
   * A new, empty in-memory store whose commits edit the trees in place when no read transaction
   * of it is open (see {@link MemStore}); otherwise like {@link #open}. For an owner that closes
   * its reads before it commits; a read left open makes every later commit copy. A commit in
   * place that fails part way (out of memory) closes the store, whose trees it left part-edited.
   */
  public static MemStore openInPlace() {
    BTreeEditor[] editors = new BTreeEditor[SubDb.values().length];
    for (int d = 0; d < editors.length; d++) {
      editors[d] = new BTreeEditor(true); // its trees are dropped whole: leaves share slabs
    }
    return new MemStore(editors);
  }

  /** The commits that edited the trees in place rather than copy: 0 unless {@link #openInPlace}. */
  public long inPlaceCommits() {
    synchronized (reads) {
      return inPlaceCommits;
    }
  }

  /**
   * The commits whose writes were applied on two threads, a helper's and the committer's (see
   * {@code MemWrites.apply}): many writes, on a machine of two cores or more.
   */
  public long helpedCommits() {
    return writes.helped() + (spare == null ? 0 : spare.helped());
  }

  /**
   * Waits until the last commit's writes, when they are applied in the background, are in.
   *
   * @throws IllegalStateException when they failed (the store is then closed)
   */
  private void awaitBackground() {
    MemWrites.Background b = background;
    if (b != null) {
      try {
        b.awaitAll();
      } catch (IllegalStateException e) {
        closed = true; // the trees are part-edited, as after a failed commit in place
        throw e;
      }
      background = null;
    }
  }

  private void checkOpen() {
    if (closed) {
      throw Errors.closed(WHERE, "The store");
    }
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException when the store is closed
   */
  @Override
  public ReadTxn beginRead() {
    checkOpen();
    if (inPlace == null) {
      return new MemReadTxn(roots, null);
    }
    synchronized (reads) { // not during an in-place commit: the roots are whole
      openReads++;
      return new MemReadTxn(roots, this, background);
    }
  }

  /** Notes the close of a read transaction counted by {@link #beginRead}, once. */
  void readClosed() {
    synchronized (reads) {
      openReads--;
    }
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException when the store is closed, or when this thread already holds
   *     the open write transaction (waiting would never end)
   */
  @Override
  public WriteTxn beginWrite() {
    checkOpen();
    if (writerThread == Thread.currentThread()) {
      throw new IllegalStateException("This thread already holds the write transaction (mem)");
    }
    writer.acquireUninterruptibly();
    if (closed) {
      writer.release();
      throw Errors.closed(WHERE, "The store");
    }
    writerThread = Thread.currentThread();
    return new Write(writes);
  }

  @Override
  public boolean durable() {
    return false;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Waits for the open write transaction to close. Read transactions still open keep reading
   * their snapshot. Idempotent.
   *
   * @throws IllegalStateException when this thread holds the open write transaction
   */
  @Override
  public void close() {
    if (writerThread == Thread.currentThread()) {
      throw new IllegalStateException(
          "Cannot close the store while this thread holds the write transaction (mem)");
    }
    if (closed) {
      return;
    }
    writer.acquireUninterruptibly();
    try {
      awaitBackground();
    } catch (IllegalStateException e) {
      // closed by the failure already
    }
    closed = true;
    roots = new BTree.Node[SubDb.values().length];
    writer.release();
  }

  private static ByteBuffer copy(ByteBuffer from, byte[] into) {
    from.get(from.position(), into);
    return ByteBuffer.wrap(into).asReadOnlyBuffer();
  }

  /** The write transaction: logs its writes, applied to a copy of the roots by commit. */
  private final class Write implements WriteTxn {
    private final MemWrites writes; // its log; a background apply's once committed so
    private final List<Expected> expected = new ArrayList<>();
    private boolean open = true;
    private boolean committed;
    private boolean handedOff; // its writes given to a background apply, which clears them

    Write(MemWrites writes) {
      this.writes = writes;
    }

    private void checkWritable() {
      Errors.checkWritable(WHERE, open, committed);
    }

    @Override
    public void put(SubDb db, ByteBuffer key, ByteBuffer val) {
      checkWritable();
      Errors.checkKey(WHERE, key);
      ByteBuffer valView = val.hasRemaining() ? copy(val, new byte[val.remaining()]) : BTree.EMPTY;
      writes.put(db, key, valView);
    }

    @Override
    public void delete(SubDb db, ByteBuffer key) {
      checkWritable();
      Errors.checkKey(WHERE, key);
      writes.delete(db, key);
    }

    @Override
    public void expect(SubDb db, ByteBuffer key, ByteBuffer val) {
      checkWritable();
      expected.add(new Expected(WHERE, db, key, val));
    }

    @Override
    public void commit() {
      checkWritable();
      awaitBackground(); // the last commit's trees whole before these are built on them
      BTree.Node[] next = roots.clone();
      for (Expected x : expected) {
        byte[] k = x.key();
        x.check(WHERE, BTree.get(next[x.db.ordinal()], k, k.length));
      }
      if (!commitInPlace(next)) {
        writes.apply(new BTreeEditor[next.length], next); // copies every node it changes
        roots = next;
      }
      committed = true;
    }

    /**
     * Applies the writes with the store's editors (one a tree) and publishes them, when the
     * store edits in place and no read is open; holds the lock that begins reads meanwhile. A
     * failure part way leaves the trees part-edited: the store closes. Many writes are handed
     * to a background apply instead ({@link MemStore}), the roots published at once: a read
     * waits for a tree of them until its writes are in.
     */
    private boolean commitInPlace(BTree.Node[] next) {
      if (inPlace == null) {
        return false;
      }
      synchronized (reads) {
        if (openReads > 0) {
          return false;
        }
        MemWrites.Background b = writes.forBackground() ? new MemWrites.Background() : null;
        try {
          if (b != null) {
            writes.applyInBackground(inPlace, next, b); // its small trees here, then helpers
          } else {
            writes.apply(inPlace, next);
          }
        } catch (RuntimeException | Error e) {
          closed = true;
          roots = new BTree.Node[SubDb.values().length];
          throw e;
        }
        if (b != null) {
          handedOff = true;
          MemWrites free = spare != null ? spare : new MemWrites(); // its apply awaited above
          spare = writes; // until the background apply clears it
          MemStore.this.writes = free;
          background = b;
        }
        roots = next;
        inPlaceCommits++;
        return true;
      }
    }

    @Override
    public void close() {
      if (open) {
        open = false;
        if (!handedOff) {
          writes.clear();
        }
        writerThread = null;
        writer.release();
      }
    }
  }
}
