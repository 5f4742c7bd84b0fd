package datalith.query.parser;

import clojure.lang.ExceptionInfo;
import clojure.lang.IPersistentCollection;
import clojure.lang.IPersistentList;
import clojure.lang.IPersistentVector;
import clojure.lang.ISeq;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.Symbol;
import datalith.db.Errors;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/** Classification of raw query forms (which symbols are variables, sources, ...). */
final class Syntax {
  private Syntax() {}

  /** An unqualified symbol starting with {@code ?}. */
  static boolean isVariable(Object o) {
    return o instanceof Symbol s && s.getNamespace() == null && s.getName().startsWith("?");
  }

  /** An unqualified symbol starting with {@code $}. */
  static boolean isSrcVar(Object o) {
    return o instanceof Symbol s && s.getNamespace() == null && s.getName().startsWith("$");
  }

  static boolean isPlaceholder(Object o) {
    return Forms.UNDERSCORE.equals(o);
  }

  static boolean isRulesVar(Object o) {
    return Forms.PERCENT.equals(o);
  }

  /** A symbol that is not a variable, source, {@code _} or {@code %}. */
  static boolean isPlainSymbol(Object o) {
    return o instanceof Symbol && !isVariable(o) && !isSrcVar(o) && !isPlaceholder(o)
        && !isRulesVar(o);
  }

  /** A Clojure list or other seq: {@code (...)}. */
  static boolean isList(Object o) {
    return o instanceof ISeq || o instanceof IPersistentList;
  }

  static boolean isVector(Object o) {
    return o instanceof IPersistentVector;
  }

  /** A vector or a list. */
  static boolean isSequential(Object o) {
    return isList(o) || isVector(o);
  }

  /** The elements of a vector or list. */
  static List<Object> items(Object form) {
    List<Object> out = new ArrayList<>();
    for (ISeq s = RT.seq(form); s != null; s = s.next()) {
      out.add(s.first());
    }
    return out;
  }

  /** The items as an immutable Clojure vector (so error data prints and compares as one). */
  @SuppressWarnings("unchecked") // PersistentVector is a raw List of Objects
  static List<Object> vector(List<Object> items) {
    return (List<Object>) PersistentVector.create(items);
  }

  /** True when a constant has a variable symbol anywhere inside it. */
  static boolean containsVariable(Object o) {
    if (isVariable(o)) {
      return true;
    }
    if (o instanceof IPersistentCollection || o instanceof Collection || o instanceof Map) {
      for (ISeq s = RT.seq(o); s != null; s = s.next()) {
        if (containsVariable(s.first())) {
          return true;
        }
      }
    }
    if (o instanceof Map.Entry<?, ?> e) {
      return containsVariable(e.getKey()) || containsVariable(e.getValue());
    }
    return false;
  }

  /** The parser's error: {@code {:error key, :form form, k v ...}} (see {@code Errors}). */
  static ExceptionInfo error(String key, String message, Object form, Object... kvs) {
    Object[] all = new Object[kvs.length + 2];
    all[0] = "form";
    all[1] = form;
    System.arraycopy(kvs, 0, all, 2, kvs.length);
    return Errors.error(key, message, all);
  }

  /** A vector of the variables' symbols, for error data. */
  static Object symbols(Collection<Variable> vars) {
    List<Object> out = new ArrayList<>();
    for (Variable v : vars) {
      out.add(v.symbol());
    }
    return PersistentVector.create(out);
  }

  /** EDN text of a raw form, for error messages. */
  static String show(Object form) {
    return RT.printString(form);
  }
}
