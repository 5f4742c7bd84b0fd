package datalith.store;

import static datalith.store.LmdbLayout.CURSOR_DEPTH;
import static datalith.store.LmdbLayout.DB_RECORD;
import static datalith.store.LmdbLayout.F_BIGDATA;
import static datalith.store.LmdbLayout.F_SUBDATA;
import static datalith.store.LmdbLayout.MD_DEPTH;
import static datalith.store.LmdbLayout.MD_ROOT;
import static datalith.store.LmdbLayout.NODE_HEADER;
import static datalith.store.LmdbLayout.NUM_METAS;
import static datalith.store.LmdbLayout.PAGE_FLAGS;
import static datalith.store.LmdbLayout.PAGE_HEADER;
import static datalith.store.LmdbLayout.PAGE_LOWER;
import static datalith.store.LmdbLayout.PAGE_PAGES;
import static datalith.store.LmdbLayout.PAGE_UPPER;
import static datalith.store.LmdbLayout.P_BRANCH;
import static datalith.store.LmdbLayout.P_INVALID;
import static datalith.store.LmdbLayout.P_LEAF;
import static datalith.store.LmdbLayout.P_OVERFLOW;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The one walk, in Java, of the pages of the last commit's trees: every check of LMDB's pages
 * made from outside LMDB, on pages of any size LMDB 0.9 makes (512 bytes to 32 KiB, the system's
 * page when the file was made). Its uses: the pages that an {@link LmdbDirectCommit} leaves
 * behind ({@link #read}); the check before a store's first write and {@code verify}'s of the
 * pages ({@link #accountingProblem}); and at open, before LMDB maps the file, the main
 * database's pages, which LMDB's open of the sub-databases reads in C ({@link #mainTreeProblem}),
 * and the free list of a file that ends before its last page ({@link #freeListCovers}).
 *
 * <p>What a direct commit leaves behind: the main database's, every sub-database's (branch,
 * leaf and overflow pages) and the free list's own; and the free list's entries (a transaction
 * id, native u64, and the ids of the pages it freed: {count u64, pgno u64 ...} in descending
 * order). The commit writes the free list anew with one more entry, under its own transaction
 * id, holding these pages: LMDB reuses them once no reader is older.
 *
 * <p>Every page is checked before it is trusted: one of the snapshot's (2 to last_pg) met only
 * once, saying it is that page, of the kind its tree's depth expects at its level, its bounds and
 * nodes inside it; an overflow run within the snapshot. When anything fails, or the main
 * database names a sub-database that is not a {@link SubDb}, the reading fails (null), and the
 * commit frees nothing (or, for a foreign sub-database, falls back to the generic way, which
 * keeps it).
 *
 * <p>The same walk, with the free list's entries checked against the trees
 * ({@link #accountingProblem}), is the check before a store's first write and {@code verify}'s
 * of the pages: there it reads the pages where they lie in LMDB's map (under a read transaction
 * that keeps the map in place, each page checked to lie in the file first), a direct commit's
 * from the file.
 */
final class LmdbOldPages {

  /**
   * What was read: the pages to free, in descending order, and the free list's entries in key
   * order (the walk visits a branch page's children first to last).
   */
  static final class Found {
    final long[] pages;
    final List<ByteBuffer[]> freeEntries; // {key, value}, in key order
    final boolean foreign; // the main database holds a sub-database that is not a SubDb

    Found(long[] pages, List<ByteBuffer[]> freeEntries, boolean foreign) {
      this.pages = pages;
      this.freeEntries = freeEntries;
      this.foreign = foreign;
    }
  }

  /** Thrown by the walk on the first page that does not read as it should, saying why. */
  private static final class Unsound extends Exception {
    private static final long serialVersionUID = 1L;

    Unsound(String why) {
      super(why, null, false, false);
    }
  }

  private final FileChannel data; // null: the pages are read from the map
  private final long map; // the address of a map of the file's first filePages pages
  private final long filePages; // the pages the file holds (a page past them is not read)
  private final long last; // the snapshot's last page
  private final int pageSize;
  private final boolean subDbs; // whether the walk of the main database goes on into them
  private final BitSet seen = new BitSet();
  // the page read: a copy from the file, or a view of the map
  private final ByteBuffer page;
  private final ByteBuffer bytes; // with a map: a view of bytes to copy
  private final List<ByteBuffer[]> freeEntries = new ArrayList<>();
  private final Set<String> names = new HashSet<>();
  private boolean foreign;

  private LmdbOldPages(FileChannel data, long map, long filePages, ByteBuffer meta,
      boolean subDbs) throws Unsound {
    this.data = data;
    this.map = map;
    this.filePages = filePages;
    this.last = meta.getLong(LmdbLayout.MM_LAST_PG);
    this.pageSize = meta.getInt(LmdbLayout.MM_PSIZE);
    this.subDbs = subDbs;
    if (last < NUM_METAS - 1 || last > Integer.MAX_VALUE) { // 1: nothing committed yet
      throw new Unsound("the last page is " + last);
    }
    if (!LmdbLayout.isPageSize(pageSize)) {
      throw new Unsound("the page size is " + pageSize);
    }
    this.page = data != null ? ByteBuffer.allocate(pageSize).order(ByteOrder.nativeOrder())
        : ReadOnlyBufferProxy.newView();
    this.bytes = data != null ? null : ReadOnlyBufferProxy.newView();
    for (SubDb db : SubDb.values()) {
      names.add(db.name());
    }
  }

  /**
   * Reads the trees of the meta page {@code meta} (its first {@link LmdbLayout#META_END}
   * bytes, native order) from {@code data}; null when they do not read soundly.
   */
  static Found read(FileChannel data, ByteBuffer meta) throws IOException {
    try {
      return new LmdbOldPages(data, 0, filePages(data, meta), meta, true).walk(meta, true, true);
    } catch (Unsound e) {
      return null;
    }
  }

  /** The whole pages of {@code data}, whose pages are of the size {@code meta} says. */
  private static long filePages(FileChannel data, ByteBuffer meta) throws IOException {
    int size = meta.getInt(LmdbLayout.MM_PSIZE);
    return size > 0 ? data.size() / size : 0;
  }

  /**
   * What is wrong with the main database's pages of the meta page {@code meta} (its first
   * {@link LmdbLayout#META_END} bytes, native order) in {@code data}, of whose pages the first
   * {@code filePages} are read, or null: as {@link #accountingProblem} reads them, each leaf
   * node a sub-database's record (not the sub-databases' trees). LMDB's open of the
   * sub-databases descends these pages in C, taking every offset and size as it is (one
   * damaged byte there crashed the JVM at open: flip-test seeds 7109 and 7909, in
   * mdb_cursor_set), so they are read before LMDB maps the file.
   */
  static String mainTreeProblem(FileChannel data, ByteBuffer meta, long filePages)
      throws IOException {
    try {
      new LmdbOldPages(data, 0, filePages, meta, false).walk(meta, false, true);
      return null;
    } catch (Unsound e) {
      return e.getMessage();
    }
  }

  /**
   * Whether the free list of the meta page {@code meta} in {@code data} reads soundly from the
   * file's first {@code filePages} pages and holds every page from there to the last commit's
   * last: LMDB does not write pages that a transaction allocated and freed again, so a file
   * may end before its last page when the pages past its end are all free.
   */
  static boolean freeListCovers(FileChannel data, ByteBuffer meta, long filePages)
      throws IOException {
    try {
      LmdbOldPages w = new LmdbOldPages(data, 0, filePages, meta, false);
      w.walk(meta, true, false);
      BitSet free = new BitSet();
      for (ByteBuffer[] e : w.freeEntries) {
        ByteBuffer ids = w.ids(e);
        for (int i = 1; i < ids.remaining() / Long.BYTES; i++) {
          long n = ids.getLong(Long.BYTES * i);
          if (n >= filePages) {
            free.set((int) (n - filePages));
          }
        }
      }
      return free.cardinality() == w.last - filePages + 1;
    } catch (Unsound e) {
      return false;
    }
  }

  /**
   * Walks the free list's tree and the main database's (and through it, with {@link #subDbs},
   * every sub-database's), as asked.
   */
  private Found walk(ByteBuffer meta, boolean free, boolean main) throws IOException, Unsound {
    if (free) {
      walk(meta, LmdbLayout.MM_FREE_DB, Tree.FREE);
    }
    if (main) {
      walk(meta, LmdbLayout.MM_MAIN_DB, Tree.MAIN);
    }
    long[] pages = new long[seen.cardinality()];
    int i = 0;
    for (int n = seen.length() - 1; n >= 0; n = seen.previousSetBit(n - 1)) {
      pages[i++] = n;
    }
    return new Found(pages, freeEntries, foreign);
  }

  /**
   * What is wrong with the trees of the meta page {@code meta} (as {@link #read} walks them)
   * and with how they and its free list account for the pages, or null: every page read as
   * LMDB's writes read it without checking (of the kind its level needs, flags exact; its
   * bounds and nodes inside it, a node's flags those of its tree; an overflow run within the
   * snapshot, as long as its first page says), every page at most once in the trees (the free
   * list's own pages among them) and the free list's entries, each entry's key a transaction id
   * and its ids within the snapshot, in descending order and as many as its count says. A page
   * both in a tree and in the free list is the worst of these: LMDB would write over a live
   * page. So a write transaction of LMDB's, whose C code reads these pages as it finds them
   * (a put's descent, a split's or a merge's copies, the free list it takes pages from), meets
   * none it could read out of bounds (see {@code LmdbStore}'s check before writes).
   */
  static String accountingProblem(FileChannel data, ByteBuffer meta) throws IOException {
    return accountingProblem(data, 0, filePages(data, meta), meta);
  }

  /**
   * {@link #accountingProblem(FileChannel, ByteBuffer)}, reading the pages where they lie in a
   * map at {@code map} of the file's first {@code filePages} pages (which the caller keeps in
   * place): no call into the system a page.
   */
  static String accountingProblem(long map, long filePages, ByteBuffer meta) {
    try {
      return accountingProblem(null, map, filePages, meta);
    } catch (IOException e) {
      throw new AssertionError(e); // nothing is read from a file
    }
  }

  private static String accountingProblem(FileChannel data, long map, long filePages,
      ByteBuffer meta) throws IOException {
    try {
      LmdbOldPages w = new LmdbOldPages(data, map, filePages, meta, true);
      Found found = w.walk(meta, true, true);
      BitSet used = new BitSet();
      for (long n : found.pages) {
        used.set((int) n);
      }
      for (ByteBuffer[] e : found.freeEntries) {
        ByteBuffer ids = w.ids(e);
        for (int i = 1; i < ids.remaining() / Long.BYTES; i++) {
          long n = ids.getLong(Long.BYTES * i);
          if (used.get((int) n)) {
            return "page " + n + " is both in use and in the free list (transaction "
                + e[0].getLong(0) + ")";
          }
          used.set((int) n);
        }
      }
      return null;
    } catch (Unsound e) {
      return e.getMessage();
    }
  }

  /**
   * The page ids of the free list's entry {@code e} ({key, value}), {count u64, pgno u64 ...},
   * once checked: its key a transaction id, its value as long as its count says, every id one
   * of the snapshot's and in descending order.
   */
  private ByteBuffer ids(ByteBuffer[] e) throws Unsound {
    ByteBuffer ids = e[1];
    if (e[0].remaining() != Long.BYTES) {
      throw new Unsound("the free list holds a key of " + e[0].remaining()
          + " bytes, not a transaction id");
    }
    long txn = e[0].getLong(0);
    long count = ids.remaining() < Long.BYTES ? -1 : ids.getLong(0);
    if (count < 0 || ids.remaining() != Long.BYTES * (count + 1)) {
      throw new Unsound("the free list's entry of transaction " + txn
          + " does not hold its count of ids");
    }
    for (int i = 1; i <= count; i++) {
      long n = ids.getLong(Long.BYTES * i);
      if (n < NUM_METAS || n > last) {
        throw new Unsound("the free list's entry of transaction " + txn + " holds page " + n
            + ", not one of the snapshot's");
      }
      if (i > 1 && n >= ids.getLong(Long.BYTES * (i - 1))) {
        throw new Unsound("the free list's entry of transaction " + txn
            + " is not in descending order");
      }
    }
    return ids;
  }

  private enum Tree { FREE, MAIN, SUB }

  /** Walks the tree of the MDB_db record at offset {@code at} of {@code b}. */
  private void walk(ByteBuffer b, int at, Tree tree) throws IOException, Unsound {
    int depth = Short.toUnsignedInt(b.getShort(at + MD_DEPTH));
    long root = b.getLong(at + MD_ROOT);
    if (depth == 0 && root == P_INVALID) {
      return;
    }
    if (depth < 1 || depth > CURSOR_DEPTH) {
      throw new Unsound(tree.name().toLowerCase() + " tree of depth " + depth + ", root " + root);
    }
    ArrayDeque<long[]> todo = new ArrayDeque<>(); // {pgno, level}
    todo.push(new long[] {root, 0});
    while (!todo.isEmpty()) {
      long[] next = todo.pop();
      boolean leaf = next[1] == depth - 1;
      read(next[0], leaf ? P_LEAF : P_BRANCH);
      int lower = Short.toUnsignedInt(page.getShort(PAGE_LOWER));
      int upper = Short.toUnsignedInt(page.getShort(PAGE_UPPER));
      if (lower < PAGE_HEADER + 2 || lower > upper || upper > pageSize || (lower & 1) != 0) {
        throw new Unsound("page " + next[0] + ": bounds " + lower + " and " + upper);
      }
      int nodes = (lower - PAGE_HEADER) / 2;
      List<ByteBuffer> subRecords = new ArrayList<>();
      long[] children = leaf ? null : new long[nodes];
      for (int i = 0; i < nodes; i++) {
        int node = Short.toUnsignedInt(page.getShort(PAGE_HEADER + 2 * i));
        if (node < upper || node > pageSize - NODE_HEADER) {
          throw new Unsound("page " + next[0] + ": node " + i + " at " + node
              + ", outside the page's nodes");
        }
        int keySize = Short.toUnsignedInt(page.getShort(node + 6));
        int start = node + NODE_HEADER + keySize;
        if (start > pageSize) {
          throw new Unsound("page " + next[0] + ": the key of node " + i + " past the page");
        }
        long lo = Short.toUnsignedInt(page.getShort(node));
        long hi = Short.toUnsignedInt(page.getShort(node + 2));
        int flags = Short.toUnsignedInt(page.getShort(node + 4));
        if (!leaf) {
          children[i] = lo | hi << 16 | (long) flags << 32;
          continue;
        }
        long size = lo | hi << 16;
        // the flags of its tree: LMDB takes F_DUPDATA for a tree of duplicates, which these are
        // not (its cursor for them is null); the main database holds sub-databases' records
        if (tree == Tree.MAIN ? flags != F_SUBDATA : flags != 0 && flags != F_BIGDATA) {
          throw new Unsound("page " + next[0] + ": node " + i + " has flags " + flags
              + (tree == Tree.MAIN ? ", not a sub-database's record" : ""));
        }
        ByteBuffer value = leafValue(tree, next[0], start, size, flags);
        if (tree == Tree.FREE) {
          freeEntries.add(new ByteBuffer[] {copy(node + NODE_HEADER, keySize), value});
        } else if (tree == Tree.MAIN) {
          byte[] key = new byte[keySize];
          page.get(node + NODE_HEADER, key);
          String name = new String(key, StandardCharsets.ISO_8859_1);
          foreign |= !names.contains(name);
          if (subDbs) {
            subRecords.add(value);
          }
        }
      }
      if (!leaf) { // the first child on top: the leaves come in key order, as the free list's
        for (int i = nodes - 1; i >= 0; i--) { // entries must be written back
          todo.push(new long[] {children[i], next[1] + 1});
        }
      }
      for (ByteBuffer record : subRecords) { // after this page's nodes: walk reuses the page
        walk(record, 0, Tree.SUB);
      }
    }
  }

  /**
   * The value of a leaf node at {@code start} of {@code size} bytes with node flags
   * {@code flags}, marking its overflow pages; read (a copy) only where it is needed: the free
   * list's and the main database's, else null.
   */
  private ByteBuffer leafValue(Tree tree, long n, int start, long size, int flags)
      throws IOException, Unsound {
    boolean copied = tree != Tree.SUB;
    if ((flags & F_BIGDATA) == 0) {
      if (start + size > pageSize || tree == Tree.MAIN && size != DB_RECORD) {
        throw new Unsound("page " + n + ": a value of " + size + " bytes at " + start
            + " past the page");
      }
      return copied ? copy(start, (int) size) : null;
    }
    // a free list entry holds at most every page's id (and its count)
    if (start + 8 > pageSize || size > Integer.MAX_VALUE - pageSize
        || tree == Tree.FREE && size > Long.BYTES * (last + 1)) {
      throw new Unsound("page " + n + ": a value of " + size + " bytes on overflow pages");
    }
    long first = page.getLong(start);
    long needed = LmdbLayout.overflowPages(size, pageSize);
    if (first < NUM_METAS || first > last - needed + 1) {
      throw new Unsound("page " + n + ": a value on overflow pages from " + first
          + ", outside the snapshot");
    }
    ByteBuffer header = ByteBuffer.allocate(PAGE_HEADER).order(ByteOrder.nativeOrder());
    readAt(header, first * pageSize);
    // as many pages as their first says (LMDB frees and reuses the run so), at least as many as
    // the value needs, within the snapshot and the file
    long pages = Integer.toUnsignedLong(header.getInt(PAGE_PAGES));
    if (header.getLong(0) != first
        || Short.toUnsignedInt(header.getShort(PAGE_FLAGS)) != P_OVERFLOW
        || pages < needed || first + pages - 1 > last) {
      throw new Unsound("page " + n + ": a value on page " + first
          + ", which is not a run of the " + needed + " overflow pages it needs");
    }
    if (first + pages > filePages) {
      throw new Unsound("page " + n + ": a value on overflow pages from " + first
          + ", past the end of the file");
    }
    for (long o = first; o < first + pages; o++) {
      mark(o);
    }
    if (!copied) {
      return null;
    }
    ByteBuffer v = ByteBuffer.allocate((int) size).order(ByteOrder.nativeOrder());
    readAt(v, first * pageSize + PAGE_HEADER);
    return v.flip();
  }

  /** Reads page {@code n}, checked to be one of the snapshot's, met once, of kind {@code kind}. */
  private void read(long n, int kind) throws IOException, Unsound {
    mark(n);
    if (n >= filePages) {
      throw new Unsound("page " + n + " is past the end of the file");
    }
    if (data == null) {
      ReadOnlyBufferProxy.point(page, map + n * pageSize, pageSize);
      page.order(ByteOrder.nativeOrder());
    } else {
      page.clear();
      readAt(page, n * pageSize);
    }
    // the flags exactly: LMDB's write takes a page flagged P_DIRTY for its own copy, and writes
    // into the map where it lies, which is read-only
    if (page.getLong(0) != n || Short.toUnsignedInt(page.getShort(PAGE_FLAGS)) != kind) {
      throw new Unsound("page " + n + ": its header says page " + page.getLong(0) + ", flags "
          + Short.toUnsignedInt(page.getShort(PAGE_FLAGS)) + ", where a "
          + (kind == P_LEAF ? "leaf" : "branch") + " page is due");
    }
  }

  private void mark(long n) throws Unsound {
    if (n < NUM_METAS || n > last) {
      throw new Unsound("page " + n + " is not one of the snapshot's, 2 to " + last);
    }
    if (seen.get((int) n)) { // a cycle, or a page shared
      throw new Unsound("page " + n + " is met twice in the trees");
    }
    seen.set((int) n);
  }

  /** Fills {@code b} from byte {@code at} of the file. */
  private void readAt(ByteBuffer b, long at) throws IOException, Unsound {
    if (data == null) {
      if (at + b.remaining() > filePages * pageSize) {
        throw new Unsound("page " + (at + b.remaining() - 1) / pageSize
            + " is past the end of the file");
      }
      ReadOnlyBufferProxy.point(bytes, map + at, b.remaining());
      b.put(bytes);
      return;
    }
    while (b.hasRemaining()) {
      if (data.read(b, at + b.position()) < 0) {
        throw new Unsound("page " + at / pageSize + " is past the end of the file");
      }
    }
  }

  private ByteBuffer copy(int at, int size) {
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.nativeOrder());
    return b.put(0, page, at, size);
  }
}
