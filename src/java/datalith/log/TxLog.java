package datalith.log;

import clojure.lang.ExceptionInfo;
import clojure.lang.Keyword;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A totally ordered, durable log of transaction records that every node of a replicated
 * database follows ({@link Node}): an Apache Kafka topic of one partition ({@link KafkaLog}),
 * or another existing log behind the same few calls. Offsets start at 0 and grow by one a
 * record. {@link #append} may be called from any thread; {@link #read} from one thread only.
 */
public interface TxLog extends AutoCloseable {
  /** One record of the log: its offset, its key and value bytes, and its time (epoch ms). */
  record Entry(long offset, byte[] key, byte[] value, long timestamp) {}

  /**
   * Appends one record, durably (acknowledged by the log's replicas), and returns its offset.
   *
   * @throws clojure.lang.ExceptionInfo {@code :log/unavailable} or {@code :log/refused} when the
   *     record was not appended; {@code :log/unknown-outcome} when it may have been (a timeout,
   *     a lost connection after the send): then every node applies it if it was
   */
  long append(byte[] key, byte[] value);

  /**
   * Starts appending one record: records given by calls one after another are appended in that
   * order. The future completes with the record's offset, or fails with an ex-info as
   * {@link #append} throws.
   */
  CompletableFuture<Long> appendAsync(byte[] key, byte[] value);

  /**
   * The records from offset {@code from} on, in order, waiting at most {@code wait} for the
   * first; none when none came. Reader thread only.
   *
   * @throws clojure.lang.ExceptionInfo {@code :log/unavailable}, with {@code :retriable} true
   *     when the error is transient ({@link #isTransient}): the reader may call again later
   */
  List<Entry> read(long from, Duration wait);

  /**
   * How many records the log held past the last {@link #read}'s as that read learnt it (no
   * round trip; it may have grown since), or 0 when unknown. Reader thread only.
   */
  default long behind() {
    return 0;
  }

  /** Makes a {@link #read} waiting on the reader thread return at once (any thread). */
  void wakeup();

  /**
   * The offset the next appended record will get: every record the log holds now is below it.
   *
   * @throws clojure.lang.ExceptionInfo {@code :log/unavailable}
   */
  long endOffset();

  /** Whether {@code e}, thrown by {@link #read}, is transient: a later read may succeed. */
  static boolean isTransient(ExceptionInfo e) {
    return e.getData() != null
        && Boolean.TRUE.equals(e.getData().valAt(Keyword.intern("retriable")));
  }

  /** Closes the log's clients. */
  @Override
  void close();
}
