package datalith.db;

import datalith.codec.Bytes;
import datalith.codec.Codec;
import datalith.index.Datom;
import datalith.index.KeyBuilder;
import datalith.store.SubDb;
import datalith.store.WriteTxn;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Turns a transaction's changes into index, history, log and metadata writes,
 * into a store write transaction or (for {@code with}) an overlay.
 */
final class Writes {
  // Keys are the builder's shared view and values this one buffer: the store and the overlay
  // copy what they are given, reading it without moving its position or limit.
  private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0).asReadOnlyBuffer();

  private final WriteTxn wt;
  private final Overlay ov;
  private final KeyBuilder kb = new KeyBuilder();
  private final boolean aevt; // whether to write AEVT and HAEVT: not when the store derives them

  private Writes(WriteTxn wt, Overlay ov) {
    this.wt = wt;
    this.ov = ov;
    this.aevt = wt == null || !wt.derives(SubDb.AEVT);
  }

  /**
   * The writes of transaction {@code t}, and the metadata after it (see {@link #meta}).
   */
  static void toStore(WriteTxn wt, List<TxChange> changes, long t, long nextEid, Stats stats,
      long schemaT) {
    new Writes(wt, null).write(changes, t);
    meta(wt, t, nextEid, stats, schemaT);
  }

  /**
   * The metadata a commit leaves: its basis t, the next entity id, the statistics, and
   * {@code schemaT}, the t of the last schema change (see {@link Meta#SCHEMA_T}).
   */
  static void meta(WriteTxn wt, long t, long nextEid, Stats stats, long schemaT) {
    wt.put(SubDb.META, Meta.STATS.duplicate(), stats.encode());
    wt.put(SubDb.META, Meta.T.duplicate(), Meta.longVal(t));
    wt.put(SubDb.META, Meta.NEXT_EID.duplicate(), Meta.longVal(nextEid));
    wt.put(SubDb.META, Meta.SCHEMA_T.duplicate(), Meta.schemaTVal(schemaT, t));
  }

  static void toOverlay(Overlay ov, List<TxChange> changes, long t) {
    new Writes(null, ov).write(changes, t);
  }

  /**
   * The writes of the log record of {@code t} replayed into {@code wt} (by {@link Rebuild}): its
   * datoms in the indexes, the record itself re-encoded in the current format. {@code assertedTx[i]}
   * is the tx that asserted datom {@code i} when it is a retraction (unread for assertions).
   */
  static void replay(WriteTxn wt, long t, List<LogRecord.Entry> entries, long[] assertedTx) {
    Writes w = new Writes(wt, null);
    long tx = Db.tToTx(t);
    long bytes = 0;
    for (LogRecord.Entry d : entries) {
      bytes += d.encoded().length;
    }
    LogRecord.Builder log = new LogRecord.Builder(entries.size(), bytes);
    for (int i = 0; i < entries.size(); i++) {
      LogRecord.Entry d = entries.get(i);
      w.datom(d.e(), d.aid(), d.added(), d.encoded(), assertedTx[i], tx, true);
      log.add(d.e(), d.aid(), d.added(), d.encoded());
    }
    w.put(SubDb.LOG, LogRecord.key(t), log.finish(t));
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
    long bytes = 0;
    for (TxChange c : changes) {
      bytes += c.encoded.length;
    }
    LogRecord.Builder log = new LogRecord.Builder(changes.size(), bytes);
    for (TxChange c : changes) {
      Datom d = c.datom;
      datom(d.e, d.aid, d.added, c.encoded, c.assertedTx, tx, c.attr == null || c.attr.isUnique());
      log.add(d.e, d.aid, d.added, c.encoded);
    }
    put(SubDb.LOG, LogRecord.key(t), log.finish(t));
  }

  /**
   * The index writes of one datom of transaction {@code tx}: an assertion's keys, or a
   * retraction's (of the datom {@code assertedTx} asserted; unread for an assertion) moved to
   * history. A value is a ref
   * exactly when its encoding is tagged {@link Codec#T_REF}: ref attributes encode every value
   * so, and no other attribute ever does ({@link Codec#inferTag} never gives it). An
   * assertion's AVET key is left to the store when it makes them ({@link WriteTxn#omits}),
   * unless {@code read}: the transactor reads a unique attribute's AVET keys as it
   * transacts (uniqueness, upserts, lookup refs), which a store that made them would build
   * for each read.
   */
  private void datom(long e, long aid, boolean added, byte[] encoded, long assertedTx, long tx,
      boolean read) {
    byte[] vpart = Codec.keyPart(encoded);
    if (vpart != encoded) { // keyPart returns its argument when the value fits inline
      put(SubDb.BLOBS, Db.direct(Codec.overflowHash(encoded)), Db.direct(encoded));
    }
    boolean ref = encoded[0] == Codec.T_REF;
    long v = ref ? Bytes.longAt(encoded, 1) : 0;
    if (added) {
      put(SubDb.EAVT, eavt(e, aid, vpart, tx).sharedView(), EMPTY);
      if (aevt) {
        put(SubDb.AEVT, aevt(e, aid, vpart, tx).sharedView(), EMPTY);
      }
      if (read || wt == null || !wt.omits(SubDb.AVET, aid)) {
        put(SubDb.AVET, avet(e, aid, vpart, tx).sharedView(), EMPTY);
      }
      if (ref) {
        put(SubDb.VAET, vaet(e, aid, v, tx).sharedView(), EMPTY);
      }
    } else {
      long at = assertedTx;
      // history is kept for :db/noHistory too: older database values and as-of must
      // still see such a value; the history view leaves it out
      retract(SubDb.EAVT, SubDb.HEAVT, eavt(e, aid, vpart, at), tx);
      if (aevt) {
        retract(SubDb.AEVT, SubDb.HAEVT, aevt(e, aid, vpart, at), tx);
      }
      retract(SubDb.AVET, SubDb.HAVET, avet(e, aid, vpart, at), tx);
      if (ref) {
        retract(SubDb.VAET, SubDb.HVAET, vaet(e, aid, v, at), tx);
      }
    }
  }

  /**
   * Moves the datom whose current key {@code key} holds from {@code current} to {@code history},
   * under the key followed by the retracting {@code tx}: one key built for both.
   */
  private void retract(SubDb current, SubDb history, KeyBuilder key, long tx) {
    delete(current, key.sharedView());
    put(history, key.putLong(tx).sharedView(), EMPTY);
  }

  private KeyBuilder eavt(long e, long aid, byte[] vpart, long tx) {
    return kb.reset().putLong(e).putLong(aid).put(vpart).putLong(tx);
  }

  private KeyBuilder aevt(long e, long aid, byte[] vpart, long tx) {
    return kb.reset().putLong(aid).putLong(e).put(vpart).putLong(tx);
  }

  private KeyBuilder avet(long e, long aid, byte[] vpart, long tx) {
    return kb.reset().putLong(aid).put(vpart).putLong(e).putLong(tx);
  }

  private KeyBuilder vaet(long e, long aid, long v, long tx) {
    return kb.reset().putLong(v).putLong(aid).putLong(e).putLong(tx);
  }
}
