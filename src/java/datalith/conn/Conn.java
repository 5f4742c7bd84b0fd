package datalith.conn;

import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Latest;
import datalith.db.Snapshot;
import datalith.db.Source;
import datalith.store.Store;
import datalith.store.WriteTxn;
import datalith.tx.Transactor;
import clojure.lang.IFn;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A connection to one database: owns its {@link Store}, serialises transactions, and holds the
 * latest database value. Thread-safe.
 *
 * <p>Several processes may connect to one LMDB directory (the store lets one write transaction
 * of one process run at a time). A transaction takes the store's write transaction first, then
 * reads the last commit, whichever process made it: its t, the next entity id, the statistics
 * and, when it changed, the schema. It builds on that, and commits only if the store's t is
 * still the one it built on. {@link #db()} reads the store's t on each call, so it returns
 * other processes' commits too.
 *
 * <p>The thread running a transaction (its transaction functions, and whatever they call) may
 * neither transact on this connection nor close it: both throw. A transaction function must not
 * wait for another thread's transaction on this connection either: that one waits for it.
 */
public final class Conn implements Source, AutoCloseable {
  private final Store store;
  private final ReentrantLock txLock = new ReentrantLock(); // held by the running transaction
  private final Object publishLock = new Object();
  private volatile Latest latest; // never null once open; its basis t only grows
  private volatile boolean closed;
  private final Listeners listeners = new Listeners();
  private ExecutorService async; // runs transactAsync's transactions, in order; made on first use
  private final boolean strict;

  private Conn(Store store, boolean strict) {
    this.store = store;
    this.strict = strict;
  }

  /**
   * Opens a connection over {@code store}, writing the bootstrap schema into an empty one.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/format} for a store of another format
   */
  public static Conn open(Store store) {
    return open(store, false);
  }

  /**
   * Opens a connection over {@code store}, strict or lenient ({@link Source#strict}), writing
   * the bootstrap schema into an empty one.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/format} for a store of another format
   */
  public static Conn open(Store store, boolean strict) {
    Conn c = new Conn(store, strict);
    Latest l;
    try (Snapshot s = Snapshot.of(store)) {
      l = Latest.load(c, s);
    }
    if (l == null) {
      try (WriteTxn wt = store.beginWrite()) {
        try (Snapshot s = Snapshot.of(store)) {
          l = Latest.load(c, s); // another process may have bootstrapped it meanwhile
        }
        if (l == null) {
          l = Latest.bootstrap(c, wt);
        }
      }
    }
    c.latest = l;
    return c;
  }

  /**
   * The store, for the database values of this connection and for checks that read it whole
   * ({@code Verify}, {@code Rebuild}). Any thread may call it.
   *
   * @throws clojure.lang.ExceptionInfo {@code :db/closed} once the connection is closed
   */
  @Override
  public Store store() {
    if (closed) {
      throw Errors.error("db/closed", "The connection is closed");
    }
    return store;
  }

  /**
   * The latest database value: the last commit of any process. Reads the store's t to know
   * (one short read); loads the new t's metadata, and its schema if that changed, when another
   * process committed since.
   */
  public Db db() {
    Latest known = latest;
    try (Snapshot s = Snapshot.of(store())) {
      Latest l = known.refresh(s);
      return l == known ? known.db() : publish(l).db();
    }
  }

  /** Makes {@code l} the latest value unless a newer one is; returns the latest. */
  private Latest publish(Latest l) {
    synchronized (publishLock) {
      if (l.db().basisT() > latest.db().basisT()) {
        latest = l;
      }
      return latest;
    }
  }

  /**
   * Runs one transaction: all of it is committed (durably, unless the store relaxes fsync) or,
   * on any error, nothing. It is built on the last commit of any process, read after the store's
   * write transaction is taken (so nothing commits in between).
   *
   * @throws clojure.lang.ExceptionInfo {@code :tx/reentrant} from the thread running a
   *     transaction of this connection (a transaction function), besides the transaction's own
   *     errors
   */
  public TxReport transact(Object txData) {
    if (txLock.isHeldByCurrentThread()) {
      throw Errors.error("tx/reentrant", "Cannot transact on a connection from inside one of its"
          + " transactions (a transaction function, or code it calls): return the tx-data from"
          + " the function instead", "tx-data", txData);
    }
    TxReport report;
    txLock.lock();
    try (WriteTxn wt = store().beginWrite()) {
      Latest base;
      Transactor.Result r;
      try (Snapshot s = Snapshot.of(store())) {
        base = latest.refresh(s);
        r = Transactor.run(base.db(), s, txData);
      }
      Latest after = base.commit(wt, r.changes, r.schema, r.t, r.nextEid);
      publish(after);
      report = new TxReport(base.db(), after.db(), r.changes, r.tempids);
      listeners.committed(report); // committed: in commit order, under the lock
    } finally {
      txLock.unlock();
    }
    listeners.deliver();
    return report;
  }

  /**
   * Takes the transaction lock for an {@link Import}, which holds it until
   * {@link #unlockAfterImport}: its chunks commit one after another, no other transaction of
   * this connection in between.
   *
   * @throws clojure.lang.ExceptionInfo {@code :tx/reentrant} from a transaction function
   */
  void lockForImport() {
    if (txLock.isHeldByCurrentThread()) {
      throw Errors.error("tx/reentrant", "Cannot import into a connection from inside one of its"
          + " transactions (a transaction function, or code it calls)");
    }
    txLock.lock();
  }

  /** Releases the lock {@link #lockForImport} took, then delivers the import's reports. */
  void unlockAfterImport() {
    txLock.unlock();
    listeners.deliver();
  }

  /** The latest value as {@code s} reads the store, for an import holding the lock. */
  Latest refreshForImport(Snapshot s) {
    return latest.refresh(s);
  }

  /** Publishes a chunk an import committed, as {@link #transact} publishes its commit. */
  void committedByImport(TxReport report, Latest after) {
    publish(after);
    listeners.committed(report);
  }

  /**
   * Runs {@link #transact} on this connection's transaction thread: the transactions given to
   * it run one after another, in the order of the calls. The future completes with the report,
   * or with the transaction's error.
   *
   * @throws clojure.lang.ExceptionInfo {@code :db/closed} once the connection is closed
   */
  public TxFuture transactAsync(Object txData) {
    synchronized (this) { // close shuts the executor down holding this monitor
      store(); // a closed connection refuses here, not in the future
      if (async == null) {
        async = Executors.newSingleThreadExecutor(r -> {
          Thread t = new Thread(r, "datalith-transact-async");
          t.setDaemon(true);
          return t;
        });
      }
      TxFuture f = new TxFuture();
      async.execute(() -> f.run(this, txData));
      return f;
    }
  }

  /**
   * Calls {@code (f report)} with the report map of every transaction this connection commits
   * from now on, after the commit, in commit order, on the thread that committed it (before its
   * transact returns). Replaces the listener registered under {@code key}. A listener's
   * exception goes to the thread's uncaught exception handler: the transaction stands.
   */
  public void listen(Object key, IFn f) {
    listeners.listen(key, f);
  }

  /** Removes the listener of {@code key}; whether there was one. */
  public boolean unlisten(Object key) {
    return listeners.unlisten(key);
  }

  /**
   * The queue that receives the report map of every transaction this connection commits, in
   * commit order, from the first call on: unbounded, nothing dropped; the same queue until
   * {@link #removeTxReportQueue}.
   */
  public BlockingQueue<Object> txReportQueue() {
    return listeners.queue();
  }

  /** Stops filling the report queue. */
  public void removeTxReportQueue() {
    listeners.removeQueue();
  }

  /** Whether the connection is strict: its values refuse attributes that are not installed. */
  @Override
  public boolean strict() {
    return strict;
  }

  /**
   * The connection as the REPL prints it: its directory (or {@code :mem}), the basis t of the
   * latest value it knows (no read of the store: it may be a closed one's), open or closed.
   */
  @Override
  public String toString() {
    String dir = store.directory();
    return "#datalith/conn {:dir " + (dir == null ? ":mem" : clojure.lang.RT.printString(dir))
        + ", :basis-t " + latest.db().basisT() + ", :open? " + !closed + "}";
  }

  /** Whether {@link #close} has closed the connection. */
  public boolean isClosed() {
    return closed;
  }

  /**
   * Closes the store, after a transaction running on another thread ends. All or nothing: when
   * it throws, the connection stays open. Idempotent.
   *
   * @throws clojure.lang.ExceptionInfo {@code :db/close-in-tx} from the thread running a
   *     transaction of this connection (a transaction function)
   * @throws IllegalStateException when this thread holds a read of the store (a function called
   *     by a query of this connection)
   */
  @Override
  public void close() {
    if (txLock.isHeldByCurrentThread()) {
      throw Errors.error("db/close-in-tx", "Cannot close a connection from inside one of its"
          + " transactions (a transaction function, or code it calls)");
    }
    txLock.lock();
    try {
      if (!closed) {
        closed = true;
        try {
          store.close();
        } catch (RuntimeException e) {
          closed = false; // the store refused before closing anything
          throw e;
        }
        synchronized (this) {
          if (async != null) {
            async.shutdown(); // what it holds runs, and finds the connection closed
          }
        }
      }
    } finally {
      txLock.unlock();
    }
  }
}
