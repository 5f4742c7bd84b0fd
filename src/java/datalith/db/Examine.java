package datalith.db;

import datalith.store.Cursor;
import datalith.store.SubDb;
import datalith.codec.Bytes;
import datalith.codec.Codec;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The second look of {@link Verify}, where digests disagree: the datoms of the entities in the
 * marked buckets are read from every index and from the log, and compared one by one, so that a
 * report names each datom an index lacks ({@code :missing}) or holds wrongly ({@code :extra}).
 * What an index should hold is the log replayed for those entities; when the log could not be
 * read whole, it is what most of the readable indexes of the same kind (EAVT AEVT AVET, or the
 * history ones) hold. Holds the datoms of the marked buckets only.
 */
final class Examine {
  private final Verify v;
  private final boolean[] buckets;

  Examine(Verify v, boolean[] buckets) {
    this.v = v;
    this.buckets = buckets;
  }

  void run() {
    Map<IndexKeys, TreeSet<byte[]>> found = new EnumMap<>(IndexKeys.class);
    for (IndexKeys ix : IndexKeys.values()) {
      if (!v.unreadable.contains(ix)) {
        TreeSet<byte[]> s = collect(ix);
        if (s != null) {
          found.put(ix, s);
        }
      }
    }
    List<byte[]> events = v.logComplete ? logEvents() : null;
    TreeSet<byte[]> current;
    TreeSet<byte[]> history;
    if (events != null) {
      current = sorted();
      history = sorted();
      replay(events, current, history);
    } else {
      current = majority(found, IndexKeys.EAVT, IndexKeys.AEVT, IndexKeys.AVET);
      history = majority(found, IndexKeys.HEAVT, IndexKeys.HAEVT, IndexKeys.HAVET);
    }
    for (Map.Entry<IndexKeys, TreeSet<byte[]>> en : found.entrySet()) {
      IndexKeys ix = en.getKey();
      TreeSet<byte[]> have = en.getValue();
      for (byte[] d : ix.history ? history : current) {
        if ((!ix.refsOnly() || d[16] == Codec.T_REF) && !have.contains(d)) {
          v.problems.add(ix.check, Verify.MISSING, () -> new Object[] {"datom",
              v.datom(d, ix.history)});
        }
      }
      TreeSet<byte[]> want = ix.history ? history : current;
      for (byte[] d : have) {
        if (!want.contains(d)) {
          v.problems.add(ix.check, Verify.EXTRA, () -> new Object[] {"datom",
              v.datom(d, ix.history)});
        }
      }
    }
  }

  private static TreeSet<byte[]> sorted() {
    return new TreeSet<>(Arrays::compareUnsigned);
  }

  /** The canonical forms of {@code ix}'s datoms in the marked buckets; null if unreadable. */
  private TreeSet<byte[]> collect(IndexKeys ix) {
    TreeSet<byte[]> out = sorted();
    byte[] canon = new byte[IndexKeys.MAX_CANONICAL];
    try (Cursor c = v.rt.cursor(ix.db)) {
      for (boolean ok = c.first(); ok; ok = c.next()) {
        ByteBuffer k = c.key();
        int n = k.limit() < IndexKeys.MAX_CANONICAL ? ix.canonical(k, canon) : -1;
        if (n >= 0 && buckets[Digest.bucket(Bytes.longAt(canon, 0))]) {
          out.add(Arrays.copyOf(canon, n));
        }
      }
    } catch (RuntimeException e) {
      return null; // the first walk read it whole; reported if it failed there
    }
    return out;
  }

  /** The log's events of the entities in the marked buckets, in any order; null if unreadable. */
  private List<byte[]> logEvents() {
    List<byte[]> out = new ArrayList<>();
    try (Cursor c = v.rt.cursor(SubDb.LOG)) {
      for (boolean ok = c.first(); ok; ok = c.next()) {
        out.addAll(v.events(LogRecord.t(c.key()), c.val(), buckets));
      }
    } catch (RuntimeException e) {
      return null;
    }
    return out;
  }

  /**
   * Replays events (canonical {@code e|aid|vpart|tx|added}): grouped by datom, in tx order, each
   * assertion opens an interval and the retraction after it closes it into {@code history}
   * ({@code e|aid|vpart|asserted|retracted}); one left open is {@code current}.
   */
  private void replay(List<byte[]> events, TreeSet<byte[]> current, TreeSet<byte[]> history) {
    events.sort(Arrays::compareUnsigned); // by datom, then tx (prefixes are self-delimiting)
    byte[] open = null; // the assertion of the datom being replayed, while it is current
    for (int i = 0; i <= events.size(); i++) {
      byte[] ev = i < events.size() ? events.get(i) : null;
      if (open != null && (ev == null || !sameDatom(open, ev))) {
        current.add(Arrays.copyOf(open, open.length - 1));
        open = null;
      }
      if (ev == null) {
        break;
      }
      int p = ev.length - 9;
      if (ev[p + 8] == 1) {
        if (open != null) {
          inconsistent(ev, "asserted while it was current");
        }
        open = ev;
      } else if (open == null) {
        inconsistent(ev, "retracted while it was not current");
      } else {
        byte[] h = Arrays.copyOf(open, p + 16);
        ByteBuffer.wrap(h).putLong(p + 8, Bytes.longAt(ev, p));
        history.add(h);
        open = null;
      }
    }
  }

  private static boolean sameDatom(byte[] a, byte[] b) {
    return a.length == b.length && Arrays.equals(a, 0, a.length - 9, b, 0, b.length - 9);
  }

  private void inconsistent(byte[] ev, String what) {
    v.problems.add(Verify.LOG, Verify.INCONSISTENT, () -> new Object[] {"datom", v.eventDatom(ev),
        "message", what});
  }

  /** The datoms most of the readable indexes {@code kinds} hold. */
  private static TreeSet<byte[]> majority(Map<IndexKeys, TreeSet<byte[]>> found,
      IndexKeys... kinds) {
    List<TreeSet<byte[]>> sets = new ArrayList<>();
    for (IndexKeys ix : kinds) {
      if (found.containsKey(ix)) {
        sets.add(found.get(ix));
      }
    }
    TreeSet<byte[]> out = sorted();
    for (TreeSet<byte[]> s : sets) {
      for (byte[] d : s) {
        int votes = 0;
        for (TreeSet<byte[]> o : sets) {
          votes += o.contains(d) ? 1 : 0;
        }
        if (votes > sets.size() / 2) {
          out.add(d);
        }
      }
    }
    return out;
  }
}
