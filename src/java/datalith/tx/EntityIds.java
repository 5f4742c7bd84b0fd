package datalith.tx;

import datalith.db.Db;
import datalith.db.Errors;

/**
 * The entity ids of one transaction: checks every id tx-data names and hands
 * out the ids of new entities.
 *
 * <p>Invariant: every id {@link #allocate} hands out is above every id
 * {@link #named} has seen in this transaction or any earlier one, so an id a
 * transaction names is never given to another entity. It holds because the
 * transactor names every id of the transaction (expanding all of tx-data,
 * transaction functions included) before it allocates the first one, and
 * because {@link #next} is stored with the transaction.
 */
final class EntityIds {
  private final long tx;
  private long next;

  /**
   * @param next the first id the database has not handed out
   * @param tx the id of this transaction's own entity
   */
  EntityIds(long next, long tx) {
    this.next = next;
    this.tx = tx;
  }

  /**
   * Checks an entity id given in tx-data: ids below {@link Db#TX0} are
   * entities (new ones too: the allocator moves above them); ids from
   * {@code TX0} up are transactions, and only those that exist, or this
   * transaction's own, are entities.
   */
  long named(long e, Object form) {
    if (e >= Db.TX0) {
      if (e > tx) {
        throw Errors.error("tx/invalid-entity-id", "Invalid entity id " + e
            + ": it is in the range of transaction ids, and no transaction has it (this one is "
            + tx + ")", "entity", e, "form", form);
      }
    } else if (e >= next) {
      next = e + 1;
    }
    return e;
  }

  /** A new entity id, above every id named so far. */
  long allocate() {
    if (next >= Db.TX0) {
      throw Errors.error("tx/entity-ids-exhausted", "No entity ids are left below the "
          + "transaction ids (" + Db.TX0 + "): tx-data named entity ids up to " + (next - 1),
          "next-id", next);
    }
    return next++;
  }

  /** The first id not handed out or named, to store with the transaction. */
  long next() {
    return next;
  }
}
