package datalith.store;

import static datalith.store.LmdbLayout.F_BIGDATA;
import static datalith.store.LmdbLayout.NODE_HEADER;
import static datalith.store.LmdbLayout.PAGE_FLAGS;
import static datalith.store.LmdbLayout.PAGE_HEADER;
import static datalith.store.LmdbLayout.PAGE_LOWER;
import static datalith.store.LmdbLayout.PAGE_PAGES;
import static datalith.store.LmdbLayout.P_BRANCH;
import static datalith.store.LmdbLayout.P_OVERFLOW;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * The pages that an {@link LmdbDirectCommit} appends to the data file, numbered in the order they
 * come from a first page on, gathered in a large buffer and written with positional writes of the
 * file (not through LMDB's map, which is read-only). Pages of the store's size ({@link
 * #pageSize()}: 4 KiB on x86-64 Linux, 16 KiB on Apple silicon). One thread; each full buffer is
 * written by a helper thread while the caller fills the other one (the kernel's copy into the page
 * cache costs about as much as making the pages), and {@link #flush()} waits for every write.
 *
 * <p>A sink {@link #inMemory(int)} keeps its pages instead, numbered from 0, in direct buffers: a
 * tree written on another thread, before the file's sink knows where it goes; the file's sink
 * then {@link #append}s them, renumbered where they lie.
 */
final class LmdbPageSink {
  private static final int BUFFER_BYTES = 4 << 20; // a write
  private static final int MEMORY_BYTES = 1 << 20; // a chunk in memory
  private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(LmdbLayout.MAX_PAGE_SIZE);

  private static final ExecutorService WRITERS = PlatformThreads.daemons("datalith-page-writer");

  private final FileChannel file; // null: in memory
  private final int pageSize;
  private final int memoryPages; // a chunk's, in memory
  private Future<?> writing; // the helper's write of the other buffer, null when none
  private ByteBuffer spare; // the other buffer, once its write is done
  private boolean interrupted; // the caller was interrupted while it waited for a write
  private final List<ByteBuffer> full = new ArrayList<>(); // in memory: the chunks filled
  private ByteBuffer buffer;
  private long buffered; // the number of the page at the buffer's start
  private long next; // the number the next page gets; buffered + position / pageSize
  private long overflowPages; // the overflow pages appended

  /** A sink of pages of {@code pageSize} bytes into {@code file}, from page {@code first} on. */
  LmdbPageSink(FileChannel file, long first, int pageSize) {
    this.file = file;
    this.pageSize = pageSize;
    this.memoryPages = MEMORY_BYTES / pageSize;
    this.buffered = first;
    this.next = first;
    this.buffer = ByteBuffer.allocateDirect(BUFFER_BYTES).order(ByteOrder.nativeOrder());
  }

  private LmdbPageSink(int pageSize) {
    this.file = null;
    this.pageSize = pageSize;
    this.memoryPages = MEMORY_BYTES / pageSize;
    this.buffer = memoryChunk();
  }

  /**
   * A sink of pages of {@code pageSize} bytes that keeps them in memory, numbered from 0, until
   * {@link #append}ed.
   */
  static LmdbPageSink inMemory(int pageSize) {
    return new LmdbPageSink(pageSize);
  }

  private static ByteBuffer memoryChunk() { // direct: written to the file as it is
    return ByteBuffer.allocateDirect(MEMORY_BYTES).order(ByteOrder.nativeOrder());
  }

  /** The size of its pages. */
  int pageSize() {
    return pageSize;
  }

  /** Whether this sink keeps its pages in memory (see {@link #inMemory}). */
  boolean keepsPages() {
    return file == null;
  }

  /** The number the next page appended gets. */
  long next() {
    return next;
  }

  long overflowPages() {
    return overflowPages;
  }

  /**
   * Appends {@code page} (its first {@link #pageSize()} bytes, from index 0) as page {@link
   * #next()}, writing that number into its header; returns the number.
   */
  long page(ByteBuffer page) throws IOException {
    long n = next;
    page.putLong(0, n);
    room(pageSize);
    buffer.put(buffer.position(), page, 0, pageSize).position(buffer.position() + pageSize);
    next++;
    return n;
  }

  /**
   * Appends {@code value} (its remaining bytes) on overflow pages, as LMDB puts a value whose
   * leaf node would pass {@code me_nodemax}: a page header {pgno, pad 0, flags P_OVERFLOW,
   * pages u32}, then the value, over as many consecutive pages as it takes; returns the first
   * page's number.
   */
  long overflow(ByteBuffer value) throws IOException {
    long size = value.remaining();
    int pages = (int) LmdbLayout.overflowPages(size, pageSize);
    long n = next;
    room(pageSize);
    int at = buffer.position();
    buffer.putLong(at, n).putShort(at + 8, (short) 0)
        .putShort(at + PAGE_FLAGS, (short) P_OVERFLOW).putInt(at + PAGE_PAGES, pages);
    buffer.position(at + PAGE_HEADER);
    ByteBuffer v = value.duplicate();
    while (v.hasRemaining()) {
      if (!buffer.hasRemaining()) {
        handOff();
      }
      int chunk = Math.min(v.remaining(), buffer.remaining());
      buffer.put(buffer.position(), v, v.position(), chunk).position(buffer.position() + chunk);
      v.position(v.position() + chunk);
    }
    int tail = buffer.position() % pageSize;
    if (tail != 0) {
      buffer.put(buffer.position(), ZEROS, 0, pageSize - tail).position(buffer.position() + pageSize
          - tail);
    }
    next = n + pages;
    overflowPages += pages;
    return n;
  }

  /** Makes room for {@code bytes} (at most the buffer's size) in the buffer. */
  private void room(int bytes) throws IOException {
    if (buffer.remaining() < bytes) {
      handOff();
    }
  }

  /**
   * Writes the buffered pages to the file and waits for every write; in memory, keeps them and
   * starts a new chunk.
   */
  void flush() throws IOException {
    handOff();
    awaitWrite();
  }

  /**
   * Hands the buffered pages to the helper to write and goes on with the other buffer (once its
   * own write is done); in memory, keeps them and starts a new chunk.
   */
  private void handOff() throws IOException {
    if (file == null) {
      full.add(buffer);
      buffered += memoryPages; // every chunk but the last is full: room() and overflow() fill it
      buffer = memoryChunk();
      return;
    }
    if (buffer.position() == 0) {
      return; // nothing buffered (a flush after a full hand-off)
    }
    awaitWrite();
    ByteBuffer out = buffer.flip();
    long at = buffered * pageSize;
    buffered += out.remaining() / pageSize;
    buffer = spare != null ? spare : ByteBuffer.allocateDirect(BUFFER_BYTES)
        .order(ByteOrder.nativeOrder());
    spare = null;
    writing = WRITERS.submit(() -> {
      long position = at;
      while (out.hasRemaining()) {
        position += file.write(out, position);
      }
      return null;
    });
    spare = out; // not touched until the write is done (awaitWrite)
  }

  /**
   * Waits for the helper's write, if any, and makes its buffer the spare one (cleared); its
   * error is thrown here. Waits on when interrupted: {@link #interrupted()} tells.
   */
  private void awaitWrite() throws IOException {
    Future<?> w = writing;
    if (w == null) {
      return;
    }
    writing = null;
    try {
      while (true) {
        try {
          w.get();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } catch (ExecutionException e) {
      spare = null; // a write that failed may have left the buffer anywhere
      Throwable cause = e.getCause();
      if (cause instanceof IOException io) {
        throw io;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw cause instanceof RuntimeException r ? r : new IllegalStateException(cause);
    }
    spare.clear();
  }

  /**
   * Waits for the helper's write in flight, if any, whatever its outcome (an error is dropped:
   * for a commit that already failed, or gives up); returns whether the caller was interrupted
   * while it waited for a write, here or before (and waited on).
   */
  boolean settle() {
    try {
      awaitWrite();
    } catch (IOException | RuntimeException | Error e) {
      // the commit fails or gives up anyway; what matters is that no write goes on
    }
    return interrupted;
  }

  /**
   * Appends the pages of {@code tree}, an in-memory sink's, from {@link #next()} on, which is
   * returned: the base that every page number in them grows by, in each page's header, each
   * branch node's child and, with {@code bigNodes}, each leaf node's overflow page (F_BIGDATA).
   * The pages of an overflow value after its first are left as they are. The tree's chunks are
   * renumbered where they lie and written to the file as they are, after the pages buffered
   * here; {@code tree} is used up.
   */
  long append(LmdbPageSink tree, boolean bigNodes) throws IOException {
    flush();
    long base = next;
    long pages = tree.next;
    tree.full.add(tree.buffer);
    long rest = 0; // the pages of an overflow value still to leave as they are
    for (int c = 0; c < tree.full.size(); c++) {
      ByteBuffer chunk = tree.full.get(c);
      long first = (long) c * memoryPages;
      int count = (int) Math.min(memoryPages, pages - first);
      for (int p = 0; p < count; p++) {
        if (rest > 0) {
          rest--;
          continue;
        }
        int at = p * pageSize;
        chunk.putLong(at, base + first + p);
        int flags = chunk.getShort(at + PAGE_FLAGS);
        if ((flags & P_OVERFLOW) != 0) {
          rest = chunk.getInt(at + PAGE_PAGES) - 1;
        } else if ((flags & P_BRANCH) != 0 || bigNodes) {
          renumberNodes(chunk, at, (flags & P_BRANCH) != 0, base);
        }
      }
      ByteBuffer written = chunk.duplicate().limit(count * pageSize).position(0);
      long position = (base + first) * pageSize;
      while (written.hasRemaining()) {
        position += file.write(written, position);
      }
    }
    tree.full.clear();
    next += pages;
    buffered = next;
    overflowPages += tree.overflowPages;
    return base;
  }

  /** Adds {@code base} to the page numbers in the nodes of the page at {@code at} in {@code b}. */
  private static void renumberNodes(ByteBuffer b, int at, boolean branch, long base) {
    int lower = b.getShort(at + PAGE_LOWER) & 0xffff;
    for (int i = at + PAGE_HEADER; i < at + lower; i += 2) {
      int node = at + (b.getShort(i) & 0xffff);
      if (branch) { // the child's number: lo, hi and flags, 16 bits each
        long child = (b.getShort(node) & 0xffffL) | (b.getShort(node + 2) & 0xffffL) << 16
            | (b.getShort(node + 4) & 0xffffL) << 32;
        child += base;
        b.putShort(node, (short) child).putShort(node + 2, (short) (child >>> 16))
            .putShort(node + 4, (short) (child >>> 32));
      } else if ((b.getShort(node + 4) & F_BIGDATA) != 0) {
        int overflow = node + NODE_HEADER + (b.getShort(node + 6) & 0xffff);
        b.putLong(overflow, b.getLong(overflow) + base);
      }
    }
  }
}
