package datalith.db;

import datalith.codec.Bytes;
import datalith.codec.Codec;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.store.Cursor;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongPredicate;

/**
 * Datoms of one index under a key prefix, as one database value sees them:
 * the current sub-database merged with the history one when the view needs it
 * (as-of, since, history, or a store that moved past the value's basis). A view
 * at an earlier point passes the keys of entities all of whose datoms came after
 * it a run at a time ({@link EntityBounds}, {@code passLater}).
 * Valid only while its {@link Snapshot} is open; one thread.
 */
public final class IndexScan {
  private static final long NONE = Long.MAX_VALUE;

  private final Db db;
  private final Snapshot snap;
  private final Index index;
  private final int valueOffset;
  private final Cursor cur;
  private final Cursor hist; // null when the view needs no history
  private final ScanRange range = new ScanRange(); // the prefix and upper bound
  private ScanRestarts restarts; // made by the first restart: most scans never restart
  private ScanValueCache values; // made by the first value decoded
  private final boolean storeFilter;
  private final long limit;
  private final long since;
  private final boolean historyMode;
  private final LongMap<long[]> hidden; // a valid-at view's tracked pairs (e -> aids), or null
  // the view's entity bound at its point (EntityBounds), asked for as later keys are met
  private long entityBound = EntityBounds.UNKNOWN;
  private long laterSteps; // later user entities' keys met while the bound was unknown
  private long nextAsk; // the count of them at which to ask again
  private static final long LOG_DATOMS_PER_STEP = 4;
  private static final long MIN_LOG_DATOMS = 256;
  private ByteBuffer passTo; // where passLater moves the cursors: direct, reused
  private static final Object NOT_READ = new Object();
  private boolean curValid; // cur is positioned
  private boolean histValid;
  private ByteBuffer curKey; // cur's key while it is in range, else null
  private ByteBuffer histKey; // hist's key while in range (its datom key is in range), else null
  // every key the cursors moved over since they were positioned at the prefix starts with the
  // prefix: false when the scan began at a seek key or after a resume key
  private boolean fromPrefix;
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
  private boolean limited; // limitEntries set the budget
  private boolean overBudget;

  /**
   * @param prefix every datom's key starts with it (may be empty)
   * @param seek where to start (at or after {@code prefix}); null = at the prefix
   * @param upper stop at the first key {@code >= upper}; null = no bound
   * @param resumeAfter continue strictly after this key (from {@link #lastKey()}); null = from {@code seek}
   */
  IndexScan(Db db, Snapshot snap, Index index, ByteBuffer prefix, ByteBuffer seek, ByteBuffer upper,
      byte[] resumeAfter) {
    this.db = db;
    this.snap = snap;
    this.index = index;
    this.valueOffset = index == Index.AVET ? 8 : 16;
    range.set(prefix, upper);
    this.storeFilter = snap.storeLatestT > db.storeT;
    this.limit = Math.min(db.basisT, db.asOfT);
    this.since = db.sinceT;
    this.historyMode = db.history;
    this.hidden = db.validHidden;
    long newest = Math.max(snap.storeLatestT, db.basisT);
    // a store that moved past storeT may have retracted datoms this value still sees
    boolean needHistory = historyMode || limit < newest || storeFilter;
    this.cur = snap.cursor(index.current);
    this.hist = needHistory ? snap.cursor(index.history) : null;
    cur.within(prefix); // unpositioned: where they stand does not matter
    if (hist != null) {
      hist.within(prefix);
    }
    if (resumeAfter == null) {
      ByteBuffer start = seek == null ? prefix : seek;
      curValid = cur.seek(start);
      histValid = hist != null && hist.seek(start);
      fromPrefix = seek == null;
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
    curKey = curValid ? ranged(cur.key(), 0) : null;
    histKey = histValid ? ranged(hist.key(), 8) : null;
  }

  /**
   * Re-positions this scan on the datoms under {@code prefix}, as a new scan of the same index
   * and database value with that prefix and no seek key or upper bound would see them, reusing
   * its cursors: when successive prefixes ascend, the cursors move forward from where they are
   * (often without a seek). The prefix is the bytes of {@code prefix} from its position to its
   * limit, read during this call only: the caller may change the buffer once it returns.
   * Forgets the current datom and any {@link #limitEntries} bound.
   */
  public void restart(ByteBuffer prefix) {
    ByteBuffer p = prefix.position() == 0 ? prefix : prefix.slice();
    int oldLen = range.prefixLength();
    range.set(p, null);
    // Every key the cursors moved over since they were positioned at the old prefix starts with
    // it; when all such keys sort before p, none of them is >= p, so a cursor that is not before
    // p is at its first key >= p already (and one past the end has none).
    boolean forward = fromPrefix && range.ascendsFrom(oldLen);
    datom = null;
    value = NOT_READ;
    key = null;
    keyLen = 0;
    consumed = null;
    pendingRetract = false;
    group = null;
    groupPos = 0;
    groupLastKey = null;
    budget = Long.MAX_VALUE;
    limited = false;
    overBudget = false;
    ScanRestarts r = restarts();
    // a cursor the hint moved (a staging's AVET, read from another tree) is unpositioned: seeks
    boolean stands = cur.within(p);
    curValid = r.reposition(cur, curValid && stands, forward && stands, p);
    curKey = curValid ? ranged(cur.key(), 0) : null;
    if (hist != null) {
      stands = hist.within(p);
      histValid = r.reposition(hist, histValid && stands, forward && stands, p);
      histKey = histValid ? ranged(hist.key(), 8) : null;
    }
    fromPrefix = true;
  }

  /**
   * A hint that restarts at {@code prefixes[0 .. n)} (direct buffers, position 0) follow: the
   * store may read their index pages now, side by side ({@link Cursor#warm}). Moves nothing.
   */
  public void warm(ByteBuffer[] prefixes, int n) {
    cur.warm(prefixes, n);
    if (hist != null) {
      hist.warm(prefixes, n);
    }
  }

  /**
   * Makes every {@link #restart} seek at once, without first stepping forward to its prefix:
   * for restarts known to land far apart (a join looking up sparse entities).
   */
  public void seekOnRestart() {
    restarts().seekAlways();
  }

  private ScanRestarts restarts() {
    if (restarts == null) {
      restarts = new ScanRestarts(range);
    }
    return restarts;
  }

  private static boolean equalsAt(ByteBuffer k, int off, int len, ByteBuffer r) {
    return len == r.limit() && Codec.compareBytes(k, off, len, r, 0, len) == 0;
  }

  /** {@code k} when its first {@code k.limit() - suffix} bytes are in range, else null. */
  private ByteBuffer ranged(ByteBuffer k, int suffix) {
    return range.contains(k, k.limit() - suffix) ? k : null;
  }

  private void stepCur() {
    curValid = cur.next();
    curKey = curValid ? ranged(cur.key(), 0) : null;
  }

  private void stepHist() {
    histValid = hist.next();
    histKey = histValid ? ranged(hist.key(), 8) : null;
  }

  /**
   * Moves to the next visible datom; false at the end. Its parts are read
   * lazily from the key, which stays valid until the next call.
   */
  public boolean next() {
    if (db.filter == null) {
      return nextVisible();
    }
    while (nextVisible()) {
      if (db.filter.accepts(datom())) {
        return true;
      }
    }
    return false;
  }

  /** {@link #next()} before the value's filter: the next datom its view (as-of ...) sees. */
  private boolean nextVisible() {
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
    if (index != Index.VAET && Codec.isOverflow(key, valueOffset)) {
      collectGroup();
      serve(group.get(groupPos++));
    }
    return true;
  }

  /**
   * Like {@link #next()}, to the next visible datom whose entity {@code keep} accepts. Without a
   * history to merge, the keys of other entities are passed before anything else of them is read
   * (their visibility, their value), at the cost of a step and a test each.
   */
  public boolean next(LongPredicate keep) {
    while (true) {
      if (hist == null && group == null && !pendingRetract) {
        advanceConsumed();
        for (ByteBuffer k = curKey; k != null && !keep.test(entityAt(k, k.limit())); k = curKey) {
          if (--budget < 0) {
            overBudget = true;
            key = null;
            return false;
          }
          stepCur();
        }
      }
      if (!next()) {
        return false;
      }
      if (keep.test(e())) {
        return true;
      }
    }
  }

  private void advanceConsumed() {
    if (consumed != null) {
      if (consumed == cur) {
        stepCur();
      } else {
        stepHist();
      }
      consumed = null;
    }
  }

  /** One datom of a group of long values, copied out of the index. */
  private record Entry(byte[] key, long tx, boolean added, Object value) {}

  /**
   * Long values keep only a prefix and a hash in their keys, so keys whose
   * values share that prefix sort by hash: reads the whole run of them and
   * sorts it by value, so that every scan is in value order.
   */
  private void collectGroup() {
    int voff = valueOffset;
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
      ByteBuffer c = curKey;
      ByteBuffer h = histKey;
      if (c == null && h == null) {
        key = null;
        return false;
      }
      if (--budget < 0) {
        overBudget = true;
        key = null;
        return false;
      }
      boolean takeCur = h == null
          || c != null && Codec.compareBytes(c, 0, c.limit(), h, 0, h.limit() - 8) < 0;
      Cursor src = takeCur ? cur : hist;
      ByteBuffer k = takeCur ? c : h;
      int len = takeCur ? k.limit() : k.limit() - 8;
      if (groupPrefix != null && (len < groupPrefix.limit()
          || Codec.compareBytes(k, 0, groupPrefix.limit(), groupPrefix, 0, groupPrefix.limit()) != 0)) {
        return false;
      }
      long atx = Bytes.longAt(k, len - 8);
      long rtx = takeCur ? 0 : Bytes.longAt(k, len);
      long at = Db.txToT(atx);
      long rt = takeCur ? NONE : Db.txToT(rtx);
      boolean visible = true;
      if (storeFilter && !Snapshot.inMemory(src)) {
        if (at > db.storeT) {
          visible = false;
        } else if (rt != NONE && rt > db.storeT) {
          rt = NONE;
        }
      }
      // hiding decides only for a datom the view's as-of point shows (a valid-at view's point
      // often lies before most datoms): the cheap test first, the lookup only for those
      if (visible && hidden != null && at <= limit && (rt == NONE || rt > limit)
          && !ValidTime.added(src) && ValidTime.hides(hidden, entityAt(k, len), index == Index.EAVT || index == Index.VAET
              ? Bytes.longAt(k, 8) : Bytes.longAt(k, 0))) {
        visible = false; // a tracked pair of a valid-at view: its values come from the overlay
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
        } else if ((at <= limit || db.validAt != null && ValidTime.added(src))
            && (rt == NONE || rt > limit) && at > since) {
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
      if (at > limit && !Snapshot.inMemory(src) && passLater(k, len)) {
        continue;
      }
      if (takeCur) {
        stepCur();
      } else {
        stepHist();
      }
    }
  }

  /**
   * Where the store's key {@code k} ({@code len} bytes without a history suffix), asserted after
   * the view's point, is of an entity all of whose datoms were ({@link EntityBounds}: a user
   * entity at or above the point's bound, or a transaction entity after it): moves both cursors
   * past the keys after it that differ from it only from the entity on, up to the first
   * transaction entity (for a user entity) or to the end of that run (for a transaction entity),
   * which hold later entities' datoms only, and says true. Else false, moving nothing. The keys
   * of a valid-at view's lines among them stay ({@link ValidCursor#seekBase}).
   */
  private boolean passLater(ByteBuffer k, int len) {
    long e = entityAt(k, len);
    boolean txEntity = e >= Db.TX0;
    if (txEntity ? e - Db.TX0 <= limit : e < Schema.FIRST_USER_ID) {
      return false;
    }
    if (!txEntity) {
      if (entityBound == EntityBounds.UNKNOWN && laterSteps++ == nextAsk) {
        // asks with an allowance in proportion to the later keys this scan stepped over: at
        // the first (a bound already read), then after 16, 32, 64 ...
        entityBound = db.entityBound(snap, limit,
            Math.max(MIN_LOG_DATOMS, laterSteps * LOG_DATOMS_PER_STEP));
        nextAsk = Math.max(16, 2 * nextAsk);
      }
      if (entityBound == EntityBounds.UNKNOWN || e < entityBound) {
        return false;
      }
    }
    passTo = EntityBounds.passTo(index, k, len, txEntity, passTo);
    ByteBuffer to = passTo;
    if (to.limit() == 0) {
      return false; // no key follows the run's: let the scan step
    }
    if (curValid && Overlay.compare(cur.key(), to) < 0) {
      curValid = cur instanceof ValidCursor vc ? vc.seekBase(to) : cur.seek(to);
      curKey = curValid ? ranged(cur.key(), 0) : null;
    }
    if (hist != null && histValid && Overlay.compare(hist.key(), to) < 0) {
      histValid = hist.seek(to);
      histKey = histValid ? ranged(hist.key(), 8) : null;
    }
    fromPrefix = false; // the cursors passed keys that a restart's prefix may hold
    return true;
  }

  /**
   * Whether {@link #countRun} may be used: the view needs no history and has no filter (so every
   * current datom in range is visible), the scan has no upper bound and no {@link #limitEntries}
   * bound.
   */
  public boolean runsCountable() {
    return hist == null && since == Db.NO_SINCE && !range.bounded() && !limited && db.filter == null
        && hidden == null;
  }

  /**
   * The end of the current datom's value in its key, where the key holds the whole value (not a
   * long value's prefix and hash); else -1. The key's first that many bytes are its run key for
   * {@link #countRun}: in AVET, the attribute and the value.
   */
  public int valueEnd() {
    if (group != null || pendingRetract || index == Index.VAET
        || Codec.isOverflow(key, valueOffset)) {
      return -1;
    }
    return Codec.skipKeyPart(key, valueOffset);
  }

  private ByteBuffer runPrefix = ByteBuffer.allocate(0);

  /**
   * Counts the current datom and the ones after it whose keys start with the current key's first
   * {@code n} bytes, and moves past them: the next {@link #next()} gives the first datom after
   * them. The cursor passes whole leaf pages of them at a time where the store can (LMDB), so
   * the count reads about one key per page. Only where {@link #runsCountable()}.
   */
  public long countRun(int n) {
    if (!runsCountable() || consumed != cur) {
      throw new IllegalStateException("countRun needs a current datom of a view without history");
    }
    if (runPrefix.capacity() < n) {
      runPrefix = ByteBuffer.allocate(Math.max(n, 64));
    }
    ByteBuffer prefix = runPrefix.clear().limit(n);
    prefix.put(0, key, 0, n);
    long c = 1;
    while (true) {
      c += cur.skipRun(prefix);
      stepCur();
      ByteBuffer k = curKey;
      if (k == null || k.limit() < n || Codec.compareBytes(k, 0, n, prefix, 0, n) != 0) {
        break;
      }
      c++;
    }
    // the cursor is on the first key after the run: next() takes it without a step
    consumed = null;
    key = null;
    datom = null;
    value = NOT_READ;
    return c;
  }

  /**
   * Makes {@link #next()} give up (false, with {@link #overBudget()} true) after
   * stepping over {@code n} index entries, visible or not: a bound on the work
   * of a count, where an as-of or since view may hide most entries of a range.
   */
  public void limitEntries(long n) {
    budget = n;
    limited = true;
  }

  /** Whether {@link #next()} stopped at the {@link #limitEntries} bound. */
  public boolean overBudget() {
    return overBudget;
  }

  private boolean noHistory(ByteBuffer k) {
    long aid = index == Index.EAVT || index == Index.VAET ? Bytes.longAt(k, 8) : Bytes.longAt(k, 0);
    Attr a = db.schema.attr(aid);
    return a != null && a.noHistory;
  }

  /**
   * Whether the next datom comes from the current key (a history retraction) or sorted run: a
   * scan resumed after {@link #lastKey()} must first read these, or it would skip them.
   */
  public boolean hasPending() {
    return pendingRetract || group != null && groupPos < group.size();
  }

  /** The current datom's entity id. */
  public long e() {
    return entityAt(key, keyLen);
  }

  /** The entity id of datom key {@code k} of length {@code len} (without a history suffix). */
  private long entityAt(ByteBuffer k, int len) {
    switch (index) {
      case EAVT: return Bytes.longAt(k, 0);
      case AEVT: return Bytes.longAt(k, 8);
      case AVET: return Bytes.longAt(k, len - 16);
      default: return Bytes.longAt(k, 16);
    }
  }

  /** The current datom's attribute id. */
  public long aid() {
    return index == Index.EAVT || index == Index.VAET ? Bytes.longAt(key, 8) : Bytes.longAt(key, 0);
  }

  /** The current datom's value (decoded on first call; refs are Long ids). */
  public Object v() {
    if (value == NOT_READ) {
      if (index == Index.VAET) {
        value = Bytes.longAt(key, 0);
      } else {
        if (values == null) {
          values = new ScanValueCache(db, snap);
        }
        value = values.decode(key, keyLen, valueOffset);
      }
    }
    return value;
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

  /**
   * The index key (without history suffix) of the current datom, to resume after (see
   * {@link Db#scan(Snapshot, Index, ByteBuffer, ByteBuffer, ByteBuffer, byte[])}) once
   * {@link #hasPending()} is false.
   */
  public byte[] lastKey() {
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
