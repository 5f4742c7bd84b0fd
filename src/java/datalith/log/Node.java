package datalith.log;

import clojure.lang.ExceptionInfo;
import datalith.conn.Conn;
import datalith.conn.Import;
import datalith.conn.Logged;
import datalith.conn.Replicated;
import datalith.conn.StagedLog;
import datalith.conn.TxReport;
import datalith.db.Errors;
import datalith.store.Store;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

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
 * node. {@link #transactAsync} appends at once and completes a future instead of waiting.
 *
 * <p>Outcomes: when the log does not acknowledge the append in time, the transaction fails with
 * {@code :log/unknown-outcome}: its record may still be in the log, and then every node applies
 * it (once: the producer is idempotent and the record is applied at its one offset); the caller
 * looks for what it wrote before writing it again. Any other error but the transaction's own,
 * after the append, is an unknown outcome too (the applier stopped, the connection closed);
 * but a record the applier applies as the connection closes (a listener closed it, say)
 * still gives its caller its outcome, however late the log acknowledged the append.
 * Transaction functions are named by their symbols, resolved and run on every node at apply
 * time: they must be pure (a function of the database value and their arguments) and the same
 * on every node's classpath, or the nodes diverge.
 *
 * <p>Waiting: {@link #sync} (the log's end offset) and {@link #awaitT} (a basis t) wait for the
 * applier, with a timeout ({@code :log/timeout}). A read error the log marks transient
 * ({@link TxLog#isTransient}: the broker down or moving) is retried after a pause doubling from
 * 100 ms to 5 s; waiting calls time out meanwhile, with the error as cause.
 *
 * <p>Invariants: {@code next} is the offset of the next record applied into the store (a staged
 * catch-up run moves it once its write is done: the connection's {@code db} holds every record
 * before {@code next}); the store's META holds the same offset once the last committed record is
 * the last applied one (a failed record moves {@code next} but writes nothing: after a restart
 * it runs again, on the same value, and fails alike). The applier stops for good on a record it cannot read, a read error that is not
 * transient or a store that fails: such a record is never skipped; every waiting and later call
 * then throws that error.
 */
public final class Node implements Replicated {
  /** How long the applier waits for the reader's next batch before it looks again. */
  private static final Duration POLL = Duration.ofMillis(200);
  /** How long {@link #sync()} waits for the applier at most. */
  public static final Duration SYNC_TIMEOUT = Duration.ofSeconds(60);
  /** The longest run of writes a catch-up applies with the fsync paused ({@link #catchUp}). */
  private static final Duration CATCH_UP_RUN = Duration.ofSeconds(1);

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
  // set by the applier as it ends, before it fails the waiting calls: a call that appends
  // after that fails itself (see #failIfEnded)
  private volatile boolean ended;
  private boolean closeOnExit; // applier thread only: stop was called on it, it closes the log
  private final LogReader reader; // reads and decodes from next on, ahead of the applier
  private final Thread applier;

  private Node(Conn conn, TxLog log) {
    this.conn = conn;
    this.log = log;
    this.next = Logged.offset(conn);
    this.reader = new LogReader(log, id, next);
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
    n.reader.start();
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
    failIfEnded(f);
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
   * Appends {@code txData} to the log and returns at once a future of its report: the
   * transactions given one after another are appended, and applied, in that order. The future
   * fails as {@link #transact} throws.
   *
   * @throws ExceptionInfo {@code :db/closed}, or the applier's error when it stopped
   */
  public CompletableFuture<TxReport> transactAsync(Object txData) {
    check();
    byte[] value;
    try {
      value = Records.encode(txData);
    } catch (ExceptionInfo e) {
      return CompletableFuture.failedFuture(e);
    }
    long s = seq.incrementAndGet();
    CompletableFuture<Logged.Outcome> f = new CompletableFuture<>();
    waiting.put(s, f);
    log.appendAsync(Records.key(id, s), value).whenComplete((offset, e) -> {
      if (e != null) {
        waiting.remove(s);
        f.completeExceptionally(e);
      }
    });
    failIfEnded(f);
    return f.thenCompose(o -> o.error != null ? CompletableFuture.failedFuture(o.error)
        : CompletableFuture.completedFuture(o.report));
  }

  /**
   * Waits until this node applied every record the log held when it was called, at most
   * {@link #SYNC_TIMEOUT}.
   *
   * @throws ExceptionInfo {@code :log/unavailable}, {@code :log/timeout}, or the applier's error
   *     when it stopped
   */
  public void sync() {
    check();
    long end = log.endOffset();
    await(() -> next >= end, SYNC_TIMEOUT, "the log's end offset " + end, "offset", end);
  }

  /**
   * Waits until this node's database includes transaction {@code t} (its basis t is at least
   * {@code t}), however it got there: its own writes or any other node's.
   *
   * @throws ExceptionInfo {@code :log/timeout} when it did not within {@code timeout} (the
   *     applier's last transient read error, if any, as its cause), or the applier's error
   *     when it stopped
   */
  public void awaitT(long t, Duration timeout) {
    check();
    await(() -> conn.db().basisT() >= t, timeout, "t " + t, "t", t);
  }

  /** Waits until {@code reached}, checked after each record the applier applies. */
  private void await(BooleanSupplier reached, Duration timeout, String what, String k, long v) {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (progress) {
      while (!reached.getAsBoolean()) {
        check();
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          ExceptionInfo why = reader.transientError();
          throw Errors.errorWithCause(why, "log/timeout", "The node did not reach " + what
              + " within " + timeout.toMillis() + " ms (it applied up to offset " + (next - 1)
              + ")" + (why == null ? "" : ": the log is unavailable, " + why.getMessage()),
              k, v, "next-offset", next, "timeout-ms", timeout.toMillis());
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(progress, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw Errors.errorWithCause(e, "log/interrupted", "Interrupted in sync");
        }
      }
    }
  }

  /**
   * Fails {@code f}, a call's wait registered in {@code waiting} before its append, when the
   * applier has ended: its last act failed the calls waiting then, and none will complete
   * this one. While the applier runs, even stopping (a listener closing the connection), the
   * call is left to it: the record may be in the batch it is applying, and then its outcome is
   * known. The applier sets {@code ended} before it reads {@code waiting}, and a call puts
   * into {@code waiting} before it reads {@code ended}: one of the two sees the other.
   */
  private void failIfEnded(CompletableFuture<Logged.Outcome> f) {
    if (ended) {
      f.completeExceptionally(stopped());
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

  /**
   * The applier: applies the reader's batches, the log's records in order, until stopped or
   * failed. It stops the reader when it ends, before the log may be closed.
   */
  private void run() {
    try {
      while (!stopping) {
        LogReader.Batch got = reader.take(POLL);
        if (got == null || stopping) {
          continue;
        }
        if (got.behind()) {
          catchUp(got);
        } else {
          applyRun(got, null);
        }
      }
    } catch (RuntimeException e) {
      if (!stopping) {
        failure = e instanceof ExceptionInfo ? e : Errors.errorWithCause(e, "log/failed",
            "The node stopped following the log: " + e);
      }
    } finally {
      reader.close();
      if (closeOnExit) {
        log.close();
      }
      RuntimeException why = stopped();
      ended = true;
      waiting.forEach((s, f) -> f.completeExceptionally(why));
      synchronized (progress) {
        progress.notifyAll();
      }
    }
  }

  /**
   * Applies {@code got}, read behind the log's end ({@link LogReader.Batch#behind}), and the
   * reader's batches after it while the node is still behind: staged in memory on an LMDB
   * store ({@link #catchUpStaged}), else for at most {@link #CATCH_UP_RUN} with the
   * store's fsync paused ({@code Store.pauseSync}): one sync at the end of the run rather than
   * one a write.
   * This node's own transactions applied meanwhile are acknowledged only after that sync, once
   * durable here too (the bound on the run bounds how long they wait for it).
   */
  private void catchUp(LogReader.Batch got) {
    StagedLog staged = StagedLog.begin(conn);
    if (staged != null) {
      catchUpStaged(got, staged);
      return;
    }
    List<Runnable> acks = new ArrayList<>();
    long end = System.nanoTime() + CATCH_UP_RUN.toNanos();
    try (Store.SyncPause pause = conn.store().pauseSync()) {
      for (LogReader.Batch run = got; run != null; run = reader.take(POLL)) {
        applyRun(run, acks);
        if (!run.behind() || stopping || System.nanoTime() - end >= 0) {
          break;
        }
      }
    }
    acks.forEach(Runnable::run);
  }

  /**
   * A catch-up run staged in memory ({@link StagedLog}): applies {@code got} and
   * the reader's batches after it into the staging, each record its own transaction, then writes them all
   * into the store in one commit (LMDB's puts cost several times the staging's, and the write
   * puts each key once, in order). The run ends when the node is no longer behind, once
   * {@link Import#defaultBudget} datoms are staged, or {@link #CATCH_UP_RUN} after it staged the
   * first of this node's own transactions (they are acknowledged only after the write, which
   * bounds how long they wait for it). {@link #next} moves, and the waiting transactions
   * complete, only after the write: until then the store and the connection's {@code db} hold
   * the database as it was before the run. A record that stops the node (a gap, an unreadable
   * one) ends the run: the ones before it are written, then it throws.
   */
  private void catchUpStaged(LogReader.Batch got, StagedLog staged) {
    List<Runnable> acks = new ArrayList<>();
    long budget = Import.defaultBudget();
    long end = 0;
    boolean own = false; // whether acks holds one of this node's transactions
    RuntimeException stop = null;
    try (staged) {
      try {
        for (LogReader.Batch run = got; run != null; run = reader.take(POLL)) {
          follows(run, staged.next());
          staged.apply(run.records());
          ack(run, acks);
          if (run.stop() != null) {
            stop = run.stop();
            break;
          }
          if (!own && !acks.isEmpty()) {
            own = true;
            end = System.nanoTime() + CATCH_UP_RUN.toNanos();
          }
          if (!run.behind() || stopping || staged.datoms() >= budget
              || own && System.nanoTime() - end >= 0) {
            break;
          }
        }
      } catch (RuntimeException e) { // staging failed: what it staged before is written
        stop = e;
      }
      try {
        staged.write();
      } catch (RuntimeException e) { // nothing of the run written: the node stops with it
        if (stop != null) {
          e.addSuppressed(stop);
        }
        throw e;
      }
    }
    advance(staged.next());
    acks.forEach(Runnable::run);
    if (stop != null) {
      throw stop;
    }
  }

  /**
   * Checks that {@code run} starts at offset {@code at}, the next record to apply: the reader
   * hands over every record once, in order, from the node's offset on.
   */
  private static void follows(LogReader.Batch run, long at) {
    if (run.from() != at) {
      throw new IllegalStateException("The reader's batch starts at offset " + run.from()
          + ", the next record to apply is at " + at);
    }
  }

  /**
   * Applies a batch of records, from offset {@code next} on, in as few store writes as the
   * connection's group commit allows ({@link Logged#apply}), then completes this node's waiting
   * transactions among them: at once, or, when {@code acks} is not null, by the tasks it adds
   * to {@code acks}. When the batch ends with an error that stops the node (a gap, an unreadable
   * record), the records before it are applied, then it throws.
   */
  private void applyRun(LogReader.Batch got, List<Runnable> acks) {
    follows(got, next);
    Logged.apply(conn, got.records());
    advance(next + got.records().size());
    if (acks == null) {
      List<Runnable> now = new ArrayList<>();
      ack(got, now);
      now.forEach(Runnable::run);
    } else {
      ack(got, acks);
    }
    if (got.stop() != null) {
      throw got.stop();
    }
  }

  /** Makes {@code at} the offset of the next record to apply, and wakes the waiting calls. */
  private void advance(long at) {
    synchronized (progress) {
      next = at;
      progress.notifyAll();
    }
  }

  /**
   * Adds to {@code acks} the completion of this node's waiting transactions among the records
   * of {@code got}, applied, with their outcomes (none for a record whose applying failed the
   * node: its caller gets the node's error).
   */
  private void ack(LogReader.Batch got, List<Runnable> acks) {
    List<Logged.Record> applied = got.records();
    for (int i = 0; i < applied.size(); i++) {
      long s = got.seqs()[i];
      Logged.Outcome o = applied.get(i).outcome();
      if (s >= 0 && o != null) {
        acks.add(() -> complete(s, o));
      }
    }
  }

  /** Completes this node's waiting transaction of sequence number {@code s} with {@code o}. */
  private void complete(long s, Logged.Outcome o) {
    CompletableFuture<Logged.Outcome> f = waiting.remove(s);
    if (f != null) {
      f.complete(o);
    }
  }

  @Override
  public void stop() {
    if (stopping) {
      return;
    }
    stopping = true;
    reader.close(); // the applier's wait for a batch ends too
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
