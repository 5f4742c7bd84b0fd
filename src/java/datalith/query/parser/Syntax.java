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
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Deque;
import java.util.Iterator;
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

  // plain-symbol = symbol that does not begin with "$", "?", or "%" (and is not '_')
  /** A symbol that is not a variable, source, {@code _}, nor starts with {@code %}. */
  static boolean isPlainSymbol(Object o) {
    return o instanceof Symbol s && !isVariable(o) && !isSrcVar(o) && !isPlaceholder(o)
        && !(s.getNamespace() == null && s.getName().startsWith("%"));
  }

  /** {@code (quote x)}, which the reader makes of {@code 'x}. */
  static boolean isQuoted(Object o) {
    if (!isList(o)) {
      return false;
    }
    List<Object> items = items(o);
    return items.size() == 2 && Forms.QUOTE.equals(items.get(0));
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

  /**
   * How deep collections may nest in a query or rule set: far deeper than any query written by
   * hand, and shallow enough that the parser, the validation and the executor, which recurse
   * along nested clauses, bindings and constants, stay well within a thread's stack.
   */
  static final int MAX_DEPTH = 100;

  /**
   * Throws {@code errorKey} when collections in {@code form} nest more than {@link #MAX_DEPTH}
   * deep. Walks with an explicit stack, so any depth is checked without recursion.
   */
  static void checkDepth(Object form, String errorKey) {
    Deque<Iterator<?>> stack = new ArrayDeque<>();
    Iterator<?> root = children(form);
    if (root != null) {
      stack.push(root);
    }
    while (!stack.isEmpty()) {
      Iterator<?> top = stack.peek();
      if (!top.hasNext()) {
        stack.pop();
        continue;
      }
      Iterator<?> next = children(top.next());
      if (next != null) {
        if (stack.size() >= MAX_DEPTH) {
          throw error(errorKey, "Collections nest more than " + MAX_DEPTH + " deep in this "
              + (errorKey.equals("parser/rule") ? "rule set" : "query"), form,
              "max-depth", (long) MAX_DEPTH);
        }
        stack.push(next);
      }
    }
  }

  private static Iterator<?> children(Object x) {
    if (x instanceof Map<?, ?> m) {
      return m.entrySet().iterator();
    } else if (x instanceof Map.Entry<?, ?> e) {
      return Arrays.asList(e.getKey(), e.getValue()).iterator();
    } else if (x instanceof Iterable<?> i && !(x instanceof Symbol)) {
      return i.iterator();
    } else if (x instanceof Object[] a) {
      return Arrays.asList(a).iterator();
    }
    return null;
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
