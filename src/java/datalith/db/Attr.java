package datalith.db;

import clojure.lang.Keyword;
import clojure.lang.Symbol;
import java.util.List;

/** An attribute's schema: immutable. Every entity with a {@code :db/ident} may serve as an attribute. */
public final class Attr {
  public static final int UNIQUE_NONE = 0;
  public static final int UNIQUE_IDENTITY = 1;
  public static final int UNIQUE_VALUE = 2;

  public final long id;
  public final Keyword ident;
  /** A {@code Codec.T_*} tag, or {@code Codec.T_ANY} when the attribute declares no type. */
  public final int valueType;
  public final boolean many;
  public final int unique;
  public final boolean indexed;
  public final boolean component;
  public final boolean noHistory;
  /** Composite tuple: the idents of the attributes it is made of, else null. */
  public final Keyword[] tupleAttrs;
  /** Homogeneous tuple element type ({@code Codec.T_*}), or 0. */
  public final int tupleType;
  /** Heterogeneous tuple element types, else null. */
  public final int[] tupleTypes;
  /** Its {@code :db.attr/preds}, each called on every value asserted for it; else null. */
  public final List<Symbol> preds;

  Attr(long id, Keyword ident, int valueType, boolean many, int unique, boolean indexed,
      boolean component, boolean noHistory, Keyword[] tupleAttrs, int tupleType, int[] tupleTypes,
      List<Symbol> preds) {
    this.id = id;
    this.ident = ident;
    this.valueType = valueType;
    this.many = many;
    this.unique = unique;
    this.indexed = indexed;
    this.component = component;
    this.noHistory = noHistory;
    this.tupleAttrs = tupleAttrs;
    this.tupleType = tupleType;
    this.tupleTypes = tupleTypes;
    this.preds = preds;
  }

  public boolean isRef() {
    return valueType == datalith.codec.Codec.T_REF;
  }

  public boolean isUnique() {
    return unique != UNIQUE_NONE;
  }

  public boolean isIdentity() {
    return unique == UNIQUE_IDENTITY;
  }

  @Override
  public String toString() {
    return "#datalith/attr " + ident;
  }
}
