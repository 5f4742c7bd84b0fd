package datalith.store;

import clojure.lang.Keyword;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.FutureTask;

/**
 * A {@link Store} laid over a snapshot of another (the base): its writes go to a delta in
 * memory, and its reads merge the delta with the snapshot in key order. The delta is two
 * {@link MemStore}s: {@code puts}, the entries written, and {@code gone}, the keys of the
 * snapshot deleted (an index's values are empty, so a deletion cannot be a value of
 * {@code puts}); the two hold no key in common. A write transaction writes both and its
 * commit publishes both at once; a read transaction takes both stores' roots of one commit,
 * so it is an MVCC snapshot as a {@code MemStore}'s is, over the fixed base snapshot.
 *
 * <p>A staged import ({@code datalith.conn.Staged}) commits its chunks here, then writes the
 * delta into the base store in one commit: the merged entries through {@link Store#replaceAll}
 * when the delta is large against the base ({@link #replacesAll}), else its puts and deletes
 * through one write transaction ({@link #writeDelta}); either way only while the base store
 * still holds the snapshot, which the caller checks.
 *
 * <p>A staging may <em>derive</em> AEVT from EAVT, and HAEVT from HEAVT ({@link #over(Store,
 * long, boolean)}): their keys hold the same fields, the first two swapped (e|a|... and
 * a|e|...), so its write transactions tell the writer to leave them out
 * ({@link WriteTxn#derives}), and a read of either builds it from the other as of the read's
 * commit ({@link #derivedOf}). The transactor reads neither while it stages, so a staging
 * commonly builds them once, for its write-back, on a helper thread while the writer writes
 * the others ({@link #beginWriteBack}): a quarter of the delta's puts and of their
 * sorting saved, and the derived trees built in key order by bucketing the EAVT keys by
 * attribute (within one attribute they are in AEVT order already).
 *
 * <p>Such a staging makes AVET's keys too, an attribute at a time: a writer leaves out the AVET
 * keys of an attribute it does not read as it writes ({@link WriteTxn#omits}: the transactor
 * reads only unique attributes' AVET keys), and the staging keeps the set of attributes left out
 * (it only grows). A read of AVET that says it stays within one attribute not in that set
 * ({@link Cursor#within}, as every index scan does) reads the delta's own AVET keys, which hold
 * all of that attribute's; any other read of AVET reads the delta's own keys together with the
 * keys made from EAVT's of the attributes left out (e|a|v|t to a|v|e|t, sorted by a radix sort on
 * the helper at write-back, as AEVT is built): the two may share keys (an attribute left out
 * after some of its keys were written, or copied from a small base), and their union is the
 * delta's AVET. A writer still deletes AVET keys of every attribute, so the delta's own never
 * holds one its EAVT retracted. The transactor's puts of AVET were two thirds of an import's tree
 * puts (the JMH {@code TreeBench}). Once a derived sub-database was read at
 * {@link #MATERIALIZE_AFTER} commits, the next write transaction puts the derived entries into
 * the delta and the staging stops deriving, so that reads of it between commits do not each
 * build it.
 *
 * <p>Threading: the base snapshot is one read transaction of the base store, which one thread
 * at a time may use, so this store's transactions (reads and writes) are for one thread at a
 * time too: the one that opened it, or one that took it over. {@link #close} closes the
 * snapshot; the delta stays readable by nothing after that.
 */
public final class LayeredStore implements Store {

  /**
   * The delta's entries (its puts and deletes, overwrites counted again) from which
   * {@link #replacesAll} rewrites every tree rather than put the delta's keys into the base's:
   * one in this many of the base's entries. Putting costs per key of the delta, rewriting per
   * entry of both, and they cost alike at a delta of half to all of the base: {@code lein
   * with-profile +bench run -m datalith.bench.layered-write --base 500000} (a base of 1M keys,
   * the delta's keys spread over it; CPU of the writing thread, load 25-45 on 2 cores): a delta
   * of 1/1 of the base, puts 0.80 s, rewrite 0.81 s; 1/2, 0.39 and 0.38 s (0.53 and 0.73 in
   * another run); 1/4, 0.32 and 0.58 s; 1/8, 0.18 and 0.58 s. At a tie, rewriting wins: it
   * leaves the trees' pages full, where puts into the middle of a tree split them.
   */
  public static final long REPLACE_RATIO = 2;

  /**
   * A base of at most this many entries is copied into the delta, so that no read merges: a
   * new database's (its bootstrap, a few hundred), and others small enough that the copy costs
   * less than a millisecond or two. The delta's cursors then go to {@code replaceAll} as
   * {@code MemStore}'s own, which it may read leaf by leaf.
   */
  public static final long ABSORB_ENTRIES = 10_000;

  private static final Keyword ENTRIES = Keyword.intern("entries");

  /** Reads of derived sub-databases at this many commits make the staging write them. */
  static final int MATERIALIZE_AFTER = 2;

  /** Each sub-database a deriving staging makes, and the one it makes it from. */
  private static final SubDb[][] DERIVED = {{SubDb.AEVT, SubDb.EAVT}, {SubDb.HAEVT, SubDb.HEAVT}};

  private final ReadTxn snapshot; // of the base, open until close
  private final Store base;
  private final boolean absorbed; // the snapshot's entries were copied into the delta
  private final boolean[] baseEmpty; // by SubDb ordinal: reads need not look at the snapshot
  private final boolean[] deletes; // by SubDb ordinal: gone may hold keys of it (a hint)
  private final MemStore puts = MemStore.openInPlace(); // commits between reads edit in place
  private final MemStore gone = MemStore.openInPlace(); // keys deleted from the snapshot
  private final Object publish = new Object(); // commits of the two, and reads of both roots
  private long written; // puts and deletes committed (a key written twice counts twice)
  private long commits; // of the delta, under publish: the commit a read is of
  private boolean deriving; // under publish: AEVT and HAEVT are derived, not written
  private int derivedCommits; // under publish: commits whose derived sub-databases were read
  private Derived derived; // under publish: the derived trees of the last read that built them
  // the attributes whose AVET keys the writer leaves out (WriteTxn.omits): their ids with the
  // sign bit flipped, sorted (the ids' unsigned order, the keys'); replaced whole, under
  // publish, and only ever by a larger set
  private volatile long[] omitted = new long[0];
  private volatile boolean closed;

  private LayeredStore(Store base, ReadTxn snapshot, long absorb, boolean derive) {
    this.deriving = derive;
    this.base = base;
    this.snapshot = snapshot;
    SubDb[] dbs = SubDb.values();
    this.baseEmpty = new boolean[dbs.length];
    this.deletes = new boolean[dbs.length];
    this.absorbed = absorb > 0 && baseEntries(absorb + 1) <= absorb;
    if (absorbed) {
      try (WriteTxn w = puts.beginWrite()) {
        for (SubDb db : dbs) {
          if (derive && derived(db)) {
            continue; // made from the copy of the one it derives from
          }
          try (Cursor c = snapshot.cursor(db)) {
            for (boolean more = c.first(); more; more = c.next()) {
              w.put(db, c.key(), c.val());
            }
          }
        }
        w.commit();
      }
    }
    for (SubDb db : dbs) {
      try (Cursor c = snapshot.cursor(db)) {
        baseEmpty[db.ordinal()] = absorbed || !c.first();
      }
    }
  }

  /**
   * A new store over the last commit of {@code base}, with an empty delta, or with the base's
   * entries in it when there are at most {@code absorb} (then no read merges); holds a read
   * transaction of {@code base} until closed. Staged imports absorb {@link #ABSORB_ENTRIES}.
   */
  public static LayeredStore over(Store base, long absorb) {
    return over(base, absorb, false);
  }

  /**
   * {@link #over(Store, long)}, deriving AEVT and HAEVT when {@code derive} (see the class
   * comment): for a writer that writes each datom's EAVT (HEAVT) key whenever it would write
   * its AEVT (HAEVT) key, as the transactor does, and the base's AEVT holding exactly the
   * swapped keys of its EAVT, as every database's does.
   */
  public static LayeredStore over(Store base, long absorb, boolean derive) {
    ReadTxn snapshot = base.beginRead();
    try {
      return new LayeredStore(base, snapshot, absorb, derive);
    } catch (RuntimeException | Error e) {
      snapshot.close();
      throw e;
    }
  }

  private void checkOpen() {
    if (closed) {
      throw Errors.closed("layered", "The store");
    }
  }

  /** {@inheritDoc} The delta's snapshot as of its last commit, over the base snapshot. */
  @Override
  public ReadTxn beginRead() {
    checkOpen();
    synchronized (publish) {
      ReadTxn p = puts.beginRead();
      return new Read((MemReadTxn) p, (MemReadTxn) gone.beginRead(), commits, deriving);
    }
  }

  /**
   * A read for writing the whole store back ({@link Store#replaceAll}): {@link #beginRead()},
   * whose derived sub-databases, when this store derives them, a helper thread builds
   * meanwhile; a read of one waits for them, and {@link ReadTxn#ready} says whether they are
   * built, so that the writer writes the others first (building them copies every EAVT key of
   * the delta, bucketed by attribute: a tenth of a large import's write-back, on the other core
   * now).
   */
  public ReadTxn beginWriteBack() {
    Read r = (Read) beginRead();
    r.whole = true;
    if (r.deriving) {
      r.deriveAhead();
    }
    return r;
  }

  /**
   * {@inheritDoc} The delta's one write transaction. When a derived sub-database was read
   * since the last commit, first puts the derived entries into the delta in a commit of their
   * own, and stops deriving.
   */
  @Override
  public WriteTxn beginWrite() {
    checkOpen();
    WriteTxn p = puts.beginWrite();
    try {
      WriteTxn g = gone.beginWrite(); // gone's writer is only ever taken after puts'
      boolean derive;
      boolean materializeFirst;
      synchronized (publish) { // both read under one hold; readDerived's lock re-enters it
        derive = deriving;
        materializeFirst = derive && readDerived();
      }
      if (materializeFirst) {
        try {
          materialize(p, g);
        } finally {
          g.close();
          p.close();
        }
        p = puts.beginWrite();
        g = gone.beginWrite();
        derive = false;
      }
      return new Write(p, g, derive);
    } catch (RuntimeException | Error e) {
      p.close();
      throw e;
    }
  }

  /**
   * Whether derived sub-databases were read at {@link #MATERIALIZE_AFTER} commits or more:
   * reads of them go on between commits, so that building them a read costs more than writing
   * them (a staging reads them once, as it begins, loading the database's schema).
   */
  private boolean readDerived() {
    synchronized (publish) {
      return derivedCommits >= MATERIALIZE_AFTER;
    }
  }

  /**
   * Puts the derived sub-databases' entries, as of the last commit, into the delta through
   * {@code p} and {@code g}, commits them, and stops deriving.
   */
  private void materialize(WriteTxn p, WriteTxn g) {
    Derived d;
    try (Read r = (Read) beginRead()) {
      d = derivedOf(r);
    }
    for (SubDb db : new SubDb[] {SubDb.AEVT, SubDb.HAEVT, SubDb.AVET}) {
      if (db == SubDb.AVET && omitted.length == 0) {
        continue; // the delta's own AVET is all of it
      }
      copyTree(d.puts.cursor(db), p, db);
      copyTree(d.gone.cursor(db), g, db);
      if (!d.gone.isEmpty(db)) {
        deletes[db.ordinal()] = true;
      }
    }
    synchronized (publish) {
      p.commit();
      g.commit();
      commits++;
      deriving = false;
      derived = null; // omitted stays: the reads begun before read by it
    }
  }

  private static void copyTree(Cursor from, WriteTxn to, SubDb db) {
    try (from) {
      for (boolean more = from.first(); more; more = from.next()) {
        to.put(db, from.key(), from.val());
      }
    }
  }

  private static boolean derived(SubDb db) {
    return db == SubDb.AEVT || db == SubDb.HAEVT;
  }

  /**
   * The derived sub-databases of {@code r}'s commit: from its EAVT and HEAVT puts, and from its
   * EAVT and HEAVT deletions of the base's keys. Built once a commit (the last one built is
   * kept); counts the commits they are built for ({@link #readDerived}).
   */
  private Derived derivedOf(Read r) {
    synchronized (publish) {
      if (derived != null && derived.commit == r.commit) {
        return derived;
      }
      derivedCommits++;
    }
    long[] om = omitted;
    Derived d = new Derived(r.commit, swapped(r.puts, om), swapped(r.gone, om));
    synchronized (publish) {
      derived = d;
    }
    return d;
  }

  /**
   * A snapshot whose derived sub-databases are made from {@code from}'s, and nothing else: AEVT
   * and HAEVT, and AVET when the writer left out the AVET keys of the attributes
   * {@code omitted} (its own keys and the ones made for those).
   */
  private static MemReadTxn swapped(MemReadTxn from, long[] omitted) {
    BTree.Node[] roots = new BTree.Node[SubDb.values().length];
    for (SubDb[] pair : DERIVED) {
      roots[pair[0].ordinal()] = DerivedKeys.swapped(from.root(pair[1]));
    }
    if (omitted.length > 0) {
      roots[SubDb.AVET.ordinal()] =
          DerivedKeys.avet(from.root(SubDb.EAVT), from.root(SubDb.AVET), omitted);
    }
    return new MemReadTxn(roots, null);
  }

  /**
   * The place of attribute {@code attr} among {@code omitted} (ids with the sign bit flipped,
   * sorted: the attributes in their keys' order), or a negative number when it is not one.
   */
  static int placeOf(long[] omitted, long attr) {
    return omitted.length == 0 ? -1 : Arrays.binarySearch(omitted, attr ^ Long.MIN_VALUE);
  }

  /** Whether {@code attr} is one of {@code omitted}. */
  static boolean omitted(long[] omitted, long attr) {
    return placeOf(omitted, attr) >= 0;
  }

  /** The attribute of an index key that begins with one: its first 8 bytes, big-endian. */
  static long attrOf(ByteBuffer key) {
    long a = 0;
    for (int i = key.position(), end = i + 8; i < end; i++) {
      a = a << 8 | key.get(i) & 0xff;
    }
    return a;
  }

  /** The derived sub-databases of one commit: puts and deletions of the base's keys. */
  private record Derived(long commit, MemReadTxn puts, MemReadTxn gone) {}

  @Override
  public boolean durable() {
    return false;
  }

  /**
   * Whether the delta is large enough against the base ({@link #REPLACE_RATIO}) that writing
   * it back should rewrite every tree ({@link Store#replaceAll} of {@link #beginRead()}) rather
   * than put its keys ({@link #writeDelta}); always when the base was absorbed (the delta
   * holds no deletion of its keys). Counts the base's entries (LMDB: from its trees' records;
   * another store: by walking its snapshot).
   */
  public boolean replacesAll() {
    checkOpen();
    return absorbed || written * REPLACE_RATIO >= baseEntries(written * REPLACE_RATIO);
  }

  /** The base's entries, or any count of at least {@code enough} once that many are seen. */
  private long baseEntries(long enough) {
    long n = 0;
    for (SubDb db : SubDb.values()) {
      if (base instanceof LmdbStore lmdb) {
        n += lmdb.pageStats(db).get(ENTRIES);
        continue;
      }
      try (Cursor c = snapshot.cursor(db)) {
        for (boolean more = c.first(); more && n < enough; more = c.next()) {
          n++;
        }
      }
    }
    return n;
  }

  /**
   * Writes the delta as of its last commit into {@code w}, a write transaction of a store that
   * holds the base snapshot (the caller checks it): per sub-database, its puts and deletes in
   * key order. Commits nothing.
   *
   * @throws IllegalStateException when the base was absorbed: only {@code replaceAll} writes it
   */
  public void writeDelta(WriteTxn w) {
    if (absorbed) {
      throw new IllegalStateException("The base was copied into the delta: replace it all");
    }
    try (Read r = (Read) beginRead()) {
      for (SubDb db : SubDb.values()) {
        try (Cursor p = r.putsOf(db).cursor(db); Cursor g = r.goneOf(db).cursor(db)) {
          boolean pv = p.first();
          boolean gv = g.first();
          while (pv || gv) {
            if (gv && (!pv || MergedCursor.compare(g.key(), p.key()) < 0)) {
              w.delete(db, g.key());
              gv = g.next();
            } else {
              w.put(db, p.key(), p.val());
              pv = p.next();
            }
          }
        }
      }
    }
  }

  /**
   * {@inheritDoc} Closes the base snapshot; the delta is dropped. Idempotent. The caller holds
   * no transaction of this store.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      snapshot.close();
    } finally {
      puts.close();
      gone.close();
    }
  }

  /** A read: the delta's two snapshots of one commit, over the base snapshot. */
  private final class Read implements ReadTxn {
    final MemReadTxn puts;
    final MemReadTxn gone;
    final long commit; // the delta's commit it reads
    final boolean deriving; // the derived sub-databases are made from the others
    private FutureTask<Derived> ahead; // the derived sub-databases built on a helper, or null
    // reads whole sub-databases (the write-back's): AVET's cursor is the merge's own, which
    // replaceAll reads leaf by leaf, not one waiting for a hint
    boolean whole;
    private final boolean[] interrupted = new boolean[1]; // while it waited for the helper

    Read(MemReadTxn puts, MemReadTxn gone, long commit, boolean deriving) {
      this.puts = puts;
      this.gone = gone;
      this.commit = commit;
      this.deriving = deriving;
    }

    /** Builds the derived sub-databases on a helper thread ({@link #beginWriteBack}). */
    void deriveAhead() {
      FutureTask<Derived> task = new FutureTask<>(() -> derivedOf(this));
      Thread t = new Thread(task, "datalith-derive");
      t.setDaemon(true);
      try {
        t.start();
        ahead = task;
      } catch (OutOfMemoryError e) {
        // no thread to be had: built by the first read of one, as without a helper
      }
    }

    /**
     * This read's derived sub-databases: the helper's once it is done, else built here. A wait
     * for the helper is not interrupted (the writer waiting may not have its interrupt status
     * set while it writes: it would close the file's channel); an interrupt that comes meanwhile
     * is set again when this read closes.
     */
    private Derived derivedTrees() {
      return ahead == null ? derivedOf(this) : PlatformThreads.await(ahead, interrupted);
    }

    /**
     * Whether the delta's entries of {@code db} are made (in part, for AVET) from another's:
     * AEVT and HAEVT when deriving, AVET once the writer left out an attribute's keys.
     */
    private boolean made(SubDb db) {
      return deriving && (derived(db) || db == SubDb.AVET && omitted.length > 0);
    }

    /**
     * Whether a read of {@code db} that stays within {@code prefix} may read the delta's own
     * entries though it makes some: AVET's of one attribute that the writer never left out.
     */
    private boolean ownHolds(SubDb db, ByteBuffer prefix) {
      return db == SubDb.AVET && prefix.remaining() >= 8 && !omitted(omitted, attrOf(prefix));
    }

    /** The delta's entries of {@code db}: its own, or made from another's when derived. */
    MemReadTxn putsOf(SubDb db) {
      return made(db) ? derivedTrees().puts : puts;
    }

    /** The delta's deletions of the base's keys of {@code db}, likewise. */
    MemReadTxn goneOf(SubDb db) {
      return made(db) ? derivedTrees().gone : gone;
    }

    @Override
    public boolean ready(SubDb db) {
      return !made(db) || ahead == null || ahead.isDone();
    }

    /**
     * {@inheritDoc} The delta's own cursor when the base holds nothing of {@code db} and no key
     * of it was deleted (a {@code MemStore} cursor, which {@code replaceAll} may read whole
     * leaves of); the base's when the delta holds nothing of it; else the merge of the three.
     */
    @Override
    public Cursor cursor(SubDb db) {
      checkOpen();
      if (db == SubDb.AVET && made(db) && !whole) {
        return new AvetCursor();
      }
      return cursorOf(db, putsOf(db), goneOf(db));
    }

    /** A cursor over the base's {@code db} with {@code puts} and {@code gone} laid on it. */
    private Cursor cursorOf(SubDb db, MemReadTxn puts, MemReadTxn gone) {
      boolean noDeletes = gone.isEmpty(db);
      if (noDeletes && baseEmpty[db.ordinal()]) {
        return puts.cursor(db);
      }
      if (noDeletes && puts.isEmpty(db)) {
        return snapshot.cursor(db);
      }
      return new MergedCursor(snapshot.cursor(db), puts.cursor(db), gone.cursor(db));
    }

    @Override
    public ByteBuffer get(SubDb db, ByteBuffer key) {
      checkOpen();
      boolean own = !made(db) || ownHolds(db, key);
      MemReadTxn puts = own ? this.puts : putsOf(db);
      MemReadTxn gone = own ? this.gone : goneOf(db);
      ByteBuffer v = puts.get(db, key);
      if (v != null || baseEmpty[db.ordinal()] || gone.get(db, key) != null) {
        return v;
      }
      return snapshot.get(db, key);
    }

    /**
     * AVET's cursor while the staging makes some of its keys: until a hint says otherwise
     * ({@link #within}), it reads the union of the delta's own keys and the made ones; within
     * one attribute whose keys the delta holds whole, the delta's own. Takes its cursor at its
     * first seek, so that a hint given first builds nothing.
     */
    private final class AvetCursor implements Cursor {
      private boolean own; // reads the delta's own keys
      private Cursor at; // null until positioned, and after a hint that changed what it reads

      @Override
      public boolean within(ByteBuffer prefix) {
        boolean o = ownHolds(SubDb.AVET, prefix);
        if (o == own) {
          return true;
        }
        own = o;
        if (at == null) {
          return true;
        }
        at.close();
        at = null;
        return false;
      }

      private Cursor at() {
        if (at == null) {
          at = own ? cursorOf(SubDb.AVET, puts, gone)
              : cursorOf(SubDb.AVET, putsOf(SubDb.AVET), goneOf(SubDb.AVET));
        }
        return at;
      }

      private Cursor positioned() {
        if (at == null) {
          throw new IllegalStateException("A step of a cursor that has not been positioned");
        }
        return at;
      }

      @Override
      public boolean seek(ByteBuffer key) {
        return at().seek(key);
      }

      @Override
      public boolean first() {
        return at().first();
      }

      @Override
      public boolean last() {
        return at().last();
      }

      @Override
      public boolean next() {
        return at != null && at.next();
      }

      @Override
      public boolean prev() {
        return at != null && at.prev();
      }

      @Override
      public long skipRun(ByteBuffer prefix) {
        return at == null ? 0 : at.skipRun(prefix);
      }

      @Override
      public void warm(ByteBuffer[] keys, int n) {
        at().warm(keys, n);
      }

      @Override
      public ByteBuffer key() {
        return positioned().key();
      }

      @Override
      public ByteBuffer val() {
        return positioned().val();
      }

      @Override
      public void close() {
        if (at != null) {
          at.close();
          at = null;
        }
      }
    }

    /** {@inheritDoc} Waits for a helper still building the derived sub-databases first. */
    @Override
    public void close() {
      try {
        if (ahead != null) {
          try {
            derivedTrees();
          } catch (RuntimeException | Error e) {
            // the helper's failure is a read's to throw, not the close's
          }
        }
        puts.close();
      } finally {
        gone.close();
        if (interrupted[0]) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /** The write: the delta's two write transactions, committed together. */
  private final class Write implements WriteTxn {
    private final WriteTxn puts;
    private final WriteTxn gone;
    private final List<Expected> expected = new ArrayList<>();
    private final boolean derive; // AEVT and HAEVT are derived: not written
    private long writes;

    Write(WriteTxn puts, WriteTxn gone, boolean derive) {
      this.puts = puts;
      this.gone = gone;
      this.derive = derive;
    }

    @Override
    public boolean derives(SubDb db) {
      return derive && derived(db);
    }

    /**
     * {@inheritDoc} AVET's keys of any attribute while deriving: the attribute joins the ones
     * this staging makes, and the put counts as one written.
     */
    @Override
    public boolean omits(SubDb db, long attr) {
      if (!derive || db != SubDb.AVET) {
        return false;
      }
      if (!omitted(omitted, attr)) {
        synchronized (publish) {
          long[] om = omitted;
          int x = placeOf(om, attr);
          if (x < 0) {
            x = -x - 1;
            long[] more = new long[om.length + 1];
            System.arraycopy(om, 0, more, 0, x);
            more[x] = attr ^ Long.MIN_VALUE;
            System.arraycopy(om, x, more, x + 1, om.length - x);
            omitted = more;
          }
        }
      }
      writes++;
      return true;
    }

    /** Counts a write, twice when it also stands for its derived sub-database's. */
    private void count(SubDb db) {
      writes += derive && (db == SubDb.EAVT || db == SubDb.HEAVT) ? 2 : 1;
    }

    private void checkNotDerived(SubDb db) {
      if (derives(db)) {
        throw new IllegalStateException("A write of " + db + ", which this store derives");
      }
    }

    @Override
    public void put(SubDb db, ByteBuffer key, ByteBuffer val) {
      checkNotDerived(db);
      puts.put(db, key, val);
      if (deletes[db.ordinal()]) {
        gone.delete(db, key);
      }
      count(db);
    }

    /** {@inheritDoc} Marks the key deleted from the base when the base holds it. */
    @Override
    public void delete(SubDb db, ByteBuffer key) {
      checkNotDerived(db);
      puts.delete(db, key);
      if (!baseEmpty[db.ordinal()] && snapshot.get(db, key) != null) {
        deletes[db.ordinal()] = true;
        gone.put(db, key, BTree.EMPTY);
      }
      count(db);
    }

    @Override
    public void expect(SubDb db, ByteBuffer key, ByteBuffer val) {
      expected.add(new Expected("layered", db, key, val));
    }

    /** {@inheritDoc} Checks the expected values against the last commit, then publishes. */
    @Override
    public void commit() {
      checkOpen();
      if (!expected.isEmpty()) {
        try (ReadTxn r = beginRead()) {
          for (Expected x : expected) {
            x.check("layered", r.get(x.db, x.directKey()));
          }
        }
      }
      synchronized (publish) {
        puts.commit();
        gone.commit();
        commits++;
      }
      written += writes;
    }

    @Override
    public void close() {
      try {
        gone.close();
      } finally {
        puts.close();
      }
    }
  }
}
