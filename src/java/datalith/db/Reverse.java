package datalith.db;

import datalith.codec.Codec;
import datalith.index.Index;
import datalith.store.Cursor;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Reading an index backwards (rseek-datoms) in chunks read forwards: from an upper bound U,
 * {@link #chunkStart} finds a key L about {@code n} index entries below it, so that the datoms
 * of [L, U), read in index order and reversed, are the next ones backwards; then U becomes L.
 * L is cut back to a boundary no sorted group straddles (an entity in EAVT, an attribute and
 * entity in AEVT and VAET, an attribute and the value's sortable part in AVET, so that the long
 * values sharing it, sorted by value only when read, stay in one chunk). The store's current
 * sub-database chooses the bounds; the reads between them see whatever the value sees
 * (history, overlay).
 */
public final class Reverse {
  private Reverse() {}

  /**
   * The start of the chunk below {@code upper} (exclusive; null for the end of the index):
   * a key below upper, or null for the start of the index when fewer than {@code n} entries
   * of the store's current sub-database lie below upper.
   */
  public static byte[] chunkStart(Db db, Index index, byte[] upper, int n) {
    try (Snapshot s = db.snapshot()) {
      Cursor c = s.cursor(index.current);
      try {
        boolean ok = upper == null ? c.last() : c.seek(Db.direct(upper)) ? c.prev() : c.last();
        for (int i = 0; ok && i < n; i++) {
          ok = c.prev();
        }
        if (!ok) {
          return null;
        }
        ByteBuffer k = c.key();
        byte[] cut = boundary(index, k);
        return upper != null && Arrays.compare(cut, upper) >= 0 ? null : cut;
      } finally {
        c.close();
      }
    }
  }

  /** The key of {@code k} cut back to a chunk boundary of {@code index} (see the class). */
  private static byte[] boundary(Index index, ByteBuffer k) {
    int len = switch (index) {
      case EAVT -> 8;
      case AEVT, VAET -> 16;
      case AVET -> Codec.isOverflow(k, 8) ? Codec.overflowHashOffset(k, 8)
          : Codec.skipKeyPart(k, 8);
    };
    byte[] out = new byte[Math.min(len, k.limit())];
    k.get(0, out);
    return out;
  }

  /**
   * The least key above every key that starts with {@code prefix}, or null when there is none
   * (an empty prefix, or all 0xFF bytes).
   */
  public static byte[] after(byte[] prefix) {
    for (int i = prefix.length - 1; i >= 0; i--) {
      if (prefix[i] != (byte) 0xFF) {
        byte[] out = Arrays.copyOf(prefix, i + 1);
        out[i]++;
        return out;
      }
    }
    return null;
  }
}
