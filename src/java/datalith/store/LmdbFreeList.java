package datalith.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.util.ArrayDeque;
import java.util.BitSet;
import java.util.HashSet;

/**
 * LMDB's free list, read from the data file (never through the map), to tell a data file that
 * ends before its last commit's last page because those pages are free from one that was cut
 * short. LMDB does not write pages that a transaction allocated and freed again, so the file may
 * end before last_pg when the pages past its end are all on the free list.
 *
 * <p>The free list is the B-tree of sub-database 0: its leaf nodes hold, under the id of the
 * transaction that freed them, a list of page numbers {count u64, pgno u64 ...}, in the node or
 * on overflow pages (a page {pgno u64, pad u16, flags u16 (P_OVERFLOW), pages u32}, then the
 * data). Every page read here is checked to lie in the file first.
 */
final class LmdbFreeList {
  private static final int P_OVERFLOW = 0x04;

  private LmdbFreeList() {}

  /**
   * Whether every page from {@code from} (the file's first missing page) to {@code last} is on
   * the free list whose root is page {@code root}, reading only pages before {@code from}.
   */
  static boolean coversTail(FileChannel ch, int pageSize, long root, long from, long last)
      throws IOException {
    BitSet free = new BitSet();
    long missing = last - from + 1;
    if (missing > Integer.MAX_VALUE) {
      return false;
    }
    ByteBuffer page = ByteBuffer.allocate(pageSize).order(ByteOrder.nativeOrder());
    ArrayDeque<long[]> todo = new ArrayDeque<>(); // {pgno, depth}
    HashSet<Long> seen = new HashSet<>(); // a page met twice: a cycle, or two parents
    todo.push(new long[] {root, 1});
    while (!todo.isEmpty()) {
      long[] at = todo.pop();
      long n = at[0];
      if (n < LmdbLayout.NUM_METAS || n >= from || at[1] > LmdbLayout.CURSOR_DEPTH
          || !seen.add(n) || !read(ch, page, n, pageSize)) {
        return false;
      }
      int flags = Short.toUnsignedInt(page.getShort(LmdbLayout.PAGE_FLAGS));
      int lower = Short.toUnsignedInt(page.getShort(LmdbLayout.PAGE_LOWER));
      int upper = Short.toUnsignedInt(page.getShort(LmdbLayout.PAGE_UPPER));
      if (page.getLong(0) != n || lower < LmdbLayout.PAGE_HEADER || lower > upper
          || upper > pageSize || (flags != LmdbLayout.P_BRANCH && flags != LmdbLayout.P_LEAF)) {
        return false;
      }
      for (int i = 0; i < (lower - LmdbLayout.PAGE_HEADER) / 2; i++) {
        int node = Short.toUnsignedInt(page.getShort(LmdbLayout.PAGE_HEADER + 2 * i));
        if (node < upper || node > pageSize - LmdbLayout.NODE_HEADER) {
          return false;
        }
        long lo = Short.toUnsignedInt(page.getShort(node));
        long hi = Short.toUnsignedInt(page.getShort(node + 2));
        int nodeFlags = Short.toUnsignedInt(page.getShort(node + 4));
        int data = node + LmdbLayout.NODE_HEADER + Short.toUnsignedInt(page.getShort(node + 6));
        if (flags == LmdbLayout.P_BRANCH) {
          todo.push(new long[] {lo | hi << 16 | (long) nodeFlags << 32, at[1] + 1});
          continue;
        }
        long size = lo | hi << 16;
        ByteBuffer ids;
        if (nodeFlags == LmdbLayout.F_BIGDATA && data + Long.BYTES <= pageSize) {
          ids = overflow(ch, page.getLong(data), size, pageSize, from);
        } else if (nodeFlags == 0 && data + size <= pageSize) {
          ids = page.duplicate().order(ByteOrder.nativeOrder());
          ids.position(data).limit((int) (data + size));
          ids = ids.slice().order(ByteOrder.nativeOrder());
        } else {
          return false;
        }
        if (ids == null || !mark(ids, free, from, last)) {
          return false;
        }
      }
    }
    return free.cardinality() == missing;
  }

  /** Reads page {@code n} into {@code page}; false when the file ends first. */
  static boolean read(FileChannel ch, ByteBuffer page, long n, int pageSize)
      throws IOException {
    page.clear();
    long offset = n * pageSize;
    while (page.hasRemaining()) {
      if (ch.read(page, offset + page.position()) < 0) {
        return false;
      }
    }
    return true;
  }

  /** The {@code size} bytes on overflow pages from page {@code n}, or null when not sound. */
  private static ByteBuffer overflow(FileChannel ch, long n, long size, int pageSize, long from)
      throws IOException {
    long end = n * pageSize + LmdbLayout.PAGE_HEADER + size;
    if (n < LmdbLayout.NUM_METAS || n >= from || size > Integer.MAX_VALUE - pageSize
        || end > from * pageSize) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate((int) (LmdbLayout.PAGE_HEADER + size))
        .order(ByteOrder.nativeOrder());
    while (b.hasRemaining()) {
      if (ch.read(b, n * pageSize + b.position()) < 0) {
        return null;
      }
    }
    if (b.getLong(0) != n || Short.toUnsignedInt(b.getShort(LmdbLayout.PAGE_FLAGS)) != P_OVERFLOW) {
      return null;
    }
    b.position(LmdbLayout.PAGE_HEADER);
    return b.slice().order(ByteOrder.nativeOrder());
  }

  /** Marks the pages from {@code from} to {@code last} of the id list in {@code ids}. */
  private static boolean mark(ByteBuffer ids, BitSet free, long from, long last) {
    if (ids.limit() < Long.BYTES) {
      return false;
    }
    long count = ids.getLong(0);
    if (count < 0 || count > ids.limit() / Long.BYTES - 1) {
      return false;
    }
    for (int i = 1; i <= count; i++) {
      long pgno = ids.getLong(i * Long.BYTES);
      if (pgno >= from && pgno <= last) {
        free.set((int) (pgno - from));
      }
    }
    return true;
  }
}
