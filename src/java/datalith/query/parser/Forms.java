package datalith.query.parser;

import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentList;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.Symbol;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * AST nodes back to query data, in the syntax they were parsed from (the {@code toString} of
 * every AST class prints this form, which parses back to an equal node).
 */
final class Forms {
  static final Symbol UNDERSCORE = Symbol.intern("_");
  static final Symbol PERCENT = Symbol.intern("%");
  static final Symbol DOT = Symbol.intern(".");
  static final Symbol ELLIPSIS = Symbol.intern("...");
  static final Symbol NOT = Symbol.intern("not");
  static final Symbol NOT_JOIN = Symbol.intern("not-join");
  static final Symbol OR = Symbol.intern("or");
  static final Symbol OR_JOIN = Symbol.intern("or-join");
  static final Symbol AND = Symbol.intern("and");
  static final Symbol PULL = Symbol.intern("pull");
  static final Symbol QUOTE = Symbol.intern("quote");

  private Forms() {}

  /** EDN text of an AST node or raw value. */
  static String print(Object x) {
    return RT.printString(of(x));
  }

  /** Query data for an AST node; any other value is returned as is. */
  static Object of(Object x) {
    if (x instanceof Variable v) {
      return v.symbol();
    } else if (x instanceof Constant c) {
      return c.value();
    } else if (x instanceof Placeholder || x instanceof BindIgnore) {
      return UNDERSCORE;
    } else if (x instanceof SrcVar s) {
      return s.symbol();
    } else if (x instanceof RulesVar) {
      return PERCENT;
    } else if (x instanceof PatternName p) {
      return p.symbol();
    } else if (x instanceof BindScalar b) {
      return b.var().symbol();
    } else if (x instanceof BindTuple b) {
      return vector(b.elements());
    } else if (x instanceof BindColl b) {
      return vec(of(b.element()), ELLIPSIS);
    } else if (x instanceof BindRel b) {
      return vec(vector(b.elements()));
    } else if (x instanceof FindSpec f) {
      return findForm(f);
    } else if (x instanceof FindVar f) {
      return f.var().symbol();
    } else if (x instanceof Aggregate a) {
      List<Object> out = new ArrayList<>();
      out.add(a.fn());
      fnArgs(out, a.args());
      out.add(a.var().symbol());
      return PersistentList.create(out);
    } else if (x instanceof Window w) {
      List<Object> out = new ArrayList<>();
      out.add(w.fn());
      if (w.arg() != null) {
        out.add(w.arg().symbol());
      }
      if (w.offset() > 1) {
        out.add(w.offset());
      }
      out.add(Keyword.intern("over"));
      List<Object> spec = new ArrayList<>();
      if (!w.partitionBy().isEmpty()) {
        spec.add(Keyword.intern("partition-by"));
        spec.add(vector(w.partitionBy()));
      }
      if (!w.orderBy().isEmpty()) {
        List<Object> keys = new ArrayList<>();
        for (Window.OrderKey k : w.orderBy()) {
          keys.add(vec(k.var().symbol(), Keyword.intern(k.desc() ? "desc" : "asc")));
        }
        spec.add(Keyword.intern("order-by"));
        spec.add(PersistentVector.create(keys));
      }
      out.add(PersistentArrayMap.createAsIfByAssoc(spec.toArray()));
      return PersistentList.create(out);
    } else if (x instanceof Pull p) {
      List<Object> out = new ArrayList<>();
      out.add(PULL);
      if (!p.src().isDefault()) {
        out.add(p.src().symbol());
      }
      out.add(p.var().symbol());
      out.add(p.pattern() != null ? p.pattern() : p.patternName().symbol());
      return PersistentList.create(out);
    } else if (x instanceof Clause c) {
      return clauseForm(c);
    } else if (x instanceof And a) {
      if (a.clauses().size() == 1) {
        return of(a.clauses().get(0));
      }
      List<Object> out = new ArrayList<>();
      out.add(AND);
      all(out, a.clauses());
      return PersistentList.create(out);
    } else if (x instanceof Rule r) {
      List<Object> head = new ArrayList<>();
      head.add(r.name());
      ruleVars(head, r.requiredVars(), r.vars());
      List<Object> out = new ArrayList<>();
      out.add(PersistentList.create(head));
      all(out, r.clauses());
      return PersistentVector.create(out);
    } else if (x instanceof Query q) {
      return queryForm(q);
    } else if (x instanceof Order o) {
      List<Object> keys = new ArrayList<>();
      for (Order.Key k : o.keys()) {
        keys.add(vec(of(k.ref()), Keyword.intern(k.desc() ? "desc" : "asc")));
      }
      return PersistentVector.create(keys);
    } else if (x instanceof List<?> list) {
      return vector(list);
    }
    return x;
  }

  private static Object findForm(FindSpec f) {
    if (f instanceof FindScalar s) {
      return vec(of(s.element()), DOT);
    } else if (f instanceof FindColl c) {
      return vec(vec(of(c.element()), ELLIPSIS));
    } else if (f instanceof FindTuple t) {
      return vec(vector(t.elements()));
    }
    return vector(f.elements());
  }

  private static Object clauseForm(Clause c) {
    List<Object> out = new ArrayList<>();
    if (c instanceof Pattern p) {
      source(out, p.src());
      all(out, p.terms());
      return PersistentVector.create(out);
    } else if (c instanceof Predicate p) {
      return vec(call(p.fn(), p.args()));
    } else if (c instanceof FnBinding f) {
      return vec(call(f.fn(), f.args()), of(f.binding()));
    } else if (c instanceof RuleCall r) {
      source(out, r.src());
      out.add(r.name());
      all(out, r.args());
      return PersistentList.create(out);
    } else if (c instanceof Not n) {
      source(out, n.src());
      out.add(n.join() ? NOT_JOIN : NOT);
      if (n.join()) {
        out.add(vector(n.joinVars()));
      }
      all(out, n.clauses());
      return PersistentList.create(out);
    }
    Or o = (Or) c;
    source(out, o.src());
    out.add(o.join() ? OR_JOIN : OR);
    if (o.join()) {
      List<Object> vars = new ArrayList<>();
      ruleVars(vars, o.requiredVars(), o.joinVars());
      out.add(PersistentVector.create(vars));
    }
    all(out, o.branches());
    return PersistentList.create(out);
  }

  private static Object queryForm(Query q) {
    List<Object> kvs = new ArrayList<>();
    kvs.add(Keyword.intern("find"));
    kvs.add(of(q.find()));
    q.returnMap().ifPresent(r -> {
      kvs.add(Keyword.intern(r.kind().name().toLowerCase()));
      kvs.add(returnKeys(r));
    });
    if (!q.with().isEmpty()) {
      kvs.add(Keyword.intern("with"));
      kvs.add(vector(q.with()));
    }
    kvs.add(Keyword.intern("in"));
    kvs.add(vector(q.in()));
    if (!q.where().isEmpty()) {
      kvs.add(Keyword.intern("where"));
      kvs.add(vector(q.where()));
    }
    q.timeout().ifPresent(t -> {
      kvs.add(Keyword.intern("timeout"));
      kvs.add(t);
    });
    q.slice().order().ifPresent(o -> {
      kvs.add(Keyword.intern("order-by"));
      kvs.add(of(o));
    });
    q.slice().limit().ifPresent(n -> {
      kvs.add(Keyword.intern("limit"));
      kvs.add(n);
    });
    if (q.slice().offset() > 0) {
      kvs.add(Keyword.intern("offset"));
      kvs.add(q.slice().offset());
    }
    if (!q.validAt().isEmpty()) {
      List<Object> items = new ArrayList<>();
      for (ValidAt v : q.validAt()) {
        items.add(of(v.src()));
        items.add(of(v.instant()));
      }
      kvs.add(Keyword.intern("valid-at"));
      kvs.add(PersistentVector.create(items));
    }
    return PersistentArrayMap.createAsIfByAssoc(kvs.toArray());
  }

  /** The keys of a return map as the symbols they were written as. */
  static Object returnKeys(ReturnMap r) {
    List<Object> syms = new ArrayList<>();
    for (Object k : r.keys()) {
      syms.add(k instanceof Keyword kw ? kw.sym : k instanceof String s ? Symbol.intern(s) : k);
    }
    return PersistentVector.create(syms);
  }

  private static void ruleVars(List<Object> out, List<Variable> required, List<Variable> all) {
    if (!required.isEmpty()) {
      out.add(vector(required));
    }
    for (Variable v : all.subList(required.size(), all.size())) {
      out.add(v.symbol());
    }
  }

  private static Object call(Symbol fn, List<Term> args) {
    List<Object> out = new ArrayList<>();
    out.add(fn);
    fnArgs(out, args);
    return PersistentList.create(out);
  }

  // a function's constant symbol is written quoted: (f 'sym), as fn-args take it
  private static void fnArgs(List<Object> out, List<Term> args) {
    for (Term t : args) {
      boolean quote = t instanceof Constant c && (c.value() instanceof Symbol
          || Syntax.isQuoted(c.value()));
      out.add(quote ? PersistentList.create(List.of(QUOTE, ((Constant) t).value())) : of(t));
    }
  }

  private static void source(List<Object> out, SrcVar src) {
    if (!src.isDefault()) {
      out.add(src.symbol());
    }
  }

  private static void all(List<Object> out, List<?> nodes) {
    for (Object n : nodes) {
      out.add(of(n));
    }
  }

  private static Object vec(Object... items) {
    return PersistentVector.create(Arrays.asList(items));
  }

  private static Object vector(List<?> nodes) {
    List<Object> out = new ArrayList<>();
    all(out, nodes);
    return PersistentVector.create(out);
  }
}
