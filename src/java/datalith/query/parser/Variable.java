package datalith.query.parser;

import clojure.lang.Symbol;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.concurrent.ConcurrentHashMap;

// variable = symbol starting with "?"
/**
 * A query variable such as {@code ?e}. Interned by name: {@code Variable.of("?x") ==
 * Variable.of("?x")} while either is reachable, so identity comparison and the default
 * {@code equals}/{@code hashCode} are correct. Safe to use from any thread.
 */
public final class Variable implements Term {
  private static final ConcurrentHashMap<String, Ref> TABLE = new ConcurrentHashMap<>();
  private static final ReferenceQueue<Variable> CLEARED = new ReferenceQueue<>();

  private final String name; // starts with '?'
  private final Symbol symbol;

  private Variable(String name) {
    this.name = name;
    this.symbol = Symbol.intern(name);
  }

  /** The variable named {@code name}, which must start with {@code ?}. Never null. */
  public static Variable of(String name) {
    if (name == null || !name.startsWith("?")) {
      throw new IllegalArgumentException("A variable name starts with ?: " + name);
    }
    purgeCleared();
    while (true) {
      Ref ref = TABLE.get(name);
      Variable existing = ref == null ? null : ref.get();
      if (existing != null) {
        return existing;
      }
      Variable fresh = new Variable(name);
      Ref freshRef = new Ref(fresh);
      if (ref == null ? TABLE.putIfAbsent(name, freshRef) == null : TABLE.replace(name, ref, freshRef)) {
        return fresh;
      }
    }
  }

  /** The variable for an unqualified symbol starting with {@code ?}. */
  public static Variable of(Symbol symbol) {
    if (symbol.getNamespace() != null) {
      throw new IllegalArgumentException("A variable is an unqualified symbol: " + symbol);
    }
    return of(symbol.getName());
  }

  /** The name, with its leading {@code ?}. */
  public String name() {
    return name;
  }

  /** The symbol this variable is written as. */
  public Symbol symbol() {
    return symbol;
  }

  @Override
  public String toString() {
    return name;
  }

  private static void purgeCleared() {
    for (Object r; (r = CLEARED.poll()) != null; ) {
      Ref ref = (Ref) r;
      TABLE.remove(ref.name, ref);
    }
  }

  private static final class Ref extends WeakReference<Variable> {
    final String name;

    Ref(Variable v) {
      super(v, CLEARED);
      this.name = v.name;
    }
  }
}
