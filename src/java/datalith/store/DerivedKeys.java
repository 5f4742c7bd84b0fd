package datalith.store;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

/**
 * A staging's trees made from its EAVT's and HEAVT's keys ({@link LayeredStore}), built bottom
 * up ({@link BTree#build}) rather than put key by key. Every key is an index's: its value is
 * empty.
 *
 * <p>AEVT (HAEVT) is EAVT's (HEAVT's) keys with their first two fields swapped
 * ({@link #swapped}): bucketed by attribute, each bucket's keys are already in order.
 *
 * <p>AVET ({@link #avet}) is the EAVT keys of the attributes the writer left out, their fields
 * reordered (e|a|v|t to a|v|e|t), sorted, and merged with the AVET keys the writer wrote. The
 * keys are bucketed by attribute (EAVT's keys, of one attribute, come in entity order), then
 * each attribute's sorted by a least-significant-byte radix sort of their next 16 bytes,
 * carried in two longs a key so that its passes read arrays in order, skipping the bytes every
 * key of the attribute shares (a value's type tag, a small number's high bytes); keys alike in
 * all 16 (strings with a common start) are then sorted by the rest, by a most-significant-byte
 * radix sort of their positions with an insertion sort for short runs.
 */
final class DerivedKeys {
  private static final VarHandle LONG_AT =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** The shortest key of EAVT or AVET: two ids, a value's tag, a transaction. */
  private static final int AVET_MIN = 25;

  /** Runs shorter than this are sorted by insertion. */
  private static final int SHORT_RUN = 24;

  private DerivedKeys() {}

  /**
   * The tree of the keys of {@code root} (an EAVT or HEAVT tree, may be null) with their first
   * two 8-byte fields swapped, built in key order: the keys bucketed by their second field (the
   * attribute), a stable counting sort over the attributes, keeps each bucket's keys in the
   * order of their first field and what follows, which is the swapped keys' order.
   */
  static BTree.Node swapped(BTree.Node root) {
    if (root == null) {
      return null;
    }
    List<BTree.Leaf> leaves = BTree.leaves(root);
    int n = 0;
    for (BTree.Leaf leaf : leaves) {
      n += leaf.size;
    }
    long[] attrs = new long[n];
    int k = 0;
    for (BTree.Leaf leaf : leaves) {
      for (int i = 0; i < leaf.size; i++, k++) {
        checkedLength(leaf, i, 16);
        // unsigned order as signed
        attrs[k] = (long) LONG_AT.get(leaf.data(), leaf.keyStart(i) + 8) ^ Long.MIN_VALUE;
      }
    }
    // the distinct attributes, sorted: few, and a key's is mostly the one before's (EAVT keys
    // come entity by entity), so a sorted insertion rather than a sort of all n
    long[] distinct = new long[16];
    int m = 0;
    for (int i = 0; i < n; i++) {
      long a = attrs[i];
      if (i > 0 && a == attrs[i - 1]) {
        continue;
      }
      int x = Arrays.binarySearch(distinct, 0, m, a);
      if (x < 0) {
        x = -x - 1;
        if (m == distinct.length) {
          distinct = Arrays.copyOf(distinct, 2 * m);
        }
        System.arraycopy(distinct, x, distinct, x + 1, m - x);
        distinct[x] = a;
        m++;
      }
    }
    // each key's bucket, then where each bucket's keys and their bytes begin
    int[] bucket = new int[n];
    int[] keysAt = new int[m + 1];
    int[] bytesAt = new int[m + 1];
    k = 0;
    for (BTree.Leaf leaf : leaves) {
      for (int i = 0; i < leaf.size; i++, k++) {
        int b = k > 0 && attrs[k] == attrs[k - 1]
            ? bucket[k - 1] : Arrays.binarySearch(distinct, 0, m, attrs[k]);
        bucket[k] = b;
        keysAt[b + 1]++;
        bytesAt[b + 1] += leaf.keyLength(i);
      }
    }
    for (int b = 0; b < m; b++) {
      keysAt[b + 1] += keysAt[b];
      bytesAt[b + 1] += bytesAt[b];
    }
    // each key, swapped, to the next place of its bucket: a stable counting sort
    byte[] out = new byte[bytesAt[m]];
    int[] outAt = new int[n + 1];
    outAt[n] = bytesAt[m];
    k = 0;
    for (BTree.Leaf leaf : leaves) {
      byte[] data = leaf.data();
      for (int i = 0; i < leaf.size; i++, k++) {
        int b = bucket[k];
        int from = leaf.keyStart(i);
        int len = leaf.keyLength(i);
        int to = bytesAt[b];
        outAt[keysAt[b]++] = to;
        bytesAt[b] += len;
        System.arraycopy(data, from + 8, out, to, 8);
        System.arraycopy(data, from, out, to + 8, 8);
        System.arraycopy(data, from + 16, out, to + 16, len - 16);
      }
    }
    return BTree.build(out, outAt, n);
  }

  /**
   * The tree of AVET's keys: {@code avet}'s (may be null) and, made from {@code eavt}'s (may be
   * null), those of the attributes in {@code omitted} (as the staging keeps them: in their
   * keys' order, {@link LayeredStore#placeOf}), each key once.
   */
  static BTree.Node avet(BTree.Node eavt, BTree.Node avet, long[] omitted) {
    List<BTree.Leaf> from = BTree.leaves(eavt);
    // the keys and bytes of each omitted attribute (a bucket, by its place in omitted, which is
    // its keys' place among the attributes')
    int m = omitted.length;
    int[] keysAt = new int[m + 1];
    long[] bytesAt = new long[m + 1];
    long lastAttr = 0;
    int lastBucket = -1;
    boolean seen = false;
    for (BTree.Leaf leaf : from) {
      for (int i = 0; i < leaf.size; i++) {
        int len = checkedLength(leaf, i, AVET_MIN);
        long a = (long) LONG_AT.get(leaf.data(), leaf.keyStart(i) + 8);
        if (!seen || a != lastAttr) { // EAVT's keys come an entity's attributes at a time
          seen = true;
          lastAttr = a;
          lastBucket = Math.max(-1, LayeredStore.placeOf(omitted, a));
        }
        if (lastBucket >= 0) {
          keysAt[lastBucket + 1]++;
          bytesAt[lastBucket + 1] += len;
        }
      }
    }
    for (int b = 0; b < m; b++) {
      keysAt[b + 1] += keysAt[b];
      bytesAt[b + 1] += bytesAt[b];
    }
    int n = keysAt[m];
    if (bytesAt[m] > Integer.MAX_VALUE - 16) {
      throw new IllegalStateException("A staging's AVET of " + bytesAt[m] + " bytes");
    }
    int[] bucketStart = Arrays.copyOf(keysAt, m + 1);
    // the keys made, reordered, attribute by attribute, each in EAVT's order (entity and
    // value): key k at made[at[k], at[k + 1])
    byte[] made = new byte[(int) bytesAt[m]];
    int[] at = new int[n + 1];
    at[n] = made.length;
    seen = false;
    for (BTree.Leaf leaf : from) {
      byte[] data = leaf.data();
      for (int i = 0; i < leaf.size; i++) {
        int start = leaf.keyStart(i);
        long a = (long) LONG_AT.get(data, start + 8);
        if (!seen || a != lastAttr) {
          seen = true;
          lastAttr = a;
          lastBucket = Math.max(-1, LayeredStore.placeOf(omitted, a));
        }
        if (lastBucket < 0) {
          continue;
        }
        int len = leaf.keyLength(i);
        int to = (int) bytesAt[lastBucket];
        at[keysAt[lastBucket]++] = to;
        bytesAt[lastBucket] += len;
        int v = len - 24; // the value's bytes
        LONG_AT.set(made, to, a);
        System.arraycopy(data, start + 16, made, to + 8, v);
        LONG_AT.set(made, to + 8 + v, (long) LONG_AT.get(data, start)); // e
        LONG_AT.set(made, to + 16 + v, (long) LONG_AT.get(data, start + len - 8)); // t
      }
    }
    int[] order = new int[n];
    int largest = 0;
    for (int b = 0; b < m; b++) {
      largest = Math.max(largest, bucketStart[b + 1] - bucketStart[b]);
    }
    Scratch scratch = new Scratch(largest, n);
    for (int b = 0; b < m; b++) {
      sortAttribute(made, at, order, bucketStart[b], bucketStart[b + 1], scratch);
    }
    return merged(made, at, order, BTree.leaves(avet));
  }

  /** The arrays a sort of one attribute's keys works in, for the largest attribute. */
  private static final class Scratch {
    long[] hi;
    long[] lo;
    int[] ix;
    long[] hi2;
    long[] lo2;
    int[] ix2;
    final int[] tmp; // the radix sort's of ties, over all keys

    Scratch(int largest, int n) {
      hi = new long[largest];
      lo = new long[largest];
      ix = new int[largest];
      hi2 = new long[largest];
      lo2 = new long[largest];
      ix2 = new int[largest];
      tmp = new int[n];
    }
  }

  /**
   * Puts into {@code order[s, e)} the positions of keys {@code s} to {@code e} (one attribute's)
   * in key order: a least-significant-byte radix sort of their bytes 8 to 24 (the value's first
   * bytes, and the entity's where the value is short), carried in two longs a key that the
   * passes read in order, skipping the bytes every key shares; then the runs of keys that share
   * all 16 (long values alike at their start) sorted by the rest ({@link #sort}).
   */
  private static void sortAttribute(byte[] made, int[] at, int[] order, int s, int e,
      Scratch sc) {
    int n = e - s;
    if (n == 1) {
      order[s] = s;
    }
    if (n < 2) {
      return;
    }
    long[] hi = sc.hi;
    long[] lo = sc.lo;
    int[] ix = sc.ix;
    long hiOr = 0;
    long hiAnd = -1;
    long loOr = 0;
    long loAnd = -1;
    for (int i = 0; i < n; i++) {
      int p = at[s + i];
      long h = (long) LONG_AT.get(made, p + 8);
      long l = (long) LONG_AT.get(made, p + 16);
      hi[i] = h;
      lo[i] = l;
      ix[i] = s + i;
      hiOr |= h;
      hiAnd &= h;
      loOr |= l;
      loAnd &= l;
    }
    long hiVaries = hiOr ^ hiAnd;
    long loVaries = loOr ^ loAnd;
    int[] count = new int[257];
    for (int digit = 15; digit >= 0; digit--) {
      boolean inLo = digit >= 8;
      int shift = 56 - 8 * (digit & 7);
      if (((inLo ? loVaries : hiVaries) >>> shift & 0xff) == 0) {
        continue; // every key has the same byte here
      }
      Arrays.fill(count, 0);
      long[] keys = inLo ? lo : hi;
      for (int i = 0; i < n; i++) {
        count[(int) (keys[i] >>> shift & 0xff) + 1]++;
      }
      for (int b = 0; b < 256; b++) {
        count[b + 1] += count[b];
      }
      long[] hi2 = sc.hi2;
      long[] lo2 = sc.lo2;
      int[] ix2 = sc.ix2;
      for (int i = 0; i < n; i++) {
        int to = count[(int) (keys[i] >>> shift & 0xff)]++;
        hi2[to] = hi[i];
        lo2[to] = lo[i];
        ix2[to] = ix[i];
      }
      sc.hi2 = hi;
      sc.lo2 = lo;
      sc.ix2 = ix;
      sc.hi = hi = hi2;
      sc.lo = lo = lo2;
      sc.ix = ix = ix2;
    }
    System.arraycopy(ix, 0, order, s, n);
    for (int i = 0; i < n;) {
      int j = i + 1;
      while (j < n && hi[j] == hi[i] && lo[j] == lo[i]) {
        j++;
      }
      if (j - i > 1) {
        sort(made, at, order, sc.tmp, s + i, s + j, 24);
      }
      i = j;
    }
  }

  /**
   * The length of key {@code i} of {@code leaf}, a datom index's: its value empty, at least
   * {@code min} bytes long.
   */
  private static int checkedLength(BTree.Leaf leaf, int i, int min) {
    if (leaf.val(i).hasRemaining()) {
      throw new IllegalStateException("A value in a datom index");
    }
    int len = leaf.keyLength(i);
    if (len < min) {
      throw new IllegalStateException("A key of " + len + " bytes in a datom index");
    }
    return len;
  }

  /**
   * The keys of {@code order} (into {@code made}) and of {@code own}'s leaves, both ascending,
   * merged into one tree, a key both hold once.
   */
  private static BTree.Node merged(byte[] made, int[] at, int[] order, List<BTree.Leaf> own) {
    int n = order.length;
    int m = 0;
    long bytes = at[n];
    for (BTree.Leaf leaf : own) {
      m += leaf.size;
      bytes += leaf.bytes();
    }
    if (bytes > Integer.MAX_VALUE - 16) {
      throw new IllegalStateException("A staging's AVET of " + bytes + " bytes");
    }
    byte[] out = new byte[(int) bytes];
    int[] outAt = new int[n + m + 1];
    int count = 0;
    int to = 0;
    int i = 0;
    int leafNo = 0;
    int j = 0;
    BTree.Leaf leaf = own.isEmpty() ? null : own.get(0);
    while (leaf != null && leaf.size == 0) {
      leaf = ++leafNo < own.size() ? own.get(leafNo) : null;
    }
    while (i < n || leaf != null) {
      int c;
      if (leaf == null) {
        c = -1;
      } else if (i == n) {
        c = 1;
      } else {
        int x = order[i];
        int s = leaf.keyStart(j);
        checkedLength(leaf, j, AVET_MIN);
        c = Arrays.compareUnsigned(made, at[x], at[x + 1], leaf.data(), s, s + leaf.keyLength(j));
      }
      outAt[count++] = to;
      if (c <= 0) {
        int x = order[i++];
        int len = at[x + 1] - at[x];
        System.arraycopy(made, at[x], out, to, len);
        to += len;
      } else {
        int len = leaf.keyLength(j);
        System.arraycopy(leaf.data(), leaf.keyStart(j), out, to, len);
        to += len;
      }
      if (c >= 0) { // the own key was written, or is the one written
        if (++j == leaf.size) {
          j = 0;
          leaf = ++leafNo < own.size() ? own.get(leafNo) : null;
          while (leaf != null && leaf.size == 0) {
            leaf = ++leafNo < own.size() ? own.get(leafNo) : null;
          }
        }
      }
    }
    outAt[count] = to;
    return BTree.build(out, outAt, count);
  }

  /** Byte {@code d} of key {@code x}, plus one; 0 past its end. */
  private static int byteAt(byte[] made, int[] at, int x, int d) {
    int p = at[x] + d;
    return p < at[x + 1] ? (made[p] & 0xff) + 1 : 0;
  }

  /**
   * Sorts {@code order[lo, hi)}, positions of distinct keys in {@code made} that agree on their
   * first {@code d} bytes, by their bytes unsigned; {@code tmp} is scratch of the same length.
   */
  static void sort(byte[] made, int[] at, int[] order, int[] tmp, int lo, int hi, int d) {
    while (hi - lo >= SHORT_RUN) {
      int[] count = new int[258];
      for (int i = lo; i < hi; i++) {
        count[byteAt(made, at, order[i], d) + 1]++;
      }
      int shared = -1; // the one byte every key has here, or -1
      for (int b = 1; b < 258; b++) {
        if (count[b] == hi - lo) {
          shared = b;
        }
      }
      if (shared > 1) { // all have the same byte: on to the next
        d++;
        continue;
      }
      if (shared == 1) {
        throw new IllegalStateException("Equal keys in a datom index");
      }
      for (int b = 1; b < 258; b++) {
        count[b] += count[b - 1];
      }
      // count[v] is where (from lo) the keys whose byteAt here is v begin, and end at count[v + 1]
      int[] next = Arrays.copyOf(count, 258);
      for (int i = lo; i < hi; i++) {
        int x = order[i];
        tmp[lo + next[byteAt(made, at, x, d)]++] = x;
      }
      System.arraycopy(tmp, lo, order, lo, hi - lo);
      for (int b = 1; b < 257; b++) { // the keys that ended here are one at most
        int from = lo + count[b];
        int until = lo + count[b + 1];
        if (until - from > 1) {
          sort(made, at, order, tmp, from, until, d + 1);
        }
      }
      return;
    }
    for (int i = lo + 1; i < hi; i++) {
      int x = order[i];
      int j = i - 1;
      while (j >= lo && compare(made, at, order[j], x, d) > 0) {
        order[j + 1] = order[j];
        j--;
      }
      order[j + 1] = x;
    }
  }

  private static int compare(byte[] made, int[] at, int x, int y, int d) {
    return Arrays.compareUnsigned(made, at[x] + d, at[x + 1], made, at[y] + d, at[y + 1]);
  }
}
