package datalith.store;

import static datalith.store.LmdbLayout.CURSOR_DEPTH;
import static datalith.store.LmdbLayout.DB_RECORD;
import static datalith.store.LmdbLayout.F_SUBDATA;
import static datalith.store.LmdbLayout.NODE_HEADER;
import static datalith.store.LmdbLayout.NUM_METAS;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The pages of one snapshot of an {@link LmdbStore}, as the Java page reader reads them: where
 * the map is, which of its pages the snapshot holds, and the trees' records (root page and
 * depth).
 *
 * <p>LMDB's MDB_txn holds the snapshot's first page past its last and, copied from the meta
 * page when the transaction began, the MDB_db records of the free list and of the main
 * database. The main database holds one leaf node per named sub-database, its name the key and
 * its MDB_db record the value; LMDB reads that record when a transaction first uses the
 * sub-database (a cursor opened, a get), descending the main database's pages in C. Here it is
 * read by an {@link LmdbTree} descent of the main database instead, and checked: a node of the
 * name, flagged a sub-database, with a record of 48 bytes in its page whose flags are none,
 * whose depth is at most a cursor's and whose root is P_INVALID exactly when the depth is 0. So
 * nothing of a read transaction reaches LMDB's reading of pages (see {@link LmdbCursor}).
 *
 * <p>A read transaction's reader keeps one, taken anew for each snapshot. One thread at a
 * time.
 */
final class LmdbSnapshot {
  private static final ByteBuffer[] NAMES = names();

  private final LmdbStore store;
  private final int pageShift;
  /**
   * The address of the map, 0 when LMDB's structs do not read as {@link LmdbLayout} says: then
   * nothing is checked or read in Java.
   */
  long map;
  private long next; // the snapshot's pages are 0 to next - 1, all in the map
  /**
   * Those of them the file holds, as last seen: LMDB does not write a page that a transaction
   * allocated and freed again, so the file may end before the snapshot's last page, and it grows
   * with later commits.
   */
  private long pages;
  private long dataStart; // the address of page 2, the first past the metas
  private long dataEnd; // the address just past page pages - 1
  private long dbs; // the address of the transaction's MDB_db records, 0 when unknown
  private final long[] records = new long[NAMES.length]; // addresses, 0 until read
  private final LmdbTree lookup = new LmdbTree();

  LmdbSnapshot(LmdbStore store) {
    this.store = store;
    this.pageShift = Integer.numberOfTrailingZeros(store.pageSize());
  }

  private static ByteBuffer[] names() {
    SubDb[] all = SubDb.values();
    ByteBuffer[] out = new ByteBuffer[all.length];
    for (SubDb db : all) {
      byte[] b = db.name().getBytes(StandardCharsets.US_ASCII);
      out[db.ordinal()] = ByteBuffer.allocateDirect(b.length).put(b).flip().asReadOnlyBuffer();
    }
    return out;
  }

  /**
   * Takes the snapshot of pages 0 to {@code next} - 1 of the map at {@code map} (0: unknown),
   * whose transaction's MDB_db records are at {@code dbs} (0: unknown).
   */
  void reset(long map, long next, long dbs) {
    this.map = map;
    this.next = next;
    this.dbs = dbs;
    this.dataStart = map + ((long) NUM_METAS << pageShift);
    bound(Math.min(next, store.filePages()));
    Arrays.fill(records, 0);
  }

  /** Whether the tree records are known (the MDB_txn reads as {@link LmdbLayout} says). */
  /** log2 of the size of the store's pages. */
  int pageShift() {
    return pageShift;
  }

  boolean hasRecords() {
    return map != 0 && dbs != 0;
  }

  /** Whether page {@code n} is one of the snapshot's, other than the meta pages. */
  boolean isDataPage(long n) {
    return n >= NUM_METAS && (n < pages || n < next && grown() > n);
  }

  /** The snapshot's pages that the file holds now (a commit since the last look may add some). */
  private long grown() {
    return bound(Math.min(next, store.refreshFilePages()));
  }

  private long bound(long filePages) {
    pages = filePages;
    dataEnd = map + (filePages << pageShift);
    return filePages;
  }

  /**
   * {@code b}, a key or value LMDB returned, once checked to lie in the snapshot's pages past the
   * meta pages (LMDB takes a node's place and sizes from the page as they are, so a damaged page
   * points anywhere); {@code what} and {@code db} name it in the exception.
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when it does not
   */
  ByteBuffer check(ByteBuffer b, SubDb db, String what) {
    long at = ReadOnlyBufferProxy.base(b);
    if (map != 0 && (at < dataStart || at > dataEnd - b.capacity())) {
      if (pages < next) {
        grown();
      }
      if (at < dataStart || at > dataEnd - b.capacity()) {
        throw corrupt(db, at < map || at >= dataEnd ? -1 : (at - map) >> pageShift, at == 0
            ? "LMDB read a " + what + " of 2 GiB or more, which no page holds" // see the proxy
            : "LMDB read a " + what + " of " + b.capacity() + " bytes outside the file's pages");
      }
    }
    return b;
  }

  /** The exception for damage found in {@code db} at page {@code pgno} (-1: unknown). */
  RuntimeException corrupt(SubDb db, long pgno, String message) {
    return Errors.corrupt(store.where(), db, pgno, message);
  }

  /** The root page of the tree of MDB_db record {@code record} (P_INVALID: empty). */
  static long root(long record) {
    return ReadOnlyBufferProxy.nativeLong(record + LmdbLayout.MD_ROOT);
  }

  /** The depth of the tree of MDB_db record {@code record} (0: empty). */
  static int depth(long record) {
    return ReadOnlyBufferProxy.nativeShort(record + LmdbLayout.MD_DEPTH);
  }

  /** The address of the transaction's MDB_db record of the main database, checked. */
  long mainRecord() {
    return checked(null, -1, dbs + (long) LmdbLayout.MAIN_DBI * DB_RECORD, "The main database's");
  }

  /** The address of the transaction's MDB_db record of the free list, checked. */
  long freeRecord() {
    return checked(null, -1, dbs + (long) LmdbLayout.FREE_DBI * DB_RECORD, "The free list's");
  }

  /**
   * The address of {@code db}'s MDB_db record in the main database's leaf page, read once per
   * snapshot and checked (see the class comment).
   *
   * @throws clojure.lang.ExceptionInfo {@code :store/corrupt} when there is no sound record
   */
  long record(SubDb db) {
    long r = records[db.ordinal()];
    if (r == 0) {
      r = readRecord(db);
      records[db.ordinal()] = r;
    }
    return r;
  }

  private long readRecord(SubDb db) {
    long main = mainRecord();
    LmdbTree t = lookup;
    t.open(this, null, root(main), depth(main));
    ByteBuffer name = NAMES[db.ordinal()];
    long found = t.seek(name);
    int keys = LmdbTree.foundKeys(found);
    long n = keys == 0 ? -1 : t.page(t.depth() - 1);
    int i = LmdbTree.foundPlace(found);
    if (i == keys) {
      throw corrupt(db, n, "The main database does not record " + db);
    }
    long p = t.address(n);
    int node = t.checkedLeafNode(n, p, i, keys);
    int at = LmdbTree.offset(node);
    int start = at + NODE_HEADER + LmdbTree.keySize(node);
    if (t.compare(name, p + at + NODE_HEADER, LmdbTree.keySize(node)) != 0) {
      throw corrupt(db, n, "The main database does not record " + db);
    }
    if (LmdbLayout.nodeFlags(p + at) != F_SUBDATA || LmdbLayout.dataSize(p + at) != DB_RECORD
        || start + DB_RECORD > t.pageSize()) {
      throw corrupt(db, n, "The main database's node of " + db + " (flags "
          + LmdbLayout.nodeFlags(p + at) + ", " + LmdbLayout.dataSize(p + at)
          + " bytes) is not a sub-database's record");
    }
    return checked(db, n, p + start, null);
  }

  /**
   * {@code record}, an MDB_db record read at page {@code n} (-1: in the transaction), once
   * checked: its depth at most a cursor's, its root P_INVALID exactly when its depth is 0, and
   * for a named sub-database's ({@code core} null, else the name of the core one), no flags.
   */
  private long checked(SubDb db, long n, long record, String core) {
    int depth = depth(record);
    boolean empty = root(record) == LmdbLayout.P_INVALID;
    int flags = ReadOnlyBufferProxy.nativeShort(record + LmdbLayout.MD_FLAGS);
    if (depth > CURSOR_DEPTH || empty != (depth == 0) || core == null && flags != 0) {
      throw corrupt(db, n, (core == null ? db + "'s" : core) + " record is damaged (depth "
          + depth + ", root " + root(record) + ", flags " + flags + ")");
    }
    return record;
  }
}
