package datalith.db;

import datalith.codec.Bytes;
import datalith.codec.Codec;
import java.nio.ByteBuffer;

/**
 * An {@link IndexScan}'s few recently decoded short values: attributes with few distinct values
 * (states, types, flags) then decode each value once per scan, not per datom. An entry hit
 * since the last insertion passed it is passed over once more (a clock), so that values decoded
 * once (titles read beside states) replace each other rather than the values hit again. One
 * scan's; one thread.
 */
final class ScanValueCache {
  private static final int CACHE_SIZE = 8;
  private static final int CACHE_MAX_BYTES = 32;
  private final Db db;
  private final Snapshot snap;
  // Each entry is a whole key part (never an overflow form or bytes) of length
  // len: its big-endian 8-byte words at 0, 8, ... before the last 8 bytes, then
  // the word of its last 8 bytes; shorter than 8 bytes, the bytes left-aligned
  // in one word.
  private long[][] cacheWords; // allocated on the first miss
  private int[] cacheLens; // 0 = empty
  private Object[] cacheVals;
  private int cacheNext;
  private int cacheLast; // the entry of the last hit
  private int cacheUsed; // bit i: entry i was hit since an insertion last passed it
  private int cacheHits;
  private int cacheMisses;

  ScanValueCache(Db db, Snapshot snap) {
    this.db = db;
    this.snap = snap;
  }

  /**
   * The value whose key part is at {@code off} in key {@code k} of {@code keyLen} bytes (without
   * a history suffix): cached, or decoded (and cached when short).
   */
  Object decode(ByteBuffer k, int keyLen, int off) {
    boolean cacheable = cacheMisses < 256 || cacheHits > cacheMisses;
    if (!cacheable) {
      return db.decodeValue(snap, k, off);
    }
    // Key parts are self-delimiting: no whole key part is a proper prefix of another (fixed
    // widths follow from the tag; escaped bodies end at their first unescaped 00 00, or at an
    // overflow marker only past MAX_INLINE - 20 bytes). So when the key's bytes at off start
    // with a cached key part, the key part at off is that one, and no length is needed.
    if (cacheLens != null) {
      int avail = keyLen - off;
      int last = cacheLast;
      if (cachedAt(last, k, off, avail)) {
        cacheHits++;
        cacheUsed |= 1 << last;
        return cacheVals[last];
      }
      for (int i = 0; i < CACHE_SIZE; i++) {
        if (i != last && cachedAt(i, k, off, avail)) {
          cacheHits++;
          cacheUsed |= 1 << i;
          cacheLast = i;
          return cacheVals[i];
        }
      }
    }
    if (k.get(off) == Codec.T_BYTES || Codec.isOverflow(k, off)) {
      return db.decodeValue(snap, k, off);
    }
    int len = Codec.skipKeyPart(k, off) - off;
    if (len > CACHE_MAX_BYTES) {
      return db.decodeValue(snap, k, off);
    }
    cacheMisses++;
    Object v = db.decodeValue(snap, k, off);
    if (cacheLens == null) {
      cacheWords = new long[CACHE_SIZE][];
      cacheLens = new int[CACHE_SIZE];
      cacheVals = new Object[CACHE_SIZE];
    }
    int at = cacheNext;
    while ((cacheUsed & 1 << at) != 0) { // ends: each pass clears the bit it passes
      cacheUsed &= ~(1 << at);
      at = (at + 1) % CACHE_SIZE;
    }
    long[] w = cacheWords[at];
    if (w == null) {
      w = cacheWords[at] = new long[CACHE_MAX_BYTES / 8 + 1];
    }
    if (len >= 8) {
      int n = (len - 1) >>> 3;
      for (int j = 0; j < n; j++) {
        w[j] = Bytes.longAt(k, off + 8 * j);
      }
      w[n] = Bytes.longAt(k, off + len - 8);
    } else {
      long x = 0;
      for (int i = 0; i < len; i++) {
        x |= (k.get(off + i) & 0xFFL) << (56 - 8 * i);
      }
      w[0] = x;
    }
    cacheLens[at] = len;
    cacheVals[at] = v;
    cacheLast = at;
    cacheNext = (at + 1) % CACHE_SIZE;
    return v;
  }

  /** Whether {@code k} holds cache entry {@code i} at {@code off}. */
  private boolean cachedAt(int i, ByteBuffer k, int off, int avail) {
    int len = cacheLens[i];
    if (len == 0 || len > avail) {
      return false;
    }
    long[] w = cacheWords[i];
    if (len >= 8) {
      // the last word first: values that share a start (a keyword's namespace) differ there
      int n = (len - 1) >>> 3; // the words before the last one
      if (Bytes.longAt(k, off + len - 8) != w[n]) {
        return false;
      }
      for (int j = 0; j < n; j++) {
        if (Bytes.longAt(k, off + 8 * j) != w[j]) {
          return false;
        }
      }
      return true;
    }
    long x = w[0];
    for (int j = 0; j < len; j++) {
      if (k.get(off + j) != (byte) (x >>> (56 - 8 * j))) {
        return false;
      }
    }
    return true;
  }
}
