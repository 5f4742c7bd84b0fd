package datalith.query;

import datalith.db.Errors;

/** A query's time limit: {@link #check()} throws {@code :query/timeout} once it has passed. */
final class Deadline {
  static final Deadline NONE = new Deadline(0, Long.MAX_VALUE);
  private final long timeoutMs;
  private final long deadlineNanos;

  private Deadline(long timeoutMs, long deadlineNanos) {
    this.timeoutMs = timeoutMs;
    this.deadlineNanos = deadlineNanos;
  }

  static Deadline of(long timeoutMs) {
    return timeoutMs <= 0 ? NONE : new Deadline(timeoutMs, System.nanoTime() + timeoutMs * 1_000_000);
  }

  void check() {
    if (deadlineNanos != Long.MAX_VALUE && System.nanoTime() > deadlineNanos) {
      throw Errors.error("query/timeout", "Query timed out after " + timeoutMs + " ms",
          "timeout", timeoutMs);
    }
  }
}
