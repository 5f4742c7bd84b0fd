package datalith.db;

import clojure.lang.ExceptionInfo;
import clojure.lang.Keyword;
import datalith.codec.Codec;
import datalith.store.Cursor;
import datalith.store.ReadTxn;
import datalith.store.SubDb;
import java.nio.ByteBuffer;

/**
 * The part of {@link Verify} that reads an LMDB sub-database the way lookups do. A walk from
 * the first key to the last follows the leaf pages one after another and never compares a key
 * with the keys of the branch pages, which route every seek from the root: one damaged there
 * sends the seeks for a range of keys to the wrong leaf, so that lookups miss keys the walk
 * finds.
 *
 * <p>A branch key K between leaf pages A and B is sound when {@code last(A) < K <= first(B)}.
 * Damaged below that range, it sends {@code last(A)} to B; damaged above it, it sends the
 * keys from K up to the damaged value to A, where the seek finds no key at or after them and
 * steps to {@code first(B)}, which is right only for keys up to it: the smallest key after
 * {@code first(B)} (it with a zero byte appended) then finds {@code first(B)} instead of the
 * key after it (LMDB returns it; the Java page reader finds it below the probe and throws
 * {@code :store/corrupt}, which counts as the same problem). So at each page two seeks, each
 * from the root, show the routing sound or not: one for the page's last key, one for its
 * first key plus a zero byte. Higher branch keys bound subtrees whose edges are leaf pages'
 * edges too.
 *
 * <p>A page's last key is where {@link Cursor#skipRun} with an empty prefix stops (LMDB: the
 * last key of the current leaf page). Each kind of probe has its own cursor, whose previous
 * key lies on an earlier page, so that LMDB searches from the root rather than within the page
 * it is on. For LMDB stores only: an in-memory store has no pages to damage.
 */
final class SeekCheck {
  static final Keyword MISROUTED = Keyword.intern("misrouted");
  private static final Keyword CORRUPT = Keyword.intern("store", "corrupt");
  private static final Keyword ERROR = Keyword.intern("error");
  private static final ByteBuffer ALL = ByteBuffer.allocate(0); // the prefix of every key

  private SeekCheck() {}

  /** Checks the routing to every leaf page of {@code db}; problems under {@code check}. */
  static void run(ReadTxn rt, SubDb db, Keyword check, Problems problems) {
    try (Cursor walk = rt.cursor(db); Cursor afterFirst = rt.cursor(db);
        Cursor last = rt.cursor(db)) {
      boolean ok = walk.first();
      while (ok) {
        ByteBuffer first = walk.key();
        int n = first.limit();
        ByteBuffer probe = null;
        if (n < Verify.MAX_KEY_SIZE) {
          probe = ByteBuffer.allocate(n + 1);
          probe.put(0, first, 0, n);
        }
        ok = walk.next();
        if (probe != null) {
          expect(afterFirst, probe, ok ? walk.key() : null, check, problems);
        }
        if (ok) {
          walk.skipRun(ALL);
          expect(last, walk.key(), walk.key(), check, problems);
          ok = walk.next();
        }
      }
    } catch (RuntimeException e) {
      problems.add(check, Verify.UNREADABLE, () -> new Object[] {"message",
          String.valueOf(e.getMessage())});
    }
  }

  /**
   * Seeks {@code probe} with {@code c}, which must land on {@code want} (null: on no key); a
   * seek that finds the damage itself ({@code :store/corrupt}) is misrouted too.
   */
  private static void expect(Cursor c, ByteBuffer probe, ByteBuffer want, Keyword check,
      Problems problems) {
    String key = Verify.hex(probe, 0, probe.limit());
    boolean found;
    try {
      found = c.seek(probe);
    } catch (ExceptionInfo e) {
      if (!CORRUPT.equals(e.getData().valAt(ERROR))) {
        throw e;
      }
      problems.add(check, MISROUTED, () -> new Object[] {"key", key, "found", null,
          "message", "a seek for this key finds a damaged branch page: " + e.getMessage()});
      return;
    }
    if (want == null ? !found
        : found && Codec.compareBytes(c.key(), 0, c.key().limit(), want, 0, want.limit()) == 0) {
      return;
    }
    String landed = found ? Verify.hex(c.key(), 0, c.key().limit()) : null;
    problems.add(check, MISROUTED, () -> new Object[] {"key", key, "found", landed,
        "message", "a seek for this key lands elsewhere: a branch page is damaged"});
  }
}
