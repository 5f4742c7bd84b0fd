package datalith.tx;

import clojure.lang.PersistentVector;
import clojure.lang.RT;
import datalith.codec.Codec;
import datalith.db.Attr;
import datalith.db.Errors;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Derives composite tuples ({@code :db/tupleAttrs}): each is the tuple of
 * the values of the attributes it is made of, kept in step by every
 * transaction that touches one of them. A composite is derived, never
 * written: tx-data may assert one only as the value it derives to (as an
 * upsert through a unique composite does); {@link OpChecks} refuses its
 * retraction and cas.
 */
final class Composites {
  private Composites() {}

  /**
   * Sets every composite tuple of the entities whose component attributes
   * the transaction touched in {@code slots} to the tuple of their values (nil
   * for a missing one); retracts it when all are missing. Call once every op
   * is applied.
   *
   * @param pending the attributes as the transaction defines them
   * @throws clojure.lang.ExceptionInfo {@code :tx/composite-tuple} when
   *     tx-data asserted a composite other than the value it derives to
   */
  static void derive(PendingAttrs pending, Slots slots) {
    List<Attr> composites = pending.composites();
    if (composites.isEmpty()) {
      return;
    }
    List<Slots.Key> touched = slots.keys();
    for (Attr c : composites) {
      Attr[] parts = parts(c, pending);
      Set<Long> entities = new LinkedHashSet<>();
      for (Slots.Key k : touched) {
        if (k.aid() == c.id) {
          entities.add(k.e());
        }
        for (Attr p : parts) {
          if (k.aid() == p.id) { // transaction entities too, as Datomic
            entities.add(k.e());
          }
        }
      }
      for (long e : entities) {
        Object[] vals = new Object[parts.length];
        boolean any = false;
        for (int i = 0; i < parts.length; i++) {
          for (Slots.Val x : slots.values(e, parts[i])) {
            if (x.isLive()) {
              vals[i] = x.v;
              any = true;
            }
          }
        }
        Object derived = any ? PersistentVector.create(vals) : null;
        refuseWritten(e, c, derived, slots);
        if (any) {
          slots.add(e, c, derived, null);
        } else {
          slots.retractAll(e, c, null);
        }
      }
    }
  }

  // the attributes composite c is made of, as the transaction defines them
  private static Attr[] parts(Attr c, PendingAttrs pending) {
    Attr[] parts = new Attr[c.tupleAttrs.length];
    for (int i = 0; i < parts.length; i++) {
      parts[i] = pending.get(c.tupleAttrs[i]);
      if (parts[i] == null || parts[i].many) {
        throw Errors.error("schema/invalid", "A composite tuple's attributes must be installed "
            + "cardinality-one attributes", "attribute", c.ident, "tupleAttrs",
            RT.vector((Object[]) c.tupleAttrs));
      }
    }
    return parts;
  }

  // a value of composite c that tx-data asserted for e, other than the one it derives to
  private static void refuseWritten(long e, Attr c, Object derived, Slots slots) {
    byte[] key = derived == null ? null : Codec.keyPart(Codec.encode(derived, Codec.T_TUPLE));
    for (Slots.Val x : slots.values(e, c)) {
      if (x.asserted && (key == null || !Arrays.equals(key, Codec.keyPart(x.encoded)))) {
        throw Errors.error("tx/composite-tuple", "Composite tuple " + c.ident + " is derived from "
            + RT.printString(RT.vector((Object[]) c.tupleAttrs)) + ", so it cannot be asserted as "
            + Printed.brief(x.v) + ": entity " + e + (derived == null ? " has none of those"
            : "'s is " + Printed.brief(derived)), "attribute", c.ident, "value", x.v,
            "derived", derived, "entity", e, "form", x.form);
      }
    }
  }
}
