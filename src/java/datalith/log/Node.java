package datalith.log;

import clojure.lang.ExceptionInfo;
import datalith.conn.Conn;
import datalith.conn.Logged;
import datalith.conn.Replicated;
import datalith.conn.TxReport;
import datalith.db.Errors;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A node of a replicated database: a connection whose store holds the indexes of every
 * transaction of a {@link TxLog}, applied in log order by the node's applier thread.
 *
 * <p>{@link #transact} appends the tx-data to the log (keyed by this node's id and a sequence
 * number) and waits until the applier reaches that record: the report, or the transaction's own
 * error, is the one the applier got. Every node applies every record the same way, so all hold
 * the same datoms, entity ids and ts: tempids, upserts, uniqueness and cas are decided at apply
 * time, on the value after the records before it, and the transaction is dated by the record's
 * time (never before the previous transaction's). A record that fails writes nothing, on every
 * node.
 *
 * <p>Invariants: {@code next} is the offset of the next record to apply; the store's META holds
 * the same offset once the last committed record is the last applied one (a failed record moves
 * {@code next} but writes nothing: after a restart it runs again, on the same value, and fails
 * alike). The applier stops for good on a record it cannot read or a store that fails: such a
 * record is never skipped; every waiting and later call then throws that error.
 */
public final class Node implements Replicated {
  private static final Duration POLL = Duration.ofMillis(200);

  private final Conn conn;
  private final TxLog log;
  private final String id = UUID.randomUUID().toString();
  private final AtomicLong seq = new AtomicLong();
  // this node's records not applied yet, by sequence number
  private final ConcurrentHashMap<Long, CompletableFuture<Logged.Outcome>> waiting =
      new ConcurrentHashMap<>();
  private final Object progress = new Object(); // notified when next grows or the applier ends
  private volatile long next;
  private volatile RuntimeException failure; // why the applier stopped; null while it runs
  private volatile boolean stopping;
  private boolean closeOnExit; // applier thread only: stop was called on it, it closes the log
  private final Thread applier;

  private Node(Conn conn, TxLog log) {
    this.conn = conn;
    this.log = log;
    this.next = Logged.offset(conn);
    this.applier = new Thread(this::run, "datalith-log-applier");
    applier.setDaemon(true);
  }

  /**
   * Makes {@code conn} a node following {@code log} from the offset its store holds, and starts
   * its applier. The node owns {@code log}: closing the connection closes it.
   */
  public static Node start(Conn conn, TxLog log) {
    Node n = new Node(conn, log);
    conn.replicate(n);
    n.applier.start();
    return n;
  }

  /** The offset of the next record this node will apply. */
  public long nextOffset() {
    return next;
  }

  @Override
  public TxReport transact(Object txData) {
    check();
    byte[] value = Records.encode(txData);
    long s = seq.incrementAndGet();
    CompletableFuture<Logged.Outcome> f = new CompletableFuture<>();
    waiting.put(s, f);
    try {
      log.append(Records.key(id, s), value);
    } catch (RuntimeException e) {
      waiting.remove(s);
      throw e;
    }
    if (failure != null || stopping) {
      f.completeExceptionally(stopped());
    }
    Logged.Outcome o;
    try {
      o = f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Errors.errorWithCause(e, "log/interrupted", "Interrupted while waiting for the"
          + " transaction to come back from the log (it may still commit)");
    } catch (ExecutionException e) {
      throw (RuntimeException) e.getCause();
    }
    if (o.error != null) {
      throw o.error;
    }
    return o.report;
  }

  /**
   * Waits until this node applied every record the log held when it was called.
   *
   * @throws ExceptionInfo {@code :log/unavailable}, or the applier's error when it stopped
   */
  public void sync() {
    check();
    awaitOffset(log.endOffset());
  }

  /** Waits until this node's next offset is at least {@code offset}. */
  private void awaitOffset(long offset) {
    synchronized (progress) {
      while (next < offset) {
        check();
        try {
          progress.wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw Errors.errorWithCause(e, "log/interrupted", "Interrupted in sync");
        }
      }
    }
  }

  private void check() {
    if (failure != null || stopping) {
      throw stopped();
    }
  }

  private RuntimeException stopped() {
    RuntimeException f = failure;
    return f != null ? f : Errors.error("db/closed", "The connection is closed");
  }

  /** The applier: applies the log's records in order until stopped or failed. */
  private void run() {
    try {
      while (!stopping) {
        for (TxLog.Entry e : log.read(next, POLL)) {
          if (stopping) {
            return;
          }
          apply(e);
        }
      }
    } catch (RuntimeException e) {
      if (!stopping) {
        failure = e instanceof ExceptionInfo ? e : Errors.errorWithCause(e, "log/failed",
            "The node stopped following the log: " + e);
      }
    } finally {
      if (closeOnExit) {
        log.close();
      }
      RuntimeException why = stopped();
      waiting.forEach((s, f) -> f.completeExceptionally(why));
      synchronized (progress) {
        progress.notifyAll();
      }
    }
  }

  private void apply(TxLog.Entry e) {
    if (e.offset() != next) {
      throw Errors.error("log/gap", "The log skipped from offset " + next + " to " + e.offset(),
          "expected", next, "offset", e.offset());
    }
    Object txData = Records.decode(e.value(), e.offset());
    Logged.Outcome o = Logged.apply(conn, txData, e.offset(), e.timestamp());
    long s = Records.seqOf(e.key(), id);
    synchronized (progress) {
      next = e.offset() + 1;
      progress.notifyAll();
    }
    if (s >= 0) {
      CompletableFuture<Logged.Outcome> f = waiting.remove(s);
      if (f != null) {
        f.complete(o);
      }
    }
  }

  @Override
  public void stop() {
    if (stopping) {
      return;
    }
    stopping = true;
    log.wakeup();
    if (Thread.currentThread() == applier) { // a listener of the connection closed it
      closeOnExit = true;
      return;
    }
    try {
      applier.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    log.close();
  }
}
