package datalith.api;

import clojure.lang.IPersistentList;
import clojure.lang.Keyword;
import clojure.lang.Symbol;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.RandomAccess;
import java.util.Set;

/**
 * Clojure data as Keyword-free Java data: keywords and symbols as "ns/name"
 * strings, maps, lists and sets as read-only {@code java.util} collections.
 * Values nested deeper than {@link #MAX_DEPTH} are kept as they are (so a
 * deeply nested form cannot exhaust the stack).
 */
final class JavaData {
  static final int MAX_DEPTH = 100;

  private JavaData() {}

  /** "ns/name" (or "name") of a keyword, without the colon. */
  static String name(Keyword k) {
    return k.sym.toString();
  }

  /** {@code m} with every key and value converted by {@link #of}; keys are strings. */
  static Map<String, Object> named(Map<?, ?> m) {
    return namedMap(m, 0);
  }

  /** {@code x} converted: see the class comment. */
  static Object of(Object x) {
    return of(x, 0);
  }

  private static Object of(Object x, int depth) {
    if (x instanceof Keyword k) {
      return name(k);
    }
    if (x instanceof Symbol s) {
      return s.toString();
    }
    if (depth >= MAX_DEPTH) {
      return x;
    }
    if (x instanceof Map<?, ?> m) {
      return namedMap(m, depth);
    }
    if (x instanceof Set<?> s) {
      Set<Object> out = new LinkedHashSet<>();
      for (Object o : s) {
        out.add(of(o, depth + 1));
      }
      return Collections.unmodifiableSet(out);
    }
    if (x instanceof List<?> l && (l instanceof RandomAccess || l instanceof IPersistentList)) {
      List<Object> out = new ArrayList<>(l.size());
      for (Object o : l) {
        out.add(of(o, depth + 1));
      }
      return Collections.unmodifiableList(out);
    }
    return x;
  }

  private static Map<String, Object> namedMap(Map<?, ?> m, int depth) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (Map.Entry<?, ?> e : m.entrySet()) {
      Object k = of(e.getKey(), depth + 1);
      out.put(k instanceof String s ? s : String.valueOf(k), of(e.getValue(), depth + 1));
    }
    return Collections.unmodifiableMap(out);
  }
}
