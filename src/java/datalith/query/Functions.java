package datalith.query;

import clojure.lang.AFn;
import clojure.lang.ArraySeq;
import clojure.lang.IFn;
import clojure.lang.Keyword;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.Symbol;
import clojure.lang.Util;
import clojure.lang.Var;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.IndexScan;
import datalith.db.Snapshot;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The functions and predicates a query may call: Datomic's built-ins (with {@code q}, a
 * nested query), the clojure.core functions Datomic allows unqualified, any fully qualified
 * Clojure function on the classpath, and function values bound to a variable
 * ({@code [(?f ?x) ?y]}, {@link #value}).
 */
final class Functions {
  private static final Set<String> CORE = Set.of("+", "-", "*", "/", "==", "str", "subs", "re-find",
      "re-matches", "re-seq", "re-pattern", "count", "identity", "keyword", "name", "namespace",
      "vector", "list", "set", "hash-map", "array-map", "get", "contains?", "nil?", "some?",
      "zero?", "pos?", "neg?", "even?", "odd?", "inc", "dec", "quot", "rem", "mod", "min", "max",
      "compare", "rand", "rand-int", "not", "true?", "false?", "empty?", "seq", "first", "second",
      "last", "nth", "vals", "keys", "symbol", "int", "long", "double", "float", "boolean",
      "string?", "keyword?", "number?", "integer?", "map?", "vector?", "set?", "coll?", "abs",
      "range", "distinct", "concat", "into", "conj", "assoc", "dissoc", "merge", "select-keys",
      "update", "str/blank?", "subvec", "reverse", "sort", "type", "class", "uuid", "inst-ms",
      "format", "any?");
  private static final Map<String, IFn> BUILTIN = new HashMap<>();

  static {
    BUILTIN.put("=", new Cmp(Cmp.EQ));
    BUILTIN.put("not=", new Cmp(Cmp.NE));
    BUILTIN.put("!=", new Cmp(Cmp.NE));
    BUILTIN.put("-differ?", new Cmp(Cmp.NE));
    BUILTIN.put("<", new Cmp(Cmp.LT));
    BUILTIN.put(">", new Cmp(Cmp.GT));
    BUILTIN.put("<=", new Cmp(Cmp.LE));
    BUILTIN.put(">=", new Cmp(Cmp.GE));
    BUILTIN.put("ground", new AFn() {
      @Override
      public Object invoke(Object x) {
        return x;
      }
    });
    BUILTIN.put("tuple", new Variadic() {
      @Override
      public Object applyTo(clojure.lang.ISeq args) {
        return PersistentVector.create(args);
      }
    });
    BUILTIN.put("untuple", new AFn() {
      @Override
      public Object invoke(Object x) {
        return x;
      }
    });
    BUILTIN.put("get-else", new AFn() {
      @Override
      public Object invoke(Object db, Object e, Object attr, Object dflt) {
        if (dflt == null) {
          throw Errors.error("query/invalid-call", "get-else's default must not be nil",
              "attribute", attr);
        }
        Attr a = attrOf(db, attr, "get-else");
        if (a.many) {
          throw Errors.error("query/invalid-call", "get-else needs a cardinality-one attribute",
              "attribute", attr);
        }
        Object v = firstValue((Db) db, e, a);
        return v == null ? dflt : v;
      }
    });
    BUILTIN.put("get-some", new Variadic() {
      @Override
      public Object applyTo(clojure.lang.ISeq args) {
        Db db = asDb(args.first(), "get-some");
        Object e = RT.second(args);
        for (clojure.lang.ISeq s = RT.next(RT.next(args)); s != null; s = s.next()) {
          Attr a = attrOf(db, s.first(), "get-some");
          Object v = firstValue(db, e, a);
          if (v != null) {
            return PersistentVector.create(a.id, v);
          }
        }
        return null;
      }
    });
    BUILTIN.put("q", new Variadic() { // a nested query: [(q ?query $ ...) ?result]
      @Override
      public Object applyTo(clojure.lang.ISeq args) {
        if (args == null) {
          throw Errors.error("query/invalid-call", "q takes a query and its inputs");
        }
        Object[] inputs = RT.toArray(RT.next(args));
        return Engine.q(args.first(), inputs == null ? new Object[0] : inputs, null);
      }
    });
    // the log in a query, as Datomic's: ?log is (d/log conn), a database value here
    BUILTIN.put("tx-ids", new AFn() { // [(tx-ids ?log ?start ?end) [?tx ...]]
      @Override
      public Object invoke(Object log, Object start, Object end) {
        List<Object[]> txs = asDb(log, "tx-ids").txRange(start, end);
        Object[] ids = new Object[txs.size()];
        for (int i = 0; i < ids.length; i++) {
          ids[i] = txs.get(i)[1];
        }
        return PersistentVector.create(ids);
      }
    });
    BUILTIN.put("tx-data", new AFn() { // [(tx-data ?log ?tx) [[?e ?a ?v ?tx ?added]]]
      @Override
      public Object invoke(Object log, Object tx) {
        if (!(tx instanceof Long) && !(tx instanceof Integer)) {
          throw Errors.error("query/invalid-call", "tx-data takes a transaction id or t",
              "fn", "tx-data", "tx", tx);
        }
        long id = ((Number) tx).longValue();
        List<Object[]> txs = asDb(log, "tx-data").txRange(id, id + 1);
        List<Object> out = new ArrayList<>();
        for (Object[] row : txs) {
          for (Object d : (Iterable<?>) row[2]) {
            Datom x = (Datom) d;
            out.add(PersistentVector.create(x.e, x.aid, x.v, x.tx, x.added));
          }
        }
        return PersistentVector.create(out);
      }
    });
    BUILTIN.put("missing?", new AFn() {
      @Override
      public Object invoke(Object db, Object e, Object attr) {
        return firstValue(asDb(db, "missing?"), e, attrOf(db, attr, "missing?")) == null;
      }
    });
  }

  private Functions() {}

  private static Db asDb(Object x, String fn) {
    if (!(x instanceof Db db)) {
      throw Errors.error("query/invalid-call", fn + " takes a database source first", "fn", fn);
    }
    return db;
  }

  private static Attr attrOf(Object db, Object attr, String fn) {
    Attr a = attr instanceof Keyword k ? asDb(db, fn).schema().attr(k)
        : attr instanceof Number n ? asDb(db, fn).schema().attr(n.longValue()) : null;
    if (a == null) {
      throw Errors.error("query/invalid-call", fn + ": unknown attribute " + attr, "fn", fn,
          "attribute", attr);
    }
    return a;
  }

  /** The first value of {@code a} on entity {@code e} (an id, ident or lookup ref), or null. */
  private static Object firstValue(Db db, Object e, Attr a) {
    if (!(e instanceof Number || e instanceof Keyword || e instanceof List)) {
      return null;
    }
    try (Snapshot s = db.snapshot()) {
      long id = e instanceof Number n ? n.longValue() : db.entid(s, e);
      if (id < 0) {
        return null;
      }
      IndexScan scan = db.scan(s, Index.EAVT, new KeyBuilder().putLong(id).putLong(a.id).view());
      Object v = scan.next() ? scan.v() : null;
      scan.close();
      return v;
    }
  }

  /** The function a query names; throws {@code :query/unknown-fn} when there is none. */
  static IFn resolve(Symbol sym) {
    if (sym.getNamespace() == null) {
      IFn f = BUILTIN.get(sym.getName());
      if (f != null) {
        return f;
      }
      if (CORE.contains(sym.getName())) {
        return RT.var("clojure.core", sym.getName());
      }
      throw Errors.error("query/unknown-fn", "Unknown function " + sym
          + ": use a built-in or a fully qualified symbol", "fn", sym);
    }
    Object v;
    try {
      v = datalith.db.Fns.resolve(sym);
    } catch (Exception ex) {
      throw Errors.errorWithCause(ex, "query/unknown-fn", "Cannot load function " + sym, "fn", sym);
    }
    if (!(v instanceof Var var) || !(var.deref() instanceof IFn)) {
      throw Errors.error("query/unknown-fn", "No function " + sym, "fn", sym);
    }
    return (IFn) v;
  }

  /**
   * The function value {@code x} bound to the variable {@code var} of {@code [(?f ...)]};
   * throws {@code :query/unknown-fn} when it is no function (a keyword, a collection or a
   * symbol, though callable, are not taken for one).
   */
  static IFn value(Object x, Symbol var) {
    if (!(x instanceof IFn f) || x instanceof clojure.lang.Keyword || x instanceof Symbol
        || x instanceof clojure.lang.IPersistentCollection) {
      throw Errors.error("query/unknown-fn", var + " is bound to "
          + (x == null ? "nil" : "a " + x.getClass().getName()) + ", not a function",
          "fn", var, "value", x);
    }
    return f;
  }

  /** Calls {@code f} on {@code args}; a throw becomes {@code :query/fn-failed}. */
  static Object call(IFn f, Symbol name, Object[] args) {
    try {
      switch (args.length) {
        case 0: return f.invoke();
        case 1: return f.invoke(args[0]);
        case 2: return f.invoke(args[0], args[1]);
        case 3: return f.invoke(args[0], args[1], args[2]);
        case 4: return f.invoke(args[0], args[1], args[2], args[3]);
        default: return f.applyTo(ArraySeq.create(args));
      }
    } catch (clojure.lang.ExceptionInfo ex) {
      throw ex;
    } catch (RuntimeException ex) {
      throw Errors.errorWithCause(ex, "query/fn-failed", "Function " + name + " threw: "
          + ex, "fn", name, "args", PersistentVector.create((Object[]) args));
    }
  }

  /** A built-in of any arity: {@link #call}'s fixed-arity invokes all go to {@code applyTo}. */
  private abstract static class Variadic extends AFn {
    @Override
    public Object invoke() {
      return applyTo(null);
    }

    @Override
    public Object invoke(Object a) {
      return applyTo(ArraySeq.create(a));
    }

    @Override
    public Object invoke(Object a, Object b) {
      return applyTo(ArraySeq.create(a, b));
    }

    @Override
    public Object invoke(Object a, Object b, Object c) {
      return applyTo(ArraySeq.create(a, b, c));
    }

    @Override
    public Object invoke(Object a, Object b, Object c, Object d) {
      return applyTo(ArraySeq.create(a, b, c, d));
    }
  }

  /** Comparison predicates with {@link Compare}'s cross-type order. */
  private static final class Cmp extends Variadic {
    static final int EQ = 0;
    static final int NE = 1;
    static final int LT = 2;
    static final int GT = 3;
    static final int LE = 4;
    static final int GE = 5;
    private final int op;

    Cmp(int op) {
      this.op = op;
    }

    private boolean test(Object a, Object b) {
      switch (op) {
        case EQ: return Util.equiv(a, b);
        case NE: return !Util.equiv(a, b);
        case LT: return Compare.compare(a, b) < 0;
        case GT: return Compare.compare(a, b) > 0;
        case LE: return Compare.compare(a, b) <= 0;
        default: return Compare.compare(a, b) >= 0;
      }
    }

    @Override
    public Object invoke(Object a) {
      return Boolean.TRUE;
    }

    @Override
    public Object invoke(Object a, Object b) {
      return test(a, b);
    }

    @Override
    public Object applyTo(clojure.lang.ISeq args) {
      List<Object> l = new java.util.ArrayList<>();
      for (clojure.lang.ISeq x = args; x != null; x = x.next()) {
        l.add(x.first());
      }
      if (op == NE) {
        return !allEqual(l);
      }
      for (int i = 0; i + 1 < l.size(); i++) {
        if (!test(l.get(i), l.get(i + 1))) {
          return Boolean.FALSE;
        }
      }
      return Boolean.TRUE;
    }

    private boolean allEqual(List<?> l) {
      for (int i = 0; i + 1 < l.size(); i++) {
        if (!new Cmp(EQ).test(l.get(i), l.get(i + 1))) {
          return false;
        }
      }
      return true;
    }
  }
}
