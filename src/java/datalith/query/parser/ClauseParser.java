package datalith.query.parser;

import clojure.lang.ExceptionInfo;
import clojure.lang.Symbol;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Parses {@code :where} clauses and rule bodies into {@link Clause}s, and the bindings shared with
 * {@code :in}. Structural only: which variables are bound where is the {@link Analyzer}'s job,
 * except the checks that need no scope (same variables in every {@code or} branch, join variables
 * used by the body). One instance per query or rule set; not thread-safe.
 */
final class ClauseParser {
  private final String errorKey; // "parser/where" for queries, "parser/rule" for rule bodies
  private final Set<SrcVar> declaredSources; // null: sources are checked later (rule bodies)
  private final Map<Object, Object> forms; // identity: AST node -> the form it was parsed from
  private final List<RuleCall> ruleCalls = new ArrayList<>();

  ClauseParser(String errorKey, Set<SrcVar> declaredSources, Map<Object, Object> forms) {
    this.errorKey = errorKey;
    this.declaredSources = declaredSources;
    this.forms = forms;
  }

  /** Rule invocations parsed so far, in order. */
  List<RuleCall> ruleCalls() {
    return ruleCalls;
  }

  List<Clause> parseClauses(List<Object> clauseForms, SrcVar defaultSrc) {
    List<Clause> out = new ArrayList<>(clauseForms.size());
    for (Object form : clauseForms) {
      out.add(parseClause(form, defaultSrc));
    }
    return out;
  }

  // clause = (not-clause | not-join-clause | or-clause | or-join-clause | expression-clause)
  Clause parseClause(Object form, SrcVar defaultSrc) {
    if (!Syntax.isSequential(form)) {
      throw malformed(form, "expected a data pattern [?e :attr ?v], a predicate [(pred ?x)],"
          + " a function binding [(f ?x) ?y], a rule invocation (rule ?x),"
          + " or a not / not-join / or / or-join clause");
    }
    List<Object> items = Syntax.items(form);
    if (items.isEmpty()) {
      throw malformed(form, "a clause cannot be empty");
    }
    Object first = items.get(0);
    if (Syntax.isList(first)) {
      return record(parseCall(form, items), form);
    }
    SrcVar src = defaultSrc;
    int at = 0;
    if (Syntax.isSrcVar(first)) {
      src = source(first, form);
      at = 1;
      if (items.size() == 1) {
        throw malformed(form, "a clause needs more than a source");
      }
      if (Syntax.isList(items.get(1))) {
        throw malformed(form, "predicates and function bindings take no source;"
            + " pass it as an argument: [(f $src ?x)]");
      }
    }
    Object head = items.get(at);
    List<Object> rest = items.subList(at + 1, items.size());
    if (Syntax.isPlainSymbol(head)) {
      Symbol sym = (Symbol) head;
      Clause parsed;
      if (sym.equals(Forms.NOT)) {
        parsed = parseNot(form, src, rest);
      } else if (sym.equals(Forms.NOT_JOIN)) {
        parsed = parseNotJoin(form, src, rest);
      } else if (sym.equals(Forms.OR)) {
        parsed = parseOr(form, src, rest);
      } else if (sym.equals(Forms.OR_JOIN)) {
        parsed = parseOrJoin(form, src, rest);
      } else if (sym.equals(Forms.AND)) {
        throw malformed(form, "(and ...) is only allowed as a branch of or / or-join");
      } else {
        parsed = parseRuleCall(form, src, sym, rest);
      }
      return record(parsed, form);
    }
    return record(parsePattern(form, src, items.subList(at, items.size())), form);
  }

  // data-pattern = [ src-var? (variable | constant | '_'){1,5} ]
  private Pattern parsePattern(Object form, SrcVar src, List<Object> termForms) {
    if (termForms.size() > 5) {
      throw malformed(form, "a data pattern has at most 5 terms [e a v tx added]");
    }
    List<Term> terms = new ArrayList<>(termForms.size());
    for (Object t : termForms) {
      terms.add(patternTerm(t, form));
    }
    if (terms.size() == 5 && terms.get(4) instanceof Constant c
        && !(c.value() instanceof Boolean)) {
      throw malformed(form, "the added position of a data pattern is true, false, a variable or _");
    }
    checkDeclared(src, form);
    return new Pattern(src, terms);
  }

  // a term of a data pattern: a symbol other than ?var, $src and _ is a constant (Datomic's
  // [?e :attr sym] matches the symbol value sym)
  private Term patternTerm(Object t, Object form) {
    if (Syntax.isSrcVar(t)) {
      throw malformed(form, "a source such as " + t + " can only come first in a data pattern");
    } else if (t instanceof Symbol) {
      return symbolTerm((Symbol) t);
    }
    return valueTerm(t, form);
  }

  private static Term symbolTerm(Symbol t) {
    if (Syntax.isVariable(t)) {
      return Variable.of(t);
    } else if (Syntax.isPlaceholder(t)) {
      return Placeholder.INSTANCE;
    }
    return new Constant(t);
  }

  // a non-symbol term of a data pattern or rule invocation
  private Term valueTerm(Object t, Object form) {
    if (t == null) {
      throw malformed(form, "nil never matches a datom; to find entities without a value"
          + " use [(missing? $ ?e :attr)]");
    }
    return constant(t, form);
  }

  // pred-expr = [ [pred fn-arg*] ] ; fn-expr = [ [fn fn-arg*] binding ]
  // (pred and fn: a plain symbol, or a variable bound to a function value)
  private Clause parseCall(Object form, List<Object> items) {
    if (items.size() > 2) {
      throw malformed(form, "expected a predicate [(pred ...)] or a function binding"
          + " [(f ...) binding]");
    }
    List<Object> call = Syntax.items(items.get(0));
    if (call.isEmpty() || !Syntax.isPlainSymbol(call.get(0)) && !Syntax.isVariable(call.get(0))) {
      throw malformed(form, "a function call starts with the function's symbol (or a variable"
          + " bound to a function), got "
          + Syntax.show(items.get(0)));
    }
    Symbol fn = (Symbol) call.get(0);
    List<Term> args = new ArrayList<>(call.size() - 1);
    for (Object a : call.subList(1, call.size())) {
      args.add(fnArg(a, form));
    }
    if (items.size() == 1) {
      return new Predicate(fn, args);
    }
    return new FnBinding(fn, args, parseBinding(items.get(1), errorKey, form));
  }

  // fn-arg = (variable | constant | src-var) ; a symbol constant is quoted: 'sym, (quote sym)
  private Term fnArg(Object a, Object form) {
    if (Syntax.isVariable(a)) {
      return Variable.of((Symbol) a);
    } else if (Syntax.isSrcVar(a)) {
      return source(a, form);
    } else if (Syntax.isPlaceholder(a)) {
      throw malformed(form, "_ is not a function argument; pass a variable or a constant");
    } else if (a instanceof Symbol) {
      throw malformed(form, "symbol " + a + " as a function argument; pass a variable, a"
          + " constant, a source, or the symbol quoted: '" + a);
    } else if (Syntax.isQuoted(a)) {
      return constant(Syntax.items(a).get(1), form);
    }
    return constant(a, form);
  }

  // rule-expr = [ src-var? rule-name (variable | constant | '_')+ ]
  private RuleCall parseRuleCall(Object form, SrcVar src, Symbol name, List<Object> argForms) {
    if (name.getNamespace() != null) {
      throw malformed(form, "rule names are unqualified symbols, got " + name
          + "; a function call is written [(" + name + " ...)]");
    }
    if (argForms.isEmpty()) {
      throw malformed(form, "a rule invocation takes at least one argument");
    }
    List<Term> args = new ArrayList<>(argForms.size());
    for (Object a : argForms) {
      if (Syntax.isSrcVar(a)) {
        throw malformed(form, "a source such as " + a + " can only come first in a rule"
            + " invocation");
      } else if (Syntax.isVariable(a) || Syntax.isPlaceholder(a)) {
        args.add(symbolTerm((Symbol) a));
      } else if (a instanceof Symbol) {
        // Datomic takes a symbol constant in a data pattern but not in a rule invocation
        throw malformed(form, "symbol " + a + " as a rule argument; variables start with ?,"
            + " and a symbol constant goes in the rule's data patterns");
      } else {
        args.add(valueTerm(a, form));
      }
    }
    RuleCall call = new RuleCall(src, name, args);
    ruleCalls.add(call);
    return call;
  }

  // not-clause = [ src-var? 'not' clause+ ]
  private Not parseNot(Object form, SrcVar src, List<Object> rest) {
    if (rest.isEmpty()) {
      throw malformed(form, "(not clause+) needs at least one clause");
    }
    List<Clause> body = parseClauses(rest, src);
    return new Not(src, false, List.copyOf(Vars.ofClauses(body)), body);
  }

  // not-join-clause = [ src-var? 'not-join' [variable+] clause+ ]
  private Not parseNotJoin(Object form, SrcVar src, List<Object> rest) {
    if (rest.size() < 2 || !Syntax.isSequential(rest.get(0))) {
      throw malformed(form, "expected (not-join [?var+] clause+)");
    }
    List<Variable> joinVars = distinctVars(Syntax.items(rest.get(0)), form, "not-join");
    if (joinVars.isEmpty()) {
      throw malformed(form, "(not-join [?var+] clause+) needs at least one join variable");
    }
    List<Clause> body = parseClauses(rest.subList(1, rest.size()), src);
    Set<Variable> used = Vars.ofClauses(body);
    Set<Variable> unused = Vars.minus(joinVars, used);
    if (!unused.isEmpty()) {
      throw Syntax.error("query/insufficient-binding", "Join variables " + unused
          + " of " + Syntax.show(form) + " are not used in its body", form,
          "vars", Syntax.symbols(unused));
    }
    return new Not(src, true, joinVars, body);
  }

  // or-clause = [ src-var? 'or' (clause | and-clause)+ ]
  private Or parseOr(Object form, SrcVar src, List<Object> rest) {
    if (rest.isEmpty()) {
      throw malformed(form, "(or branch+) needs at least one branch");
    }
    List<And> branches = parseBranches(rest, src);
    Set<Variable> vars = branches.get(0).vars();
    for (int i = 1; i < branches.size(); i++) {
      Set<Variable> other = branches.get(i).vars();
      if (!other.equals(vars)) {
        throw Syntax.error("query/insufficient-binding", "All branches of an or must use the"
            + " same variables, but " + Syntax.show(forms.get(branches.get(0))) + " uses " + vars
            + " and " + Syntax.show(forms.get(branches.get(i))) + " uses " + other
            + "; use (or-join [?var+] ...) to name the variables joined with the query", form,
            "vars", Syntax.symbols(Vars.union(Vars.minus(vars, other), Vars.minus(other, vars))));
      }
    }
    return new Or(src, false, List.of(), List.copyOf(vars), branches);
  }

  // or-join-clause = [ src-var? 'or-join' rule-vars (clause | and-clause)+ ]
  private Or parseOrJoin(Object form, SrcVar src, List<Object> rest) {
    if (rest.size() < 2 || !Syntax.isSequential(rest.get(0))) {
      throw malformed(form, "expected (or-join [?var+] branch+) or (or-join [[?req+] ?var*]"
          + " branch+)");
    }
    RuleVars vars = parseRuleVars(Syntax.items(rest.get(0)), errorKey, form, "or-join");
    List<And> branches = parseBranches(rest.subList(1, rest.size()), src);
    Set<Variable> unused = new LinkedHashSet<>(vars.all());
    for (And branch : branches) {
      unused.removeAll(branch.vars());
    }
    if (!unused.isEmpty()) {
      throw Syntax.error("query/insufficient-binding", "Join variables " + unused + " of "
          + Syntax.show(form) + " are not used in any branch", form,
          "vars", Syntax.symbols(unused));
    }
    return new Or(src, true, vars.required(), vars.all(), branches);
  }

  // branch = (clause | and-clause) ; and-clause = [ 'and' clause+ ]
  private List<And> parseBranches(List<Object> branchForms, SrcVar src) {
    List<And> out = new ArrayList<>(branchForms.size());
    for (Object b : branchForms) {
      And branch;
      List<Object> items = Syntax.isSequential(b) ? Syntax.items(b) : List.of();
      if (!items.isEmpty() && Forms.AND.equals(items.get(0))) {
        if (items.size() < 2) {
          throw malformed(b, "(and clause+) needs at least one clause");
        }
        branch = new And(parseClauses(items.subList(1, items.size()), src));
      } else {
        branch = new And(List.of(parseClause(b, src)));
      }
      out.add(record(branch, b));
    }
    return out;
  }

  /** Head variables of a rule or or-join: all of them in order, the required ones first. */
  record RuleVars(List<Variable> required, List<Variable> all) {}

  // rule-vars = [ variable+ | ([variable+] variable*) ]
  static RuleVars parseRuleVars(List<Object> items, String errorKey, Object form, String what) {
    List<Object> required = List.of();
    List<Object> free = items;
    if (!items.isEmpty() && Syntax.isSequential(items.get(0))) {
      required = Syntax.items(items.get(0));
      free = items.subList(1, items.size());
      if (required.isEmpty()) {
        throw Syntax.error(errorKey, "The required variables [?req+] of " + Syntax.show(form)
            + " cannot be empty", form);
      }
    }
    List<Object> all = new ArrayList<>(required);
    all.addAll(free);
    List<Variable> vars = distinctVarsFor(all, errorKey, form, what);
    if (vars.isEmpty()) {
      throw Syntax.error(errorKey, "The variables of " + what + " in " + Syntax.show(form)
          + " cannot be empty", form);
    }
    return new RuleVars(vars.subList(0, required.size()), vars);
  }

  // binding = (bind-scalar | bind-tuple | bind-coll | bind-rel | '_'), nested at will
  /**
   * The binding {@code b} written in {@code form}: a variable, {@code _}, {@code [binding+]} (a
   * tuple), {@code [binding ...]} (a collection) or {@code [[binding+]]} (a relation), each
   * position of a tuple itself any binding. No variable may occur twice.
   */
  static Binding parseBinding(Object b, String errorKey, Object form) {
    return parseBinding(b, errorKey, form, new HashSet<>());
  }

  private static Binding parseBinding(Object b, String errorKey, Object form,
      Set<Variable> seen) {
    if (Syntax.isPlaceholder(b)) {
      return BindIgnore.INSTANCE;
    } else if (Syntax.isVariable(b)) {
      Variable v = Variable.of((Symbol) b);
      if (!seen.add(v)) {
        throw Syntax.error(errorKey, "Variable " + v + " appears twice in binding "
            + Syntax.show(form), form, "vars", Syntax.symbols(List.of(v)));
      }
      return new BindScalar(v);
    } else if (Syntax.isSequential(b)) {
      List<Object> items = Syntax.items(b);
      if (items.size() == 2 && Forms.ELLIPSIS.equals(items.get(1))) {
        return new BindColl(parseBinding(items.get(0), errorKey, form, seen));
      } else if (items.size() == 1 && Syntax.isSequential(items.get(0))) {
        return new BindRel(tupleElements(Syntax.items(items.get(0)), items.get(0), errorKey,
            form, seen));
      }
      return new BindTuple(tupleElements(items, b, errorKey, form, seen));
    }
    throw Syntax.error(errorKey, "Cannot parse binding " + Syntax.show(b) + ", expected ?var,"
        + " _, [binding+] (a tuple), [binding ...] (a collection) or [[binding+]] (a relation)",
        form);
  }

  // bind-tuple = [ binding+ ]
  private static List<Binding> tupleElements(List<Object> items, Object b, String errorKey,
      Object form, Set<Variable> seen) {
    if (items.isEmpty()) {
      throw Syntax.error(errorKey, "Cannot parse binding " + Syntax.show(b)
          + ", a tuple binding has at least one position", form);
    }
    List<Binding> out = new ArrayList<>(items.size());
    for (Object item : items) {
      if (Forms.ELLIPSIS.equals(item)) {
        throw Syntax.error(errorKey, "Cannot parse binding " + Syntax.show(b) + ": ... comes"
            + " last in a collection binding [binding ...]", form);
      }
      out.add(parseBinding(item, errorKey, form, seen));
    }
    return out;
  }

  private List<Variable> distinctVars(List<Object> items, Object form, String what) {
    return distinctVarsFor(items, errorKey, form, what);
  }

  private static List<Variable> distinctVarsFor(List<Object> items, String errorKey, Object form,
      String what) {
    LinkedHashSet<Variable> out = new LinkedHashSet<>();
    for (Object item : items) {
      if (!Syntax.isVariable(item)) {
        throw Syntax.error(errorKey, "The variables of " + what + " in " + Syntax.show(form)
            + " must be variables, got " + Syntax.show(item), form);
      }
      if (!out.add(Variable.of((Symbol) item))) {
        throw Syntax.error(errorKey, "Variable " + item + " appears twice in " + what + " "
            + Syntax.show(form), form, "vars", Syntax.symbols(List.of(Variable.of((Symbol) item))));
      }
    }
    return List.copyOf(out);
  }

  private Constant constant(Object value, Object form) {
    if (Syntax.containsVariable(value)) {
      throw malformed(form, "constant " + Syntax.show(value) + " contains a variable, but"
          + " variables inside constants are not bound; bind the parts separately");
    }
    return new Constant(value);
  }

  private SrcVar source(Object sym, Object form) {
    SrcVar src = new SrcVar(((Symbol) sym).getName());
    checkDeclared(src, form);
    return src;
  }

  private void checkDeclared(SrcVar src, Object form) {
    if (declaredSources != null && !declaredSources.contains(src)) {
      throw Syntax.error("query/unknown-source", Syntax.show(form) + " reads source " + src
          + ", which :in does not declare", form, "source", src.symbol());
    }
  }

  private <T> T record(T node, Object form) {
    forms.put(node, form);
    return node;
  }

  private ExceptionInfo malformed(Object form, String why) {
    return Syntax.error(errorKey, "Cannot parse clause " + Syntax.show(form) + ": " + why, form);
  }
}
