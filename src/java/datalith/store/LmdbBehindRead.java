package datalith.store;

import java.nio.ByteBuffer;

/**
 * A read of an {@link LmdbStore} with write-behind ({@link LmdbBehind}) while a layer holds
 * commits: LMDB's read transaction, with the frozen layer (or none) and the active one over it.
 * Each layer is read as two {@link MemStore}s, its entries put and its keys deleted; a key reads
 * as the newest layer that writes it, else as LMDB's. Closing it closes the layers' reads and
 * LMDB's.
 */
final class LmdbBehindRead implements ReadTxn {
  private final ReadTxn base;
  private final MemReadTxn[] puts; // the layers', oldest first
  private final MemReadTxn[] gone;

  LmdbBehindRead(ReadTxn base, MemReadTxn fp, MemReadTxn fg, MemReadTxn ap, MemReadTxn ag) {
    this.base = base;
    this.puts = fp == null ? new MemReadTxn[] {ap} : new MemReadTxn[] {fp, ap};
    this.gone = fg == null ? new MemReadTxn[] {ag} : new MemReadTxn[] {fg, ag};
  }

  /** Closes each of {@code txns} that is not null. */
  static void closeAll(ReadTxn... txns) {
    for (ReadTxn t : txns) {
      if (t != null) {
        t.close();
      }
    }
  }

  /** {@inheritDoc} LMDB's cursor, merged with each layer that holds keys of {@code db}. */
  @Override
  public Cursor cursor(SubDb db) {
    Cursor c = base.cursor(db);
    try {
      for (int i = 0; i < puts.length; i++) {
        if (!puts[i].isEmpty(db) || !gone[i].isEmpty(db)) {
          c = new MergedCursor(c, puts[i].cursor(db), gone[i].cursor(db));
        }
      }
      return c;
    } catch (RuntimeException | Error e) {
      c.close();
      throw e;
    }
  }

  /** {@inheritDoc} The newest layer's entry, or deletion, of {@code key}; else LMDB's. */
  @Override
  public ByteBuffer get(SubDb db, ByteBuffer key) {
    for (int i = puts.length - 1; i >= 0; i--) {
      ByteBuffer v = puts[i].get(db, key);
      if (v != null) {
        return v;
      }
      if (!gone[i].isEmpty(db) && gone[i].get(db, key) != null) {
        return null;
      }
    }
    return base.get(db, key);
  }

  @Override
  public void close() {
    try {
      closeAll(puts);
      closeAll(gone);
    } finally {
      base.close();
    }
  }
}
