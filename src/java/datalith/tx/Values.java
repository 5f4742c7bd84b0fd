package datalith.tx;

import clojure.lang.ExceptionInfo;
import clojure.lang.Keyword;
import clojure.lang.RT;
import datalith.codec.Codec;
import datalith.db.Attr;
import datalith.db.Errors;
import datalith.db.Schema;
import java.util.List;
import java.util.function.Function;

/**
 * Checks a value against its attribute's type and turns it into the class the
 * codec stores; when it does not fit, the error says what is wrong with it.
 */
final class Values {
  private Values() {}

  /**
   * {@code v} as attribute {@code a} stores it ({@link Codec#coerce}), tuples
   * checked element by element: against {@code :db/tupleTypes} or
   * {@code :db/tupleType}, and a composite's against the types of the
   * attributes it is made of ({@code attrs} finds them).
   *
   * @throws ExceptionInfo {@code :tx/value-type} when v is not such a value
   */
  static Object coerce(Attr a, Object v, Object form, Function<Keyword, Attr> attrs) {
    int tag = a.valueType == Codec.T_ANY ? Codec.inferTag(v) : a.valueType;
    Object c = Codec.coerce(v, tag);
    if (c == null) {
      throw typeError(a, v, form);
    }
    if (a.valueType != Codec.T_TUPLE) {
      return c;
    }
    List<?> l = (List<?>) c;
    int[] types = elementTypes(a, l.size(), attrs);
    if (types == null) {
      return c;
    }
    if (l.size() != types.length) {
      throw Errors.error("tx/value-type", "Tuple " + Printed.brief(v) + " has " + l.size()
          + " elements; " + a.ident + " takes " + types.length + " (" + describeTypes(a) + ")",
          "attribute", a.ident, "value", v, "form", form);
    }
    for (int i = 0; i < l.size(); i++) {
      Object x = l.get(i);
      if (x != null && types[i] != Codec.T_ANY && Codec.coerce(x, types[i]) == null) {
        throw Errors.error("tx/value-type", "Element " + i + " of tuple " + Printed.brief(v)
            + ", " + Printed.brief(x) + ", is not a " + Schema.typeKeyword(types[i]) + " as "
            + a.ident + " requires (" + describeTypes(a) + ")",
            "attribute", a.ident, "value", v, "element", x, "form", form);
      }
    }
    return c;
  }

  // the element types of tuple attribute a, or null when its elements may be anything
  private static int[] elementTypes(Attr a, int n, Function<Keyword, Attr> attrs) {
    if (a.tupleTypes != null) {
      return a.tupleTypes;
    }
    if (a.tupleType != 0) {
      int[] types = new int[n];
      java.util.Arrays.fill(types, a.tupleType);
      return types;
    }
    if (a.tupleAttrs != null) {
      int[] types = new int[a.tupleAttrs.length];
      for (int i = 0; i < types.length; i++) {
        Attr part = attrs.apply(a.tupleAttrs[i]);
        types[i] = part == null ? Codec.T_ANY : part.valueType;
      }
      return types;
    }
    return null;
  }

  private static String describeTypes(Attr a) {
    if (a.tupleAttrs != null) {
      return ":db/tupleAttrs " + RT.printString(RT.vector((Object[]) a.tupleAttrs));
    }
    if (a.tupleType != 0) {
      return ":db/tupleType " + Schema.typeKeyword(a.tupleType);
    }
    Object[] names = new Object[a.tupleTypes.length];
    for (int i = 0; i < names.length; i++) {
      names[i] = Schema.typeKeyword(a.tupleTypes[i]);
    }
    return ":db/tupleTypes " + RT.printString(RT.vector(names));
  }

  /**
   * Refuses a Java array (other than {@code byte[]}) where a collection of
   * values or entities may stand, as Datomic does: it is neither one value
   * (arrays compare by identity) nor, here, a collection.
   *
   * @throws ExceptionInfo {@code :tx/value-type}
   */
  static void refuseArray(Attr a, Object v, Object form) {
    if (v.getClass().isArray() && !(v instanceof byte[])) {
      throw Errors.error("tx/value-type", "Value " + Printed.brief(v) + " of " + a.ident
          + " is a Java array (" + v.getClass().getSimpleName() + "): give several values as a"
          + " vector, list or set", "attribute", a.ident, "value", v, "form", form);
    }
  }

  /** The {@code :tx/value-type} error for a value that attribute {@code a} cannot hold. */
  static ExceptionInfo typeError(Attr a, Object v, Object form) {
    String shown = Printed.brief(v);
    String problem = Codec.unstorable(v);
    String msg;
    if (problem != null) {
      msg = "Value " + shown + " of " + a.ident + " cannot be stored: it " + problem;
    } else if (a.valueType == Codec.T_ANY) {
      msg = "Value " + shown + " of " + a.ident + " cannot be stored: datalith cannot encode a "
          + v.getClass().getName() + " (" + a.ident + " has no :db/valueType, so it takes"
          + " strings, numbers, keywords, symbols, booleans, instants, uuids, bytes, and maps,"
          + " vectors, lists and sets of those)";
    } else {
      msg = "Value " + shown + " (a " + v.getClass().getName() + ") is not a "
          + Schema.typeKeyword(a.valueType) + " as " + a.ident + " requires";
    }
    return Errors.error("tx/value-type", msg, "attribute", a.ident, "value", v, "form", form);
  }
}
