package datalith.conn;

import java.util.concurrent.TimeUnit;

/**
 * One transaction given to a connection, waiting in its queue ({@link TxQueue}) until a group
 * commit runs it, and then its result: the report, or the transaction's error, rethrown as it
 * was (not wrapped: wrapping an exception calls its {@code toString}, and an ex-info's prints
 * its data, which may be any tx-data). {@link Conn#transactAsync} returns it as the pending
 * report. Thread-safe; settled once, by the thread leading the group that ran it.
 *
 * <p>States: pending; told to lead (its caller, waiting in {@link #awaitTurn}, runs the next
 * group, which includes it); done (settled, then signalled).
 */
public final class TxFuture extends GroupMember {
  private static final int PENDING = 0;
  private static final int LEAD = 1;
  private static final int DONE = 2;

  /** The transaction's tx-data. */
  final Object txData;
  /** Whether a thread waits in {@link #awaitTurn} for this (a transact call, not an async one). */
  final boolean waited;
  private int state = PENDING; // guarded by this
  private TxReport report; // set by settle, read once DONE
  private Throwable failure;

  TxFuture(Object txData, boolean waited) {
    this.txData = txData;
    this.waited = waited;
  }

  @Override
  Object txData() {
    return txData;
  }

  /** Now: a transaction of the connection is dated when it runs. */
  @Override
  long clock() {
    return System.currentTimeMillis();
  }

  /** Always: any failure of a transaction of the connection is its own. */
  @Override
  boolean failsAlone(Throwable failure, boolean staging) {
    return true;
  }

  /** Records the result: the report, or the failure (report null). Not yet visible: see signal. */
  @Override
  void settle(TxReport report, Throwable failure) {
    synchronized (this) {
      this.report = report;
      this.failure = failure;
    }
  }

  /** Whether {@link #settle} gave this a result. */
  @Override
  synchronized boolean isSettled() {
    return report != null || failure != null;
  }

  /** Makes the settled result visible: wakes whoever waits. */
  synchronized void signal() {
    state = DONE;
    notifyAll();
  }

  /** Tells the waiting caller to lead the next group. */
  synchronized void lead() {
    state = LEAD;
    notifyAll();
  }

  /**
   * Waits until this is done or its caller is told to lead; whether it is to lead. Not
   * interruptible: a transaction waiting here may be committing (the interrupt is kept).
   */
  synchronized boolean awaitTurn() {
    boolean interrupted = false;
    while (state == PENDING) {
      try {
        wait();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (state == LEAD) {
      state = PENDING;
      return true;
    }
    return false;
  }

  /** Whether the transaction has ended. */
  public synchronized boolean isDone() {
    return state == DONE;
  }

  /**
   * Waits for the transaction; its report, or its error thrown here.
   *
   * @throws InterruptedException when the waiting thread is interrupted
   */
  public synchronized TxReport get() throws InterruptedException {
    while (state != DONE) {
      wait();
    }
    return result();
  }

  /**
   * Waits at most {@code ms} milliseconds; the report (or the error thrown), or null when
   * the transaction has not ended by then.
   *
   * @throws InterruptedException when the waiting thread is interrupted
   */
  public synchronized TxReport get(long ms) throws InterruptedException {
    long ns = TimeUnit.MILLISECONDS.toNanos(ms); // saturates rather than overflows
    long start = System.nanoTime();
    for (long left = ns; state != DONE && left > 0; left = ns - (System.nanoTime() - start)) {
      TimeUnit.NANOSECONDS.timedWait(this, left);
    }
    return state == DONE ? result() : null;
  }

  /** The report, or the failure thrown; once done. */
  synchronized TxReport result() {
    if (failure instanceof RuntimeException e) {
      throw e;
    }
    if (failure instanceof Error e) {
      throw e;
    }
    if (failure != null) { // transact throws no checked exception
      throw new IllegalStateException(failure.getClass().getName());
    }
    return report;
  }
}
