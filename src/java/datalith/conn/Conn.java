package datalith.conn;

import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Latest;
import datalith.db.Snapshot;
import datalith.db.Source;
import datalith.db.EntityBounds;
import datalith.db.ValidCache;
import datalith.store.Store;
import datalith.store.WriteTxn;
import datalith.tx.Transactor;
import clojure.lang.IFn;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.ObjIntConsumer;

/**
 * A connection to one database: owns its {@link Store}, serialises transactions, and holds the
 * latest database value. Thread-safe.
 *
 * <p>Transactions given to it at once commit in groups: each joins a queue ({@link TxQueue});
 * the leader takes the waiting ones, runs each on the value after the ones before it, stages
 * them all into one store write transaction and commits it once (one sync), then wakes their
 * callers and hands the leader role on (see {@link #lead}, {@link #runGroup}). Each keeps its
 * own t, report and failure.
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
  /**
   * The system property that, "false" when a connection opens, makes its as-of views' scans test
   * every key rather than pass later entities' runs ({@link EntityBounds}).
   */
  public static final String ENTITY_BOUNDS_PROPERTY = "datalith.entity-bounds";
  /** A group takes no more transactions once it holds this many datoms (overlay copies). */
  static final int MAX_GROUP_DATOMS = 4096;

  private final Store store;
  private final ReentrantLock txLock = new ReentrantLock(); // held by the running group
  private final Object publishLock = new Object();
  private volatile Latest latest; // never null once open; its basis t only grows
  private volatile boolean closed;
  private final Listeners listeners = new Listeners();
  private final TxQueue queue = new TxQueue();
  private ExecutorService async; // leads groups no caller waits for; made on first use
  private final boolean strict;
  private final ValidCache validCache = new ValidCache();
  // null (every key tested) with -Ddatalith.entity-bounds=false: the slow twin the tests compare
  private final EntityBounds entityBounds =
      Boolean.parseBoolean(System.getProperty(ENTITY_BOUNDS_PROPERTY, "true"))
          ? new EntityBounds() : null;
  private volatile Replicated replicated; // null: embedded; else the log node writing for it

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
   * @throws clojure.lang.ExceptionInfo {@code :store/format} for a store of another format;
   *     {@code :store/corrupt} for one that holds data but no basis t (a damaged one, which a
   *     bootstrap would write into)
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
          if (l == null) {
            Latest.checkEmpty(s); // a damaged store that lost its t is not written into
          }
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
   * write transaction is taken (so nothing commits in between), and on the transactions of this
   * connection committed with it in one group ({@link #lead}): it returns once it is durable.
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
    Replicated r = replicated;
    if (r != null) {
      return r.transact(txData);
    }
    TxFuture f = new TxFuture(txData, true);
    for (boolean leads = queue.add(f); !f.isDone(); leads = false) {
      if (leads || f.awaitTurn()) {
        lead(); // runs the group f heads (unless staging another one failed: f goes again)
      }
    }
    listeners.deliver();
    return f.result();
  }

  /**
   * Takes the transaction lock for an {@link Import}, which holds it until
   * {@link #unlockAfterImport}: its chunks commit one after another, no other transaction of
   * this connection in between.
   *
   * @throws clojure.lang.ExceptionInfo {@code :tx/reentrant} from a transaction function
   */
  void lockForImport() {
    if (replicated != null) {
      throw Errors.error("db/unsupported", "Cannot import into a connection that follows a"
          + " replicated log: transact through the log instead");
    }
    if (txLock.isHeldByCurrentThread()) {
      throw Errors.error("tx/reentrant", "Cannot import into a connection from inside one of its"
          + " transactions (a transaction function, or code it calls)");
    }
    txLock.lock();
  }

  /** Takes the transaction lock for {@link Logged#apply}, which releases it as an import does. */
  void lockForLog() {
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

  /** Whether the listeners or the report queue would keep a report committed now. */
  boolean listened() {
    return listeners.any();
  }

  /**
   * Publishes the store's value after a staged import's write ({@link Staged#write}) and notes
   * its chunks' reports for the listeners, in commit order. Holds the lock, as an import does.
   */
  void writtenByImport(List<TxReport> reports) {
    try (Snapshot s = Snapshot.of(store())) {
      publish(latest.refresh(s));
    }
    for (TxReport r : reports) {
      listeners.committed(r);
    }
  }

  /**
   * Gives {@link #transact} the transaction and returns at once: the transactions given to it
   * commit one after another, in the order of the calls, in the same groups as every other
   * transaction of this connection. The future completes with the report (after the listeners
   * got it), or with the transaction's error. On a node of a replicated log the transaction is
   * appended to the log at once ({@link Replicated#transactAsync}), and the future completes
   * once this node applied it.
   *
   * @throws clojure.lang.ExceptionInfo {@code :db/closed} once the connection is closed
   */
  public TxFuture transactAsync(Object txData) {
    Replicated node = replicated;
    if (node != null) {
      store(); // a closed connection refuses here, not in the future
      TxFuture f = new TxFuture(txData, false);
      node.transactAsync(txData).whenComplete((report, e) -> {
        f.settle(report, e instanceof CompletionException && e.getCause() != null
            ? e.getCause() : e);
        f.signal();
      });
      return f;
    }
    synchronized (this) { // close shuts the executor down holding this monitor
      store(); // a closed connection refuses here, not in the future
      if (async == null) {
        // one leads at a time; another starts while a listener on one waits for a transaction
        async = Executors.newCachedThreadPool(r -> {
          Thread t = new Thread(r, "datalith-transact-async");
          t.setDaemon(true);
          return t;
        });
      }
      TxFuture f = new TxFuture(txData, false);
      if (queue.add(f)) {
        async.execute(this::lead); // not shut down: close does it under this monitor, closed
      }
      return f;
    }
  }

  /**
   * Leads: runs the next group of waiting transactions, passes the leader role on, then
   * delivers the reports to the listeners and completes the async futures of the group. While
   * the oldest waiting transaction is an async one whose leader cannot be started (the
   * connection closed), leads again.
   */
  private void lead() {
    for (boolean again = true; again; ) {
      queue.gather();
      List<TxFuture> group = queue.take();
      txLock.lock();
      try {
        queue.putBack(runGroup(group, null));
      } finally {
        txLock.unlock();
      }
      for (TxFuture f : group) {
        if (f.waited && f.isSettled()) {
          f.signal();
        }
      }
      TxFuture next = queue.handOff();
      again = next != null && !startLeader();
      listeners.deliver();
      for (TxFuture f : group) {
        if (!f.waited && f.isSettled()) {
          f.signal();
        }
      }
    }
  }

  /** Starts a leader on an async thread; false when they are shut down (the connection closed). */
  private boolean startLeader() {
    synchronized (this) {
      try {
        async.execute(this::lead);
        return true;
      } catch (RejectedExecutionException e) {
        return false;
      }
    }
  }

  /**
   * Commits {@code group} with one store write transaction (one sync): each transaction runs on
   * the value after the ones before it (which the transactor reads through an overlay of their
   * datoms, as {@link With} does), and is staged into the write transaction with its own t,
   * log record and META. One that throws its own failure ({@link GroupMember#failsAlone}) fails
   * alone, staging nothing. Settles every transaction it ran; returns the ones to run in a later
   * group, in order (those past {@link #MAX_GROUP_DATOMS}; all but a failed one when staging it
   * failed, which leaves the write transaction unusable). When the write transaction cannot be
   * taken, or a failure is not a transaction's own, or the commit fails, every transaction it
   * ran fails with that error: none of them is committed. Holds the transaction lock.
   *
   * @param beforeCommit when not null, stages more into the write transaction just before its
   *     commit, given how many transactions of {@code group} it ran (a log's next offset)
   */
  <M extends GroupMember> List<M> runGroup(List<M> group,
      ObjIntConsumer<WriteTxn> beforeCommit) {
    List<M> staged = new ArrayList<>(group.size());
    List<TxReport> reports = new ArrayList<>(group.size());
    int taken = 0; // the transactions of group this write transaction ran
    Latest last;
    try (WriteTxn wt = store().beginWrite()) {
      Snapshot first = Snapshot.of(store()); // read by the refresh and the group's first one
      try {
        last = latest.refresh(first);
      } catch (RuntimeException e) {
        first.close();
        throw e;
      }
      last.expectBasis(wt);
      Db reading = last.db(); // the value after the staged ones: last, with their overlay
      for (long datoms = 0; taken < group.size() && datoms < MAX_GROUP_DATOMS; ) {
        M f = group.get(taken++);
        Transactor.Result r;
        try (Snapshot s = first != null ? first : reading.snapshot()) {
          first = null;
          r = Transactor.run(reading, s, f.txData(), last.instant(), null, f.clock());
        } catch (Throwable e) { // handed to its caller; it alone fails, nothing of it written
          if (!f.failsAlone(e, false)) {
            throw e;
          }
          f.settle(null, e);
          continue;
        }
        Latest after;
        try {
          after = last.stage(wt, r.changes, r.schema, r.t, r.nextEid);
        } catch (RuntimeException e) { // wt holds part of it: the others go again without it
          if (!f.failsAlone(e, true)) {
            throw e;
          }
          f.settle(null, e);
          List<M> again = new ArrayList<>(staged);
          again.addAll(group.subList(taken, group.size()));
          return again;
        }
        staged.add(f);
        reports.add(new TxReport(last.db(), after.db(), r.changes, r.tempids));
        datoms += r.changes.size();
        last = after;
        if (taken < group.size() && datoms < MAX_GROUP_DATOMS) { // another one reads it
          reading = reading.withChanges(r.changes, r.schema, r.t, r.nextEid);
        }
      }
      if (first != null) { // an empty group
        first.close();
      }
      if (!staged.isEmpty()) {
        if (beforeCommit != null) {
          beforeCommit.accept(wt, taken);
        }
        wt.commit();
      }
    } catch (Throwable e) { // nothing of the group is committed
      int failed = taken == 0 ? group.size() : taken;
      for (M f : group.subList(0, failed)) {
        if (!f.isSettled()) {
          f.settle(null, e);
        }
      }
      return group.subList(failed, group.size());
    }
    if (!staged.isEmpty()) {
      publish(last);
    }
    for (int i = 0; i < staged.size(); i++) {
      listeners.committed(reports.get(i)); // in commit order, under the lock
      staged.get(i).settle(reports.get(i), null);
    }
    return group.subList(taken, group.size());
  }

  /**
   * Calls {@code (f report)} with the report map of every transaction this connection commits
   * from now on, after the commit, in commit order, on a thread of its group (before its
   * transact returns, and before its async future completes). Replaces the listener registered
   * under {@code key}. A listener's exception goes to the thread's uncaught exception handler:
   * the transaction stands.
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

  /** The valid-time lines this connection's values replayed last, shared by values at one point. */
  @Override
  public ValidCache validCache() {
    return validCache;
  }

  /** The entity bounds of this connection's as-of points, shared by the views at one point. */
  @Override
  public EntityBounds entityBounds() {
    return entityBounds;
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

  /**
   * Makes this connection a node of a replicated log: from now on {@link #transact} hands its
   * tx-data to {@code r}, which returns once this node applied it, and {@link #close} stops
   * {@code r} first. Set once, before the connection is shared.
   */
  public void replicate(Replicated r) {
    replicated = r;
  }

  /** The log node this connection writes through; null when it is embedded. */
  public Replicated replicated() {
    return replicated;
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
    Replicated r = replicated;
    if (r != null) {
      r.stop(); // its applier ends before the store closes
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
