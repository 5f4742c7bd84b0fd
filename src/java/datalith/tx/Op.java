package datalith.tx;

import datalith.db.Attr;

/**
 * One operation of expanded tx-data. {@link Expander} makes them with the
 * entity, and a ref attribute's values, as a Long id or a {@link TempRef};
 * {@link TempidResolver} replaces each TempRef with its id and each new
 * attribute with its final {@link Attr}, in place ({@link #resolve}: one op
 * a datom, not two), so {@link Applier} sees only ids.
 */
final class Op {
  enum Kind {
    /** {@code [:db/add e a v]}, and each value of an entity map. */
    ADD,
    /** {@code [:db/retract e a v]}. */
    RETRACT,
    /** {@code [:db/retract e a]}: every value e had before the transaction. */
    RETRACT_ATTR,
    /** {@code [:db/retractEntity e]}. */
    RETRACT_ENTITY,
    /** {@code [:db/cas e a old new]}. */
    CAS
  }

  private final Kind kind;
  private final Object form;
  private Object e;
  private Attr attr;
  private Object v;
  private Object old;

  /**
   * @param kind what the operation does
   * @param form the tx-data form it came from, for error messages (never null)
   * @param e the entity: Long, or TempRef before resolution
   * @param attr the attribute; null for {@link Kind#RETRACT_ENTITY}
   * @param v the value (the new one of a cas); null for {@link Kind#RETRACT_ATTR}
   *     and {@link Kind#RETRACT_ENTITY}
   * @param old the value a cas expects, or null (a cas that expects none)
   */
  Op(Kind kind, Object form, Object e, Attr attr, Object v, Object old) {
    this.kind = kind;
    this.form = form;
    this.e = e;
    this.attr = attr;
    this.v = v;
    this.old = old;
  }

  Kind kind() {
    return kind;
  }

  Object form() {
    return form;
  }

  Object e() {
    return e;
  }

  Attr attr() {
    return attr;
  }

  Object v() {
    return v;
  }

  Object old() {
    return old;
  }

  /**
   * Sets the resolved entity, attribute and values; only {@link TempidResolver}
   * calls it, once, when no step after it has seen the op.
   */
  void resolve(Object e, Attr attr, Object v, Object old) {
    this.e = e;
    this.attr = attr;
    this.v = v;
    this.old = old;
  }
}
