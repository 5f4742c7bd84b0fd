package datalith.db;

import datalith.codec.Bytes;

/**
 * An order-independent summary of a set of datoms, for {@link Verify}: per bucket of entity ids,
 * the number of datoms and the sum (mod 2^64) of a 64-bit hash of each datom's canonical bytes.
 * Two sources read in different orders (an index by e, another by a, the log by t) hold the same
 * datoms in a bucket when both numbers agree there (up to a 2^-64 chance per bucket), and the
 * buckets that disagree name the few entities to look at closely. Fixed size: 64 KiB whatever
 * the database's size. One thread.
 */
final class Digest {
  static final int BUCKET_BITS = 12;
  static final int BUCKETS = 1 << BUCKET_BITS;

  private final long[] sums = new long[BUCKETS];
  private final long[] counts = new long[BUCKETS];

  /** The bucket of entity {@code e}. */
  static int bucket(long e) {
    return (int) (mix(e) >>> (64 - BUCKET_BITS));
  }

  /** Adds the datom whose canonical bytes are {@code b[0, len)}; its entity is at {@code b[0, 8)}. */
  void add(byte[] b, int len) {
    int k = bucket(Bytes.longAt(b, 0));
    sums[k] += hash(b, len);
    counts[k]++;
  }

  /** The datoms added to bucket {@code k}. */
  long count(int k) {
    return counts[k];
  }

  /** Sets {@code differ[k]} for each bucket k where this and {@code other} disagree; how many. */
  int markDiffering(Digest other, boolean[] differ) {
    int n = 0;
    for (int k = 0; k < BUCKETS; k++) {
      if (sums[k] != other.sums[k] || counts[k] != other.counts[k]) {
        differ[k] = true;
        n++;
      }
    }
    return n;
  }

  /** A 64-bit hash of {@code b[0, len)}: every byte changes it, and so does its position. */
  static long hash(byte[] b, int len) {
    long h = 0x9E3779B97F4A7C15L ^ len;
    int i = 0;
    for (; i + 8 <= len; i += 8) {
      h = mix(h ^ Bytes.longAt(b, i)) + 0x632BE59BD9B4E019L;
    }
    long tail = 0;
    for (; i < len; i++) {
      tail = tail << 8 | b[i] & 0xFF;
    }
    return mix(h ^ tail);
  }

  // MurmurHash3's 64-bit finaliser: a bijection in which every input bit moves about half
  // of the output bits
  private static long mix(long x) {
    x ^= x >>> 33;
    x *= 0xFF51AFD7ED558CCDL;
    x ^= x >>> 33;
    x *= 0xC4CEB9FE1A85EC53L;
    return x ^ x >>> 33;
  }
}
