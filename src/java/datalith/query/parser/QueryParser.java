package datalith.query.parser;

import clojure.lang.EdnReader;
import clojure.lang.ExceptionInfo;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentHashMap;
import clojure.lang.Symbol;
import datalith.db.Errors;
import java.io.PushbackReader;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;

/**
 * Parses Datomic-dialect queries and rule sets into the AST of this package, validating them
 * before any execution. Stateless; safe to call from any thread.
 */
public final class QueryParser {
  private static final Set<String> SECTIONS =
      Set.of("find", "keys", "strs", "syms", "with", "in", "where", "order-by", "limit", "offset",
          "valid-at");
  private static final Set<String> RESERVED_RULE_NAMES =
      Set.of("not", "not-join", "or", "or-join", "and");
  private static final Set<String> ONE_ARG_AGGREGATES =
      Set.of("count", "count-distinct", "sum", "avg", "median", "variance", "stddev", "distinct");
  private static final Object EOF = new Object();

  private QueryParser() {}

  /**
   * Parses and validates a query.
   *
   * @param q a vector {@code [:find ... :in ... :with ... :where ...]}, a map {@code {:find [...]
   *     :in [...] :with [...] :where [...] :keys [...] :timeout ms}}, or a String of EDN holding
   *     either
   * @return the query's AST, never null; {@code :in} defaults to {@code [$]}
   * @throws ExceptionInfo with a namespaced {@code :error} key and the offending {@code :form}
   */
  public static Query parse(Object q) {
    Object data = q instanceof String s ? readEdn(s, "parser/query") : q;
    Syntax.checkDepth(data, "parser/query");
    Map<String, List<Object>> sections;
    OptionalLong timeout = OptionalLong.empty();
    if (Syntax.isVector(data) || Syntax.isList(data)) {
      sections = vectorSections(data);
    } else if (data instanceof IPersistentMap map) {
      sections = new LinkedHashMap<>();
      timeout = mapSections(map, data, sections);
    } else {
      throw Syntax.error("parser/query", "A query is a vector [:find ...], a map {:find [...]}"
          + " or a string of EDN, got " + Syntax.show(data), q);
    }
    if (!sections.containsKey("find")) {
      throw Syntax.error("parser/query", "Query " + Syntax.show(data) + " has no :find", data);
    }
    Map<Object, Object> forms = new IdentityHashMap<>();

    List<InBinding> in = sections.containsKey("in")
        ? parseIn(sections.get("in"), forms) : List.of(SrcVar.DEFAULT);
    Set<SrcVar> sources = new HashSet<>();
    Set<Variable> inVars = new LinkedHashSet<>();
    Set<PatternName> patternNames = new HashSet<>();
    boolean hasRules = false;
    for (InBinding b : in) {
      if (b instanceof SrcVar s) {
        sources.add(s);
      } else if (b instanceof PatternName p) {
        patternNames.add(p);
      } else if (b instanceof Binding binding) {
        inVars.addAll(binding.vars());
        if (b instanceof BindScalar scalar) { // may hold a pull pattern: (pull ?e ?pattern)
          patternNames.add(new PatternName(scalar.var().symbol()));
        }
      } else {
        hasRules = true;
      }
    }

    FindSpec find = parseFind(sections.get("find"), sources, patternNames, forms);
    Optional<ReturnMap> returnMap = parseReturnMap(sections, find);
    List<Variable> with = sections.containsKey("with")
        ? parseWith(sections.get("with"), find, forms) : List.of();

    List<Clause> where = List.of();
    Set<Variable> bound = inVars;
    List<Object> whereForms = sections.getOrDefault("where", List.of());
    if (!whereForms.isEmpty()) {
      ClauseParser clauses = new ClauseParser("parser/where", sources, forms);
      where = clauses.parseClauses(whereForms, SrcVar.DEFAULT);
      if (!hasRules && !clauses.ruleCalls().isEmpty()) {
        Object form = forms.get(clauses.ruleCalls().get(0));
        throw Syntax.error("query/missing-rules", Syntax.show(form) + " invokes a rule, but :in"
            + " has no % to pass the rules in; a predicate is written [(pred ...)]", form);
      }
      Analyzer.Scope scope = new Analyzer(forms, null, null).analyze(where, inVars);
      where = scope.clauses();
      bound = scope.bound();
    } else {
      List<Variable> needed = new ArrayList<>(with);
      for (FindElement e : find.elements()) {
        needed.add(e.var());
      }
      Set<Variable> missing = Vars.minus(needed, inVars);
      if (!missing.isEmpty()) {
        throw Syntax.error("parser/query", "Query " + Syntax.show(data) + " has no :where"
            + " clauses, so :in must bind every :find and :with variable, but not " + missing,
            data, "vars", Syntax.symbols(missing));
      }
    }
    checkFindBound(find, with, bound, inVars, forms);
    Optional<Order> order = sections.containsKey("order-by")
        ? Optional.of(SliceParser.parseOrder(sections.get("order-by"), find, forms))
        : Optional.empty();
    OptionalLong limit = sections.containsKey("limit")
        ? OptionalLong.of(SliceParser.count(sections.get("limit"), "limit", data))
        : OptionalLong.empty();
    long offset = sections.containsKey("offset")
        ? SliceParser.count(sections.get("offset"), "offset", data) : 0;
    List<ValidAt> validAt = sections.containsKey("valid-at")
        ? ValidAtParser.parse(sections.get("valid-at"), sources, in, data) : List.of();
    return new Query(find, returnMap, with, in, where, timeout,
        new Query.Slice(order, limit, offset), validAt, q, forms);
  }

  /**
   * Parses and validates the rule set given as the {@code %} input.
   *
   * @param rules a vector of rules {@code [[(name ?a [?req] ?b) clause+] ...]}, or a String of EDN
   *     holding one
   * @return one {@link Rule} per rule body, in order; never null
   * @throws ExceptionInfo {@code :parser/rule} for a malformed rule or inconsistent arity,
   *     {@code :query/missing-rules} for an invocation of an undefined rule, and the variable
   *     errors of {@link #parse(Object)} for the bodies
   */
  public static List<Rule> parseRules(Object rules) {
    Object data = rules instanceof String s ? readEdn(s, "parser/rule") : rules;
    Syntax.checkDepth(data, "parser/rule");
    if (!Syntax.isSequential(data)) {
      throw Syntax.error("parser/rule", "Rules are a vector [[(name ?var+) clause+] ...], got "
          + Syntax.show(data), rules);
    }
    Map<Object, Object> forms = new IdentityHashMap<>();
    ClauseParser clauses = new ClauseParser("parser/rule", null, forms);
    List<Rule> parsed = new ArrayList<>();
    Map<Symbol, List<Rule>> byName = new LinkedHashMap<>();
    for (Object form : Syntax.items(data)) {
      Rule r = parseRule(form, clauses);
      forms.put(r, form);
      parsed.add(r);
      List<Rule> bodies = byName.computeIfAbsent(r.name(), k -> new ArrayList<>());
      if (!bodies.isEmpty() && (bodies.get(0).arity() != r.arity()
          || bodies.get(0).requiredVars().size() != r.requiredVars().size())) {
        Rule first = bodies.get(0);
        throw Syntax.error("parser/rule", "Rule " + r.name() + " has bodies of different arity: "
            + Syntax.show(forms.get(first)) + " and " + Syntax.show(form), form,
            "rule", r.name());
      }
      bodies.add(r);
    }
    Analyzer checker = new Analyzer(forms, byName, null);
    for (RuleCall call : clauses.ruleCalls()) {
      checker.checkCall(call);
    }
    List<Rule> out = new ArrayList<>(parsed.size());
    for (Rule r : parsed) {
      Analyzer analyzer = new Analyzer(forms, byName, r.name());
      List<Clause> body = analyzer.analyze(r.clauses(), Vars.of(r.vars())).clauses();
      out.add(new Rule(r.name(), r.requiredVars(), r.vars(), body));
    }
    return Collections.unmodifiableList(out);
  }

  // rule = [ [rule-name rule-vars] clause+ ]
  private static Rule parseRule(Object form, ClauseParser clauses) {
    List<Object> items = Syntax.isSequential(form) ? Syntax.items(form) : List.of();
    if (items.size() < 2 || !Syntax.isSequential(items.get(0))
        || Syntax.items(items.get(0)).isEmpty()) {
      throw Syntax.error("parser/rule", "Cannot parse rule " + Syntax.show(form)
          + ", a rule is [(name ?var+) clause+]", form);
    }
    List<Object> head = Syntax.items(items.get(0));
    Object name = head.get(0);
    if (!Syntax.isPlainSymbol(name) || ((Symbol) name).getNamespace() != null
        || RESERVED_RULE_NAMES.contains(((Symbol) name).getName())) {
      throw Syntax.error("parser/rule", "Cannot parse rule " + Syntax.show(form) + ", a rule name"
          + " is an unqualified symbol other than not, not-join, or, or-join and and, got "
          + Syntax.show(name), form);
    }
    ClauseParser.RuleVars vars = ClauseParser.parseRuleVars(head.subList(1, head.size()),
        "parser/rule", form, "rule head");
    List<Clause> body = clauses.parseClauses(items.subList(1, items.size()), SrcVar.DEFAULT);
    Set<Variable> unused = Vars.minus(vars.all(), Vars.ofClauses(body));
    if (!unused.isEmpty()) {
      throw Syntax.error("parser/rule", "Head variables " + unused + " of rule " + name
          + " are not used in its body " + Syntax.show(form), form,
          "vars", Syntax.symbols(unused), "rule", name);
    }
    return new Rule((Symbol) name, vars.required(), vars.all(), body);
  }

  // query = [find-spec return-map-spec? with-clause? inputs? where-clauses?]
  private static Map<String, List<Object>> vectorSections(Object data) {
    Map<String, List<Object>> sections = new LinkedHashMap<>();
    List<Object> current = null;
    for (Object item : Syntax.items(data)) {
      if (item instanceof Keyword k && !(ValidAtParser.isAnyValidTime(k)
          && current != null && current == sections.get("valid-at"))) { // :valid-at $ :any-valid-time: an item
        String name = sectionName(k, data);
        if (name.equals("timeout")) {
          throw Syntax.error("parser/query", ":timeout is accepted in the map form of a query"
              + " {:find [...] :where [...] :timeout ms}, not in " + Syntax.show(data), data);
        }
        if (sections.containsKey(name)) {
          throw Syntax.error("parser/query", "Section " + k + " appears twice in query "
              + Syntax.show(data), data);
        }
        current = new ArrayList<>();
        sections.put(name, current);
      } else if (current == null) {
        throw Syntax.error("parser/query", "Query " + Syntax.show(data) + " must start with a"
            + " section keyword such as :find, got " + Syntax.show(item), data);
      } else {
        current.add(item);
      }
    }
    sections.replaceAll((k, v) -> Syntax.vector(v));
    return sections;
  }

  private static OptionalLong mapSections(IPersistentMap map, Object data,
      Map<String, List<Object>> sections) {
    OptionalLong timeout = OptionalLong.empty();
    for (Object o : map) {
      Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
      if (!(e.getKey() instanceof Keyword k)) {
        throw Syntax.error("parser/query", "Query map keys are section keywords such as :find,"
            + " got " + Syntax.show(e.getKey()), data);
      }
      String name = sectionName(k, data);
      if (name.equals("timeout")) {
        timeout = OptionalLong.of(timeoutMillis(e.getValue(), data));
      } else if (name.equals("limit") || name.equals("offset")
          || name.equals("valid-at") && !Syntax.isSequential(e.getValue())) {
        sections.put(name, List.of(e.getValue())); // {:valid-at ?when}: one item
      } else if (!Syntax.isSequential(e.getValue())) {
        throw Syntax.error("parser/query", "The value of " + k + " in a query map is a vector,"
            + " got " + Syntax.show(e.getValue()), data);
      } else {
        sections.put(name, Syntax.vector(Syntax.items(e.getValue())));
      }
    }
    return timeout;
  }

  private static String sectionName(Keyword k, Object data) {
    String name = k.getNamespace() == null ? k.getName() : "";
    if (!SECTIONS.contains(name) && !name.equals("timeout")) {
      throw Syntax.error("parser/query", "Unknown query section " + k + " in "
          + Syntax.show(data) + "; expected :find, :keys, :strs, :syms, :with, :in, :where,"
          + " :order-by, :limit, :offset, :valid-at or (map form) :timeout", data);
    }
    return name;
  }

  private static long timeoutMillis(Object value, Object data) {
    if ((value instanceof Long || value instanceof Integer || value instanceof Short
        || value instanceof Byte) && ((Number) value).longValue() > 0) {
      return ((Number) value).longValue();
    }
    throw Syntax.error("parser/query", ":timeout is a positive integer number of milliseconds,"
        + " got " + Syntax.show(value), data);
  }

  // find-spec = ':find' (find-rel | find-coll | find-tuple | find-scalar)
  private static FindSpec parseFind(List<Object> items, Set<SrcVar> sources,
      Set<PatternName> patternNames, Map<Object, Object> forms) {
    if (items.isEmpty()) {
      throw Syntax.error("parser/find", ":find needs at least one element", items);
    }
    if (items.size() == 2 && Forms.DOT.equals(items.get(1))) {
      return new FindScalar(findElement(items.get(0), items, sources, patternNames, forms));
    }
    if (items.size() == 1 && Syntax.isVector(items.get(0))) {
      List<Object> inner = Syntax.items(items.get(0));
      if (inner.size() == 2 && Forms.ELLIPSIS.equals(inner.get(1))) {
        return new FindColl(findElement(inner.get(0), items, sources, patternNames, forms));
      }
      if (inner.isEmpty()) {
        throw Syntax.error("parser/find", "A tuple find [?a ?b] needs at least one element",
            items.get(0));
      }
      List<FindElement> elements = new ArrayList<>();
      for (Object e : inner) {
        elements.add(findElement(e, items, sources, patternNames, forms));
      }
      return new FindTuple(elements);
    }
    List<FindElement> elements = new ArrayList<>();
    for (Object e : items) {
      elements.add(findElement(e, items, sources, patternNames, forms));
    }
    return new FindRel(elements);
  }

  // find-elem = (variable | pull-expr | aggregate)
  private static FindElement findElement(Object e, Object findSection, Set<SrcVar> sources,
      Set<PatternName> patternNames, Map<Object, Object> forms) {
    FindElement parsed;
    if (Syntax.isVariable(e)) {
      parsed = new FindVar(Variable.of((Symbol) e));
    } else if (Syntax.isList(e) && !Syntax.items(e).isEmpty()
        && Forms.PULL.equals(Syntax.items(e).get(0))) {
      parsed = parsePull(e, sources, patternNames);
    } else if (Syntax.isList(e) && Syntax.items(e).contains(SliceParser.OVER)) {
      parsed = SliceParser.parseWindow(e);
    } else if (Syntax.isList(e) && !Syntax.items(e).isEmpty()) {
      parsed = parseAggregate(e, sources);
    } else if (Forms.DOT.equals(e) || Forms.ELLIPSIS.equals(e) || Syntax.isVector(e)) {
      throw Syntax.error("parser/find", "Cannot parse :find element " + Syntax.show(e)
          + "; a scalar find is `?x .`, a collection `[?x ...]` and a tuple `[?a ?b]`, each the"
          + " only element of :find", findSection);
    } else {
      throw Syntax.error("parser/find", "Cannot parse :find element " + Syntax.show(e)
          + ", expected a variable, an aggregate (fn ?x) or (pull ?e pattern)", e);
    }
    forms.put(parsed, e);
    return parsed;
  }

  // pull-expr = [ 'pull' src-var? variable (pattern-data-literal | pattern-name | variable) ]
  // (the variable an :in scalar input holding the pattern, as in DataScript)
  private static Pull parsePull(Object form, Set<SrcVar> sources, Set<PatternName> names) {
    List<Object> items = Syntax.items(form);
    boolean withSource = items.size() == 4 && Syntax.isSrcVar(items.get(1));
    if (!(items.size() == 3 || withSource) || !Syntax.isVariable(items.get(items.size() - 2))) {
      throw Syntax.error("parser/find", "Cannot parse " + Syntax.show(form)
          + ", expected (pull ?e pattern) or (pull $src ?e pattern)", form);
    }
    SrcVar src = withSource ? new SrcVar(((Symbol) items.get(1)).getName()) : SrcVar.DEFAULT;
    if (!sources.contains(src)) {
      throw Syntax.error("query/unknown-source", Syntax.show(form) + " reads source " + src
          + ", which :in does not declare", form, "source", src.symbol());
    }
    Variable var = Variable.of((Symbol) items.get(items.size() - 2));
    Object pattern = items.get(items.size() - 1);
    if (Syntax.isVector(pattern)) {
      return new Pull(src, var, pattern, null);
    }
    if (Syntax.isPlainSymbol(pattern) || Syntax.isVariable(pattern)) {
      PatternName name = new PatternName((Symbol) pattern);
      if (!names.contains(name)) {
        throw Syntax.error("parser/find", "Pull pattern name " + pattern + " in "
            + Syntax.show(form) + " is not an :in input; add it to :in or write the pattern"
            + " vector inline", form);
      }
      return new Pull(src, var, null, name);
    }
    throw Syntax.error("parser/find", "Cannot parse " + Syntax.show(form) + ", the pull pattern"
        + " is a vector such as [*], or the name or ?variable of an :in input", form);
  }

  // aggregate = [ aggregate-fn-name fn-arg* variable ]
  private static Aggregate parseAggregate(Object form, Set<SrcVar> sources) {
    List<Object> items = Syntax.items(form);
    Object fnForm = items.get(0);
    if (!Syntax.isPlainSymbol(fnForm) || items.size() < 2) {
      throw Syntax.error("parser/find", "Cannot parse aggregate " + Syntax.show(form)
          + ", expected (aggregate-fn arg* ?var)", form);
    }
    Symbol fn = (Symbol) fnForm;
    Object last = items.get(items.size() - 1);
    if (!Syntax.isVariable(last)) {
      throw Syntax.error("parser/find", "The last argument of aggregate " + Syntax.show(form)
          + " is the variable aggregated over, got " + Syntax.show(last), form);
    }
    List<Term> args = new ArrayList<>();
    for (Object a : items.subList(1, items.size() - 1)) {
      if (Syntax.isVariable(a)) {
        args.add(Variable.of((Symbol) a));
      } else if (Syntax.isSrcVar(a)) {
        SrcVar src = new SrcVar(((Symbol) a).getName());
        if (!sources.contains(src)) {
          throw Syntax.error("query/unknown-source", Syntax.show(form) + " reads source " + src
              + ", which :in does not declare", form, "source", src.symbol());
        }
        args.add(src);
      } else if (a instanceof Symbol || Syntax.containsVariable(a)) {
        throw Syntax.error("parser/find", "Cannot parse aggregate " + Syntax.show(form)
            + ", its arguments are constants (a symbol quoted: 'sym), sources or :in variables,"
            + " got " + Syntax.show(a), form);
      } else {
        args.add(new Constant(Syntax.isQuoted(a) ? Syntax.items(a).get(1) : a));
      }
    }
    Aggregate agg = new Aggregate(fn, args, Variable.of((Symbol) last));
    if (fn.getNamespace() == null) {
      checkBuiltinAggregate(agg, form);
    }
    return agg;
  }

  private static void checkBuiltinAggregate(Aggregate agg, Object form) {
    String name = agg.fn().getName();
    int n = agg.args().size();
    boolean ok;
    if (ONE_ARG_AGGREGATES.contains(name)) {
      ok = n == 0;
    } else if (name.equals("min") || name.equals("max") || name.equals("rand")) {
      ok = n <= 1;
    } else if (name.equals("sample")) {
      ok = n == 1;
    } else {
      throw Syntax.error("parser/find", "Unknown aggregate " + agg.fn() + " in "
          + Syntax.show(form) + "; the built-ins are " + new TreeSet<>(Aggregate.BUILTINS)
          + " and a user aggregate is a namespace-qualified function symbol", form);
    }
    if (ok && n == 1) {
      Term count = agg.args().get(0);
      ok = count instanceof Variable || (count instanceof Constant c
          && (c.value() instanceof Long || c.value() instanceof Integer)
          && ((Number) c.value()).longValue() > 0);
    }
    if (!ok) {
      String shape = ONE_ARG_AGGREGATES.contains(name) ? "(" + name + " ?x)"
          : (name.equals("sample") ? "(sample n ?x)" : "(" + name + " ?x) or (" + name + " n ?x)")
              + " with n a positive integer or an :in variable";
      throw Syntax.error("parser/find", "Cannot parse aggregate " + Syntax.show(form)
          + ", expected " + shape, form);
    }
  }

  // return-map-spec = (':keys' | ':strs' | ':syms') plain-symbol+
  private static Optional<ReturnMap> parseReturnMap(Map<String, List<Object>> sections,
      FindSpec find) {
    ReturnMap.Kind kind = null;
    List<Object> items = null;
    for (ReturnMap.Kind k : ReturnMap.Kind.values()) {
      String name = k.name().toLowerCase();
      if (sections.containsKey(name)) {
        if (kind != null) {
          throw Syntax.error("parser/find", "A query takes only one of :keys, :strs and :syms",
              sections.get(name));
        }
        kind = k;
        items = sections.get(name);
      }
    }
    if (kind == null) {
      return Optional.empty();
    }
    String section = ":" + kind.name().toLowerCase();
    if (!(find instanceof FindRel || find instanceof FindTuple)) {
      throw Syntax.error("parser/find", section + " needs a relation or tuple :find, not "
          + Syntax.show(Forms.of(find)), items);
    }
    if (items.size() != find.elements().size()) {
      throw Syntax.error("parser/find", section + " " + Syntax.show(items) + " names "
          + items.size() + " keys for " + find.elements().size() + " :find elements", items);
    }
    List<Object> keys = new ArrayList<>();
    Set<Object> seen = new HashSet<>();
    for (Object item : items) {
      if (!Syntax.isPlainSymbol(item)) {
        throw Syntax.error("parser/find", section + " takes plain symbols, got "
            + Syntax.show(item), items);
      }
      Symbol sym = (Symbol) item;
      Object key = switch (kind) {
        case KEYS -> Keyword.intern(sym);
        case STRS -> sym.toString();
        case SYMS -> sym;
      };
      if (!seen.add(key)) {
        throw Syntax.error("parser/find", section + " names " + sym + " twice", items);
      }
      keys.add(key);
    }
    return Optional.of(new ReturnMap(kind, keys));
  }

  // with-clause = ':with' variable+ ; none of them a variable of :find
  private static List<Variable> parseWith(List<Object> items, FindSpec find,
      Map<Object, Object> forms) {
    if (items.isEmpty()) {
      throw Syntax.error("parser/with", ":with needs at least one variable", items);
    }
    LinkedHashSet<Variable> out = new LinkedHashSet<>();
    for (Object item : items) {
      if (!Syntax.isVariable(item)) {
        throw Syntax.error("parser/with", ":with takes variables, got " + Syntax.show(item), item);
      }
      if (!out.add(Variable.of((Symbol) item))) {
        throw Syntax.error("parser/with", ":with names " + item + " twice", item);
      }
    }
    for (FindElement e : find.elements()) {
      if (out.contains(e.var())) {
        throw Syntax.error("parser/with", ":with names " + e.var() + ", which :find already"
            + " uses in " + Syntax.show(forms.get(e)) + "; :with adds the variables that :find"
            + " does not name", e.var().symbol(), "vars", Syntax.symbols(List.of(e.var())));
      }
    }
    return List.copyOf(out);
  }

  // inputs = ':in' (src-var | binding | pattern-name | rules-var)+
  private static List<InBinding> parseIn(List<Object> items, Map<Object, Object> forms) {
    if (items.isEmpty()) {
      throw Syntax.error("parser/in", ":in needs at least one input", items);
    }
    List<InBinding> out = new ArrayList<>();
    Set<Object> seen = new HashSet<>(); // variables, sources, pattern names and %
    for (Object item : items) {
      InBinding b;
      if (Syntax.isSrcVar(item)) {
        b = new SrcVar(((Symbol) item).getName());
      } else if (Syntax.isRulesVar(item)) {
        b = RulesVar.INSTANCE;
      } else if (Syntax.isPlainSymbol(item)) {
        b = new PatternName((Symbol) item);
      } else if (Syntax.isPlaceholder(item) || Syntax.isVariable(item)
          || Syntax.isSequential(item)) {
        b = ClauseParser.parseBinding(item, "parser/in", item);
      } else {
        throw Syntax.error("parser/in", "Cannot parse :in input " + Syntax.show(item)
            + ", expected $src, %, a pull pattern name, ?var, [?a ?b], [?x ...] or [[?a ?b]]",
            item);
      }
      List<Object> names = b instanceof Binding binding ? new ArrayList<>(binding.vars())
          : List.of(b);
      for (Object name : names) {
        if (!seen.add(name)) {
          throw Syntax.error("parser/in", ":in declares " + name + " twice", item);
        }
      }
      forms.put(b, item);
      out.add(b);
    }
    return out;
  }

  private static void checkFindBound(FindSpec find, List<Variable> with, Set<Variable> bound,
      Set<Variable> inVars, Map<Object, Object> forms) {
    boolean windows = false;
    boolean aggregates = false;
    for (FindElement e : find.elements()) {
      windows |= e instanceof Window;
      aggregates |= e instanceof Aggregate;
      if (e instanceof Window w) {
        for (Variable v : w.vars()) {
          if (!bound.contains(v)) {
            throw Syntax.error("query/unbound-var", "Window " + Syntax.show(forms.get(e))
                + " reads " + v + ", which no :in binding or :where clause binds", forms.get(e),
                "vars", Syntax.symbols(List.of(v)));
          }
        }
      }
    }
    if (windows && aggregates) {
      throw Syntax.error("parser/find", ":find " + Syntax.show(Forms.of(find)) + " mixes"
          + " aggregates and windows; a window reads the answer's rows, which aggregates group",
          Forms.of(find));
    }
    for (FindElement e : find.elements()) {
      if (e instanceof Aggregate a) {
        for (Term t : a.args()) {
          if (t instanceof Variable v && !inVars.contains(v)) {
            throw Syntax.error("query/unbound-var", "Aggregate argument " + v + " of "
                + Syntax.show(forms.get(e)) + " must be bound by :in", forms.get(e),
                "vars", Syntax.symbols(List.of(v)));
          }
        }
      }
      if (!bound.contains(e.var())) {
        throw Syntax.error("query/unbound-var", ":find element " + Syntax.show(forms.get(e))
            + " uses " + e.var() + ", which no :in binding or :where clause binds",
            forms.get(e), "vars", Syntax.symbols(List.of(e.var())));
      }
    }
    for (Variable v : with) {
      if (!bound.contains(v)) {
        throw Syntax.error("query/unbound-var", ":with variable " + v + " is not bound by any"
            + " :in binding or :where clause", v.symbol(), "vars", Syntax.symbols(List.of(v)));
      }
    }
  }

  private static Object readEdn(String s, String errorKey) {
    try (PushbackReader r = new PushbackReader(new StringReader(s))) {
      IPersistentMap opts = PersistentHashMap.create(Keyword.intern("eof"), EOF);
      Object form = EdnReader.read(r, opts);
      if (form == EOF) {
        throw Syntax.error(errorKey, "Empty EDN string", s);
      }
      if (EdnReader.read(r, opts) != EOF) {
        throw Syntax.error(errorKey, "EDN string holds more than one form: " + s, s);
      }
      return form;
    } catch (ExceptionInfo e) {
      throw e;
    } catch (Exception e) {
      throw Errors.errorWithCause(e, errorKey, "Cannot read EDN: " + e.getMessage(), "form", s);
    } catch (StackOverflowError e) {
      // the reader recurses along nested collections; unwound here, the stack is whole again
      throw Syntax.error(errorKey, "Cannot read EDN: collections nest too deep (at most "
          + Syntax.MAX_DEPTH + ")", s, "max-depth", (long) Syntax.MAX_DEPTH);
    }
  }

  static Map<Symbol, List<Rule>> byName(List<Rule> rules) {
    Map<Symbol, List<Rule>> out = new HashMap<>();
    for (Rule r : rules) {
      out.computeIfAbsent(r.name(), k -> new ArrayList<>()).add(r);
    }
    return out;
  }
}
