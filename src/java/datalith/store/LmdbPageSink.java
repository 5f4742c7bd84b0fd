package datalith.store;

import static datalith.store.LmdbLayout.PAGE_FLAGS;
import static datalith.store.LmdbLayout.PAGE_HEADER;
import static datalith.store.LmdbLayout.PAGE_PAGES;
import static datalith.store.LmdbLayout.P_OVERFLOW;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;

/**
 * The pages that an {@link LmdbDirectCommit} appends to the data file, numbered in the order
 * they come from a first page on, gathered in a large buffer and written with positional
 * writes of the file (not through LMDB's map, which is read-only). Pages of 4 KiB
 * ({@link LmdbTree#PAGE_SIZE}). One thread.
 */
final class LmdbPageSink {
  static final int PAGE = LmdbTree.PAGE_SIZE;
  private static final int BUFFER_PAGES = 1024; // 4 MiB a write
  static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(PAGE);

  private final FileChannel file;
  private final ByteBuffer buffer =
      ByteBuffer.allocateDirect(BUFFER_PAGES * PAGE).order(ByteOrder.nativeOrder());
  private long buffered; // the number of the page at the buffer's start
  private long next; // the number the next page gets; buffered + position / PAGE
  private long overflowPages; // the overflow pages appended

  LmdbPageSink(FileChannel file, long first) {
    this.file = file;
    this.buffered = first;
    this.next = first;
  }

  /** The number the next page appended gets. */
  long next() {
    return next;
  }

  long overflowPages() {
    return overflowPages;
  }

  /**
   * Appends {@code page} (its first {@link #PAGE} bytes, from index 0) as page {@link #next()},
   * writing that number into its header; returns the number.
   */
  long page(ByteBuffer page) throws IOException {
    long n = next;
    page.putLong(0, n);
    room(PAGE);
    buffer.put(buffer.position(), page, 0, PAGE).position(buffer.position() + PAGE);
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
    int pages = (int) ((PAGE_HEADER - 1 + size) / PAGE + 1); // LMDB's OVPAGES
    long n = next;
    room(PAGE);
    int at = buffer.position();
    buffer.putLong(at, n).putShort(at + 8, (short) 0)
        .putShort(at + PAGE_FLAGS, (short) P_OVERFLOW).putInt(at + PAGE_PAGES, pages);
    buffer.position(at + PAGE_HEADER);
    ByteBuffer v = value.duplicate();
    while (v.hasRemaining()) {
      if (!buffer.hasRemaining()) {
        flush();
      }
      int chunk = Math.min(v.remaining(), buffer.remaining());
      buffer.put(buffer.position(), v, v.position(), chunk).position(buffer.position() + chunk);
      v.position(v.position() + chunk);
    }
    int tail = buffer.position() % PAGE;
    if (tail != 0) {
      buffer.put(buffer.position(), ZEROS, 0, PAGE - tail).position(buffer.position() + PAGE
          - tail);
    }
    next = n + pages;
    overflowPages += pages;
    return n;
  }

  /** Makes room for {@code bytes} (at most the buffer's size) in the buffer. */
  private void room(int bytes) throws IOException {
    if (buffer.remaining() < bytes) {
      flush();
    }
  }

  /** Writes the buffered pages to the file. */
  void flush() throws IOException {
    buffer.flip();
    long at = buffered * PAGE;
    int pages = buffer.remaining() / PAGE;
    while (buffer.hasRemaining()) {
      at += file.write(buffer, at);
    }
    buffered += pages;
    buffer.clear();
  }
}
