package datalith.store;

/**
 * LMDB 0.9's page and cursor layout (mdb.c) on a 64-bit system, read from native memory, for
 * {@link LmdbCursor} (pages of the map) and {@link LmdbReplay} (pages of a write transaction).
 * Everything is in native byte order; callers check what they read before they trust it.
 *
 * <p>A page is a 16-byte header {pgno u64, pad u16, flags u16, lower u16, upper u16}, then
 * (lower - 16) / 2 u16 offsets of its nodes in key order. A leaf node is {lo u16, hi u16,
 * flags u16, ksize u16, key, data}: its data size is lo | hi << 16, and the F_BIGDATA flag puts
 * the data on an overflow page. A branch node's lo, hi and flags hold its child's page number.
 *
 * <p>An MDB_cursor holds four pointers, an unsigned int (padded to 8 bytes) and three more
 * pointers, then mc_snum and mc_top (u16), mc_flags (u32), the page stack mc_pg[32] and the index
 * stack mc_ki[32] (u16): mc_pg[mc_top] is its leaf page and mc_ki[mc_top] its place there.
 */
final class LmdbLayout {
  static final int PAGE_HEADER = 16;
  static final int NODE_HEADER = 8;
  static final int P_BRANCH = 0x01;
  static final int P_LEAF = 0x02;
  static final int P_DIRTY = 0x10; // a page a write transaction has copied
  static final int F_BIGDATA = 0x01;
  static final int CURSOR_DEPTH = 32;
  private static final int MC_TOP = 66;
  private static final int MC_PG = 72;
  private static final int MC_KI = MC_PG + 8 * CURSOR_DEPTH;

  private LmdbLayout() {}

  static long pgno(long page) {
    return ReadOnlyBufferProxy.nativeLong(page);
  }

  static int flags(long page) {
    return ReadOnlyBufferProxy.nativeShort(page + 10);
  }

  static int lower(long page) {
    return ReadOnlyBufferProxy.nativeShort(page + 12);
  }

  static int upper(long page) {
    return ReadOnlyBufferProxy.nativeShort(page + 14);
  }

  /** The offset in the page of its node {@code i}. */
  static int node(long page, int i) {
    return ReadOnlyBufferProxy.nativeShort(page + PAGE_HEADER + 2L * i);
  }

  /** The flags of the node at address {@code node}. */
  static int nodeFlags(long node) {
    return ReadOnlyBufferProxy.nativeShort(node + 4);
  }

  static int keySize(long node) {
    return ReadOnlyBufferProxy.nativeShort(node + 6);
  }

  /** The size of a leaf node's data. */
  static int dataSize(long node) {
    return ReadOnlyBufferProxy.nativeShort(node) | ReadOnlyBufferProxy.nativeShort(node + 2) << 16;
  }

  /** The page number a branch node points to. */
  static long childPgno(long node) {
    return ReadOnlyBufferProxy.nativeShort(node)
        | (long) ReadOnlyBufferProxy.nativeShort(node + 2) << 16
        | (long) ReadOnlyBufferProxy.nativeShort(node + 4) << 32;
  }

  /** The level of the cursor at address {@code cursor}'s leaf page (0: the root). */
  static int cursorTop(long cursor) {
    return ReadOnlyBufferProxy.nativeShort(cursor + MC_TOP);
  }

  /** The address of the cursor's page at {@code level}. */
  static long cursorPage(long cursor, int level) {
    return ReadOnlyBufferProxy.nativeLong(cursor + MC_PG + 8L * level);
  }

  /** The cursor's place on its page at {@code level}. */
  static int cursorIndex(long cursor, int level) {
    return ReadOnlyBufferProxy.nativeShort(cursor + MC_KI + 2L * level);
  }

  static void setCursorIndex(long cursor, int level, int i) {
    ReadOnlyBufferProxy.putNativeShort(cursor + MC_KI + 2L * level, i);
  }
}
