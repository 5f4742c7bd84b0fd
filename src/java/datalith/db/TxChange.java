package datalith.db;

import datalith.index.Datom;
import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;

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

  /**
   * The datoms of {@code changes}, in their order: a read-only view, not a copy (a transaction's
   * changes never change once made).
   */
  public static List<Datom> datoms(List<TxChange> changes) {
    return new Datoms(changes);
  }

  private static final class Datoms extends AbstractList<Datom> implements RandomAccess {
    private final List<TxChange> changes;

    Datoms(List<TxChange> changes) {
      this.changes = changes;
    }

    @Override
    public Datom get(int i) {
      return changes.get(i).datom;
    }

    @Override
    public int size() {
      return changes.size();
    }
  }
}
