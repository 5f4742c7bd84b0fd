package datalith.store;

import clojure.lang.Keyword;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

/**
 * Reading {@link LmdbWal}'s segments, and the recovery that an {@link LmdbStore} runs at open
 * when it is the only process on the directory ({@link OpenLock}): the last valid checkpoint X,
 * the records after it in txnid order, and, when there are any or LMDB's last commit is not X,
 * X's meta page written back over both meta pages (so that LMDB opens at X, whose pages the
 * pin kept intact) before the store replays the records.
 *
 * <p>A record that does not read (a bad magic, size or crc, or another epoch or txnid) ends the
 * log; but a valid record of the checkpoint's epoch after it means the log was damaged in the
 * middle: {@code :store/corrupt}, never skipped. A torn last record was never acknowledged, and
 * is dropped.
 */
final class LmdbWalRecovery {
  static final String OPEN_LOCK = "open.lock";

  private LmdbWalRecovery() {}

  /**
   * A valid checkpoint record: its epoch, segment, size, txnid X, writer and X's meta page, and
   * where the records after X begin: at {@code carry} of the other segment (0: after this
   * record), numbered from {@code first}.
   */
  static final class Checkpoint {
    final long epoch;
    final int segment;
    final int size;
    final long txnid;
    final long owner;
    final byte[] meta; // the first LmdbLayout.META_END bytes of X's meta page
    final long carry;
    final long first;

    Checkpoint(long epoch, int segment, int size, long txnid, long owner, byte[] meta,
        long carry, long first) {
      this.epoch = epoch;
      this.segment = segment;
      this.size = size;
      this.txnid = txnid;
      this.owner = owner;
      this.meta = meta;
      this.carry = carry;
      this.first = first;
    }
  }

  /** A commit record after the checkpoint. */
  static final class Commit {
    final long txnid;
    final ByteBuffer payload; // the WriteLog's entries

    Commit(long txnid, ByteBuffer payload) {
      this.txnid = txnid;
      this.payload = payload;
    }
  }

  /**
   * What the log holds: its last checkpoint, the commits after it, and whether a pause follows
   * and began in this boot of the operating system (its unsynced writes are in the page cache).
   */
  static final class Plan {
    final Checkpoint checkpoint;
    final List<Commit> commits;
    final boolean paused;
    final boolean pausedThisBoot;

    Plan(Checkpoint checkpoint, List<Commit> commits, boolean paused, boolean pausedThisBoot) {
      this.checkpoint = checkpoint;
      this.commits = commits;
      this.paused = paused;
      this.pausedThisBoot = pausedThisBoot;
    }
  }

  /**
   * The lock file {@value #OPEN_LOCK}, one byte a role:
   * <ul>
   *   <li>byte 0: an open takes it exclusively first, so that opens run one at a time;
   *   <li>byte 1: every open store holds it shared, but one with write-behind, which holds it
   *       exclusively (so that a datalith of stop 37, which knows no hand-off, fails to open
   *       the directory meanwhile); an open is alone when it can lock it exclusively;
   *   <li>byte 3: a store with write-behind holds it exclusively too, while its commits may be
   *       laid over LMDB's file rather than in it;
   *   <li>byte 2: an open that finds byte 3 held holds this one shared to ask for a hand-off:
   *       the write-behind store writes every commit back, goes on committing into LMDB
   *       directly, holds byte 1 shared rather than exclusively (no other open can take it in
   *       between: the asking open holds byte 0), and then lets byte 3 go
   *       ({@link #handOffRequested}, {@link #handedOff}).
   * </ul>
   * A store with the option that shares the directory (it handed off, or was opened beside
   * another process) takes write-behind's bytes back once it is alone again
   * ({@link #retake}): holding byte 0, it lets byte 1 go and locks it exclusively, which
   * succeeds only when no other process holds it (every open store does), then takes byte 3;
   * otherwise it locks byte 1 shared again. No other open can lock byte 1 in between: every
   * lock of it is taken holding byte 0, but the hand-off's, which runs only while its store
   * holds byte 1 exclusively.
   * The open waits for that holding byte 0 (no other open runs meanwhile), up to
   * {@link #HAND_OFF_MS}, then probes byte 1 again: the write-behind store's process may have
   * died, leaving this open alone (and its log to recover).
   */
  static final class OpenLock implements AutoCloseable {
    /** How long an open waits for a store with write-behind in another process to hand off. */
    static final long HAND_OFF_MS = 30_000;
    private static final long HAND_OFF_POLL_MS = 5;
    private static final int ENTRY = 0;
    private static final int OPEN = 1;
    private static final int REQUEST = 2;
    private static final int BEHIND = 3;

    private final FileChannel file;
    private final FileLock entry;
    private FileLock open; // byte 1
    private FileLock behind; // byte 3, while this store's commits may be behind LMDB's file
    final boolean alone;

    private OpenLock(FileChannel file, FileLock entry, boolean alone) {
      this.file = file;
      this.entry = entry;
      this.alone = alone;
    }

    /**
     * Enters the open of directory {@code dir}: waits for other processes' opens, and for a
     * store with write-behind in another process to hand off.
     *
     * @throws clojure.lang.ExceptionInfo {@code :store/lmdb} when a store of an older datalith
     *     holds the directory alone, or one with write-behind does not hand off in time
     */
    static OpenLock enter(Path dir, String where) {
      FileChannel f = null;
      try {
        f = FileChannel.open(dir.resolve(OPEN_LOCK), StandardOpenOption.CREATE,
            StandardOpenOption.READ, StandardOpenOption.WRITE);
        FileLock entry = f.lock(ENTRY, 1, false);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(HAND_OFF_MS);
        while (true) {
          FileLock probe = f.tryLock(OPEN, 1, false);
          if (probe != null) {
            probe.release();
            return new OpenLock(f, entry, true);
          }
          if (free(f, BEHIND)) {
            if (!free(f, OPEN)) {
              throw Errors.error(Errors.LMDB, where, "The store is open with write-behind in"
                  + " another process (of an older datalith, which cannot hand it over), which"
                  + " must be the only one on it", null);
            }
            return new OpenLock(f, entry, false);
          }
          awaitHandOff(f, deadline, where);
        }
      } catch (IOException e) {
        closeQuietly(f);
        throw Errors.error(Errors.IO, where, "Cannot lock " + OPEN_LOCK + ": " + e, e);
      } catch (RuntimeException e) {
        closeQuietly(f);
        throw e;
      }
    }

    /** Whether no process holds byte {@code b} exclusively. */
    private static boolean free(FileChannel f, int b) throws IOException {
      FileLock l = f.tryLock(b, 1, true);
      if (l == null) {
        return false;
      }
      l.release();
      return true;
    }

    /** Asks for a hand-off (byte 2, shared) until byte 3 is free, or the deadline. */
    private static void awaitHandOff(FileChannel f, long deadline, String where)
        throws IOException {
      FileLock ask = null;
      try {
        while (true) {
          if (ask == null) {
            ask = f.tryLock(REQUEST, 1, true); // null while the store looks for a request
          }
          if (free(f, BEHIND)) {
            return;
          }
          if (System.nanoTime() - deadline > 0) {
            throw Errors.error(Errors.LMDB, where, "The store is open with write-behind in"
                + " another process, which did not hand the directory over within "
                + HAND_OFF_MS / 1000 + " s (it writes its commits back into LMDB's file first)",
                null);
          }
          try {
            Thread.sleep(HAND_OFF_POLL_MS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Errors.error(Errors.LMDB, where, "Interrupted while waiting for a store with"
                + " write-behind in another process to hand the directory over", e);
          }
        }
      } finally {
        if (ask != null) {
          ask.release();
        }
      }
    }

    /**
     * Ends the open: holds byte 1 until {@link #close}, shared, or, for a store with
     * write-behind (which is {@link #alone}), exclusively with byte 3 until {@link #handedOff};
     * and lets the next open in.
     */
    void stay(String where, boolean writeBehind) {
      try {
        if ((open = file.tryLock(OPEN, 1, !writeBehind)) == null
            || writeBehind && (behind = file.tryLock(BEHIND, 1, false)) == null) {
          throw Errors.error(Errors.LMDB, where, "The store was opened by another process"
              + " meanwhile", null);
        }
        entry.release();
      } catch (IOException e) {
        throw Errors.error(Errors.IO, where, "Cannot lock " + OPEN_LOCK + ": " + e, e);
      }
    }

    /** Whether another process's open asks this store with write-behind to hand off. */
    boolean handOffRequested() {
      try {
        FileLock l = file.tryLock(REQUEST, 1, false);
        if (l == null) {
          return true;
        }
        l.release();
        return false;
      } catch (IOException | java.nio.channels.OverlappingFileLockException e) {
        return false;
      }
    }

    /** This store's commits are all in LMDB's file and go there from now on: byte 3 let go. */
    void handedOff(String where) {
      try {
        if (behind != null) {
          share(); // no other open can lock byte 1 meanwhile: see above
        }
      } catch (IOException e) {
        throw Errors.error(Errors.IO, where, "Cannot unlock " + OPEN_LOCK + ": " + e, e);
      }
    }

    /**
     * Takes byte 1 exclusively and byte 3 when no other process has the directory open; returns
     * whether it did. False at once while an open runs (byte 0 held), or when another process
     * has the directory open (byte 1 is then held shared again).
     *
     * @throws clojure.lang.ExceptionInfo {@code :store/io} when a lock fails (byte 1 held shared
     *     again)
     */
    boolean retake(String where) {
      try {
        FileLock e = file.tryLock(ENTRY, 1, false);
        if (e == null) {
          return false;
        }
        try {
          open.release(); // no effect when a failed call left it released
          FileLock alone = file.tryLock(OPEN, 1, false);
          if (alone == null) {
            open = file.lock(OPEN, 1, true);
            return false;
          }
          open = alone;
          if ((behind = file.tryLock(BEHIND, 1, false)) == null) { // every holder holds byte 1
            share();
            return false;
          }
          return true;
        } finally {
          e.release();
        }
      } catch (IOException | java.nio.channels.OverlappingFileLockException e) {
        if (!open.isValid()) {
          try {
            open = file.lock(OPEN, 1, true);
          } catch (IOException again) {
            e.addSuppressed(again); // the next call locks it
          }
        }
        throw Errors.error(Errors.IO, where, "Cannot lock " + OPEN_LOCK + ": " + e, e);
      }
    }

    /** Holds byte 1 shared rather than exclusively, and lets byte 3 go (if held). */
    private void share() throws IOException {
      open.release();
      open = file.lock(OPEN, 1, true);
      if (behind != null) {
        behind.release();
        behind = null;
      }
    }

    @Override
    public void close() {
      closeQuietly(file);
    }
  }

  /** The valid checkpoint with the largest epoch in {@code files}, or null. */
  static Checkpoint lastCheckpoint(FileChannel[] files, String where) {
    Checkpoint last = null;
    for (int s = 0; s < 2; s++) {
      ByteBuffer b = ByteBuffer.allocate(LmdbWal.CHECKPOINT_SIZE); // the larger of the two
      try {
        while (b.hasRemaining() && files[s].read(b, b.position()) > 0) {
          // reads the first record
        }
      } catch (IOException e) {
        throw Errors.error(Errors.IO, where, "Cannot read the write-ahead log: " + e, e);
      }
      Checkpoint c = b.hasRemaining() ? null : checkpoint(b.flip(), s);
      if (c != null && (last == null || c.epoch > last.epoch)) {
        last = c;
      }
    }
    return last;
  }

  /**
   * The checkpoint at the start of {@code b}, or null: of this version's size, or of the size
   * before checkpoints could carry (their records always follow them).
   */
  private static Checkpoint checkpoint(ByteBuffer b, int segment) {
    int size = length(b, 0);
    if (size != LmdbWal.CHECKPOINT_SIZE && size != LmdbWal.CHECKPOINT_SIZE_BEFORE_CARRY
        || b.get(4) != LmdbWal.CHECKPOINT) {
      return null;
    }
    byte[] meta = new byte[LmdbLayout.META_END];
    b.get(LmdbWal.HEADER + 8, meta);
    long x = b.getLong(16);
    boolean carries = size == LmdbWal.CHECKPOINT_SIZE;
    int fields = LmdbWal.HEADER + 8 + LmdbLayout.META_END;
    long carry = carries ? b.getLong(fields) : 0;
    long first = carries ? b.getLong(fields + 8) : x + 1;
    if (carry != 0 && carry < LmdbWal.CHECKPOINT_SIZE || carry == 0 && first != x + 1) {
      return null;
    }
    return new Checkpoint(b.getLong(24), segment, size, x, b.getLong(LmdbWal.HEADER), meta,
        carry, first);
  }

  /** The size of the valid record at {@code at} in {@code b}, or -1. */
  private static int length(ByteBuffer b, int at) {
    if (b.limit() - at < LmdbWal.HEADER + 4 || b.getInt(at) != LmdbWal.MAGIC) {
      return -1;
    }
    int size = b.getInt(at + 8);
    byte kind = b.get(at + 4);
    if (size < LmdbWal.HEADER + 4 || (size & 7) != 0 || size > b.limit() - at
        || kind < LmdbWal.CHECKPOINT || kind > LmdbWal.PAUSE) {
      return -1;
    }
    CRC32C crc = new CRC32C();
    crc.update(b.duplicate().position(at).limit(at + size - 4));
    return (int) crc.getValue() == b.getInt(at + size - 4) ? size : -1;
  }

  /**
   * What directory {@code dir}'s log holds, or null when it has no valid checkpoint (no log, or
   * a first checkpoint torn: nothing was written through it).
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when a record after the checkpoint
   *     is damaged and a valid one follows it; {@code :store/io} when the log cannot be read
   */
  static Plan plan(Path dir, String where) {
    FileChannel[] files = new FileChannel[2];
    try {
      try {
        files[0] = FileChannel.open(dir.resolve(LmdbWal.FILE0), StandardOpenOption.READ);
        files[1] = FileChannel.open(dir.resolve(LmdbWal.FILE1), StandardOpenOption.READ);
      } catch (NoSuchFileException e) {
        return null;
      }
      Checkpoint c = lastCheckpoint(files, where);
      if (c == null) {
        return null;
      }
      Scan scan = new Scan(c.first);
      if (c.carry != 0) {
        // the records of commits made while the write-back ran, left where they were written
        scan.run(read(files, 1 - c.segment, where), (int) Math.min(c.carry, Integer.MAX_VALUE),
            1 - c.segment, c.epoch - 1, false, where);
      }
      scan.run(read(files, c.segment, where), c.size, c.segment, c.epoch, true, where);
      return new Plan(c, scan.commits, scan.paused, scan.thisBoot);
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot read the write-ahead log: " + e, e);
    } finally {
      for (FileChannel f : files) {
        closeQuietly(f);
      }
    }
  }

  /** Segment {@code s} whole. */
  private static ByteBuffer read(FileChannel[] files, int s, String where) throws IOException {
    FileChannel f = files[s];
    long size = f.size();
    if (size > Integer.MAX_VALUE) {
      throw Errors.error(Errors.CORRUPT, where, "A write-ahead log segment of " + size
          + " bytes", null, Keyword.intern("file"), segmentName(s));
    }
    ByteBuffer b = ByteBuffer.allocate((int) size);
    while (b.hasRemaining() && f.read(b, b.position()) > 0) {
      // reads the segment
    }
    return b.flip();
  }

  /** The records after a checkpoint, read run by run: commits numbered on from the last. */
  private static final class Scan {
    final List<Commit> commits = new ArrayList<>();
    long next; // the txnid the next commit record must have
    boolean paused;
    boolean thisBoot;

    Scan(long first) {
      this.next = first;
    }

    /**
     * Reads the records of {@code epoch} from offset {@code at} of segment {@code b} (number
     * {@code segment}) until one does not read; a pause record only where {@code pauses} (after
     * the checkpoint, not in a carried run).
     *
     * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when a valid record of the
     *     epoch follows the end
     */
    void run(ByteBuffer b, int at, int segment, long epoch, boolean pauses, String where) {
      while (true) {
        int size = at < 0 ? -1 : length(b, at);
        if (size < 0 || b.getLong(at + 24) != epoch) {
          break;
        }
        byte kind = b.get(at + 4);
        long txnid = b.getLong(at + 16);
        if (kind == LmdbWal.COMMIT && txnid == next) {
          int length = Math.min(Math.max(0, b.getInt(at + 12)), size - LmdbWal.HEADER - 4);
          ByteBuffer payload = ByteBuffer.allocate(length);
          payload.put(b.duplicate().position(at + LmdbWal.HEADER)
              .limit(at + LmdbWal.HEADER + length)).flip();
          commits.add(new Commit(txnid, payload));
          next++;
        } else if (pauses && kind == LmdbWal.PAUSE && txnid == next - 1) {
          paused = true;
          byte[] boot = LmdbWal.bootId();
          int length = b.getInt(at + 12);
          thisBoot = boot.length > 0 && length == boot.length
              && length <= size - LmdbWal.HEADER - 4
              && b.slice(at + LmdbWal.HEADER, length).equals(ByteBuffer.wrap(boot));
        } else {
          break;
        }
        at += size;
      }
      // the run ends at `at`: no valid record of this epoch may follow
      for (int p = Math.max(at, 0); p + LmdbWal.HEADER + 4 <= b.limit(); p += 8) {
        if (b.getInt(p) == LmdbWal.MAGIC && b.getLong(p + 24) == epoch && length(b, p) > 0) {
          throw Errors.error(Errors.CORRUPT, where, "The write-ahead log " + segmentName(segment)
              + " is damaged at offset " + at + ": a valid record follows at offset " + p
              + " (transaction " + b.getLong(p + 16) + "). Restore the directory", null,
              Keyword.intern("file"), segmentName(segment), Keyword.intern("offset"), at);
        }
      }
    }
  }

  private static String segmentName(int s) {
    return s == 0 ? LmdbWal.FILE0 : LmdbWal.FILE1;
  }

  /**
   * Whether the data file must go back to the checkpoint: it has records after it, or LMDB's
   * last commit is not the checkpoint's (read leniently: a damaged meta page counts as not).
   * After a pause record, LMDB's file is kept as it is only when the pause began in this boot
   * of the operating system (only the process died: its writes are in the page cache); after a
   * restart they may have reached the disk in part, a meta page without the pages it points
   * to, and the file goes back to the pause's checkpoint, whose pages the pin kept intact.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when the data file's last commit
   *     is older than the checkpoint's (a data file from before the log), but for the one just
   *     before it in a file long enough for the checkpoint's pages (see the comment inside)
   */
  static boolean mustRollBack(Path dir, Plan plan, String where) {
    if (plan.paused && plan.pausedThisBoot) {
      return false; // a bulk load's commits since are LMDB's own, whole in the page cache
    }
    long newest = newestCommit(dir, plan.checkpoint, where);
    long x = plan.checkpoint.txnid;
    // X - 1 is what a restart leaves when commits after X (never synced) tore X's meta page,
    // which X + 2 rewrote, and X + 1's write was lost: X's pages are on disk (the checkpoint
    // synced them, the pin kept them), so the file goes back to X, if it is long enough
    if (newest >= 0 && (newest < x - 1
        || newest == x - 1 && !holdsPagesOf(dir, plan.checkpoint, where))) {
      throw Errors.error(Errors.CORRUPT, where, "The data file's last commit (" + newest
          + ") is older than the write-ahead log's checkpoint (" + plan.checkpoint.txnid
          + "): the data file was replaced. Move " + LmdbWal.FILE0 + " and " + LmdbWal.FILE1
          + " away to open it as it is", null);
    }
    return plan.paused || !plan.commits.isEmpty() || newest != plan.checkpoint.txnid;
  }

  /** Whether the data file is long enough for the pages of checkpoint {@code c}'s commit. */
  private static boolean holdsPagesOf(Path dir, Checkpoint c, String where) {
    ByteBuffer m = meta(c);
    long needed = (m.getLong(LmdbLayout.MM_LAST_PG) + 1) * m.getInt(LmdbLayout.MM_PSIZE);
    try {
      return Files.size(dir.resolve(LmdbFiles.DATA)) >= needed;
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot read " + LmdbFiles.DATA + ": " + e, e);
    }
  }

  /** The larger txnid of the data file's meta pages that read as LMDB's, or -1. */
  private static long newestCommit(Path dir, Checkpoint c, String where) {
    int pageSize = meta(c).getInt(LmdbLayout.MM_PSIZE);
    long newest = -1;
    try (FileChannel f = FileChannel.open(dir.resolve(LmdbFiles.DATA), StandardOpenOption.READ)) {
      for (int m = 0; m < LmdbLayout.NUM_METAS; m++) {
        ByteBuffer b = ByteBuffer.allocate(LmdbLayout.META_END).order(ByteOrder.nativeOrder());
        while (b.hasRemaining() && f.read(b, (long) m * pageSize + b.position()) > 0) {
          // reads the meta page's fields
        }
        if (!b.hasRemaining() && b.getInt(LmdbLayout.MM_MAGIC) == LmdbLayout.META_MAGIC
            && (Short.toUnsignedInt(b.getShort(LmdbLayout.PAGE_FLAGS)) & LmdbLayout.P_META) != 0) {
          newest = Math.max(newest, b.getLong(LmdbLayout.MM_TXNID));
        }
      }
    } catch (NoSuchFileException e) {
      return -1;
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot read " + LmdbFiles.DATA + ": " + e, e);
    }
    return newest;
  }

  private static ByteBuffer meta(Checkpoint c) {
    return ByteBuffer.wrap(c.meta.clone()).order(ByteOrder.nativeOrder());
  }

  /**
   * Writes checkpoint X's meta page over meta page X & 1 of the data file, and over the other
   * a copy that records X - 1 (LMDB's meta pages are one transaction apart), then fsyncs: LMDB
   * then opens at X.
   */
  static void rollBack(Path dir, Checkpoint c, String where) {
    ByteBuffer mine = meta(c);
    int pageSize = mine.getInt(LmdbLayout.MM_PSIZE);
    long x = c.txnid;
    ByteBuffer other = meta(c);
    other.putLong(0, 1 - (x & 1)); // its page number
    other.putLong(LmdbLayout.MM_TXNID, Math.max(0, x - 1));
    try (FileChannel f = FileChannel.open(dir.resolve(LmdbFiles.DATA), StandardOpenOption.WRITE)) {
      writeAt(f, mine, (x & 1) * pageSize);
      writeAt(f, other, (1 - (x & 1)) * pageSize);
      f.force(true);
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot write the checkpoint's meta page back into "
          + LmdbFiles.DATA + ": " + e, e);
    }
  }

  private static void writeAt(FileChannel f, ByteBuffer b, long at) throws IOException {
    while (b.hasRemaining()) {
      at += f.write(b, at);
    }
  }

  /**
   * For a store that commits without the log: when directory {@code dir} has a log with a
   * valid checkpoint (another process wrote through it), forces the map to disk, so that what
   * the log made durable is LMDB's own, then zeros both checkpoints, so that recovery never
   * rolls back this process's commits. Under the writer lock.
   */
  static void retire(Path dir, org.lmdbjava.Env<?> env, String where) {
    Path f0 = dir.resolve(LmdbWal.FILE0);
    Path f1 = dir.resolve(LmdbWal.FILE1);
    if (!Files.exists(f0) && !Files.exists(f1)) {
      return;
    }
    FileChannel[] files = new FileChannel[2];
    boolean interrupted = Thread.interrupted(); // with it set, the channels' I/O would fail
    try {
      files[0] = FileChannel.open(f0, StandardOpenOption.CREATE, StandardOpenOption.READ,
          StandardOpenOption.WRITE);
      files[1] = FileChannel.open(f1, StandardOpenOption.CREATE, StandardOpenOption.READ,
          StandardOpenOption.WRITE);
      if (lastCheckpoint(files, where) == null) {
        return;
      }
      env.sync(true);
      for (FileChannel f : files) {
        f.write(ByteBuffer.allocate(LmdbWal.HEADER), 0);
        f.force(false);
      }
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot retire the write-ahead log: " + e, e);
    } finally {
      for (FileChannel f : files) {
        closeQuietly(f);
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
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
}
