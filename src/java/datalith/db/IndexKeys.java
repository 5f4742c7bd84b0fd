package datalith.db;

import clojure.lang.Keyword;
import datalith.codec.Codec;
import datalith.index.Index;
import datalith.store.SubDb;
import java.nio.ByteBuffer;

/**
 * The eight index sub-databases as {@link Verify} reads them: how each lays out a datom in its
 * keys, and the one canonical form all of them are compared in,
 * {@code e | aid | vpart | tx} for current datoms and {@code e | aid | vpart | assertedTx |
 * retractedTx} for history ones (the EAVT and HEAVT keys; a VAET key's value becomes the ref's
 * key part, tag {@link Codec#T_REF} then the id). Every key ends with its tx fields: the bytes
 * before them name the datom.
 */
enum IndexKeys {
  EAVT(Index.EAVT, false),
  AEVT(Index.AEVT, false),
  AVET(Index.AVET, false),
  VAET(Index.VAET, false),
  HEAVT(Index.EAVT, true),
  HAEVT(Index.AEVT, true),
  HAVET(Index.AVET, true),
  HVAET(Index.VAET, true);

  /** Room for any canonical form: a key of at most 511 bytes, plus VAET's tag byte. */
  static final int MAX_CANONICAL = 512;

  final Index order;
  final boolean history;
  final SubDb db;
  /** The name of its check in a report: {@code :eavt}, {@code :heavt}, ... */
  final Keyword check;

  IndexKeys(Index order, boolean history) {
    this.order = order;
    this.history = history;
    this.db = history ? order.history : order.current;
    this.check = Keyword.intern(name().toLowerCase(java.util.Locale.ROOT));
  }

  /** The bytes of tx ids that end each key: 8, or 16 in history. */
  int txBytes() {
    return history ? 16 : 8;
  }

  /** Whether this index holds ref datoms only. */
  boolean refsOnly() {
    return order == Index.VAET;
  }

  /**
   * Writes the canonical form of datom key {@code k} (bytes 0 to limit) into {@code out}; returns
   * its length, or -1 when the key is not a datom key of this index (a length or a value's key
   * part that does not fit). Allocates nothing.
   */
  int canonical(ByteBuffer k, byte[] out) {
    int len = k.limit();
    int tx = txBytes();
    try {
      switch (order) {
        case EAVT:
          if (len < 17 + tx || Codec.skipKeyPart(k, 16) != len - tx) {
            return -1;
          }
          k.get(0, out, 0, len);
          return len;
        case AEVT:
          if (len < 17 + tx || Codec.skipKeyPart(k, 16) != len - tx) {
            return -1;
          }
          k.get(8, out, 0, 8);
          k.get(0, out, 8, 8);
          k.get(16, out, 16, len - 16);
          return len;
        case AVET: {
          if (len < 17 + tx || Codec.skipKeyPart(k, 8) != len - 8 - tx) {
            return -1;
          }
          int vlen = len - 16 - tx;
          k.get(len - tx - 8, out, 0, 8);
          k.get(0, out, 8, 8);
          k.get(8, out, 16, vlen);
          k.get(len - tx, out, 16 + vlen, tx);
          return len;
        }
        default:
          if (len != 24 + tx) {
            return -1;
          }
          k.get(16, out, 0, 8);
          k.get(8, out, 8, 8);
          out[16] = Codec.T_REF;
          k.get(0, out, 17, 8);
          k.get(24, out, 25, tx);
          return len + 1;
      }
    } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
      return -1; // a tag that is no type, an escaped value without its end
    }
  }
}
