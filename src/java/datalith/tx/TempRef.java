package datalith.tx;

/**
 * A tempid of one transaction, or the entity of a map without {@code :db/id},
 * or the entity of an attribute the transaction installs. Several are unified
 * into one entity by upserts: the root of a chain of {@link #parent}s stands
 * for all of them.
 */
final class TempRef {
  /** The user's tempid, or null for an entity no tempid names. */
  final Object name;
  TempRef parent;
  /** The entity id, once resolved (an upsert, or the allocator); -1 before. */
  long eid = -1;
  /** Some assertion of the transaction has this entity as its entity. */
  boolean asEntity;
  /** Some operation of the transaction names this entity (as entity or value). */
  boolean used;

  /** {@link #eid} boxed, once resolved: the ops of one entity share it. */
  private Long boxed;

  TempRef(Object name) {
    this.name = name;
  }

  /** The entity id, boxed once (call only when resolved). */
  Long id() {
    if (boxed == null || boxed != eid) {
      boxed = eid;
    }
    return boxed;
  }

  TempRef root() {
    TempRef r = this;
    while (r.parent != null) {
      r = r.parent;
    }
    return r;
  }
}
