package datalith.log;

import clojure.lang.ExceptionInfo;
import datalith.conn.Logged;
import datalith.db.Errors;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A node's reader: a thread ({@code datalith-log-reader}) that reads the log from the node's
 * offset on and decodes its records ({@link Records}: nippy) ahead of the node's applier,
 * handing them over as {@link Batch}es, in log order, through a bounded queue: on two cores the
 * reading and decoding of the next records overlaps the applying of these.
 *
 * <p>Order and completeness: the reader reads each offset once, in order, and hands over every
 * record it read, each batch starting where the one before ended. A read that finds a gap in
 * the offsets or a record it cannot decode ends with the records before it and that error
 * ({@link Batch#stop}), and so does a read error that is not transient: the reader stops there,
 * and the applier applies what comes before it and then stops with the error. A transient read
 * error ({@link TxLog#isTransient}) is retried after a pause doubling from 100 ms to 5 s
 * ({@link #transientError} meanwhile).
 *
 * <p>Bounds: at most {@link #MAX_BATCHES} batches, or {@link #MAX_BYTES} bytes of record
 * values, wait in the queue (one batch always may), so that a node far behind holds a few
 * reads ahead of its applier, not the log.
 *
 * <p>Threads: the reader thread alone calls {@link TxLog#read} and {@link TxLog#behind};
 * {@link #take} is for one consumer thread (the applier); {@link #close} for any thread but the
 * reader's, and it returns once the reader thread has ended (the log may then be closed).
 */
final class LogReader implements AutoCloseable {
  private static final Duration POLL = Duration.ofMillis(200);
  private static final long BACKOFF_MIN_MS = 100;
  private static final long BACKOFF_MAX_MS = 5_000;
  /** A read of this many records or more finds the node catching up ({@link Batch#behind}). */
  static final int CATCH_UP = 100;
  /** The most batches waiting for the applier. */
  static final int MAX_BATCHES = 4;
  /** The most bytes of record values waiting for the applier (one batch always may). */
  static final long MAX_BYTES = 16L << 20;

  /**
   * One read of the log, decoded: the records of consecutive offsets from {@code from} on
   * (never null, maybe empty), the sequence number of each when this node wrote it (else -1),
   * whether the log held more records past them as the read learnt it (or the read brought at
   * least {@link #CATCH_UP}), the bytes of their values, and the error that stops the node
   * after these records (a gap, a record it cannot decode, a read error that is not transient),
   * else null.
   */
  record Batch(long from, List<Logged.Record> records, long[] seqs, boolean behind, long bytes,
      RuntimeException stop) {}

  private final TxLog log;
  private final String node;
  private final Thread thread;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition taken = lock.newCondition(); // a batch left the queue, or closed
  private final Condition put = lock.newCondition(); // a batch entered the queue, or closed
  private final ArrayDeque<Batch> queue = new ArrayDeque<>(); // guarded by lock
  private long queuedBytes; // guarded by lock
  private long from; // reader thread only: the offset of the next record to read
  private volatile boolean closed;
  private volatile ExceptionInfo transientError;

  /** A reader of {@code log} from offset {@code from} on for node {@code node}; not started. */
  LogReader(TxLog log, String node, long from) {
    this.log = log;
    this.node = node;
    this.from = from;
    this.thread = new Thread(this::run, "datalith-log-reader");
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** The last read error the reader is retrying, else null (any thread). */
  ExceptionInfo transientError() {
    return transientError;
  }

  /**
   * The next batch, waiting at most {@code wait} for one; null when none came by then, or once
   * the reader is closed (even with batches queued). The consumer thread only.
   */
  Batch take(Duration wait) {
    long left = wait.toNanos();
    lock.lock();
    try {
      while (!closed) {
        Batch b = queue.poll();
        if (b != null) {
          queuedBytes -= b.bytes;
          taken.signal();
          return b;
        }
        if (left <= 0) {
          return null;
        }
        try {
          left = put.awaitNanos(left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return null;
        }
      }
      return null;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops the reader and waits for its thread to end; the batches it read and not taken are
   * dropped. Any thread but the reader's; again is a no-op.
   */
  @Override
  public void close() {
    closed = true;
    lock.lock();
    try {
      taken.signalAll();
      put.signalAll();
    } finally {
      lock.unlock();
    }
    log.wakeup();
    boolean interrupted = false;
    while (thread.isAlive()) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        interrupted = true; // the log must not be closed under a reading thread: wait on
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** The reader thread: reads, decodes and queues until closed or a batch stops it. */
  private void run() {
    try {
      while (!closed) {
        List<TxLog.Entry> got = readRetrying();
        if (got.isEmpty()) {
          continue;
        }
        Batch b = decode(got, got.size() >= CATCH_UP || log.behind() > 0);
        from += b.records.size();
        if (!offer(b) || b.stop != null) {
          return;
        }
      }
    } catch (RuntimeException | Error e) { // a fault of the reader itself: the applier stops
      offer(new Batch(from, List.of(), new long[0], false, 0, e instanceof ExceptionInfo x ? x
          : Errors.errorWithCause(e, "log/failed", "The node stopped reading the log: " + e)));
    }
  }

  /**
   * The next records from the log, retrying a transient read error after a pause that doubles
   * from 100 ms to 5 s; none when closed meanwhile. Any other read error is thrown (the reader
   * hands it over as the batch that stops the node).
   */
  private List<TxLog.Entry> readRetrying() {
    for (long pause = BACKOFF_MIN_MS; ; pause = Math.min(2 * pause, BACKOFF_MAX_MS)) {
      try {
        List<TxLog.Entry> entries = log.read(from, POLL);
        transientError = null;
        return entries;
      } catch (ExceptionInfo e) {
        if (closed) {
          return List.of();
        }
        if (!TxLog.isTransient(e)) {
          throw e;
        }
        transientError = e;
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pause);
        while (!closed && System.nanoTime() < until) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
        if (closed) {
          return List.of();
        }
      }
    }
  }

  /**
   * {@code got} decoded from {@link #from} on: the records before a gap or an unreadable one,
   * with the error that stops the node there, if any.
   */
  private Batch decode(List<TxLog.Entry> got, boolean behind) {
    List<Logged.Record> run = new ArrayList<>(got.size());
    long[] seqs = new long[got.size()];
    long at = from;
    long bytes = 0;
    RuntimeException stop = null;
    for (TxLog.Entry e : got) {
      if (e.offset() != at) {
        stop = Errors.error("log/gap", "The log skipped from offset " + at + " to "
            + e.offset(), "expected", at, "offset", e.offset());
        break;
      }
      try {
        run.add(new Logged.Record(Records.decode(e.value(), at), at, e.timestamp()));
      } catch (RuntimeException x) {
        stop = x;
        break;
      }
      seqs[run.size() - 1] = Records.seqOf(e.key(), node);
      bytes += e.value() == null ? 0 : e.value().length;
      at++;
    }
    return new Batch(from, run, seqs, behind, bytes, stop);
  }

  /**
   * Queues {@code b}, waiting while the queue is full; false, dropping it, when closed first.
   */
  private boolean offer(Batch b) {
    long n = b.bytes;
    lock.lock();
    try {
      while (!queue.isEmpty() && (queue.size() >= MAX_BATCHES || queuedBytes + n > MAX_BYTES)) {
        if (closed) {
          return false;
        }
        taken.awaitUninterruptibly();
      }
      if (closed) {
        return false;
      }
      queue.add(b);
      queuedBytes += n;
      put.signal();
      return true;
    } finally {
      lock.unlock();
    }
  }
}
