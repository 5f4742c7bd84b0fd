package datalith.db;

import clojure.lang.ExceptionInfo;
import clojure.lang.IPersistentMap;
import clojure.lang.IPersistentVector;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;
import datalith.codec.Bytes;
import datalith.codec.Codec;
import datalith.store.Cursor;
import datalith.store.LmdbStore;
import datalith.store.ReadTxn;
import datalith.store.Store;
import datalith.store.SubDb;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * Checks a store for damage: LMDB keeps no checksums of its pages, so a damaged byte would
 * otherwise give wrong answers without an error. The log is the source of truth (each record
 * carries a CRC32C, {@link LogRecord}); every other sub-database must agree with it:
 *
 * <ul>
 *   <li>LOG: every record passes its checksum and decodes; its t run 0, 1, 2 ... without a gap;
 *       no entity id is one not handed out yet when the record was written.
 *   <li>EAVT = AEVT = AVET, VAET = their ref datoms; HEAVT = HAEVT = HAVET, HVAET = their ref
 *       datoms; and replaying the log gives EAVT (the current datoms, each with the tx that
 *       asserted it) and the history indexes (each retracted datom with the txs that asserted
 *       and retracted it). Keys are well formed and strictly ascending; no datom is current
 *       twice; a history entry was retracted after it was asserted and before the same datom was
 *       asserted again.
 *   <li>Every sub-database of an LMDB store: seeks land where a walk says they should
 *       ({@link SeekCheck}).
 *   <li>BLOBS: each long value is stored under its hash, and every long value an index names is
 *       there.
 *   <li>META: t is the last log t, next-eid is above every entity id used, the statistics are
 *       the current datoms' counts, the format is known.
 *   <li>The schema, as the log gives it, holds for the current datoms: no entity with two values
 *       of a cardinality-one attribute, no value of a unique one held twice, no value of
 *       another type than its attribute's ({@link #checkSchema}; the log being the source of
 *       truth, a rebuild does not mend these).
 *   <li>An LMDB store's pages, as its writes read them: every page of the last commit's trees
 *       and its free list, read as LMDB's C code reads them when it writes
 *       ({@code LmdbStore.pageAccountingProblem}).
 * </ul>
 *
 * <p>Each sub-database is walked once in key order, keeping a fixed-size {@link Digest} per
 * source rather than the datoms (and once more a page at a time, for the seeks); only where digests disagree are the entities of the
 * disagreeing buckets read again and compared datom by datom ({@link Examine}), so memory stays
 * bounded whatever the database's size. Everything is read in one read transaction: one
 * consistent state, held for the duration of the check.
 *
 * <p>Never throws for what it reads: whatever is wrong, unreadable included, is a problem in
 * the report.
 */
public final class Verify {
  /** How many problems a report lists unless told otherwise. */
  public static final int DEFAULT_MAX_PROBLEMS = 100;
  /**
   * The entries (index keys and log datoms, all sources together) of the buckets examined datom
   * by datom at most: what a check holds in memory beyond its digests, some 100 bytes each.
   */
  static final long EXAMINE_BUDGET = 200_000;

  /** The longest key a store keeps (LMDB's limit, which MemStore applies too). */
  static final int MAX_KEY_SIZE = 511;

  static final Keyword LOG = kw("log");
  static final Keyword BLOBS = kw("blobs");
  static final Keyword META = kw("meta");
  static final Keyword PAGES = kw("pages");
  static final Keyword UNSOUND = kw("unsound");
  static final Keyword MALFORMED = LogRecord.MALFORMED;
  static final Keyword UNREADABLE = kw("unreadable");
  static final Keyword OUT_OF_ORDER = kw("out-of-order");
  static final Keyword GAP = kw("gap");
  static final Keyword ENTITY_ID = kw("entity-id");
  static final Keyword DUPLICATE = kw("duplicate");
  static final Keyword CARDINALITY = kw("cardinality");
  static final Keyword UNIQUE = kw("unique");
  static final Keyword VALUE_TYPE = kw("value-type");
  static final Keyword BAD_INTERVAL = kw("bad-interval");
  static final Keyword OVERLAP = kw("overlap");
  static final Keyword BLOB_MISSING = kw("blob-missing");
  static final Keyword HASH_MISMATCH = kw("hash-mismatch");
  static final Keyword MISSING = kw("missing");
  static final Keyword EXTRA = kw("extra");
  static final Keyword DIFFERS = kw("differs");
  static final Keyword INCONSISTENT = kw("inconsistent");
  static final Keyword T = kw("t");
  static final Keyword NEXT_EID = kw("next-eid");
  static final Keyword STATS = kw("stats");
  static final Keyword FORMAT = kw("format");

  final ReadTxn rt;
  final Problems problems;
  long format = Meta.FORMAT_VERSION;
  /** False when a log record or key could not be read: the log's digest is then partial. */
  boolean logComplete = true;
  final EnumSet<IndexKeys> unreadable = EnumSet.noneOf(IndexKeys.class);
  Schema schema = Schema.initial(); // for the attribute names of problems

  private boolean pagesRead; // an LMDB store's pages were read as its writes need
  private Long metaT;
  private Long metaNextEid;
  private LongMap<long[]> metaStats;
  private long lastT = -1;
  private long records;
  private long logDatoms;
  private long maxUserId = -1;
  private long blobs;
  private final LongMap<long[]> logCounts = new LongMap<>(64); // aid -> net assertions
  private final LongMap<long[]> eavtCounts = new LongMap<>(64); // aid -> EAVT datoms
  private final Map<Long, Map<Long, Object>> schemaProps = new HashMap<>(); // e -> aid -> v
  private final Digest logEvents = new Digest();
  private final Digest indexEvents = new Digest();
  private final Digest eavtRefs = new Digest();
  private final Digest heavtRefs = new Digest();
  private final EnumMap<IndexKeys, Digest> digests = new EnumMap<>(IndexKeys.class);
  private final EnumMap<IndexKeys, Long> entries = new EnumMap<>(IndexKeys.class);
  private final byte[] canon = new byte[IndexKeys.MAX_CANONICAL];
  private final byte[] event = new byte[IndexKeys.MAX_CANONICAL + 9];
  private final byte[] prev = new byte[IndexKeys.MAX_CANONICAL]; // the key before, in a walk
  private final ByteBuffer prevBuf = ByteBuffer.wrap(prev);

  private Verify(ReadTxn rt, int maxProblems) {
    this.rt = rt;
    this.problems = new Problems(maxProblems);
  }

  /**
   * Checks {@code store} as its last commit left it and returns the report:
   * <pre>
   * {:ok? true|false, :t META's t, :format the on-disk format,
   *  :checks {:log {:records n :datoms n :checksums :checked|:absent :problems n}
   *           :eavt {:datoms n :problems n} ... one per index, history ones too
   *           :blobs {:entries n :problems n}
   *           :meta {:problems n}}
   *  :problem-count n
   *  :problems [{:index check :problem kind ...} ...]}   ; the first maxProblems
   * </pre>
   * A problem names what is wrong with {@code :datom [e a v tx]} ({@code [e a v tx
   * retracted-tx]} in history, {@code [e a v tx added]} for the log), {@code :key} (hex) or
   * {@code :t}, and may carry {@code :message}. Kinds: {@code :checksum}, {@code :malformed},
   * {@code :unreadable}, {@code :out-of-order}, {@code :gap}, {@code :entity-id},
   * {@code :duplicate}, {@code :bad-interval}, {@code :overlap}, {@code :blob-missing},
   * {@code :hash-mismatch}, {@code :missing} (the index lacks a datom the log says it holds),
   * {@code :extra} (it holds one it should not), {@code :differs} (buckets of entities that
   * disagree, past those examined), {@code :inconsistent} (the log asserts a current datom or
   * retracts one that is not), {@code :misrouted} (a seek for a key does not find it: see
   * {@link SeekCheck}), {@code :t}, {@code :next-eid}, {@code :stats}, {@code :format}; and the
   * schema's, which a rebuild from the log does not mend: {@code :cardinality} (two current
   * values of a cardinality-one attribute), {@code :unique} (one value of a unique attribute
   * held by two entities), {@code :value-type} (a value of another type than its attribute's);
   * and for an LMDB store, {@code :unsound} (check {@code :pages}: a page of the last commit
   * that LMDB's writes would read out of bounds, or the free list naming a page in use; the
   * store refuses writes until it is mended).
   */
  public static IPersistentMap run(Store store, int maxProblems) {
    try (ReadTxn rt = store.beginRead()) {
      Verify v = new Verify(rt, maxProblems);
      v.step(META, v::readMeta);
      v.step(LOG, v::walkLog);
      v.step(BLOBS, v::walkBlobs);
      for (IndexKeys ix : IndexKeys.values()) {
        v.step(ix.check, () -> v.walkIndex(ix));
      }
      if (store instanceof LmdbStore) {
        for (IndexKeys ix : IndexKeys.values()) {
          v.step(ix.check, () -> SeekCheck.run(rt, ix.db, ix.check, v.problems));
        }
        v.step(LOG, () -> SeekCheck.run(rt, SubDb.LOG, LOG, v.problems));
        v.step(BLOBS, () -> SeekCheck.run(rt, SubDb.BLOBS, BLOBS, v.problems));
        v.step(META, () -> SeekCheck.run(rt, SubDb.META, META, v.problems));
        v.step(PAGES, () -> v.checkPages((LmdbStore) store));
      }
      v.step(META, v::checkMeta);
      v.step(IndexKeys.EAVT.check, v::compare);
      return v.report();
    }
  }

  /**
   * Runs one step of the check; what it could not read (a damaged store's exception) is a
   * problem of {@code check}, and the other steps go on.
   */
  private void step(Keyword check, Runnable step) {
    try {
      step.run();
    } catch (RuntimeException e) {
      problems.add(check, UNREADABLE, () -> new Object[] {"message", String.valueOf(e)});
    }
  }

  // ---- LMDB's pages

  /**
   * The pages of the LMDB store's last commit, read as its writes need them (see {@code
   * datalith.store.LmdbPagesCheck}, which refuses to write into a store where this finds a
   * problem): a problem of kind {@code :unsound} saying what does not read.
   */
  private void checkPages(LmdbStore store) {
    pagesRead = true;
    String problem = store.pageAccountingProblem();
    if (problem != null) {
      problems.add(PAGES, UNSOUND, () -> new Object[] {"message", problem});
    }
  }

  // ---- META

  private void readMeta() {
    ByteBuffer f = rt.get(SubDb.META, Meta.FORMAT.duplicate());
    if (f == null || f.limit() != 8 || f.getLong(0) < Meta.FORMAT_NO_CHECKSUMS
        || f.getLong(0) > Meta.FORMAT_VERSION) {
      Object found = f == null ? null : f.limit() == 8 ? (Object) f.getLong(0) : hex(f, 0, f.limit());
      problems.add(META, FORMAT, () -> new Object[] {"found", found, "message",
          "no known on-disk format; the log is read as format " + Meta.FORMAT_VERSION});
    } else {
      format = f.getLong(0);
    }
    metaT = metaLong(Meta.T, T);
    metaNextEid = metaLong(Meta.NEXT_EID, NEXT_EID);
    ByteBuffer s = rt.get(SubDb.META, Meta.STATS.duplicate());
    if (s == null || s.limit() % 16 != 0) {
      problems.add(META, STATS, () -> new Object[] {"message", "missing or malformed"});
    } else {
      metaStats = new LongMap<>(64);
      for (int off = 0; off < s.limit(); off += 16) {
        metaStats.put(s.getLong(off), new long[] {s.getLong(off + 8)});
      }
    }
  }

  private Long metaLong(ByteBuffer key, Keyword problem) {
    ByteBuffer b = rt.get(SubDb.META, key.duplicate());
    if (b == null || b.limit() != 8) {
      problems.add(META, problem, () -> new Object[] {"message", "missing or malformed"});
      return null;
    }
    return b.getLong(0);
  }

  private void checkMeta() {
    if (metaT != null && metaT != lastT) {
      problems.add(META, T, () -> new Object[] {"found", metaT, "log-t", lastT,
          "message", "META's t is not the log's last t"});
    }
    long n = metaNextEid == null ? Long.MAX_VALUE : metaNextEid;
    if (metaNextEid != null
        && (n <= maxUserId || n < Schema.FIRST_USER_ID || n >= Db.TX0)) {
      problems.add(META, NEXT_EID, () -> new Object[] {"found", n, "max-used", maxUserId,
          "message", "next-eid is not above every entity id used"});
    }
    if (metaStats != null) {
      LongMap<long[]> want = logComplete ? logCounts : eavtCounts;
      for (long aid : union(want, metaStats)) {
        long w = count(want, aid);
        long have = count(metaStats, aid);
        if (w != have) {
          problems.add(META, STATS, () -> new Object[] {"attribute", attrName(aid),
              "found", have, "expected", w});
        }
      }
    }
  }

  private static long[] union(LongMap<long[]> a, LongMap<long[]> b) {
    return java.util.stream.LongStream.concat(Arrays.stream(a.keys()), Arrays.stream(b.keys()))
        .distinct().sorted().toArray();
  }

  private static long count(LongMap<long[]> m, long aid) {
    long[] c = m.get(aid);
    return c == null ? 0 : c[0];
  }

  // ---- LOG

  private void walkLog() {
    Cursor c = null;
    long expect = 0;
    try {
      c = rt.cursor(SubDb.LOG);
      for (boolean ok = c.first(); ok; ok = c.next()) {
        ByteBuffer k = c.key();
        if (k.limit() != 8) {
          logComplete = false;
          String key = hex(k, 0, k.limit());
          problems.add(LOG, MALFORMED, () -> new Object[] {"key", key,
              "message", "a log key that is not a t"});
          continue;
        }
        long t = k.getLong(0);
        if (t != expect) {
          logComplete = false;
          long from = expect;
          if (t > expect) {
            problems.add(LOG, GAP, () -> new Object[] {"t", from, "missing", t - from,
                "message", "no record for t " + from + (t - 1 > from ? " to " + (t - 1) : "")});
          } else {
            problems.add(LOG, OUT_OF_ORDER, () -> new Object[] {"t", t});
          }
        }
        expect = Math.max(expect, t + 1);
        lastT = Math.max(lastT, t);
        readRecord(t, c.val());
      }
    } catch (RuntimeException e) {
      logComplete = false;
      problems.add(LOG, UNREADABLE, () -> new Object[] {"message", String.valueOf(e.getMessage())});
    } finally {
      if (c != null) {
        c.close();
      }
    }
    List<Object[]> triples = new ArrayList<>();
    schemaProps.forEach((e, props) -> props.forEach((aid, v) -> triples.add(
        new Object[] {e, aid, v})));
    schema = Schema.fromTriples(triples);
  }

  private void readRecord(long t, ByteBuffer val) {
    List<LogRecord.Entry> datoms;
    List<Object> values = new ArrayList<>();
    try {
      datoms = LogRecord.read(t, val, format);
      for (LogRecord.Entry d : datoms) {
        values.add(LogRecord.value(t, d));
      }
    } catch (RuntimeException e) {
      logComplete = false;
      Object kind = e instanceof ExceptionInfo x ? x.getData().valAt(kw("problem")) : null;
      problems.add(LOG, kind instanceof Keyword kw ? kw : MALFORMED,
          () -> new Object[] {"t", t, "message", e.getMessage()});
      return;
    }
    records++;
    logDatoms += datoms.size();
    long tx = Db.tToTx(t);
    for (int i = 0; i < datoms.size(); i++) {
      LogRecord.Entry d = datoms.get(i);
      int n = event(d, tx);
      logEvents.add(event, n);
      checkId(t, d.e());
      if (d.encoded()[0] == Codec.T_REF) {
        checkId(t, Bytes.longAt(d.encoded(), 1));
      }
      long[] c = logCounts.get(d.aid());
      if (c == null) {
        logCounts.put(d.aid(), c = new long[1]);
      }
      c[0] += d.added() ? 1 : -1;
      if (Schema.isSchemaAttr(d.aid())) {
        Map<Long, Object> props = schemaProps.computeIfAbsent(d.e(), e -> new HashMap<>());
        if (d.added()) {
          props.put(d.aid(), values.get(i));
        } else {
          props.remove(d.aid());
        }
      }
    }
  }

  /** Writes the canonical event of log datom {@code d} of transaction {@code tx} into event. */
  private int event(LogRecord.Entry d, long tx) {
    byte[] vpart = Codec.keyPart(d.encoded());
    ByteBuffer b = ByteBuffer.wrap(event);
    b.putLong(d.e()).putLong(d.aid()).put(vpart).putLong(tx).put((byte) (d.added() ? 1 : 0));
    return b.position();
  }

  private void checkId(long t, long id) {
    if (id < Db.TX0) {
      maxUserId = Math.max(maxUserId, id);
    } else if (id > Db.tToTx(t)) {
      problems.add(LOG, ENTITY_ID, () -> new Object[] {"t", t, "entity", id,
          "message", "a transaction id beyond the record's own"});
    }
  }

  /** The canonical events of log record {@code t} whose entity's bucket is marked. */
  List<byte[]> events(long t, ByteBuffer val, boolean[] buckets) {
    List<byte[]> out = new ArrayList<>();
    long tx = Db.tToTx(t);
    for (LogRecord.Entry d : LogRecord.read(t, val, format)) {
      if (buckets[Digest.bucket(d.e())]) {
        out.add(Arrays.copyOf(event, event(d, tx)));
      }
    }
    return out;
  }

  // ---- BLOBS

  private void walkBlobs() {
    Cursor c = null;
    try {
      c = rt.cursor(SubDb.BLOBS);
      for (boolean ok = c.first(); ok; ok = c.next()) {
        blobs++;
        ByteBuffer k = c.key();
        ByteBuffer v = c.val();
        String key = hex(k, 0, k.limit());
        byte[] full = new byte[v.limit()];
        v.get(0, full);
        if (k.limit() != 16 || !Arrays.equals(Codec.overflowHash(full), bytes(k))) {
          problems.add(BLOBS, HASH_MISMATCH, () -> new Object[] {"key", key,
              "message", "a long value not stored under its hash"});
          continue;
        }
        try {
          ByteBuffer b = ByteBuffer.wrap(full);
          if (Codec.skipKeyPart(b, 0) != full.length) {
            throw new IllegalArgumentException("its encoding is not " + full.length + " bytes");
          }
          Codec.decode(b, 0);
        } catch (RuntimeException e) {
          problems.add(BLOBS, MALFORMED, () -> new Object[] {"key", key,
              "message", String.valueOf(e.getMessage())});
        }
      }
    } catch (RuntimeException e) {
      problems.add(BLOBS, UNREADABLE, () -> new Object[] {"message", String.valueOf(e.getMessage())});
    } finally {
      if (c != null) {
        c.close();
      }
    }
  }

  // ---- the indexes

  private void walkIndex(IndexKeys ix) {
    Digest digest = new Digest();
    digests.put(ix, digest);
    Digest refs = ix == IndexKeys.EAVT ? eavtRefs : ix == IndexKeys.HEAVT ? heavtRefs : null;
    long n = 0;
    int prevLen = -1;
    Cursor c = null;
    try {
      c = rt.cursor(ix.db);
      for (boolean ok = c.first(); ok; ok = c.next()) {
        ByteBuffer k = c.key();
        int len = k.limit();
        n++;
        if (len > MAX_KEY_SIZE) {
          String key = hex(k, 0, len);
          problems.add(ix.check, MALFORMED, () -> new Object[] {"key", key,
              "message", "a key of " + len + " bytes"});
          prevLen = -1;
          continue;
        }
        if (prevLen >= 0 && Codec.compareBytes(prevBuf, 0, prevLen, k, 0, len) >= 0) {
          String key = hex(k, 0, len);
          problems.add(ix.check, OUT_OF_ORDER, () -> new Object[] {"key", key});
        }
        // values are not read: no reader of an index does, and where a damaged node says its
        // value is on overflow pages, LMDB's own reading of it may crash
        int cl = ix.canonical(k, canon);
        if (cl < 0) {
          String key = hex(k, 0, len);
          problems.add(ix.check, MALFORMED, () -> new Object[] {"key", key,
              "message", "not a datom key of this index"});
        } else {
          digest.add(canon, cl);
          if (refs != null && canon[16] == Codec.T_REF) {
            refs.add(canon, cl);
          }
          checkNeighbours(ix, k, prevLen);
          checkSchema(ix, k, prevLen);
          if (ix.order == datalith.index.Index.EAVT) {
            primary(ix, k, cl);
          }
        }
        k.get(0, prev, 0, len); // longer keys were passed over above
        prevLen = len;
      }
    } catch (RuntimeException e) {
      unreadable.add(ix);
      problems.add(ix.check, UNREADABLE, () -> new Object[] {"message", String.valueOf(e.getMessage())});
    } finally {
      if (c != null) {
        c.close();
      }
    }
    entries.put(ix, n);
  }

  /** The checks of key {@code k} against the key before it ({@code prev}), both well formed. */
  private void checkNeighbours(IndexKeys ix, ByteBuffer k, int prevLen) {
    int len = k.limit();
    int tx = ix.txBytes();
    boolean history = ix.history;
    long t1 = Bytes.longAt(k, len - tx);
    if (history && t1 >= Bytes.longAt(k, len - 8)) {
      problems.add(ix.check, BAD_INTERVAL, () -> new Object[] {"datom", datom(canon, history),
          "message", "retracted no later than it was asserted"});
    }
    boolean sameDatom = prevLen == len && Codec.compareBytes(prevBuf, 0, len - tx, k, 0, len - tx) == 0;
    if (sameDatom && !history) {
      problems.add(ix.check, DUPLICATE, () -> new Object[] {"datom", datom(canon, false),
          "message", "current twice, asserted by two transactions"});
    } else if (sameDatom && Bytes.longAt(prev, prevLen - 8) > t1) {
      problems.add(ix.check, OVERLAP, () -> new Object[] {"datom", datom(canon, true),
          "message", "asserted again before an earlier assertion was retracted"});
    }
  }

  /**
   * The current datoms against the schema the log gives (their attribute's last definition):
   * EAVT, no entity holds two values of a cardinality-one attribute, nor a value of another
   * type than its attribute's; AVET, no two entities hold one value of a unique attribute. The
   * transactor refuses each; a database written before it checked an alteration against the
   * data its transaction wrote may hold them, and a rebuild from the log cannot mend them (the
   * log says so): a transaction retracting the extra values does.
   */
  private void checkSchema(IndexKeys ix, ByteBuffer k, int prevLen) {
    if (ix.history) {
      return;
    }
    int len = k.limit();
    if (ix == IndexKeys.EAVT) {
      Attr a = schema.attr(Bytes.longAt(k, 8));
      if (a == null) {
        return;
      }
      if (a.valueType != Codec.T_ANY && a.valueType != Codec.T_EDN && k.get(16) != a.valueType) {
        problems.add(ix.check, VALUE_TYPE, () -> new Object[] {"datom", datom(canon, false),
            "message", "a value of another type than its attribute's " + a.ident});
      }
      if (!a.many && prevLen >= 16 && Codec.compareBytes(prevBuf, 0, 16, k, 0, 16) == 0) {
        problems.add(ix.check, CARDINALITY, () -> new Object[] {"datom", datom(canon, false),
            "message", "a second value of cardinality-one " + a.ident});
      }
    } else if (ix == IndexKeys.AVET) {
      Attr a = schema.attr(Bytes.longAt(k, 0));
      if (a != null && a.isUnique() && prevLen == len
          && Codec.compareBytes(prevBuf, 0, len - 16, k, 0, len - 16) == 0) {
        problems.add(ix.check, UNIQUE, () -> new Object[] {"datom", datom(canon, false),
            "message", "a value of unique " + a.ident + " another entity holds"});
      }
    }
  }

  /** EAVT and HEAVT, whose keys are their canonical forms: events, counts, long values. */
  private void primary(IndexKeys ix, ByteBuffer k, int len) {
    int tx = ix.txBytes();
    int prefix = len - tx;
    System.arraycopy(canon, 0, event, 0, prefix);
    putEvent(prefix, Bytes.longAt(canon, prefix), true);
    if (ix.history) {
      putEvent(prefix, Bytes.longAt(canon, prefix + 8), false);
    } else {
      long aid = Bytes.longAt(canon, 8);
      long[] c = eavtCounts.get(aid);
      if (c == null) {
        eavtCounts.put(aid, c = new long[1]);
      }
      c[0]++;
    }
    if (Codec.isOverflow(k, 16)) {
      ByteBuffer hash = ByteBuffer.allocate(16);
      hash.put(0, k, Codec.overflowHashOffset(k, 16), 16);
      if (rt.get(SubDb.BLOBS, hash) == null) {
        problems.add(ix.check, BLOB_MISSING, () -> new Object[] {"datom", datom(canon, ix.history),
            "message", "its long value is not in BLOBS"});
      }
    }
  }

  private void putEvent(int prefix, long tx, boolean added) {
    ByteBuffer.wrap(event).putLong(prefix, tx).put(prefix + 8, (byte) (added ? 1 : 0));
    indexEvents.add(event, prefix + 9);
  }

  // ---- comparing the digests

  /** Two digests that must agree, and the check a disagreement is counted against. */
  private record Pair(Digest a, Digest b, IndexKeys blame) {}

  private void compare() {
    List<Pair> pairs = new ArrayList<>();
    pair(pairs, IndexKeys.EAVT, digests.get(IndexKeys.EAVT), IndexKeys.AEVT);
    pair(pairs, IndexKeys.EAVT, digests.get(IndexKeys.EAVT), IndexKeys.AVET);
    pair(pairs, IndexKeys.EAVT, eavtRefs, IndexKeys.VAET);
    pair(pairs, IndexKeys.HEAVT, digests.get(IndexKeys.HEAVT), IndexKeys.HAEVT);
    pair(pairs, IndexKeys.HEAVT, digests.get(IndexKeys.HEAVT), IndexKeys.HAVET);
    pair(pairs, IndexKeys.HEAVT, heavtRefs, IndexKeys.HVAET);
    if (logComplete && !unreadable.contains(IndexKeys.EAVT)
        && !unreadable.contains(IndexKeys.HEAVT)) {
      pairs.add(new Pair(logEvents, indexEvents, IndexKeys.EAVT));
    }
    boolean[] any = new boolean[Digest.BUCKETS]; // the buckets where a pair disagrees
    List<boolean[]> marks = new ArrayList<>();
    for (Pair p : pairs) {
      boolean[] m = new boolean[Digest.BUCKETS];
      p.a().markDiffering(p.b(), m);
      marks.add(m);
      for (int k = 0; k < m.length; k++) {
        any[k] |= m[k];
      }
    }
    List<Digest> all = new ArrayList<>(digests.values());
    all.addAll(List.of(logEvents, indexEvents));
    boolean[] examined = new boolean[Digest.BUCKETS];
    long load = 0;
    int taken = 0;
    for (int k = 0; k < any.length; k++) {
      if (!any[k]) {
        continue;
      }
      long n = 0;
      for (Digest dg : all) {
        n += dg.count(k);
      }
      if (taken == 0 || load + n <= EXAMINE_BUDGET) {
        examined[k] = true;
        load += n;
        taken++;
      }
    }
    if (taken == 0) {
      return;
    }
    new Examine(this, examined).run();
    for (int i = 0; i < pairs.size(); i++) {
      int left = 0;
      for (int k = 0; k < Digest.BUCKETS; k++) {
        left += marks.get(i)[k] && !examined[k] ? 1 : 0;
      }
      if (left > 0) {
        int buckets = left;
        problems.add(pairs.get(i).blame().check, DIFFERS, () -> new Object[] {
            "buckets", buckets, "message", "datoms differ in " + buckets
                + " more buckets of entities, past the ones examined datom by datom"});
      }
    }
  }

  private void pair(List<Pair> pairs, IndexKeys base, Digest a, IndexKeys other) {
    if (!unreadable.contains(base) && !unreadable.contains(other)) {
      pairs.add(new Pair(a, digests.get(other), other));
    }
  }

  // ---- the report

  private IPersistentMap report() {
    List<Object> checks = new ArrayList<>();
    checks.add(LOG);
    checks.add(map("records", records, "datoms", logDatoms,
        "checksums", kw(format >= 2 ? "checked" : "absent"), "problems", problems.count(LOG)));
    for (IndexKeys ix : IndexKeys.values()) {
      checks.add(ix.check);
      checks.add(map("datoms", entries.get(ix), "problems", problems.count(ix.check)));
    }
    checks.add(BLOBS);
    checks.add(map("entries", blobs, "problems", problems.count(BLOBS)));
    checks.add(META);
    checks.add(map("problems", problems.count(META)));
    if (pagesRead) {
      checks.add(PAGES);
      checks.add(map("problems", problems.count(PAGES)));
    }
    return map("ok?", problems.total() == 0, "t", metaT, "format", format,
        "checks", PersistentArrayMap.createAsIfByAssoc(checks.toArray()),
        "problem-count", problems.total(), "problems", problems.listed());
  }

  /** A map of alternating names (strings, without colon) and values, the names as keywords. */
  static IPersistentMap map(Object... kvs) {
    for (int i = 0; i < kvs.length; i += 2) {
      kvs[i] = kw((String) kvs[i]);
    }
    return PersistentArrayMap.createAsIfByAssoc(kvs);
  }

  // ---- showing datoms

  /** {@code [e a v tx]}, or {@code [e a v tx retracted-tx]}, of a canonical form. */
  IPersistentVector datom(byte[] b, boolean history) {
    ByteBuffer buf = ByteBuffer.wrap(b);
    int vEnd = Codec.skipKeyPart(buf, 16);
    Object[] out = new Object[history ? 5 : 4];
    out[0] = Bytes.longAt(b, 0);
    out[1] = attrName(Bytes.longAt(b, 8));
    out[2] = value(buf, vEnd);
    out[3] = Bytes.longAt(b, vEnd);
    if (history) {
      out[4] = Bytes.longAt(b, vEnd + 8);
    }
    return PersistentVector.create(out);
  }

  /** {@code [e a v tx added]} of a canonical event. */
  IPersistentVector eventDatom(byte[] b) {
    ByteBuffer buf = ByteBuffer.wrap(b);
    int vEnd = Codec.skipKeyPart(buf, 16);
    return PersistentVector.create(Bytes.longAt(b, 0), attrName(Bytes.longAt(b, 8)),
        value(buf, vEnd), Bytes.longAt(b, vEnd), b[vEnd + 8] == 1);
  }

  private Object attrName(long aid) {
    Keyword ident = schema.ident(aid);
    return ident == null ? (Object) aid : ident;
  }

  /** The value of the key part at 16 of {@code b}, ending at {@code end}; else its bytes in hex. */
  private Object value(ByteBuffer b, int end) {
    try {
      if (!Codec.isOverflow(b.duplicate().limit(end), 16)) {
        return Codec.decode(b, 16);
      }
      ByteBuffer hash = ByteBuffer.allocate(16);
      hash.put(0, b, Codec.overflowHashOffset(b, 16), 16);
      ByteBuffer full = rt.get(SubDb.BLOBS, hash);
      if (full != null) {
        return Codec.decode(full, 0);
      }
    } catch (RuntimeException e) {
      // shown as bytes
    }
    int n = end - 16;
    return "#bytes " + hex(b, 16, Math.min(n, 24)) + (n > 24 ? "... (" + n + " bytes)" : "");
  }

  static String hex(ByteBuffer b, int off, int len) {
    byte[] x = new byte[len];
    b.get(off, x);
    return HexFormat.of().formatHex(x);
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] x = new byte[b.limit()];
    b.get(0, x);
    return x;
  }

  private static Keyword kw(String name) {
    return Keyword.intern(name);
  }
}
