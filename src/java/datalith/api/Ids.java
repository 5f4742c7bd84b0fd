package datalith.api;

import clojure.lang.PersistentVector;
import java.util.ArrayList;
import java.util.List;

/** Entity ids as Java callers give them. */
final class Ids {
  private Ids() {}

  /**
   * {@code eid} as the database takes it: a lookup ref given as an
   * {@code Object[]} or a {@code List} of two, {@code [attr value]}, becomes a
   * vector with the attribute as a keyword (a String "ns/name" is taken as the
   * keyword {@code :ns/name}); anything else is returned as it is.
   */
  static Object eid(Object eid) {
    if (eid instanceof Object[] a) {
      return a.length == 2 ? lookupRef(a[0], a[1]) : PersistentVector.create(a);
    }
    if (eid instanceof List<?> l && l.size() == 2 && l.get(0) instanceof String) {
      return lookupRef(l.get(0), l.get(1));
    }
    return eid;
  }

  /** Each of {@code eids} by {@link #eid}. */
  static List<Object> eids(List<?> eids) {
    List<Object> out = new ArrayList<>(eids.size());
    for (Object e : eids) {
      out.add(eid(e));
    }
    return out;
  }

  private static Object lookupRef(Object attr, Object value) {
    return PersistentVector.create(attr instanceof String s ? Datalith.kw(s) : attr, value);
  }
}
