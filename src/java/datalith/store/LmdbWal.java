package datalith.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;
import java.util.zip.CRC32C;
import org.lmdbjava.Env;
import org.lmdbjava.Txn;

/**
 * The write-ahead log of an {@link LmdbStore} whose option {@code "commit"} is {@code "wal"}:
 * LMDB runs with MDB_NOSYNC, and a commit is durable once its one record is in the log and the
 * log fdatasynced, before LMDB's commit makes it visible. A checkpoint syncs LMDB's map, pins
 * the last commit X with a read transaction (so LMDB reuses no page X references, whatever
 * happens to the unsynced pages written after it) and starts the next segment with a
 * checkpoint record holding X's meta page. Recovery ({@link LmdbWalRecovery}) writes X's meta
 * back and replays the records after it. Large commits have LMDB's file flushed in the
 * background as they come ({@link LmdbFlusher}), so that the checkpoint's sync, on the
 * committing thread, finds little left to write.
 *
 * <p>Files: two segments, {@value #FILE0} and {@value #FILE1}, preallocated with zeros (so that
 * an fdatasync writes data, not the file's size) and grown by doubling. Checkpoint number E
 * (its epoch, one more than the last valid one) starts at offset 0 of the segment that does not
 * hold the last valid checkpoint, so a torn checkpoint leaves the previous one intact. A record
 * is 8-byte aligned: {magic u32, kind u8, pad 3, length u32 (all of it, crc included), payload
 * length u32, txnid u64, epoch u64, payload, zeros to align, crc32c u32 of everything before it}, big-endian. A checkpoint's
 * payload is {owner u64, the first {@link LmdbLayout#META_END} bytes of X's meta page, carry
 * u64, first u64}, its txnid X: the records after X are those after it, numbered X + 1, ...
 * (carry 0), or, after a write-back ({@link LmdbBehind}), those from offset carry of the other
 * segment on, numbered from first, then those after it (checkpoints written before write-behind
 * are {@value #CHECKPOINT_SIZE_BEFORE_CARRY} bytes, without carry and first, and still read);
 * a commit's is its {@link WriteLog}'s entries, its txnid the one LMDB gives it; a pause
 * record's (a bulk load's, {@code Store.pauseSync}) is the operating system's boot id
 * ({@link #bootId}): after it the log holds nothing, and recovery trusts LMDB's file as it is
 * when the boot is the same (only processes died, the page cache holds the pause's writes), and
 * goes back to the checkpoint otherwise. A pause that fails begins none; the end of a pause
 * ends it even when its checkpoint fails, and the next commit then takes one before its record. Stale bytes of a recycled segment carry an older
 * epoch, so they never read as records of the current one.
 *
 * <p>Processes: the log is shared by every process on the directory and used under the
 * directory's writer lock. A process writes records only into a segment whose checkpoint it
 * wrote ({@link #own}): one that finds another process's checkpoint the last takes its own
 * first, so the pin is always held by a live writer.
 */
final class LmdbWal {
  static final String FILE0 = "wal.0";
  static final String FILE1 = "wal.1";
  static final int MAGIC = 0x444C574C; // "DLWL"
  static final byte CHECKPOINT = 1;
  static final byte COMMIT = 2;
  static final byte PAUSE = 3;
  static final int HEADER = 32;
  /** A checkpoint's size: header, owner, meta page, carry and first txnid, crc. */
  static final int CHECKPOINT_SIZE = align(HEADER + 8 + LmdbLayout.META_END + 16 + 4);
  /** The size of a checkpoint written before checkpoints could carry (read, never written). */
  static final int CHECKPOINT_SIZE_BEFORE_CARRY = align(HEADER + 8 + LmdbLayout.META_END + 4);
  private static final long INITIAL_SIZE = 64L << 10;
  /** A checkpoint follows a commit once the segment holds this much, or this many commits. */
  private static final long CHECKPOINT_BYTES = 8L << 20;
  private static final int CHECKPOINT_COMMITS = 1024;
  private static final int CANCEL_ATTEMPTS = 1000; // each one ended by another interrupt
  static final String BOOT_ID = "/proc/sys/kernel/random/boot_id";

  private final Env<ByteBuffer> env;
  private final String where;
  private final long owner = ThreadLocalRandom.current().nextLong() | 1; // never 0
  private final FileChannel[] files = new FileChannel[2];
  private final Path dir;
  private FileChannel data; // data.mdb, read for meta pages
  private ByteBuffer record = ByteBuffer.allocateDirect(64 << 10); // reused by appends
  // the segment this process writes, valid while it owns the last checkpoint
  private long epoch = -1;
  private int segment;
  private long offset;
  private long lastRecord; // offset of the last record written
  private int commits; // since the checkpoint
  private Txn<ByteBuffer> pin; // read transaction on the last checkpoint's commit, or null
  private boolean paused;
  private volatile boolean broken; // a record durable but neither committed nor cancelled
  private final LmdbFlusher flusher; // LMDB's file flushed ahead of the next checkpoint

  LmdbWal(Env<ByteBuffer> env, Path dir, String where) {
    this.env = env;
    this.dir = dir;
    this.where = where;
    this.flusher = new LmdbFlusher(dir.resolve(LmdbFiles.DATA));
    reopen();
  }

  /**
   * Opens the files that are not open: at first, and after an interrupt closed them (a thread
   * interrupted in a channel's I/O closes the channel).
   */
  private void reopen() {
    try {
      for (int i = 0; i < 2; i++) {
        if (files[i] == null || !files[i].isOpen()) {
          files[i] = FileChannel.open(dir.resolve(i == 0 ? FILE0 : FILE1),
              StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
        }
      }
      if (data == null || !data.isOpen()) {
        data = FileChannel.open(dir.resolve(LmdbFiles.DATA), StandardOpenOption.READ);
      }
    } catch (IOException e) {
      closeFiles();
      throw io("Cannot open the write-ahead log", e);
    }
  }

  /**
   * Runs {@code job} with the thread's interrupt flag cleared (with it set, a channel's I/O
   * would close the channel), and sets it again after.
   */
  private void uninterrupted(Runnable job) {
    boolean interrupted = Thread.interrupted();
    try {
      reopen();
      job.run();
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  static int align(long n) {
    return (int) ((n + 7) & ~7L);
  }

  /**
   * Makes sure this process owns the last checkpoint, taking one when it does not (another
   * process wrote or checkpointed since, or none was ever taken); while paused, a pause record
   * follows it. Called under the directory's writer lock.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the log cannot be read or written,
   *     or an earlier failure left a record neither committed nor cancelled
   */
  void own() {
    uninterrupted(this::ownNow);
  }

  private void ownNow() {
    checkUsable();
    LmdbWalRecovery.Checkpoint last = LmdbWalRecovery.lastCheckpoint(files, where);
    if (last != null && last.owner == owner && last.epoch == epoch) {
      return;
    }
    checkpoint(last);
  }

  /** Whether a checkpoint is due after a commit. */
  boolean due() {
    return commits >= CHECKPOINT_COMMITS || offset >= CHECKPOINT_BYTES;
  }

  /** Takes a checkpoint: under the writer lock. */
  void checkpoint() {
    uninterrupted(this::checkpointNow);
  }

  private void checkpointNow() {
    checkUsable();
    checkpoint(LmdbWalRecovery.lastCheckpoint(files, where));
  }

  private void checkpoint(LmdbWalRecovery.Checkpoint last) {
    Txn<ByteBuffer> next = null;
    try {
      env.sync(true);
      flusher.checkpointed();
      next = env.txnRead();
      long x = next.getId();
      writeCheckpoint(last, x, metaOnDisk(x));
      next = repin(next);
      if (paused) {
        byte[] boot = bootId();
        append(begin(PAUSE, x, epoch, boot.length).put(boot));
      }
    } catch (IOException ex) {
      throw io("Cannot write a checkpoint to the write-ahead log", ex);
    } catch (org.lmdbjava.LmdbException ex) {
      throw Errors.lmdb(where, "Cannot sync the store for a checkpoint", ex);
    } finally {
      if (next != null) {
        next.close();
      }
    }
  }

  /**
   * Writes and fdatasyncs checkpoint X = {@code x}, whose meta page's first
   * {@link LmdbLayout#META_END} bytes {@code meta} holds, after {@code last}; this process then
   * owns the log. X's pages must be on disk already.
   */
  private void writeCheckpoint(LmdbWalRecovery.Checkpoint last, long x, ByteBuffer meta)
      throws IOException {
    writeCheckpoint(last, x, meta, 0, x + 1);
  }

  /**
   * {@link #writeCheckpoint(LmdbWalRecovery.Checkpoint, long, ByteBuffer)} whose records begin
   * at offset {@code carry} of the segment the last checkpoint is in (0: after this one),
   * numbered from {@code first}.
   */
  private void writeCheckpoint(LmdbWalRecovery.Checkpoint last, long x, ByteBuffer meta,
      long carry, long first) throws IOException {
    // a first checkpoint's epoch comes from the clock, past any stale record's in the segments
    long e = last == null ? System.currentTimeMillis() * 1000 : last.epoch + 1;
    int target = last == null ? 0 : 1 - last.segment;
    ByteBuffer r = begin(CHECKPOINT, x, e, 8 + LmdbLayout.META_END + 16);
    r.putLong(owner).put(meta).putLong(carry).putLong(first);
    write(target, 0, finish(r));
    epoch = e;
    segment = target;
    offset = CHECKPOINT_SIZE;
    commits = 0;
  }

  /**
   * Makes {@code next} (a read transaction of the commit just checkpointed) the pin, closing
   * the one before; returns null, for the caller's variable, which no longer owns it.
   */
  private Txn<ByteBuffer> repin(Txn<ByteBuffer> next) {
    if (pin != null) {
      pin.close();
    }
    pin = next;
    return null;
  }

  /**
   * The first {@link LmdbLayout#META_END} bytes of commit {@code x}'s meta page, read from the
   * data file after a sync, flipped.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the page is not x's
   */
  private ByteBuffer metaOnDisk(long x) throws IOException {
    ByteBuffer meta = ByteBuffer.allocate(LmdbLayout.META_END).order(ByteOrder.nativeOrder());
    long page = (x & 1) * pageSize();
    while (meta.hasRemaining() && data.read(meta, page + meta.position()) > 0) {
      // reads the meta page's fields
    }
    if (meta.hasRemaining() || meta.getLong(LmdbLayout.MM_TXNID) != x) {
      throw io("The meta page of transaction " + x + " is not on disk after a sync", null);
    }
    return meta.flip();
  }

  private int pageSize() {
    return env.stat().pageSize;
  }

  /**
   * Appends the record of the commit that {@code log} holds and LMDB will number
   * {@code txnid}, and fdatasyncs it; nothing while a bulk load pauses the log. Under the
   * writer lock, after {@link #own}.
   */
  void append(WriteLog log, long txnid) {
    uninterrupted(() -> appendNow(log, txnid, true));
  }

  /**
   * {@link #append} for a write-behind commit ({@link LmdbBehind}): {@code txnid} is the
   * record's place after the checkpoint (X + 1, X + 2, ...), not a commit of LMDB's, and LMDB's
   * file is not flushed ahead (the commit writes nothing to it). Under the write-behind's commit
   * lock, after {@link #own}.
   */
  void appendBehind(WriteLog log, long txnid) {
    uninterrupted(() -> appendNow(log, txnid, false));
  }

  private void appendNow(WriteLog log, long txnid, boolean flushAhead) {
    if (paused) {
      return;
    }
    ByteBuffer r = begin(COMMIT, txnid, epoch, (int) log.bytes());
    log.copyTo(r);
    try {
      append(r);
    } catch (IOException e) {
      lastRecord = offset; // what reached the file of it must never read as a record
      cancel(txnid); // with the flag an interrupt that closed the segment set cleared again
      throw io("Cannot write to the write-ahead log", e);
    }
    commits++;
    if (flushAhead) {
      flusher.logged(r.limit());
    }
  }

  private void append(ByteBuffer r) throws IOException {
    int size = finish(r).remaining();
    write(segment, offset, r);
    offset += size;
  }

  /**
   * Cancels the record just appended, whose commit failed: zeros its magic and fdatasyncs, so
   * that recovery never replays it. When that fails too, the store takes no more writes.
   */
  void cancel(long txnid) {
    uninterrupted(() -> cancelNow(txnid));
  }

  private void cancelNow(long txnid) {
    if (paused) {
      return;
    }
    boolean interrupted = false;
    try {
      for (int attempt = 1; ; attempt++) {
        try {
          reopen(); // an interrupt may have closed the segment during the append
          long at = lastRecord;
          files[segment].write(ByteBuffer.allocate(4), at);
          files[segment].force(false);
          offset = at;
          commits = Math.max(0, commits - 1);
          return;
        } catch (ClosedByInterruptException e) {
          // another interrupt closed the segment: the cancel must happen all the same
          interrupted |= Thread.interrupted();
          if (attempt == CANCEL_ATTEMPTS) {
            throw uncancelled(txnid, e);
          }
        } catch (IOException e) {
          throw uncancelled(txnid, e);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private RuntimeException uncancelled(long txnid, IOException e) {
    broken = true;
    return io("Commit " + txnid + " failed after its record reached the write-ahead log, and"
        + " the record cannot be cancelled; the store takes no more writes: reopen it", e);
  }

  /** Whether this process owns the last checkpoint as far as it knows (see {@link #own}). */
  boolean owned() {
    return epoch != -1;
  }

  /** Where the next record goes in the segment this process writes. */
  long offset() {
    return offset;
  }

  /**
   * The checkpoint of a write-back ({@link LmdbBehind}): LMDB's last commit X = {@code x},
   * synced already, holds every record before offset {@code from} of the segment this process
   * writes; the records from there on (commits made while the write-back ran), numbered from
   * {@code first}, stay where they are, and the checkpoint, written at the start of the other
   * segment, says so: recovery replays them, then the records after the checkpoint, which the
   * next commits append with their numbers going on. Until that checkpoint is whole, recovery
   * finds the last one with every record after it (the two segments hold both runs, and the
   * next checkpoint overwrites this segment only once it holds all of them). Then pins X.
   * Under the write-behind's commit lock (no append meanwhile).
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the log cannot be read or written
   *     (the last checkpoint and its records then stand)
   */
  void checkpointWriteBack(long from, long first, long x) {
    uninterrupted(() -> checkpointWriteBackNow(from, first, x));
  }

  private void checkpointWriteBackNow(long from, long first, long x) {
    checkUsable();
    Txn<ByteBuffer> pinX = null;
    try {
      pinX = env.txnRead();
      if (pinX.getId() != x) {
        throw io("LMDB's last commit is " + pinX.getId() + ", not the write-back's " + x, null);
      }
      ByteBuffer meta = metaOnDisk(x);
      LmdbWalRecovery.Checkpoint last = LmdbWalRecovery.lastCheckpoint(files, where);
      if (last == null || last.epoch != epoch || last.segment != segment) {
        throw io("The write-ahead log's last checkpoint is not this process's", null);
      }
      writeCheckpoint(last, x, meta, from, first);
      pinX = repin(pinX);
    } catch (IOException ex) {
      throw io("Cannot write a checkpoint to the write-ahead log", ex);
    } catch (org.lmdbjava.LmdbException ex) {
      throw Errors.lmdb(where, "Cannot pin the write-back's commit", ex);
    } finally {
      if (pinX != null) {
        pinX.close();
      }
    }
  }

  /** The flushes of LMDB's file begun ahead of a checkpoint ({@link LmdbFlusher}). */
  long flushesAhead() {
    return flusher.flushes();
  }

  /** Whether a pause runs: commits skip the log. */
  boolean paused() {
    return paused;
  }

  /**
   * The checkpoint of a commit that writes no record ({@link LmdbDirectCommit}), taken before
   * the commit is published: writes and fdatasyncs checkpoint X = {@code txnid} holding
   * {@code meta} (the first {@link LmdbLayout#META_END} bytes of its meta page, which, like the
   * pages it points to, is on disk already). So no process ever reads a commit that recovery
   * would undo: a crash before this record is whole goes back to the last checkpoint, where
   * LMDB's last commit (not yet published) was; after it, recovery keeps the commit. Then
   * {@link #pinAfterDirectCommit}. Under the writer lock, no LMDB write transaction open.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/io} when the log cannot be written (the
   *     commit must then not be published)
   */
  void checkpointBeforeDirectCommit(ByteBuffer meta, long txnid) {
    epoch = -1; // until the checkpoint and its pin are whole, the next own() takes one anew
    uninterrupted(() -> {
      checkUsable();
      try {
        writeCheckpoint(LmdbWalRecovery.lastCheckpoint(files, where), txnid, meta);
      } catch (IOException e) {
        epoch = -1;
        throw io("Cannot write a checkpoint to the write-ahead log", e);
      }
    });
  }

  /**
   * After {@link #checkpointBeforeDirectCommit} and the commit's publish: pins its commit
   * {@code txnid} (X) with a read transaction, so that LMDB reuses none of X's pages. When
   * that fails (no reader slot), no commit follows before the next {@link #own}, which takes a
   * checkpoint, with its pin, anew. Under the writer lock.
   */
  void pinAfterDirectCommit(long txnid) {
    Txn<ByteBuffer> next = null;
    try {
      next = env.txnRead();
      if (next.getId() == txnid) {
        next = repin(next);
        return;
      }
    } catch (org.lmdbjava.LmdbException e) {
      // the commit stands, durable; the next own() pins with a checkpoint of its own
    } finally {
      if (next != null) {
        next.close();
      }
    }
    epoch = -1;
  }

  /** Begins a pause: a checkpoint, then a pause record; commits until {@link #resume} skip the log. */
  void pause() {
    uninterrupted(this::pauseNow);
  }

  private void pauseNow() {
    checkUsable();
    paused = true;
    try {
      checkpointNow();
    } catch (RuntimeException e) {
      paused = false; // no pause began: commits go on through the log
      throw e;
    }
  }

  /** Ends a pause with a checkpoint (which syncs what the paused commits wrote). */
  void resume() {
    // ended whatever fails below (the caller's pause is over): the pause's checkpoint is
    // followed by a pause record, after which no commit record may go, so the next own() takes
    // a checkpoint first unless this one is taken
    paused = false;
    epoch = -1;
    uninterrupted(this::checkpointNow);
  }

  /** The final checkpoint of a clean close; then releases the pin and files. */
  void close(boolean checkpoint) {
    try {
      if (checkpoint && !broken) {
        checkpoint();
      }
    } finally {
      if (pin != null) {
        pin.close();
        pin = null;
      }
      closeFiles();
    }
  }

  private void closeFiles() {
    flusher.close();
    for (FileChannel f : files) {
      closeQuietly(f);
    }
    closeQuietly(data);
  }

  private static void closeQuietly(FileChannel f) {
    if (f != null) {
      try {
        f.close();
      } catch (IOException e) {
        // closing releases the file whatever else failed
      }
    }
  }

  private void checkUsable() {
    if (broken) {
      throw io("A commit failed after its record reached the write-ahead log and the record"
          + " could not be cancelled; the store takes no more writes: reopen it", null);
    }
  }

  /** A record of {@code kind} being built, its header written, room for its payload. */
  private ByteBuffer begin(byte kind, long txnid, long e, int payload) {
    int size = align(HEADER + payload + 4);
    if (record.capacity() < size) {
      record = ByteBuffer.allocateDirect(Math.max(size, 2 * record.capacity()));
    }
    ByteBuffer r = record.clear();
    r.putInt(MAGIC).put(kind).put((byte) 0).putShort((short) 0).putInt(size).putInt(payload)
        .putLong(txnid).putLong(e);
    return r;
  }

  /** Pads the record to its size, less its crc, writes the crc, and flips it. */
  private static ByteBuffer finish(ByteBuffer r) {
    int size = r.getInt(8);
    while (r.position() < size - 4) {
      r.put((byte) 0);
    }
    CRC32C crc = new CRC32C();
    crc.update(r.duplicate().flip());
    r.putInt((int) crc.getValue());
    return r.flip();
  }

  /** Writes {@code r} at {@code at} in segment {@code s}, growing it first, and fdatasyncs. */
  private void write(int s, long at, ByteBuffer r) throws IOException {
    FileChannel f = files[s];
    long size = f.size();
    long end = at + r.remaining();
    if (end > size) {
      grow(f, size, Math.max(end, Math.max(INITIAL_SIZE, 2 * size)));
    }
    lastRecord = at;
    while (r.hasRemaining()) {
      at += f.write(r, at);
    }
    f.force(false);
  }

  /** Fills segment {@code f} with zeros from {@code from} to {@code to}, and syncs its size. */
  private static void grow(FileChannel f, long from, long to) throws IOException {
    ByteBuffer zeros = ByteBuffer.allocateDirect(64 << 10);
    for (long at = from; at < to; ) {
      zeros.clear().limit((int) Math.min(zeros.capacity(), to - at));
      at += f.write(zeros, at);
    }
    f.force(true);
  }

  /**
   * The operating system's boot id (Linux's {@value #BOOT_ID}), or no bytes when it cannot be
   * read: a pause record carries it, so that recovery knows whether the pause's unsynced writes
   * outlived only the process (the same boot: they are in the page cache) or not.
   */
  static byte[] bootId() {
    try {
      byte[] id = Files.readAllBytes(Path.of(BOOT_ID));
      return id.length <= 64 ? id : new byte[0];
    } catch (IOException | RuntimeException e) {
      return new byte[0];
    }
  }

  private RuntimeException io(String message, Exception cause) {
    return Errors.error(Errors.IO, where, message + (cause == null ? "" : ": " + cause), cause);
  }
}
