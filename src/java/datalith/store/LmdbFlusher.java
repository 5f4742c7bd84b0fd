package datalith.store;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Flushes LMDB's data file ahead of the write-ahead log's next checkpoint, on a thread of its
 * own, while commits go on ({@link LmdbWal}). A checkpoint syncs the map on the committing
 * thread: everything the commits since the last one wrote, which under a steady load of large
 * transactions is tens of megabytes and takes as long as the commits themselves. Once the log
 * has taken {@link #AHEAD} bytes since the last flush (or checkpoint), this fdatasyncs the
 * file in the background, so that the checkpoint's own sync finds little left to write.
 *
 * <p>It changes nothing that durability rests on: the checkpoint still syncs before it records
 * anything, and a flush is only a write of pages the kernel would write anyway. A flush that
 * fails (an I/O error, the store closing under it) is dropped; the checkpoint's sync reports
 * the error when there is one. Its calls are made under the directory's writer lock; the
 * flush itself runs on a daemon thread and reads nothing of the writer's state.
 */
final class LmdbFlusher {
  /** The log's bytes after which a flush starts. */
  static final long AHEAD = 256L << 10;
  private static final ExecutorService FLUSHERS = PlatformThreads.daemons("datalith-lmdb-flush");

  private final Path data;
  private final AtomicBoolean running = new AtomicBoolean();
  private FileChannel channel; // opened on the first flush; the writer's
  private long since; // the log's bytes since the last flush began, or the last checkpoint
  private long flushes; // begun

  LmdbFlusher(Path data) {
    this.data = data;
  }

  /**
   * Notes {@code bytes} more of the log; begins a flush when {@link #AHEAD} bytes have come
   * since the last and none is running.
   */
  void logged(long bytes) {
    since += bytes;
    if (since < AHEAD || !running.compareAndSet(false, true)) {
      return;
    }
    since = 0;
    try {
      FileChannel f = open();
      FLUSHERS.execute(() -> flush(f));
      flushes++;
    } catch (IOException | RejectedExecutionException | OutOfMemoryError e) {
      running.set(false); // no flush ahead this time: the checkpoint syncs it all
    }
  }

  /** Notes a checkpoint: the file is synced up to here. */
  void checkpointed() {
    since = 0;
  }

  /** The flushes begun so far. */
  long flushes() {
    return flushes;
  }

  private FileChannel open() throws IOException {
    if (channel == null || !channel.isOpen()) {
      channel = FileChannel.open(data, StandardOpenOption.READ);
    }
    return channel;
  }

  private void flush(FileChannel f) {
    try {
      f.force(false);
    } catch (IOException e) {
      // dropped: the checkpoint's sync writes the same pages, and reports the failure
    } finally {
      running.set(false);
    }
  }

  /** Closes the file; a flush running on it ends with an error, dropped. */
  void close() {
    if (channel != null) {
      try {
        channel.close();
      } catch (IOException e) {
        // closing releases the file whatever else failed
      }
      channel = null;
    }
  }
}
