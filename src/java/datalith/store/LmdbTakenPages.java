package datalith.store;

import java.util.Arrays;
import java.util.BitSet;

/**
 * The pages of the last commit's trees (transaction {@link #txn}) that an
 * {@link LmdbDirectCommit}'s new trees take as they are, rather than writing their entries
 * again: leaf pages that a merge of the old tree with a staged delta passes whole, with nothing
 * laid in them, and the overflow pages of their values. They stay referenced, so they must not
 * go to the free list with the rest of the old trees' pages ({@link #removeFrom}).
 *
 * <p>Only a cursor reading transaction {@code txn}'s own snapshot may give pages here: the pages
 * of an older snapshot may be free in the last commit, and LMDB would write over them.
 */
final class LmdbTakenPages {
  /** The id of the last commit's transaction, whose pages may be taken. */
  final long txn;
  private long[] firsts = new long[64];
  private long[] counts = new long[64];
  private int runs;
  private long total;

  LmdbTakenPages(long txn) {
    this.txn = txn;
  }

  /** Notes {@code count} pages from {@code first} on as taken. */
  void add(long first, long count) {
    if (runs == firsts.length) {
      firsts = Arrays.copyOf(firsts, 2 * runs);
      counts = Arrays.copyOf(counts, 2 * runs);
    }
    firsts[runs] = first;
    counts[runs] = count;
    runs++;
    total += count;
  }

  /** How many pages were taken. */
  long total() {
    return total;
  }

  /**
   * {@code pages} (distinct page numbers) without the taken ones, in the same order; null when
   * a taken page is not among them, or was taken twice (the new trees must then not be
   * committed: the free list could not be made right).
   */
  long[] removeFrom(long[] pages) {
    BitSet taken = new BitSet();
    for (int r = 0; r < runs; r++) {
      if (firsts[r] < 0 || firsts[r] + counts[r] > Integer.MAX_VALUE) {
        return null;
      }
      for (long n = firsts[r]; n < firsts[r] + counts[r]; n++) {
        if (taken.get((int) n)) {
          return null;
        }
        taken.set((int) n);
      }
    }
    long[] kept = new long[pages.length];
    int k = 0;
    long found = 0;
    for (long n : pages) {
      if (n >= 0 && n <= Integer.MAX_VALUE && taken.get((int) n)) {
        found++;
      } else {
        kept[k++] = n;
      }
    }
    return found == total ? Arrays.copyOf(kept, k) : null;
  }
}
