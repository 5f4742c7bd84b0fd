package datalith.index;

import datalith.store.SubDb;

/** The four covering indexes, each with its current and its history sub-database. */
public enum Index {
  /** Entity, attribute, value, tx: everything about an entity. */
  EAVT(SubDb.EAVT, SubDb.HEAVT),
  /** Attribute, entity, value, tx: every entity having an attribute. */
  AEVT(SubDb.AEVT, SubDb.HAEVT),
  /** Attribute, value, entity, tx: lookups and ranges by value. */
  AVET(SubDb.AVET, SubDb.HAVET),
  /** Value, attribute, entity, tx, for ref attributes only: who points at an entity. */
  VAET(SubDb.VAET, SubDb.HVAET);

  public final SubDb current;
  public final SubDb history;

  Index(SubDb current, SubDb history) {
    this.current = current;
    this.history = history;
  }
}
