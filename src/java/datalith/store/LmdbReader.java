package datalith.store;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.lmdbjava.Cursor;
import org.lmdbjava.Dbi;
import org.lmdbjava.GetOp;
import org.lmdbjava.Txn;

/**
 * A pooled LMDB read transaction with the cursors' slots opened in it and its
 * {@link LmdbSnapshot}. While pooled it is reset: it holds its reader slot but no snapshot and no
 * pointer into the map. One thread at a time.
 */
final class LmdbReader {

  /**
   * One cursor's worth of this reader, lent to at most one cursor at a time: the views and path
   * of an {@link LmdbCursor}, or for an {@link LmdbPlainCursor}, LMDB's cursor, opened only for
   * it (opening one makes LMDB read the main database's pages).
   */
  static final class Slot {
    final SubDb db;
    private Cursor<ByteBuffer> cursor; // LMDB's, null until the plain reader needs it
    private final ByteBuffer probe = ByteBuffer.allocateDirect(Errors.MAX_KEY_SIZE);
    // views into the map for reading pages in Java (see LmdbCursor)
    final ByteBuffer pageView = ReadOnlyBufferProxy.newView();
    final ByteBuffer keyView = ReadOnlyBufferProxy.newView();
    final ByteBuffer valView = ReadOnlyBufferProxy.newView();
    final ByteBuffer spareView = ReadOnlyBufferProxy.newView(); // LmdbCursor.leafKey's
    final LmdbTree tree = new LmdbTree();
    private int epoch; // the reader epoch the cursor was last renewed in
    private boolean lent;

    Slot(SubDb db) {
      this.db = db;
    }

    /**
     * Positions LMDB's cursor {@code c} at the first key >= {@code key}, for keys of any
     * length; a key LMDB returns is checked by {@code txn} before it is read.
     */
    boolean seek(Cursor<ByteBuffer> c, ByteBuffer key, LmdbReadTxn txn) {
      int size = key.remaining();
      if (size == 0) {
        return c.first();
      }
      ByteBuffer k = soughtByCopy(key) ? copy(key, probe) : key;
      try {
        if (!c.get(k, GetOp.MDB_SET_RANGE)) {
          return false;
        }
      } finally {
        Reference.reachabilityFence(k); // LMDB reads it where it lies (see LmdbTree#compare)
      }
      // A longer key sorts right after its 511-byte prefix, and no stored key is longer.
      return size <= Errors.MAX_KEY_SIZE || !txn.check(c.key(), db, "key").equals(k)
          || c.next();
    }

    /**
     * Whether {@link #seek} gives LMDB a copy of {@code key}'s first bytes (in the slot's probe)
     * rather than {@code key} itself: a key longer than LMDB's longest, or one on the heap.
     */
    private static boolean soughtByCopy(ByteBuffer key) {
      return key.remaining() > Errors.MAX_KEY_SIZE || !key.isDirect();
    }

    /**
     * For the error of a seek that found a key below {@code key}: when {@code key} was sought
     * through the slot's copy of its first bytes ({@link #soughtByCopy}), whether that copy
     * still holds them (see LmdbPlainCursor#seek).
     */
    String probeReport(ByteBuffer key) {
      int size = key.remaining();
      if (!soughtByCopy(key)) {
        return "";
      }
      ByteBuffer prefix = key.duplicate();
      prefix.limit(prefix.position() + Math.min(size, Errors.MAX_KEY_SIZE));
      ByteBuffer copy = probe.duplicate();
      return " (a key of " + size + " bytes, sought by a copy of its first " + prefix.remaining()
          + (copy.equals(prefix) ? ", which still holds them)"
              : ", which now differs from them at byte " + copy.mismatch(prefix) + ")");
    }

    void detach() {
      if (cursor != null) {
        ReadOnlyBufferProxy.detach(cursor.key());
        ReadOnlyBufferProxy.detach(cursor.val());
      }
      ReadOnlyBufferProxy.detach(pageView);
      ReadOnlyBufferProxy.detach(keyView);
      ReadOnlyBufferProxy.detach(valView);
      ReadOnlyBufferProxy.detach(spareView);
      tree.detach();
    }

    void close() {
      if (cursor != null) {
        cursor.close();
      }
    }
  }

  private static final int KEPT_SLOTS = 8; // cursors kept across uses
  private static final int KEPT_ISSUED = 256; // capacity of the issued list kept across uses

  final Txn<ByteBuffer> txn;
  /** The pages of the current snapshot, for reading them in Java. */
  final LmdbSnapshot snapshot;
  private final LmdbTree lookup = new LmdbTree(); // for get()
  private final long txnAddress; // of its MDB_txn, 0 when unknown
  private int txnLayout; // 0 until checked, then 1 when txnAddress reads as LmdbLayout says, or -1
  private final List<Dbi<ByteBuffer>> dbis; // by SubDb ordinal
  private final ArrayList<Slot> slots = new ArrayList<>();
  private final ArrayList<ByteBuffer> issued = new ArrayList<>(); // get() results, detached on release
  private final ByteBuffer probe = ByteBuffer.allocateDirect(Errors.MAX_KEY_SIZE);
  private int epoch;

  LmdbReader(LmdbStore store, Txn<ByteBuffer> txn, List<Dbi<ByteBuffer>> dbis) {
    this.txn = txn;
    this.snapshot = new LmdbSnapshot(store);
    this.txnAddress = LmdbPointers.txn(txn);
    this.dbis = dbis;
  }

  /**
   * The first page number past this transaction's snapshot, read from its MDB_txn, or 0 when
   * that does not read as {@link LmdbLayout} says (its mt_env is not {@code env}, checked once).
   */
  long nextPage(long env) {
    if (txnLayout == 0) {
      txnLayout = txnAddress != 0 && env != 0 && LmdbLayout.txnEnv(txnAddress) == env ? 1 : -1;
    }
    return txnLayout > 0 ? LmdbLayout.txnNextPage(txnAddress) : 0;
  }

  /**
   * The address of this transaction's MDB_db records, or 0 when its MDB_txn does not read as
   * {@link LmdbLayout} says; after {@link #nextPage}.
   */
  long records() {
    return txnLayout > 0 ? LmdbLayout.txnDbs(txnAddress) : 0;
  }

  /** Takes a fresh snapshot after {@link #reset()}. */
  void renew() {
    txn.renew();
    epoch++;
  }

  /** A free slot for a cursor over {@code db}. */
  Slot lend(SubDb db) {
    for (int i = 0; i < slots.size(); i++) {
      Slot slot = slots.get(i);
      if (!slot.lent && slot.db == db) {
        slot.lent = true;
        return slot;
      }
    }
    Slot slot = new Slot(db);
    slots.add(slot);
    slot.lent = true;
    return slot;
  }

  /** LMDB's cursor of {@code slot}, opened, or renewed into the current snapshot, if need be. */
  Cursor<ByteBuffer> lmdbCursor(Slot slot) {
    if (slot.cursor == null) {
      slot.cursor = dbis.get(slot.db.ordinal()).openCursor(txn);
      slot.epoch = epoch;
    } else if (slot.epoch != epoch) {
      slot.cursor.renew(txn);
      slot.epoch = epoch;
    }
    return slot.cursor;
  }

  void giveBack(Slot slot) {
    slot.detach();
    slot.lent = false;
  }

  /**
   * A read-only view of the value under {@code key} in {@code db} of the current snapshot, read
   * in Java, valid until {@link #reset()}; or null.
   */
  ByteBuffer find(SubDb db, ByteBuffer key) {
    int size = key.remaining();
    if (size == 0 || size > Errors.MAX_KEY_SIZE) {
      return null;
    }
    LmdbTree t = lookup;
    t.open(snapshot, db);
    long found = t.seek(key);
    int keys = LmdbTree.foundKeys(found);
    if (keys == 0) {
      return null;
    }
    long n = t.page(t.depth() - 1);
    int i = LmdbTree.foundPlace(found);
    if (i == keys) {
      return null;
    }
    int node = t.checkedLeafNode(n, t.address(n), i, keys);
    if (t.compare(key, t.address(n) + LmdbTree.offset(node) + LmdbLayout.NODE_HEADER,
        LmdbTree.keySize(node)) != 0) {
      return null;
    }
    ByteBuffer view = ReadOnlyBufferProxy.newView();
    t.value(n, node, i, view);
    issued.add(view);
    return view;
  }

  /** A read-only view of the value under {@code key}, valid until {@link #reset()}; or null. */
  ByteBuffer get(SubDb db, ByteBuffer key) {
    int size = key.remaining();
    if (size == 0 || size > Errors.MAX_KEY_SIZE) {
      return null;
    }
    ByteBuffer k = key.isDirect() ? key : copy(key, probe);
    ByteBuffer val;
    try {
      val = dbis.get(db.ordinal()).get(txn, k);
    } finally {
      Reference.reachabilityFence(k); // LMDB reads it where it lies (see LmdbTree#compare)
    }
    if (val == null) {
      return null;
    }
    ByteBuffer view = val.duplicate();
    issued.add(view);
    return view;
  }

  /**
   * Releases the snapshot; every buffer handed out is detached first so that a late read throws
   * rather than touching memory that a map resize may unmap.
   */
  void reset() {
    for (int i = slots.size() - 1; i >= 0; i--) {
      Slot slot = slots.get(i);
      slot.detach();
      slot.lent = false;
      if (i >= KEPT_SLOTS) {
        slot.close();
        slots.remove(i);
      }
    }
    for (int i = 0; i < issued.size(); i++) {
      ReadOnlyBufferProxy.detach(issued.get(i));
    }
    if (issued.size() > KEPT_ISSUED) {
      issued.clear();
      issued.trimToSize();
    } else {
      issued.clear();
    }
    ReadOnlyBufferProxy.detach(txn.key());
    ReadOnlyBufferProxy.detach(txn.val());
    lookup.detach();
    txn.reset();
  }

  /** Frees the transaction and its cursors; the reader must be reset. */
  void dispose() {
    for (int i = 0; i < slots.size(); i++) {
      slots.get(i).close();
    }
    slots.clear();
    txn.renew(); // LMDB frees a reset transaction by aborting it, which lmdbjava does when ready
    txn.close();
  }

  /** {@code into} holding the first {@code min(remaining, 511)} bytes of {@code key}. */
  static ByteBuffer copy(ByteBuffer key, ByteBuffer into) {
    int size = Math.min(key.remaining(), Errors.MAX_KEY_SIZE);
    into.clear();
    into.put(0, key, key.position(), size);
    into.limit(size);
    return into;
  }
}
