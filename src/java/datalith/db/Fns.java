package datalith.db;

import clojure.lang.Namespace;
import clojure.lang.RT;
import clojure.lang.Symbol;
import clojure.lang.Var;

/** Finds the Clojure functions that tx-data, queries and pull patterns name. */
public final class Fns {
  private static final Var REQUIRE = RT.var("clojure.core", "require");

  private Fns() {}

  /**
   * The var a fully qualified symbol names, loading its namespace when needed;
   * null when the namespace has no such var. Aliases of whatever namespace is
   * current play no part: {@code my.ns/f} always means {@code my.ns/f}.
   *
   * @throws RuntimeException when the namespace cannot be loaded
   */
  public static Var resolve(Symbol sym) {
    if (sym.getNamespace() == null) {
      return null;
    }
    Symbol nsName = Symbol.intern(sym.getNamespace());
    Namespace ns = Namespace.find(nsName);
    if (ns == null) {
      synchronized (REQUIRE) {
        REQUIRE.invoke(nsName);
      }
      ns = Namespace.find(nsName);
    }
    return ns == null ? null : ns.findInternedVar(Symbol.intern(sym.getName()));
  }
}
