package datalith.query;

import datalith.db.Errors;

/**
 * A query's limits while it runs: its time limit ({@code :timeout}), past which {@link #check()}
 * and {@link #tick(long)} throw {@code :query/timeout}, and its row budget ({@code :max-rows}),
 * past which {@link #tick(long)} throws {@code :query/too-many-rows} for any relation, final or
 * intermediate, that grows larger. One query's own: not thread-safe ({@link #tick} keeps a count).
 */
final class Deadline {
  /** A time between two reads of the clock past which every tick reads it. */
  private static final long SLOW_TICK_NANOS = 1_000_000;
  private static final int MAX_STRIDE = 1024;

  private final long timeoutMs;
  private final long deadlineNanos; // Long.MAX_VALUE: no time limit
  private final long maxRows; // Long.MAX_VALUE: no row budget
  // ticks left before the clock is read; the stride between reads doubles while ticks come fast
  // and falls back to 1 once the time between two reads passes SLOW_TICK_NANOS (a slow function)
  private int countdown = 1;
  private int stride = 1;
  private long lastRead;

  private Deadline(long timeoutMs, long maxRows) {
    this.timeoutMs = timeoutMs;
    this.lastRead = System.nanoTime();
    this.deadlineNanos = timeoutMs <= 0 ? Long.MAX_VALUE : lastRead + timeoutMs * 1_000_000;
    this.maxRows = maxRows <= 0 ? Long.MAX_VALUE : maxRows;
  }

  /** No time limit and no row budget. */
  static Deadline none() {
    return new Deadline(0, 0);
  }

  /** Limits starting now: {@code timeoutMs} and {@code maxRows}, each none when 0 or less. */
  static Deadline of(long timeoutMs, long maxRows) {
    return new Deadline(timeoutMs, maxRows);
  }

  /**
   * Throws {@code :query/timeout} when the time limit has passed; called between clauses, it
   * also starts the next loop's ticks reading the clock at every call, until they prove fast.
   */
  void check() {
    countdown = 1;
    stride = 1;
    if (deadlineNanos != Long.MAX_VALUE) {
      long now = System.nanoTime();
      lastRead = now;
      if (now > deadlineNanos) {
        throw timeout();
      }
    }
  }

  /**
   * Called once per row by every loop that can run long, with the size of the relation it is
   * making: throws {@code :query/too-many-rows} past the row budget, and reads the clock every
   * few calls (every call while each takes over a millisecond), throwing {@code :query/timeout}
   * once the time limit has passed.
   */
  void tick(long rows) {
    if (rows > maxRows) {
      throw Errors.error("query/too-many-rows", "The query made a relation of more than "
          + maxRows + " rows (its :max-rows)", "max-rows", maxRows);
    }
    if (deadlineNanos == Long.MAX_VALUE || --countdown > 0) {
      return;
    }
    long now = System.nanoTime();
    if (now > deadlineNanos) {
      throw timeout();
    }
    stride = now - lastRead > SLOW_TICK_NANOS ? 1 : Math.min(MAX_STRIDE, stride * 2);
    countdown = stride;
    lastRead = now;
  }

  /** The same limits, starting now: for work done later on behalf of the same query. */
  Deadline renewed() {
    return new Deadline(timeoutMs, maxRows);
  }

  private RuntimeException timeout() {
    return Errors.error("query/timeout", "Query timed out after " + timeoutMs + " ms",
        "timeout", timeoutMs);
  }
}
