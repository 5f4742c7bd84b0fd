package datalith.db;

import datalith.codec.Codec;
import datalith.index.Datom;
import datalith.index.KeyBuilder;
import datalith.store.SubDb;
import datalith.store.WriteTxn;
import datalith.tx.TxChange;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Turns a transaction's changes into index, history, log and metadata writes,
 * into a store write transaction or (for {@code with}) an overlay.
 */
final class Writes {
  private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

  private final WriteTxn wt;
  private final Overlay ov;
  private final KeyBuilder kb = new KeyBuilder();

  private Writes(WriteTxn wt, Overlay ov) {
    this.wt = wt;
    this.ov = ov;
  }

  /**
   * The writes of transaction {@code t}, and the metadata after it: its t, the next entity id,
   * the statistics, and {@code schemaT} (see {@link Meta#SCHEMA_T}).
   */
  static void toStore(WriteTxn wt, List<TxChange> changes, long t, long nextEid, Stats stats,
      long schemaT) {
    Writes w = new Writes(wt, null);
    w.write(changes, t);
    wt.put(SubDb.META, Meta.STATS.duplicate(), stats.encode());
    wt.put(SubDb.META, Meta.T.duplicate(), Meta.longVal(t));
    wt.put(SubDb.META, Meta.NEXT_EID.duplicate(), Meta.longVal(nextEid));
    wt.put(SubDb.META, Meta.SCHEMA_T.duplicate(), Meta.schemaTVal(schemaT, t));
  }

  static void toOverlay(Overlay ov, List<TxChange> changes, long t) {
    new Writes(null, ov).write(changes, t);
  }

  private void put(SubDb db, ByteBuffer key, ByteBuffer val) {
    if (wt != null) {
      wt.put(db, key, val);
    } else {
      ov.put(db, key, val);
    }
  }

  private void delete(SubDb db, ByteBuffer key) {
    if (wt != null) {
      wt.delete(db, key);
    } else {
      ov.delete(db, key);
    }
  }

  private void write(List<TxChange> changes, long t) {
    long tx = Db.tToTx(t);
    int logSize = 4;
    for (TxChange c : changes) {
      logSize += 21 + c.encoded.length;
      Datom d = c.datom;
      byte[] vpart = Codec.keyPart(c.encoded);
      if (vpart != c.encoded) { // keyPart returns its argument when the value fits inline
        put(SubDb.BLOBS, Db.direct(Codec.overflowHash(c.encoded)), Db.direct(c.encoded));
      }
      boolean ref = c.attr.isRef();
      if (d.added) {
        index(SubDb.EAVT, eavt(d, vpart, tx), false);
        index(SubDb.AEVT, aevt(d, vpart, tx), false);
        index(SubDb.AVET, avet(d, vpart, tx), false);
        if (ref) {
          index(SubDb.VAET, vaet(d, tx), false);
        }
      } else {
        long at = c.assertedTx;
        // history is kept for :db/noHistory too: older database values and as-of must
        // still see such a value; the history view leaves it out
        index(SubDb.EAVT, eavt(d, vpart, at), true);
        index(SubDb.HEAVT, eavt(d, vpart, at).putLong(tx), false);
        index(SubDb.AEVT, aevt(d, vpart, at), true);
        index(SubDb.HAEVT, aevt(d, vpart, at).putLong(tx), false);
        index(SubDb.AVET, avet(d, vpart, at), true);
        index(SubDb.HAVET, avet(d, vpart, at).putLong(tx), false);
        if (ref) {
          index(SubDb.VAET, vaet(d, at), true);
          index(SubDb.HVAET, vaet(d, at).putLong(tx), false);
        }
      }
    }
    ByteBuffer log = ByteBuffer.allocateDirect(logSize);
    log.putInt(changes.size());
    for (TxChange c : changes) {
      log.putLong(c.datom.e).putLong(c.datom.aid).put((byte) (c.datom.added ? 1 : 0))
          .putInt(c.encoded.length).put(c.encoded);
    }
    log.flip();
    put(SubDb.LOG, ByteBuffer.allocateDirect(8).putLong(0, t), log);
  }

  private void index(SubDb db, KeyBuilder key, boolean delete) {
    if (delete) {
      delete(db, key.view());
    } else {
      put(db, key.view(), EMPTY.duplicate());
    }
  }

  private KeyBuilder eavt(Datom d, byte[] vpart, long tx) {
    return kb.reset().putLong(d.e).putLong(d.aid).put(vpart).putLong(tx);
  }

  private KeyBuilder aevt(Datom d, byte[] vpart, long tx) {
    return kb.reset().putLong(d.aid).putLong(d.e).put(vpart).putLong(tx);
  }

  private KeyBuilder avet(Datom d, byte[] vpart, long tx) {
    return kb.reset().putLong(d.aid).put(vpart).putLong(d.e).putLong(tx);
  }

  private KeyBuilder vaet(Datom d, long tx) {
    return kb.reset().putLong((Long) d.v).putLong(d.aid).putLong(d.e).putLong(tx);
  }
}
