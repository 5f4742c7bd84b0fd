package datalith.query.parser;

import clojure.lang.ExceptionInfo;
import clojure.lang.Symbol;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The validation pass: which variables each clause list can bind, checked scope by scope. A
 * scope is a clause list plus the variables it inherits ({@code :in} for the query, the head for
 * a rule body, the join variables for a not/or body). Within a scope, clauses run in any order
 * once their {@link Clause#needs()} are bound (the planner picks the order); a clause that can
 * never run is an error. Resolves the join variables of each plain {@code not} (its variables the
 * scope binds), which is why it returns rebuilt clause lists. Not thread-safe; one use per parse.
 */
final class Analyzer {
  private final Map<Object, Object> forms; // identity: AST node -> source form; rebuilt nodes added
  private final Map<Symbol, List<Rule>> rules; // null: rule-unaware (rule calls need nothing)
  private final Symbol rule; // the rule whose body is analysed, for error data; may be null

  Analyzer(Map<Object, Object> forms, Map<Symbol, List<Rule>> rules, Symbol rule) {
    this.forms = forms;
    this.rules = rules;
    this.rule = rule;
  }

  /** A scope's clauses (plain nots resolved) and every variable bound once all have run. */
  record Scope(List<Clause> clauses, Set<Variable> bound) {}

  Scope analyze(List<Clause> clauses, Set<Variable> inherited) {
    Set<Variable> bound = bindAll(clauses, inherited, null);
    reportStuck(clauses, inherited, bound);
    List<Clause> out = new ArrayList<>(clauses.size());
    for (Clause c : clauses) {
      if (c instanceof Not n) {
        out.add(resolveNot(n, bound));
      } else if (c instanceof Or o) {
        Set<Variable> outside = bindAll(clauses, inherited, o);
        LinkedHashSet<Variable> branchInherited = new LinkedHashSet<>(o.requiredVars());
        for (Variable v : o.joinVars()) {
          if (outside.contains(v)) {
            branchInherited.add(v);
          }
        }
        List<And> branches = new ArrayList<>(o.branches().size());
        for (And b : o.branches()) {
          branches.add(rebuilt(b, new And(analyze(b.clauses(), branchInherited).clauses())));
        }
        out.add(rebuilt(o, new Or(o.src(), o.join(), o.requiredVars(), o.joinVars(), branches)));
      } else {
        out.add(c);
      }
    }
    return new Scope(out, bound);
  }

  private Not resolveNot(Not n, Set<Variable> bound) {
    List<Variable> joinVars;
    if (n.join()) {
      Set<Variable> missing = Vars.minus(n.joinVars(), bound);
      if (!missing.isEmpty()) {
        throw error("query/insufficient-binding", "Join variables " + missing + " of "
            + show(n) + " are not bound by the rest of the query", n, missing);
      }
      joinVars = n.joinVars();
    } else {
      joinVars = new ArrayList<>();
      for (Variable v : n.vars()) {
        if (bound.contains(v)) {
          joinVars.add(v);
        }
      }
      if (joinVars.isEmpty()) {
        throw error("query/insufficient-binding", "None of the variables " + n.vars() + " of "
            + show(n) + " is bound outside it, so it could only remove every row or none;"
            + " bind one of them in the enclosing clauses", n, n.vars());
      }
    }
    List<Clause> body = analyze(n.clauses(), Vars.of(joinVars)).clauses();
    return rebuilt(n, new Not(n.src(), n.join(), joinVars, body));
  }

  /** Every variable bound by running, to a fixpoint, each clause whose needs are bound. */
  private Set<Variable> bindAll(List<Clause> clauses, Set<Variable> inherited, Clause skip) {
    Set<Variable> bound = new HashSet<>(inherited);
    boolean[] ran = new boolean[clauses.size()];
    boolean progress = true;
    while (progress) {
      progress = false;
      for (int i = 0; i < clauses.size(); i++) {
        Clause c = clauses.get(i);
        if (!ran[i] && c != skip && !(c instanceof Not) && bound.containsAll(needs(c))) {
          ran[i] = true;
          progress |= bound.addAll(c.binds());
        }
      }
    }
    return bound;
  }

  /** Throws for the first clause that can never run, preferring a variable nothing binds. */
  private void reportStuck(List<Clause> clauses, Set<Variable> inherited, Set<Variable> bound) {
    Set<Variable> bindable = new HashSet<>(inherited);
    for (Clause c : clauses) {
      bindable.addAll(c.binds());
    }
    Clause circular = null;
    for (Clause c : clauses) {
      if (c instanceof Not) {
        continue;
      }
      Set<Variable> missing = Vars.minus(needs(c), bound);
      if (missing.isEmpty()) {
        continue;
      }
      Set<Variable> unbindable = Vars.minus(missing, bindable);
      if (!unbindable.isEmpty()) {
        throw stuck(c, unbindable, "never bound");
      }
      if (circular == null) {
        circular = c;
      }
    }
    if (circular != null) {
      throw stuck(circular, Vars.minus(needs(circular), bound),
          "bound only by clauses that themselves need them (a circular dependency)");
    }
  }

  private ExceptionInfo stuck(Clause c, Set<Variable> missing, String why) {
    if (c instanceof Predicate) {
      return error("query/unbound-var", "Variables " + missing + " of predicate " + show(c)
          + " are " + why + "; bind them with a data pattern, a function binding or :in",
          c, missing);
    } else if (c instanceof FnBinding) {
      return error("query/unbound-var", "Argument variables " + missing + " of function binding "
          + show(c) + " are " + why + "; bind them with a data pattern, a function binding"
          + " or :in", c, missing);
    } else if (c instanceof RuleCall r) {
      return error("query/insufficient-binding", "Rule " + r.name() + " requires " + missing
          + " bound when invoked by " + show(c) + ", but they are " + why, c, missing);
    }
    return error("query/insufficient-binding", show(c) + " needs " + missing
        + " bound by the rest of the query, but they are " + why, c, missing);
  }

  private Set<Variable> needs(Clause c) {
    if (rules != null && c instanceof RuleCall call) {
      Rule r = rules.get(call.name()).get(0);
      for (int i = 0; i < r.requiredVars().size(); i++) {
        if (call.args().get(i) instanceof Placeholder) {
          throw error("query/insufficient-binding", "Rule " + r.name() + " requires its argument "
              + r.vars().get(i) + " bound, but " + show(call) + " passes _", call, Set.of());
        }
      }
      return call.needs(r);
    }
    return c.needs();
  }

  // ---- rules: names, arities and sources (only when the rule set is known) ----

  /** Rule invocations anywhere in the clauses, nested ones included, in order. */
  static List<RuleCall> ruleCalls(List<Clause> clauses) {
    List<RuleCall> out = new ArrayList<>();
    collectCalls(clauses, out);
    return out;
  }

  private static void collectCalls(List<Clause> clauses, List<RuleCall> out) {
    for (Clause c : clauses) {
      if (c instanceof RuleCall r) {
        out.add(r);
      } else if (c instanceof Not n) {
        collectCalls(n.clauses(), out);
      } else if (c instanceof Or o) {
        for (And b : o.branches()) {
          collectCalls(b.clauses(), out);
        }
      }
    }
  }

  /** Throws {@code :query/missing-rules} unless {@code call} names a rule of its arity. */
  void checkCall(RuleCall call) {
    List<Rule> bodies = rules.get(call.name());
    if (bodies == null) {
      throw error("query/missing-rules", show(call) + " invokes rule " + call.name()
          + ", which the rules do not define (defined: " + rules.keySet() + ")", call, Set.of());
    }
    int arity = bodies.get(0).arity();
    if (arity != call.args().size()) {
      throw error("query/missing-rules", show(call) + " invokes rule " + call.name() + " with "
          + call.args().size() + " arguments, but the rule takes " + arity, call, Set.of());
    }
  }

  /**
   * Throws {@code :query/unknown-source} when a rule reached from {@code calls} reads a source the
   * query does not declare: a named source in its body, or the invocation's source when the rule
   * (or a rule it invokes with {@code $}) reads {@code $}.
   */
  void checkSources(List<RuleCall> calls, Set<SrcVar> declared) {
    Map<Symbol, Set<SrcVar>> read = new HashMap<>();
    Map<Symbol, Set<Symbol>> callsWithDefault = new HashMap<>();
    for (Map.Entry<Symbol, List<Rule>> e : rules.entrySet()) {
      Set<SrcVar> sources = new LinkedHashSet<>();
      Set<Symbol> callees = new HashSet<>();
      for (Rule r : e.getValue()) {
        collectSources(r.clauses(), sources, callees);
      }
      read.put(e.getKey(), sources);
      callsWithDefault.put(e.getKey(), callees);
    }
    Set<Symbol> readsDefault = new HashSet<>();
    boolean progress = true;
    while (progress) {
      progress = false;
      for (Symbol name : rules.keySet()) {
        if (!readsDefault.contains(name) && (read.get(name).contains(SrcVar.DEFAULT)
            || callsWithDefault.get(name).stream().anyMatch(readsDefault::contains))) {
          progress |= readsDefault.add(name);
        }
      }
    }
    Set<Symbol> reached = new HashSet<>();
    Deque<Symbol> todo = new ArrayDeque<>();
    for (RuleCall call : calls) {
      if (readsDefault.contains(call.name()) && !declared.contains(call.src())) {
        throw error("query/unknown-source", show(call) + " runs rule " + call.name()
            + " on source " + call.src() + ", which :in does not declare", call, Set.of());
      }
      todo.add(call.name());
    }
    while (!todo.isEmpty()) {
      Symbol name = todo.pop();
      if (!reached.add(name)) {
        continue;
      }
      for (SrcVar src : read.get(name)) {
        if (!src.isDefault() && !declared.contains(src)) {
          throw error("query/unknown-source", "Rule " + name + " reads source " + src
              + ", which :in does not declare", rules.get(name).get(0), Set.of());
        }
      }
      for (Rule r : rules.get(name)) {
        for (RuleCall c : ruleCalls(r.clauses())) {
          todo.add(c.name());
        }
      }
    }
  }

  private static void collectSources(List<Clause> clauses, Set<SrcVar> sources,
      Set<Symbol> defaultCallees) {
    for (Clause c : clauses) {
      if (c instanceof Pattern p) {
        sources.add(p.src());
      } else if (c instanceof Predicate p) {
        addSourceArgs(p.args(), sources);
      } else if (c instanceof FnBinding f) {
        addSourceArgs(f.args(), sources);
      } else if (c instanceof RuleCall r) {
        if (r.src().isDefault()) {
          defaultCallees.add(r.name());
        } else {
          sources.add(r.src());
        }
      } else if (c instanceof Not n) {
        collectSources(n.clauses(), sources, defaultCallees);
      } else if (c instanceof Or o) {
        for (And b : o.branches()) {
          collectSources(b.clauses(), sources, defaultCallees);
        }
      }
    }
  }

  private static void addSourceArgs(List<Term> args, Set<SrcVar> sources) {
    for (Term t : args) {
      if (t instanceof SrcVar s) {
        sources.add(s);
      }
    }
  }

  // ---- helpers ----

  private <T> T rebuilt(Object old, T fresh) {
    Object form = forms.get(old);
    if (form != null) {
      forms.put(fresh, form);
    }
    return fresh;
  }

  private Object formOf(Object node) {
    Object form = forms.get(node);
    return form != null ? form : Forms.of(node);
  }

  private String show(Object node) {
    return Syntax.show(formOf(node));
  }

  private ExceptionInfo error(String key, String message, Object node, Set<Variable> vars) {
    String where = rule == null ? "" : " (in rule " + rule + ")";
    if (rule == null) {
      return Syntax.error(key, message + where, formOf(node), "vars", Syntax.symbols(vars));
    }
    return Syntax.error(key, message + where, formOf(node), "vars", Syntax.symbols(vars),
        "rule", rule);
  }
}
