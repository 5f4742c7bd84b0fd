package datalith.db;

import datalith.index.Datom;

/**
 * One datom a transaction writes: an assertion, or a retraction together with
 * the transaction that had asserted it (needed to find its index keys). The
 * transactor makes them; {@code Writes} writes them. Immutable.
 */
public final class TxChange {
  public final Datom datom;
  public final Attr attr;
  /** The value's full encoding ({@code Codec.encode}). */
  public final byte[] encoded;
  /** For a retraction, the tx that asserted the datom; for an assertion, its own tx. */
  public final long assertedTx;

  public TxChange(Datom datom, Attr attr, byte[] encoded, long assertedTx) {
    this.datom = datom;
    this.attr = attr;
    this.encoded = encoded;
    this.assertedTx = assertedTx;
  }
}
