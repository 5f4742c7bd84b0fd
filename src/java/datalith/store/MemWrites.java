package datalith.store;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A {@link MemStore} write transaction's puts and deletes, kept in the order made and applied to
 * the trees in key order at commit (by the keys' first {@code PREFIX} bytes; as {@link LmdbWrite}
 * applies its log to LMDB). A transaction's
 * datoms come entity by entity, which scatters their keys over the AEVT, AVET and VAET trees, and
 * a put there descends from the root with a binary search at every level; in key order, the keys
 * of one attribute (AEVT), of one value (AVET) or to one entity (VAET) come as runs, and each put
 * continues where the last one went ({@link BTree}'s hints). Writes of one key keep their order:
 * the sort is stable. Its arrays are kept from one transaction to the next (one writer at a
 * time): used by the thread holding the write transaction only.
 */
final class MemWrites extends EntrySort {
  // the bytes of a key kept with its entry as numbers, the whole of its sort key: enough to tell
  // apart the index keys of most datoms (an AVET key of a ref is 33 bytes, its datom's e ends at
  // 25; values that share their first bytes tie), and few: a datom's keys are rarely shorter,
  // so each number is one read of the key (6, tried before, cost twice as much to make, and more
  // to sort, for no faster puts)
  private static final int LONGS = 4;
  private static final int PREFIX = 8 * LONGS;
  private static final VarHandle LONG_AT =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
  private static final int INITIAL_ENTRIES = 1024;
  private static final int KEPT_ENTRIES = 256 * 1024; // arrays kept up to this size
  private static final int KEPT_BYTES = 16 << 20; // and the log of keys up to this size
  /**
   * The writes of a tree that a background apply leaves to its caller, before it returns: the
   * trees of a few writes a commit, which the next transaction reads at once (META's t, which
   * every snapshot reads) while the helpers would come to them last ({@link
   * #applyInBackground}).
   */
  static final int FEW = 64;
  /** Commits of at least this many writes apply them on two threads ({@link #apply}). */
  static final int TWO_THREADS = 8192;
  private static final boolean CORES = Runtime.getRuntime().availableProcessors() > 1;
  private static final ExecutorService HELPERS = PlatformThreads.daemons("datalith-mem-writer");

  // per entry, in the order made: its key (where it starts in bytes, which holds the keys back
  // to back: no array a key, and the trees copy them), its value (null for a delete), its
  // sub-database's ordinal and its key's first PREFIX bytes as LONGS numbers
  private int count;
  private byte[] bytes = new byte[32 * INITIAL_ENTRIES];
  private int used; // bytes of keys logged
  private int[] keyAt = new int[INITIAL_ENTRIES + 1]; // entry i's key: [keyAt[i], keyAt[i + 1])
  private ByteBuffer[] vals = new ByteBuffer[INITIAL_ENTRIES];
  private byte[] dbs = new byte[INITIAL_ENTRIES];
  private long[] prefixes = new long[LONGS * INITIAL_ENTRIES];
  private int[] order = new int[INITIAL_ENTRIES]; // entry numbers, sorted at commit
  private int[] other = new int[INITIAL_ENTRIES]; // the merge sort's second array
  private volatile long helped; // commits whose writes the helper applied some of (any reader)

  /** Logs the put of {@code key}'s remaining bytes (copied) with {@code val} (kept) into {@code db}. */
  void put(SubDb db, ByteBuffer key, ByteBuffer val) {
    add(db, key, val);
  }

  /** Logs the delete of {@code key}'s remaining bytes (copied) from {@code db}. */
  void delete(SubDb db, ByteBuffer key) {
    add(db, key, null);
  }

  /**
   * Applies the writes to {@code roots} (indexed by sub-database ordinal), in key order, each
   * sub-database's with its own editor ({@code editors[d]}, made here when null). Many writes
   * ({@link #TWO_THREADS}) on a machine of two cores or more are applied on two threads: the
   * caller and a helper share the sub-databases ({@link Trees}); the trees are apart, and so
   * are their editors (no tree holds another's nodes). The caller returns once the helper is
   * done, or never started; the first failure is thrown here.
   */
  void apply(BTreeEditor[] editors, BTree.Node[] roots) {
    int[] starts = bucketed();
    int[] bySize = bySize(starts);
    Trees trees = new Trees(bySize, starts, editors, roots, null);
    if (count < TWO_THREADS || !CORES || bySize.length < 2) {
      trees.work();
    } else {
      Helper helper = new Helper(trees);
      try {
        HELPERS.execute(helper);
      } catch (RejectedExecutionException | OutOfMemoryError e) {
        // no thread to be had: the caller applies every sub-database's writes
      }
      trees.work();
      if (helper.await()) {
        helped = helped + 1; // one writer at a time
      }
    }
    Throwable failure = trees.failure();
    if (failure instanceof RuntimeException e) {
      throw e;
    }
    if (failure != null) {
      throw (Error) failure;
    }
  }

  /** Whether a commit of these writes is applied in the background: many, and a core for it. */
  boolean forBackground() {
    return count >= TWO_THREADS && CORES;
  }

  /**
   * Applies the writes to {@code roots} with {@code editors} on two helper threads (one on a
   * single core) sharing the trees ({@link Trees}); the last to end forgets them ({@link
   * #clear}) and ends {@code background}. Each tree is marked pending here and done once its
   * writes are in. The trees of {@link #FEW} writes or fewer are this thread's, applied before
   * the helpers start; when that fails, the helpers never start, and the failure is thrown
   * here. A helper not to be had is this thread: it applies what is left before it returns.
   */
  void applyInBackground(BTreeEditor[] editors, BTree.Node[] roots, Background background) {
    int[] starts = bucketed();
    int[] bySize = bySize(starts);
    int big = bySize.length;
    while (big > 0 && size(starts, bySize[big - 1]) <= FEW) {
      big--;
    }
    for (int i = big; i < bySize.length; i++) { // before any helper starts: it clears the arrays
      apply(bySize[i], starts, editors, roots);
    }
    bySize = Arrays.copyOf(bySize, big);
    for (int d : bySize) {
      background.pending[d] = true;
    }
    Trees trees = new Trees(bySize, starts, editors, roots, background);
    int workers = CORES && bySize.length > 1 ? 2 : 1;
    AtomicInteger running = new AtomicInteger(workers);
    Runnable job = () -> {
      try {
        trees.work();
      } finally {
        if (running.decrementAndGet() == 0) {
          Throwable f = trees.failure();
          try {
            if (f == null) {
              helped = helped + 1; // one writer at a time, and the next waits for this one
            }
            clear();
          } finally {
            background.finish(f);
          }
        }
      }
    };
    for (int h = 0; h < workers; h++) {
      try {
        HELPERS.execute(job);
      } catch (RejectedExecutionException | OutOfMemoryError e) {
        job.run(); // no thread to be had: applied here (what is left), then it ends
      }
    }
  }

  /**
   * The trees of a commit being applied in the background ({@link #applyInBackground}): a read
   * of one waits until its writes are in, and the next commit until all are.
   */
  static final class Background {
    private final boolean[] pending = new boolean[SubDb.values().length]; // guarded by this
    private boolean done; // guarded by this
    private Throwable failure; // guarded by this

    private synchronized void treeDone(int d) {
      pending[d] = false;
      notifyAll();
    }

    private synchronized void finish(Throwable f) {
      failure = f;
      done = true;
      Arrays.fill(pending, false);
      notifyAll();
    }

    /** Waits until tree {@code d}'s writes are in. */
    void awaitTree(int d) {
      await(d);
    }

    /** Waits until every tree's writes are in. */
    void awaitAll() {
      await(-1);
    }

    /** Waits for tree {@code d}, or for all ({@code d} -1), not to be interrupted; throws a failure. */
    private synchronized void await(int d) {
      boolean interrupted = false;
      try {
        while (failure == null && (d < 0 ? !done : pending[d])) {
          try {
            wait();
          } catch (InterruptedException e) {
            interrupted = true;
          }
        }
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
      if (failure != null) {
        throw new IllegalStateException("The store is closed: a commit's writes failed while"
            + " they were applied in the background (mem)", failure);
      }
    }
  }

  /** The entries bucketed by sub-database into {@code order}: each bucket's start, by ordinal. */
  private int[] bucketed() {
    if (order.length < count) {
      order = new int[vals.length];
      other = new int[vals.length];
    }
    return bucket(dbs, count, order);
  }

  /** The sub-databases written, by ordinal, the most written first. */
  private static int[] bySize(int[] starts) {
    int n = 0;
    int[] out = new int[starts.length - 1];
    for (int d = 0; d < out.length; d++) {
      if (starts[d + 1] > starts[d]) {
        int i = n++;
        for (; i > 0 && size(starts, out[i - 1]) < size(starts, d); i--) {
          out[i] = out[i - 1];
        }
        out[i] = d;
      }
    }
    return Arrays.copyOf(out, n);
  }

  private static int size(int[] starts, int d) {
    return starts[d + 1] - starts[d];
  }

  /** Sorts sub-database {@code d}'s writes and applies them to its tree. */
  private void apply(int d, int[] starts, BTreeEditor[] editors, BTree.Node[] roots) {
    int from = starts[d];
    int to = starts[d + 1];
    sortBucket(order, other, from, to);
    BTreeEditor editor = editors[d];
    if (editor == null) {
      editor = editors[d] = new BTreeEditor();
    }
    BTree.Node root = roots[d];
    byte[] b = bytes;
    for (int i = from; i < to; i++) {
      int x = order[i];
      int at = keyAt[x];
      int len = keyAt[x + 1] - at;
      root = vals[x] == null
          ? editor.delete(root, b, at, len) : editor.put(root, b, at, len, vals[x]);
    }
    roots[d] = root;
  }

  /**
   * One commit's sub-databases, applied by workers that each take the next one, the most
   * written first (so that the last taken are short), until none is left. A failure makes the
   * others take no more; the first is kept, any later one suppressed in it. With a
   * {@code background}, each tree is marked done there once its writes are in.
   */
  private final class Trees {
    private final int[] bySize;
    private final int[] starts;
    private final BTreeEditor[] editors;
    private final BTree.Node[] roots;
    private final Background background; // null: the caller waits for all
    private final AtomicInteger next = new AtomicInteger();
    private Throwable failure; // guarded by this

    Trees(int[] bySize, int[] starts, BTreeEditor[] editors, BTree.Node[] roots,
        Background background) {
      this.bySize = bySize;
      this.starts = starts;
      this.editors = editors;
      this.roots = roots;
      this.background = background;
    }

    /** Applies sub-databases' writes until none is left or one failed; whether it took any. */
    boolean work() {
      boolean any = false;
      try {
        for (int i; (i = next.getAndIncrement()) < bySize.length; ) {
          any = true;
          int d = bySize[i];
          apply(d, starts, editors, roots);
          if (background != null) {
            background.treeDone(d);
          }
        }
      } catch (RuntimeException | Error e) {
        next.set(bySize.length);
        synchronized (this) {
          if (failure == null) {
            failure = e;
          } else {
            failure.addSuppressed(e);
          }
        }
      }
      return any;
    }

    synchronized Throwable failure() {
      return failure;
    }
  }

  /**
   * The caller's helper in a foreground {@link #apply}: once it runs, it is running until it is
   * done; the caller, out of work, either keeps it from starting or waits for it.
   */
  private static final class Helper implements Runnable {
    private static final int WAITING = 0;
    private static final int RUNNING = 1;
    private static final int DONE = 2; // or never to run
    private final Trees trees;
    private final AtomicInteger state = new AtomicInteger(WAITING);
    private final Thread caller = Thread.currentThread();
    private boolean took; // it applied a sub-database's writes; read once DONE

    Helper(Trees trees) {
      this.trees = trees;
    }

    @Override
    public void run() {
      if (!state.compareAndSet(WAITING, RUNNING)) {
        return;
      }
      try {
        took = trees.work();
      } finally {
        state.set(DONE);
        LockSupport.unpark(caller);
      }
    }

    /** Waits for it unless it has not started (it then never will); whether it took a tree. */
    boolean await() {
      if (!state.compareAndSet(WAITING, DONE)) {
        while (state.get() != DONE) {
          LockSupport.park(this);
        }
      }
      return took;
    }
  }

  /** The commits whose writes a helper thread applied some of ({@link #apply}). */
  long helped() {
    return helped;
  }

  /** Forgets the writes, for the next transaction; drops the arrays when they grew large. */
  void clear() {
    if (vals.length > KEPT_ENTRIES) {
      keyAt = new int[INITIAL_ENTRIES + 1];
      vals = new ByteBuffer[INITIAL_ENTRIES];
      dbs = new byte[INITIAL_ENTRIES];
      prefixes = new long[LONGS * INITIAL_ENTRIES];
      order = new int[INITIAL_ENTRIES];
      other = new int[INITIAL_ENTRIES];
    } else {
      BTree.clear(vals, 0, count);
    }
    if (bytes.length > KEPT_BYTES) {
      bytes = new byte[32 * INITIAL_ENTRIES];
    }
    count = 0;
    used = 0;
  }

  private void add(SubDb db, ByteBuffer key, ByteBuffer val) {
    if (count == vals.length) {
      keyAt = Arrays.copyOf(keyAt, 2 * count + 1);
      vals = Arrays.copyOf(vals, 2 * count);
      dbs = Arrays.copyOf(dbs, 2 * count);
      prefixes = Arrays.copyOf(prefixes, 2 * LONGS * count);
    }
    int n = key.remaining();
    if (used + n > bytes.length) {
      bytes = Arrays.copyOf(bytes, Math.max(2 * bytes.length, used + n));
    }
    int at = used;
    key.get(key.position(), bytes, at, n);
    used = at + n;
    keyAt[count] = at;
    keyAt[count + 1] = used;
    vals[count] = val;
    dbs[count] = (byte) db.ordinal();
    for (int i = 0; i < LONGS; i++) {
      prefixes[LONGS * count + i] = prefix(bytes, at, n, 8 * i);
    }
    count++;
  }

  /** Bytes {@code from..from+8} of {@code b[at, at + n)}, big-endian, zeros past its end. */
  private static long prefix(byte[] b, int at, int n, int from) {
    if (n >= from + 8) {
      return (long) LONG_AT.get(b, at + from);
    }
    if (n <= from) {
      return 0;
    }
    if (n >= 8) { // the key's last 8 bytes, shifted so that byte from leads and zeros follow
      return (long) LONG_AT.get(b, at + n - 8) << 8 * (from + 8 - n);
    }
    long p = 0;
    for (int i = from; i < from + 8; i++) {
      p = p << 8 | (i < n ? b[at + i] & 0xFF : 0);
    }
    return p;
  }

  /**
   * The order of entries {@code x} and {@code y} of one sub-database: by their keys' first
   * {@code PREFIX} bytes as numbers, then by number. Keys that tie there keep the order they were
   * made in: the trees take keys in any order (key order only makes runs), and one key's writes
   * must keep theirs.
   */
  @Override
  int compare(int x, int y) {
    int c = comparePrefixes(prefixes, LONGS, x, y);
    return c != 0 ? c : Integer.compare(x, y);
  }
}
