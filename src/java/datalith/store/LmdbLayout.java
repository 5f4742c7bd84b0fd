package datalith.store;

/**
 * LMDB 0.9's page and cursor layout (mdb.c) on a 64-bit system, read from native memory, for
 * {@link LmdbTree} and {@link LmdbSnapshot} (pages of the map, read transactions' structs) and
 * {@link LmdbReplay} (pages and cursors of a write transaction).
 * Everything is in native byte order; callers check what they read before they trust it.
 *
 * <p>A page is a 16-byte header {pgno u64, pad u16, flags u16, lower u16, upper u16}, then
 * (lower - 16) / 2 u16 offsets of its nodes in key order. A leaf node is {lo u16, hi u16,
 * flags u16, ksize u16, key, data}: its data size is lo | hi << 16, and the F_BIGDATA flag puts
 * the data on an overflow page. A branch node's lo, hi and flags hold its child's page number.
 *
 * <p>A node lies between the page's upper bound and its end; keys are 1 to 511 bytes. Pages 0
 * and 1 are the meta pages: after the page header, {magic u32 (0xBEEFC0DE), version u32 (1),
 * address u64, mapsize u64, two MDB_db records of 48 bytes (the free list's, whose first u32 is
 * the page size, and the main database's, whose last u64 is its root page), last_pg u64,
 * txnid u64}. The meta page with the larger txnid is the last commit; a snapshot reads pages 2
 * to its last_pg.
 *
 * <p>An MDB_cursor holds four pointers, an unsigned int
 * (padded to 8 bytes) and three more pointers, then mc_snum and mc_top (u16), mc_flags (u32), the
 * page stack mc_pg[32] and the index stack mc_ki[32] (u16): mc_pg[mc_top] is its leaf page and
 * mc_ki[mc_top] its place there.
 *
 * <p>An overflow page, holding one value of {@code size} bytes that a leaf node (F_BIGDATA)
 * points to, is {pgno u64, pad u16, flags u16 (P_OVERFLOW), pages u32}, then the value, over
 * {@code pages} consecutive pages. A named sub-database is a leaf node of the main database
 * whose key is its name and whose data (F_SUBDATA) is its MDB_db record of 48 bytes: {pad u32,
 * flags u16, depth u16, branch_pages u64, leaf_pages u64, overflow_pages u64, entries u64,
 * root u64}; an empty tree has depth 0 and root P_INVALID (all ones).
 *
 * <p>An MDB_txn holds two pointers, then mt_next_pgno (u64: its snapshot's last page + 1), its
 * txnid, and mt_env, the address of its MDB_env; at offset 88, mt_dbs, the address of its
 * MDB_db records, which LMDB 0.9 puts right after the struct's 136 bytes: the free list's and
 * the main database's, copied from the meta page when the transaction begins, then the named
 * ones', which LMDB reads from the main database on first use. An MDB_env holds three file
 * handles and eight u32 (me_psize the second of them, me_maxdbs the seventh, the number of
 * sub-databases + 2), the pid padded to 8 bytes, then me_path, me_map (where the data file is
 * mapped), me_txns, and me_metas[2] (the addresses of the two metas: me_map + 16 and me_map +
 * page size + 16); then
 * four more pointers and me_mapsize. Reading the map's place from there is trusted only when
 * every one of these matches what lmdbjava reports (see {@link #mapOf}).
 */
final class LmdbLayout {
  static final int PAGE_HEADER = 16;
  static final int NODE_HEADER = 8;
  static final int P_BRANCH = 0x01;
  static final int P_LEAF = 0x02;
  static final int P_DIRTY = 0x10; // a page a write transaction has copied
  static final int P_OVERFLOW = 0x04;
  static final int F_BIGDATA = 0x01;
  static final int F_SUBDATA = 0x02;
  /** An MDB_db record's size, and its fields' offsets. */
  static final int DB_RECORD = 48;
  static final int MD_FLAGS = 4;
  static final int MD_DEPTH = 6;
  static final int MD_BRANCH_PAGES = 8;
  static final int MD_LEAF_PAGES = 16;
  static final int MD_OVERFLOW_PAGES = 24;
  static final int MD_ENTRIES = 32;
  static final int MD_ROOT = 40;
  /** The root of an empty tree. */
  static final long P_INVALID = -1;
  static final int FREE_DBI = 0;
  static final int MAIN_DBI = 1;
  /** The offset of an overflow page's page count (mp_pages). */
  static final int PAGE_PAGES = 12;
  static final int CURSOR_DEPTH = 32;
  static final int P_META = 0x08;
  static final int NUM_METAS = 2;
  /** LMDB 0.9's smallest and largest page sizes. */
  static final int MIN_PAGE_SIZE = 512;
  static final int MAX_PAGE_SIZE = 0x8000;
  static final int META_MAGIC = 0xBEEFC0DE;
  static final int META_VERSION = 1;
  // offsets in a meta page
  static final int MM_MAGIC = PAGE_HEADER;
  static final int MM_VERSION = PAGE_HEADER + 4;
  static final int MM_PSIZE = PAGE_HEADER + 24;
  static final int MM_LAST_PG = PAGE_HEADER + 120;
  static final int MM_TXNID = PAGE_HEADER + 128;
  static final int META_END = PAGE_HEADER + 136;
  static final int MM_FREE_ROOT = PAGE_HEADER + 64;
  static final int MM_MAPSIZE = PAGE_HEADER + 16;
  static final int MM_FREE_DB = PAGE_HEADER + 24; // the free list's MDB_db record
  static final int MM_MAIN_DB = PAGE_HEADER + 72; // the main database's MDB_db record
  static final int MM_MAIN_ROOT = PAGE_HEADER + 112;
  // offsets in a page header
  static final int PAGE_FLAGS = 10;
  static final int PAGE_LOWER = 12;
  static final int PAGE_UPPER = 14;
  private static final int MT_NEXT_PGNO = 16;
  private static final int MT_ENV = 32;
  private static final int MT_DBS = 88;
  private static final int MDB_TXN_SIZE = 136;
  private static final int ME_PSIZE = 16;
  private static final int ME_MAXDBS = 36;
  private static final int ME_MAP = 56;
  private static final int ME_METAS = 72;
  private static final int ME_MAPSIZE = 112;
  private static final int CORE_DBS = 2;
  private static final int MC_TOP = 66;
  private static final int MC_PG = 72;
  private static final int MC_KI = MC_PG + 8 * CURSOR_DEPTH;

  private LmdbLayout() {}

  /** Whether {@code size} is a page size of LMDB 0.9's: a power of two, 512 bytes to 32 KiB. */
  static boolean isPageSize(int size) {
    return Integer.bitCount(size) == 1 && size >= MIN_PAGE_SIZE && size <= MAX_PAGE_SIZE;
  }

  /**
   * The pages of {@code pageSize} bytes a value of {@code size} bytes takes on overflow pages,
   * after the first one's header (LMDB's OVPAGES).
   */
  static long overflowPages(long size, int pageSize) {
    return (PAGE_HEADER - 1 + size) / pageSize + 1;
  }

  static long pgno(long page) {
    return ReadOnlyBufferProxy.nativeLong(page);
  }

  static int flags(long page) {
    return ReadOnlyBufferProxy.nativeShort(page + PAGE_FLAGS);
  }

  static int lower(long page) {
    return ReadOnlyBufferProxy.nativeShort(page + PAGE_LOWER);
  }

  static int upper(long page) {
    return ReadOnlyBufferProxy.nativeShort(page + PAGE_UPPER);
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

  /** The size of a leaf node's data (0 to 2^32 - 1). */
  static long dataSize(long node) {
    return ReadOnlyBufferProxy.nativeShort(node)
        | (long) ReadOnlyBufferProxy.nativeShort(node + 2) << 16;
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

  /** The address of the MDB_env of the transaction at address {@code txn}. */
  static long txnEnv(long txn) {
    return ReadOnlyBufferProxy.nativeLong(txn + MT_ENV);
  }

  /**
   * The address of the MDB_db records of the transaction at address {@code txn}, or 0 when its
   * mt_dbs does not point just past the struct, where LMDB 0.9 puts them.
   */
  static long txnDbs(long txn) {
    long dbs = ReadOnlyBufferProxy.nativeLong(txn + MT_DBS);
    return dbs == txn + MDB_TXN_SIZE ? dbs : 0;
  }

  /** The first page number past the snapshot of the transaction at address {@code txn}. */
  static long txnNextPage(long txn) {
    return ReadOnlyBufferProxy.nativeLong(txn + MT_NEXT_PGNO);
  }

  /**
   * The address of the data file's map, read from the MDB_env at address {@code env}, when the
   * struct reads as this layout says: its page size, number of sub-databases, meta addresses and
   * map size are the ones given (as lmdbjava reports them); else 0.
   */
  static long mapOf(long env, int pageSize, int subDbs, long mapSize) {
    if (env == 0
        || ReadOnlyBufferProxy.nativeInt(env + ME_PSIZE) != pageSize
        || ReadOnlyBufferProxy.nativeInt(env + ME_MAXDBS) != subDbs + CORE_DBS
        || ReadOnlyBufferProxy.nativeLong(env + ME_MAPSIZE) != mapSize) {
      return 0;
    }
    long map = ReadOnlyBufferProxy.nativeLong(env + ME_MAP);
    boolean metas = ReadOnlyBufferProxy.nativeLong(env + ME_METAS) == map + PAGE_HEADER
        && ReadOnlyBufferProxy.nativeLong(env + ME_METAS + 8) == map + pageSize + PAGE_HEADER;
    return map != 0 && map % pageSize == 0 && metas ? map : 0;
  }
}
