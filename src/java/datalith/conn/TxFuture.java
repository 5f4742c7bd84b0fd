package datalith.conn;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The pending result of {@link Conn#transactAsync}: the report, or the transaction's error,
 * rethrown as it was (not wrapped: wrapping an exception calls its {@code toString}, and an
 * ex-info's prints its data, which may be any tx-data). Thread-safe; completed once.
 */
public final class TxFuture {
  private final CountDownLatch done = new CountDownLatch(1);
  private TxReport report; // written before done counts down, read after
  private Throwable failure;

  /** Runs {@code conn.transact(txData)} and completes this with what it gives. */
  void run(Conn conn, Object txData) {
    try {
      report = conn.transact(txData);
    } catch (Throwable t) { // handed over to whoever waits: nothing is lost on this thread
      failure = t;
    } finally {
      done.countDown();
    }
  }

  /** Whether the transaction has ended. */
  public boolean isDone() {
    return done.getCount() == 0;
  }

  /**
   * Waits for the transaction; its report, or its error thrown here.
   *
   * @throws InterruptedException when the waiting thread is interrupted
   */
  public TxReport get() throws InterruptedException {
    done.await();
    return result();
  }

  /**
   * Waits at most {@code ms} milliseconds; the report (or the error thrown), or null when
   * the transaction has not ended by then.
   *
   * @throws InterruptedException when the waiting thread is interrupted
   */
  public TxReport get(long ms) throws InterruptedException {
    return done.await(ms, TimeUnit.MILLISECONDS) ? result() : null;
  }

  private TxReport result() {
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
