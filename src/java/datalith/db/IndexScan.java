package datalith.db;

import datalith.codec.Codec;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.store.Cursor;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Datoms of one index under a key prefix, as one database value sees them:
 * the current sub-database merged with the history one when the view needs it
 * (as-of, since, history, or a store that moved past the value's basis).
 * Valid only while its {@link Snapshot} is open; one thread.
 */
public final class IndexScan {
  private static final long NONE = Long.MAX_VALUE;

  private final Db db;
  private final Snapshot snap;
  private final Index index;
  private final Cursor cur;
  private final Cursor hist; // null when the view needs no history
  private final ByteBuffer prefix;
  private final int prefixLen;
  private final boolean storeFilter;
  private final long limit;
  private final long since;
  private final boolean historyMode;
  private final ByteBuffer upper; // exclusive bound on the key, or null
  private static final Object NOT_READ = new Object();
  private boolean curValid;
  private boolean histValid;
  private Cursor consumed; // the cursor holding the current key, moved on the next call
  private ByteBuffer key; // the current key: valid until the next call
  private int keyLen; // its length without a history suffix
  private long tx;
  private boolean added;
  private boolean pendingRetract;
  private long retractTx;
  private Object value = NOT_READ;
  private List<Entry> group; // a sorted run of long values being served, or null
  private int groupPos;
  private byte[] groupLastKey; // the group's last key in index order, to resume after
  private Datom datom;
  private long budget = Long.MAX_VALUE; // index entries next() may still step over
  private boolean overBudget;

  /**
   * @param prefix every datom's key starts with it (may be empty)
   * @param seek where to start (at or after {@code prefix}); null = at the prefix
   * @param upper stop at the first key {@code >= upper}; null = no bound
   * @param resumeAfter continue strictly after this key (from {@link #lastKey()}); null = from {@code seek}
   */
  IndexScan(Db db, Snapshot snap, Index index, ByteBuffer prefix, ByteBuffer seek, ByteBuffer upper,
      byte[] resumeAfter) {
    this.upper = upper;
    this.db = db;
    this.snap = snap;
    this.index = index;
    this.prefix = prefix;
    this.prefixLen = prefix.limit();
    this.storeFilter = snap.storeLatestT > db.storeT;
    this.limit = Math.min(db.basisT, db.asOfT);
    this.since = db.sinceT;
    this.historyMode = db.history;
    long newest = Math.max(snap.storeLatestT, db.basisT);
    // a store that moved past storeT may have retracted datoms this value still sees
    boolean needHistory = historyMode || limit < newest || storeFilter;
    this.cur = snap.cursor(index.current);
    this.hist = needHistory ? snap.cursor(index.history) : null;
    if (resumeAfter == null) {
      ByteBuffer start = seek == null ? prefix : seek;
      curValid = cur.seek(start);
      histValid = hist != null && hist.seek(start);
    } else {
      ByteBuffer r = ByteBuffer.allocateDirect(resumeAfter.length).put(resumeAfter).flip();
      curValid = cur.seek(r);
      if (curValid && equalsAt(cur.key(), 0, cur.key().limit(), r)) {
        curValid = cur.next();
      }
      if (hist != null) {
        histValid = hist.seek(r);
        if (histValid && equalsAt(hist.key(), 0, hist.key().limit() - 8, r)) {
          histValid = hist.next();
        }
      }
    }
  }

  private static boolean equalsAt(ByteBuffer k, int off, int len, ByteBuffer r) {
    return len == r.limit() && Codec.compareBytes(k, off, len, r, 0, len) == 0;
  }

  private boolean inRange(ByteBuffer k, int len) {
    return len >= prefixLen && Codec.compareBytes(k, 0, prefixLen, prefix, 0, prefixLen) == 0
        && (upper == null || Codec.compareBytes(k, 0, len, upper, 0, upper.limit()) < 0);
  }

  /**
   * Moves to the next visible datom; false at the end. Its parts are read
   * lazily from the key, which stays valid until the next call.
   */
  public boolean next() {
    datom = null;
    value = NOT_READ;
    if (pendingRetract) {
      pendingRetract = false;
      tx = retractTx;
      added = false;
      return true;
    }
    if (group != null) {
      if (groupPos < group.size()) {
        serve(group.get(groupPos++));
        return true;
      }
      group = null;
    }
    advanceConsumed();
    if (!findVisible(null)) {
      return false;
    }
    if (index != Index.VAET && Codec.isOverflow(key, valueOffset())) {
      collectGroup();
      serve(group.get(groupPos++));
    }
    return true;
  }

  private void advanceConsumed() {
    if (consumed != null) {
      if (consumed == cur) {
        curValid = cur.next();
      } else {
        histValid = hist.next();
      }
      consumed = null;
    }
  }

  private int valueOffset() {
    return index == Index.AVET ? 8 : 16;
  }

  /** One datom of a group of long values, copied out of the index. */
  private record Entry(byte[] key, long tx, boolean added, Object value) {}

  /**
   * Long values keep only a prefix and a hash in their keys, so keys whose
   * values share that prefix sort by hash: reads the whole run of them and
   * sorts it by value, so that every scan is in value order.
   */
  private void collectGroup() {
    int voff = valueOffset();
    int hashOff = Codec.overflowHashOffset(key, voff);
    ByteBuffer prefix = ByteBuffer.allocate(hashOff);
    prefix.put(0, key, 0, hashOff);
    List<Entry> entries = new ArrayList<>();
    do {
      byte[] k = new byte[keyLen];
      key.get(0, k);
      Object v = db.decodeValue(snap, ByteBuffer.wrap(k), voff);
      entries.add(new Entry(k, tx, added, v));
      if (pendingRetract) {
        entries.add(new Entry(k, retractTx, false, v));
        pendingRetract = false;
      }
      advanceConsumed();
    } while (findVisible(prefix));
    groupLastKey = entries.get(entries.size() - 1).key;
    entries.sort((x, y) -> compareValues(x.value, y.value));
    group = entries;
    groupPos = 0;
  }

  /** Value order where values have one (strings, keywords, bytes, ...); else equal. */
  @SuppressWarnings("unchecked")
  public static int compareValues(Object x, Object y) {
    if (x instanceof byte[] a && y instanceof byte[] b) {
      return java.util.Arrays.compareUnsigned(a, b);
    }
    if (x != null && y != null && x.getClass() == y.getClass() && x instanceof Comparable) {
      try {
        return ((Comparable<Object>) x).compareTo(y);
      } catch (RuntimeException ex) {
        return 0;
      }
    }
    return 0;
  }

  private void serve(Entry e) {
    key = ByteBuffer.wrap(e.key);
    keyLen = e.key.length;
    tx = e.tx;
    added = e.added;
    value = e.value;
  }

  /**
   * Positions on the next visible key (setting key, tx, added, consumed);
   * with a {@code groupPrefix}, stops (false, nothing consumed) at the first
   * key that does not start with it.
   */
  private boolean findVisible(ByteBuffer groupPrefix) {
    while (true) {
      boolean cv = curValid && inRange(cur.key(), cur.key().limit());
      boolean hv = hist != null && histValid && inRange(hist.key(), hist.key().limit() - 8);
      if (!cv && !hv) {
        key = null;
        return false;
      }
      if (--budget < 0) {
        overBudget = true;
        key = null;
        return false;
      }
      boolean takeCur = cv;
      if (cv && hv) {
        ByteBuffer c = cur.key();
        ByteBuffer h = hist.key();
        takeCur = Codec.compareBytes(c, 0, c.limit(), h, 0, h.limit() - 8) < 0;
      }
      Cursor src = takeCur ? cur : hist;
      ByteBuffer k = src.key();
      int len = takeCur ? k.limit() : k.limit() - 8;
      if (groupPrefix != null && (len < groupPrefix.limit()
          || Codec.compareBytes(k, 0, groupPrefix.limit(), groupPrefix, 0, groupPrefix.limit()) != 0)) {
        return false;
      }
      long atx = k.getLong(len - 8);
      long rtx = takeCur ? 0 : k.getLong(len);
      long at = Db.txToT(atx);
      long rt = takeCur ? NONE : Db.txToT(rtx);
      boolean visible = true;
      if (storeFilter && !(src instanceof OverlayCursor oc && oc.fromOverlay())) {
        if (at > db.storeT) {
          visible = false;
        } else if (rt != NONE && rt > db.storeT) {
          rt = NONE;
        }
      }
      boolean found = false;
      if (visible) {
        if (historyMode && rt != NONE && rt <= limit && noHistory(k)) {
          found = false; // a retracted value of a :db/noHistory attribute: not in history
        } else if (historyMode) {
          boolean emitA = at > since && at <= limit;
          boolean emitR = rt != NONE && rt > since && rt <= limit;
          if (emitA || emitR) {
            found = true;
            tx = emitA ? atx : rtx;
            added = emitA;
            pendingRetract = emitA && emitR;
            retractTx = rtx;
          }
        } else if (at <= limit && (rt == NONE || rt > limit) && at > since) {
          found = true;
          tx = atx;
          added = true;
        }
      }
      if (found) {
        key = k;
        keyLen = len;
        consumed = src;
        return true;
      }
      if (takeCur) {
        curValid = cur.next();
      } else {
        histValid = hist.next();
      }
    }
  }

  /**
   * Makes {@link #next()} give up (false, with {@link #overBudget()} true) after
   * stepping over {@code n} index entries, visible or not: a bound on the work
   * of a count, where an as-of or since view may hide most entries of a range.
   */
  public void limitEntries(long n) {
    budget = n;
  }

  /** Whether {@link #next()} stopped at the {@link #limitEntries} bound. */
  public boolean overBudget() {
    return overBudget;
  }

  private boolean noHistory(ByteBuffer k) {
    long aid = index == Index.EAVT || index == Index.VAET ? k.getLong(8) : k.getLong(0);
    Attr a = db.schema.attr(aid);
    return a != null && a.noHistory;
  }

  /** Whether the next datom comes from the current key (a history retraction). */
  boolean hasPending() {
    return pendingRetract || group != null && groupPos < group.size();
  }

  /** The current datom's entity id. */
  public long e() {
    switch (index) {
      case EAVT: return key.getLong(0);
      case AEVT: return key.getLong(8);
      case AVET: return key.getLong(keyLen - 16);
      default: return key.getLong(16);
    }
  }

  /** The current datom's attribute id. */
  public long aid() {
    return index == Index.EAVT || index == Index.VAET ? key.getLong(8) : key.getLong(0);
  }

  /** The current datom's value (decoded on first call; refs are Long ids). */
  public Object v() {
    if (value == NOT_READ) {
      value = index == Index.VAET ? (Object) key.getLong(0) : cachedDecode(valueOffset());
    }
    return value;
  }

  // A few recently decoded short values: attributes with few distinct values
  // (states, types, flags) then decode each value once per scan, not per datom.
  private static final int CACHE_SIZE = 8;
  private static final int CACHE_MAX_BYTES = 32;
  private final ByteBuffer[] cacheKeys = new ByteBuffer[CACHE_SIZE];
  private final Object[] cacheVals = new Object[CACHE_SIZE];
  private int cacheNext;
  private int cacheHits;
  private int cacheMisses;

  private Object cachedDecode(int off) {
    boolean cacheable = cacheMisses < 256 || cacheHits > cacheMisses;
    if (!cacheable || Codec.isOverflow(key, off) || key.get(off) == Codec.T_BYTES) {
      return db.decodeValue(snap, key, off);
    }
    int len = Codec.skipKeyPart(key, off) - off;
    if (len > CACHE_MAX_BYTES) {
      return db.decodeValue(snap, key, off);
    }
    for (int i = 0; i < CACHE_SIZE; i++) {
      ByteBuffer c = cacheKeys[i];
      if (c != null && c.limit() == len && Codec.compareBytes(key, off, len, c, 0, len) == 0) {
        cacheHits++;
        return cacheVals[i];
      }
    }
    cacheMisses++;
    Object v = db.decodeValue(snap, key, off);
    ByteBuffer copy = ByteBuffer.allocate(len);
    copy.put(0, key, off, len);
    cacheKeys[cacheNext] = copy;
    cacheVals[cacheNext] = v;
    cacheNext = (cacheNext + 1) % CACHE_SIZE;
    return v;
  }

  /** The current datom's transaction id (the retracting one for a history retraction). */
  public long tx() {
    return tx;
  }

  /** Whether the current datom is an assertion. */
  public boolean added() {
    return added;
  }

  /** The current datom as an object. */
  public Datom datom() {
    if (datom == null) {
      long aid = aid();
      datom = new Datom(e(), aid, db.schema.ident(aid), v(), tx, added);
    }
    return datom;
  }

  /** The index key (without history suffix) of the current datom, to resume after. */
  byte[] lastKey() {
    if (group != null) {
      return groupLastKey;
    }
    byte[] out = new byte[keyLen];
    key.get(0, out);
    return out;
  }

  /** Closes the cursors (the snapshot stays open). */
  public void close() {
    cur.close();
    if (hist != null) {
      hist.close();
    }
  }
}
