package datalith.conn;

import clojure.lang.IFn;
import clojure.lang.IPersistentMap;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The listeners and the report queue of one connection: each committed transaction's report
 * reaches every listener ({@code (f report)}) and the queue, in commit order, once, after the
 * commit and outside the connection's transaction lock. Thread-safe.
 *
 * <p>How the order holds: the transaction, still holding the transaction lock, appends its
 * report to {@code pending} ({@link #committed}), so pending is in commit order; after
 * releasing it, the thread drains pending under {@code deliverLock} ({@link #deliver}), so one
 * thread at a time delivers, oldest first. A listener that transacts on the connection (or
 * anything else reaching {@link #deliver} on the delivering thread) leaves its report for the
 * drain already running, which keeps each listener's reports in order. A transaction returns
 * once its report is delivered.
 */
final class Listeners {
  private final Object lock = new Object(); // guards listeners, queue and pending
  private final LinkedHashMap<Object, IFn> listeners = new LinkedHashMap<>();
  private LinkedBlockingQueue<Object> queue; // null when none was asked for
  private final ArrayDeque<TxReport> pending = new ArrayDeque<>(); // commit order
  private volatile boolean any; // whether a listener or the queue is registered
  private final ReentrantLock deliverLock = new ReentrantLock();

  /** Registers {@code f} under {@code key}, replacing the listener of that key. */
  void listen(Object key, IFn f) {
    synchronized (lock) {
      listeners.put(key, f);
      any = true;
    }
  }

  /** Removes the listener of {@code key}; whether there was one. */
  boolean unlisten(Object key) {
    synchronized (lock) {
      boolean had = listeners.remove(key) != null;
      any = !listeners.isEmpty() || queue != null;
      return had;
    }
  }

  /** The report queue, made on first call: the same one until {@link #removeQueue}. Unbounded. */
  BlockingQueue<Object> queue() {
    synchronized (lock) {
      if (queue == null) {
        queue = new LinkedBlockingQueue<>();
        any = true;
      }
      return queue;
    }
  }

  /** Stops filling the report queue (what it holds stays in it). */
  void removeQueue() {
    synchronized (lock) {
      queue = null;
      any = !listeners.isEmpty();
    }
  }

  /** Whether a listener or the queue is registered: whether {@link #committed} keeps reports. */
  boolean any() {
    return any;
  }

  /** Notes a committed report; call while holding the transaction lock, so in commit order. */
  void committed(TxReport report) {
    if (any) {
      synchronized (lock) {
        pending.addLast(report);
      }
    }
  }

  /**
   * Delivers the pending reports, oldest first: the listeners registered when each is delivered
   * are called in registration order, on this thread. A listener's exception is handed to the
   * thread's uncaught exception handler and delivery goes on: the transaction stands.
   */
  void deliver() {
    if (!any && pendingIsEmpty() || deliverLock.isHeldByCurrentThread()) {
      return;
    }
    deliverLock.lock();
    try {
      for (TxReport r; (r = next()) != null; ) {
        IPersistentMap m = r.toMap();
        IFn[] fs;
        BlockingQueue<Object> q;
        synchronized (lock) {
          fs = listeners.values().toArray(new IFn[0]);
          q = queue;
        }
        if (q != null) {
          q.add(m);
        }
        for (IFn f : fs) {
          try {
            f.invoke(m);
          } catch (Exception | StackOverflowError | AssertionError t) {
            // a listener's failure is its own, not the transaction's
            Thread th = Thread.currentThread();
            th.getUncaughtExceptionHandler().uncaughtException(th, t);
          }
        }
      }
    } finally {
      deliverLock.unlock();
    }
  }

  private boolean pendingIsEmpty() {
    synchronized (lock) {
      return pending.isEmpty();
    }
  }

  private TxReport next() {
    synchronized (lock) {
      return pending.pollFirst();
    }
  }
}
