package datalith.query;

import clojure.lang.Symbol;
import datalith.db.Errors;
import datalith.query.parser.And;
import datalith.query.parser.Clause;
import datalith.query.parser.Constant;
import datalith.query.parser.Not;
import datalith.query.parser.Or;
import datalith.query.parser.Rule;
import datalith.query.parser.RuleCall;
import datalith.query.parser.Term;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Rule calls of one query run: each rule, under each pattern of bound arguments, is a table of
 * its tuples computed to a fixpoint for the inputs asked of it (tabled, semi-naive), or, for a
 * rule whose recursive bodies only pass their outputs through, by the inputs each input reaches.
 * Bodies run through the query's {@link Evaluator}, planned for the arguments bound (the order of
 * a rule's bodies and of their clauses does not matter). One query's own; not thread-safe.
 */
final class Rules {
  private final Evaluator evaluator;
  private final Deadline deadline;
  private final Map<Symbol, List<Rule>> rules;
  private final Map<String, Object> sources;
  private final Map<String, Table> tables = new HashMap<>();

  Rules(Evaluator evaluator, Map<Symbol, List<Rule>> rules, Map<String, Object> sources) {
    this.evaluator = evaluator;
    this.deadline = evaluator.deadline();
    this.rules = rules;
    this.sources = sources;
  }

  /** The memo of one rule under one pattern of bound arguments. */
  private static final class Table {
    final Set<Tuple> inputs = new LinkedHashSet<>();
    /** Inputs not yet evaluated by the fixpoint. */
    final Set<Tuple> pending = new LinkedHashSet<>();
    final Set<Tuple> results = new LinkedHashSet<>();
    /** The results by the values of their input positions. */
    final Map<Tuple, List<Tuple>> byInput = new HashMap<>();
    final boolean[] input;
    boolean active;
    /** Computed while another table's fixpoint was running: must be recomputed when called again. */
    boolean partial;

    Table(boolean[] input) {
      this.input = input;
    }

    boolean add(Tuple result) {
      if (!results.add(result)) {
        return false;
      }
      byInput.computeIfAbsent(new Tuple(inputOnly(result.vals, input)), k -> new ArrayList<>(2))
          .add(result);
      return true;
    }

    /** The results whose input positions hold one of {@code ins}. */
    List<Tuple> resultsFor(List<Tuple> ins) {
      List<Tuple> out = new ArrayList<>();
      for (Tuple in : ins) {
        List<Tuple> rs = byInput.get(in);
        if (rs != null) {
          out.addAll(rs);
        }
      }
      return out;
    }
  }

  /** How one rule body depends on rule tables, learnt on its first evaluation. */
  private static final class BodyInfo {
    /** Its only recursive call, when it is a top-level clause calling its own table once. */
    RuleCall linearCall;
    boolean recursive;
  }

  /** The table keys called while evaluating the current body (null outside rule bodies). */
  private List<String> calls;
  private final Map<Rule, BodyInfo> bodyInfo = new IdentityHashMap<>();
  /** Per body, its plans by variant and bound variables; empty when the body cannot run so. */
  private final Map<Rule, Map<List<Object>, Optional<Plan>>> bodyPlans = new IdentityHashMap<>();

  /**
   * The values of {@code tuples} matched against {@code terms}: a relation over their variables
   * (a pattern on a collection source, a rule call on its table).
   */
  static Rel matchTerms(List<Term> terms, Iterable<?> tuples, Deadline deadline) {
    List<Variable> vars = new ArrayList<>();
    for (Term t : terms) {
      if (t instanceof Variable v && !vars.contains(v)) {
        vars.add(v);
      }
    }
    List<Object[]> rows = new ArrayList<>();
    for (Object tuple : tuples) {
      Object[] vals = tuple instanceof Tuple t ? t.vals : tuple instanceof Object[] a ? a
          : tuple instanceof List<?> l ? l.toArray() : null;
      if (vals == null || vals.length < terms.size()) {
        continue;
      }
      Object[] row = new Object[vars.size()];
      boolean ok = true;
      for (int i = 0; i < terms.size() && ok; i++) {
        Term t = terms.get(i);
        if (t instanceof Constant c) {
          ok = Tuple.same(c.value(), vals[i]);
        } else if (t instanceof Variable v) {
          int idx = vars.indexOf(v);
          if (row[idx] != null) {
            ok = Tuple.same(row[idx], vals[i]);
          } else {
            row[idx] = vals[i];
          }
        }
      }
      if (ok) {
        rows.add(row);
        deadline.tick(rows.size());
      }
    }
    return new Rel(vars.toArray(new Variable[0]), rows).project(vars);
  }

  /** Joins the scope with the rule's tuples for the call's bound arguments, solved first. */
  void evalRuleCall(Ctx ctx, RuleCall call, Scope scope) {
    List<Rule> bodies = rules.get(call.name());
    if (bodies == null) {
      throw Errors.error("query/missing-rules", "No rule named " + call.name(),
          "form", evaluator.formOf().apply(call));
    }
    // a rule may run without any source as long as its body reads none
    Object src = scope.sources.get(call.src().name());
    List<Term> args = call.args();
    int arity = args.size();
    boolean[] input = new boolean[arity];
    List<Variable> boundVars = new ArrayList<>();
    StringBuilder mask = new StringBuilder(call.name().getName()).append('/');
    for (int i = 0; i < arity; i++) {
      Term t = args.get(i);
      input[i] = t instanceof Constant || t instanceof Variable v && ctx.bound(v);
      if (t instanceof Variable v && input[i] && !boundVars.contains(v)) {
        boundVars.add(v);
      }
      mask.append(input[i] ? 'b' : 'f');
    }
    mask.append('/').append(System.identityHashCode(src));
    Rel r = boundVars.isEmpty() ? null : ctx.take(boundVars, deadline);
    List<Tuple> ins = new ArrayList<>();
    List<Object[]> inRows = r == null ? Rel.unit().rows : r.project(boundVars).rows;
    for (Object[] row : inRows) {
      Object[] in = new Object[arity];
      for (int i = 0; i < arity; i++) {
        Term t = args.get(i);
        if (t instanceof Constant c) {
          in[i] = c.value();
        } else if (input[i]) {
          in[i] = row[boundVars.indexOf((Variable) t)];
        }
      }
      ins.add(new Tuple(inputOnly(in, input)));
    }
    Table table = solve(mask.toString(), bodies, input, ins, src);
    Rel t = matchTerms(args, table.resultsFor(ins), deadline);
    if (r == null) {
      ctx.joinIn(t, deadline);
    } else {
      ctx.add(Rel.join(r, t, deadline));
    }
  }

  private static Object[] inputOnly(Object[] full, boolean[] input) {
    int n = 0;
    for (boolean b : input) {
      n += b ? 1 : 0;
    }
    Object[] out = new Object[n];
    int j = 0;
    for (int i = 0; i < full.length; i++) {
      if (input[i]) {
        out[j++] = full[i];
      }
    }
    return out;
  }

  /**
   * Computes the rule's tuples for the input-position values {@code ins} to a
   * fixpoint, semi-naively: each round evaluates every body for the inputs not
   * seen before, and for the others only the derivations that go through the
   * previous round's new tuples (driven from those tuples, for bodies that
   * recurse once into their own table; in full for other recursive bodies).
   * Recursive calls read and extend the same table.
   */
  private Table solve(String key, List<Rule> bodies, boolean[] input, List<Tuple> ins, Object src) {
    Table table = tables.computeIfAbsent(key, k -> new Table(input));
    if (calls != null) {
      calls.add(key);
    }
    for (Tuple t : ins) {
      if (table.inputs.add(t)) {
        table.pending.add(t);
      }
    }
    if (table.active) {
      return table; // a recursive call: the enclosing fixpoint iterates until nothing changes
    }
    if (table.partial) {
      table.pending.addAll(table.inputs);
      table.partial = false;
    }
    if (!table.pending.isEmpty()) {
      // such a rule calls no other, so its answers are final even inside another rule's fixpoint
      RightLinear rl = rightLinear.computeIfAbsent(key, k -> RightLinear.of(bodies, input));
      if (rl.applies) {
        solveRightLinear(rl, table, src);
        return table;
      }
    }
    boolean insideOther = false;
    for (Table t : tables.values()) {
      insideOther |= t.active;
    }
    table.active = true;
    List<String> outerCalls = calls;
    try {
      Map<String, Object> srcs = new HashMap<>(sources);
      srcs.put("$", src);
      Scope scope = new Scope(srcs);
      Set<Tuple> delta = new LinkedHashSet<>();
      while (true) {
        deadline.check();
        List<Tuple> fresh = new ArrayList<>(table.pending);
        table.pending.clear();
        Set<Tuple> freshSet = new java.util.HashSet<>(fresh);
        List<Tuple> old = new ArrayList<>(table.inputs.size());
        for (Tuple t : table.inputs) {
          if (!freshSet.contains(t)) {
            old.add(t);
          }
        }
        Set<Tuple> found = new LinkedHashSet<>();
        for (Rule body : bodies) {
          if (!fresh.isEmpty()) {
            evalBody(key, body, input, fresh, scope, found);
          }
          BodyInfo info = bodyInfo.get(body);
          if (old.isEmpty() || delta.isEmpty() || info == null || !info.recursive) {
            continue;
          }
          if (info.linearCall == null || !evalDelta(body, info.linearCall, input, table, delta,
              scope, found)) {
            evalBody(key, body, input, old, scope, found);
          }
        }
        delta = new LinkedHashSet<>();
        for (Tuple t : found) {
          if (table.add(t)) {
            delta.add(t);
            deadline.tick(table.results.size());
          }
        }
        if (delta.isEmpty() && table.pending.isEmpty()) {
          break;
        }
      }
    } finally {
      table.active = false;
      calls = outerCalls;
    }
    if (insideOther) {
      table.partial = true;
    }
    return table;
  }

  private final Map<String, RightLinear> rightLinear = new HashMap<>();

  /**
   * A rule whose recursive bodies only pass their outputs through, as
   * {@code (reach ?a ?b) <- [?a :next ?x] (reach ?x ?b)} does: its answers for
   * an input are the exit bodies' answers for every input reachable from it by
   * the recursive bodies' steps. Solved that way, an input costs the inputs it
   * reaches, where the tabled fixpoint would also answer each of them in turn
   * (a chain of n would cost n squared).
   */
  private static final class RightLinear {
    boolean applies;
    final List<Rule> exits = new ArrayList<>();
    final List<Rule> steps = new ArrayList<>();
    final Map<Rule, RuleCall> calls = new IdentityHashMap<>();
    final Map<Rule, List<Clause>> rests = new IdentityHashMap<>();

    static RightLinear of(List<Rule> bodies, boolean[] input) {
      RightLinear rl = new RightLinear();
      boolean anyInput = false;
      boolean anyOutput = false;
      for (boolean b : input) {
        anyInput |= b;
        anyOutput |= !b;
      }
      if (!anyInput || !anyOutput) {
        return rl;
      }
      for (Rule body : bodies) {
        if (new java.util.HashSet<>(body.vars()).size() != body.vars().size()) {
          return rl;
        }
        List<RuleCall> top = new ArrayList<>();
        List<Clause> rest = new ArrayList<>();
        for (Clause c : body.clauses()) {
          if (c instanceof RuleCall rc) {
            top.add(rc);
          } else if (callsRules(List.of(c))) {
            return rl;
          } else {
            rest.add(c);
          }
        }
        if (top.isEmpty()) {
          rl.exits.add(body);
          continue;
        }
        RuleCall call = top.get(0);
        if (top.size() > 1 || !call.name().equals(body.name()) || call.args().size() != input.length
            || !call.src().name().equals("$")) {
          return rl;
        }
        for (int i = 0; i < input.length; i++) {
          Term arg = call.args().get(i);
          if (input[i] ? !(arg instanceof Variable || arg instanceof Constant)
              : arg != body.vars().get(i) || usedBy(rest, (Variable) arg)) {
            return rl;
          }
        }
        rl.steps.add(body);
        rl.calls.put(body, call);
        rl.rests.put(body, rest);
      }
      rl.applies = !rl.steps.isEmpty() && !rl.exits.isEmpty();
      return rl;
    }

    private static boolean usedBy(List<Clause> clauses, Variable v) {
      for (Clause c : clauses) {
        if (c.vars().contains(v)) {
          return true;
        }
      }
      return false;
    }

    private static boolean callsRules(List<Clause> clauses) {
      for (Clause c : clauses) {
        if (c instanceof RuleCall
            || c instanceof Not n && callsRules(n.clauses())) {
          return true;
        }
        if (c instanceof Or o) {
          for (And b : o.branches()) {
            if (callsRules(b.clauses())) {
              return true;
            }
          }
        }
      }
      return false;
    }
  }

  /**
   * Answers the table's pending inputs of a {@link RightLinear} rule: the inputs
   * each reaches through the steps, found set-at-a-time with the input they came
   * from carried along, then the exit bodies run once over all of them.
   */
  private void solveRightLinear(RightLinear rl, Table table, Object src) {
    boolean[] input = table.input;
    int k = table.pending.iterator().next().vals.length;
    Variable[] origin = new Variable[k];
    for (int j = 0; j < k; j++) {
      origin[j] = Variable.of("?__datalith.origin" + j); // a name no query writes
    }
    Map<String, Object> srcs = new HashMap<>(sources);
    srcs.put("$", src);
    Scope scope = new Scope(srcs);
    // (origin values, reached input values) pairs, each 2k long
    Set<Tuple> seen = new LinkedHashSet<>();
    List<Object[]> frontier = new ArrayList<>();
    for (Tuple in : table.pending) {
      Object[] pair = new Object[2 * k];
      System.arraycopy(in.vals, 0, pair, 0, k);
      System.arraycopy(in.vals, 0, pair, k, k);
      if (seen.add(new Tuple(pair))) {
        frontier.add(pair);
      }
    }
    table.pending.clear();
    while (!frontier.isEmpty()) {
      deadline.check();
      List<Object[]> next = new ArrayList<>();
      for (Rule body : rl.steps) {
        Ctx sub = new Ctx();
        sub.add(new Rel(pairVars(origin, body, input), frontier));
        RuleCall call = rl.calls.get(body);
        List<Variable> want = new ArrayList<>(List.of(origin));
        for (int i = 0; i < input.length; i++) {
          if (input[i] && call.args().get(i) instanceof Variable v && !want.contains(v)) {
            want.add(v);
          }
        }
        evaluator.evalAll(sub, bodyPlan(body, "step", rl.rests.get(body), sub.boundVars(),
            new HashSet<>(want), scope), scope);
        if (sub.isEmpty()) {
          continue;
        }
        Rel res = sub.take(want, deadline);
        // per pair position: its column in res, or -1 for a constant argument (in consts)
        int[] cols = new int[2 * k];
        Object[] consts = new Object[2 * k];
        for (int j = 0; j < k; j++) {
          cols[j] = res.col(origin[j]);
        }
        int at = k;
        for (int i = 0; i < input.length; i++) {
          if (input[i]) {
            Term arg = call.args().get(i);
            cols[at] = arg instanceof Constant c ? -1 : res.col((Variable) arg);
            consts[at++] = arg instanceof Constant c ? c.value() : null;
          }
        }
        for (Object[] row : res.rows) {
          Object[] pair = new Object[2 * k];
          for (int j = 0; j < pair.length; j++) {
            pair[j] = cols[j] >= 0 ? row[cols[j]] : consts[j];
          }
          if (seen.add(new Tuple(pair))) {
            next.add(pair);
            deadline.tick(seen.size());
          }
        }
      }
      frontier = next;
    }
    List<Object[]> reached = new ArrayList<>(seen.size());
    for (Tuple t : seen) {
      reached.add(t.vals);
    }
    for (Rule body : rl.exits) {
      Ctx sub = new Ctx();
      sub.add(new Rel(pairVars(origin, body, input), reached, true));
      List<Variable> want = new ArrayList<>(List.of(origin));
      want.addAll(body.vars());
      evaluator.evalAll(sub, bodyPlan(body, "exit", body.clauses(), sub.boundVars(),
          new HashSet<>(want), scope), scope);
      if (sub.isEmpty()) {
        continue;
      }
      Rel res = sub.take(want, deadline);
      int[] cols = new int[input.length];
      int j = 0;
      for (int i = 0; i < input.length; i++) {
        cols[i] = res.col(input[i] ? origin[j++] : body.vars().get(i));
        if (cols[i] < 0) {
          throw headUnbound(body);
        }
      }
      for (Object[] row : res.rows) {
        table.add(new Tuple(Rel.values(row, cols)));
      }
    }
  }

  /** The origin variables, then {@code body}'s head variables at the input positions. */
  private static Variable[] pairVars(Variable[] origin, Rule body, boolean[] input) {
    Variable[] vars = new Variable[2 * origin.length];
    System.arraycopy(origin, 0, vars, 0, origin.length);
    int j = origin.length;
    for (int i = 0; i < input.length; i++) {
      if (input[i]) {
        vars[j++] = body.vars().get(i);
      }
    }
    return vars;
  }

  private static List<Variable> inputVars(Rule body, boolean[] input) {
    List<Variable> head = body.vars();
    List<Variable> inVars = new ArrayList<>();
    for (int i = 0; i < head.size(); i++) {
      if (input[i]) {
        inVars.add(head.get(i));
      }
    }
    return inVars;
  }

  /**
   * The plan of {@code clauses} (of {@code body}, the variant named {@code variant}) run with
   * {@code bound} bound, made once per query for each; throws when no order runs them.
   */
  private Plan bodyPlan(Rule body, String variant, List<Clause> clauses, Set<Variable> bound,
      Set<Variable> wanted, Scope scope) {
    Plan p = tryBodyPlan(body, variant, clauses, bound, wanted, scope);
    return p != null ? p : evaluator.plan(clauses, bound, wanted, scope); // throws, saying why
  }

  /** Like {@link #bodyPlan}, null when no order runs the clauses. */
  private Plan tryBodyPlan(Rule body, String variant, List<Clause> clauses, Set<Variable> bound,
      Set<Variable> wanted, Scope scope) {
    // the bound variables are part of the key: one body runs with different arguments bound
    return bodyPlans.computeIfAbsent(body, b -> new HashMap<>())
        .computeIfAbsent(List.of(variant, Set.copyOf(bound)),
            k -> Optional.ofNullable(evaluator.tryPlan(clauses, bound, wanted, scope)))
        .orElse(null);
  }

  /** Evaluates {@code body} in full for {@code ins}, adding its head tuples to {@code found}. */
  private void evalBody(String key, Rule body, boolean[] input, List<Tuple> ins, Scope scope,
      Set<Tuple> found) {
    List<Variable> inVars = inputVars(body, input);
    Ctx sub = new Ctx();
    List<Object[]> rows = new ArrayList<>(ins.size());
    for (Tuple t : ins) {
      rows.add(t.vals);
    }
    sub.add(inVars.isEmpty() ? Rel.unit()
        : new Rel(inVars.toArray(new Variable[0]), rows).project(distinct(inVars)));
    List<String> seen = new ArrayList<>();
    calls = seen;
    evaluator.evalAll(sub, bodyPlan(body, "full", body.clauses(), sub.boundVars(),
        new HashSet<>(body.vars()), scope), scope);
    calls = null;
    if (!bodyInfo.containsKey(body)) {
      bodyInfo.put(body, classify(key, body, seen));
    }
    addHeads(body, sub, found);
  }

  private BodyInfo classify(String key, Rule body, List<String> seen) {
    BodyInfo info = new BodyInfo();
    int self = 0;
    for (String k : seen) {
      Table t = tables.get(k);
      if (k.equals(key)) {
        self++;
      }
      info.recursive |= k.equals(key) || t != null && (t.active || t.partial);
    }
    List<RuleCall> top = new ArrayList<>();
    for (Clause c : body.clauses()) {
      if (c instanceof RuleCall rc && rc.name().equals(body.name())) {
        top.add(rc);
      }
    }
    if (self == 1 && seen.size() == 1 && top.size() == 1) {
      info.linearCall = top.get(0);
    }
    return info;
  }

  /**
   * The derivations of {@code body} through {@code delta}: its recursive call
   * replaced by the delta tuples, the rest run from their bindings, heads kept
   * when their inputs are the table's. False when the body cannot run that way.
   */
  private boolean evalDelta(Rule body, RuleCall call, boolean[] input, Table table,
      Set<Tuple> delta, Scope scope, Set<Tuple> found) {
    Rel start = matchTerms(call.args(), delta, deadline);
    List<Clause> rest = new ArrayList<>(body.clauses());
    rest.remove(call);
    Ctx sub = new Ctx();
    sub.add(start);
    Plan plan = tryBodyPlan(body, "delta", rest, sub.boundVars(), new HashSet<>(body.vars()),
        scope);
    if (plan == null) {
      return false;
    }
    evaluator.evalAll(sub, plan, scope);
    Set<Tuple> heads = new LinkedHashSet<>();
    if (!sub.isEmpty()) {
      if (!sub.boundVars().containsAll(body.vars())) {
        return false;
      }
      addHeads(body, sub, heads);
    }
    for (Tuple h : heads) {
      if (table.inputs.contains(new Tuple(inputOnly(h.vals, input)))) {
        found.add(h);
      }
    }
    return true;
  }

  private void addHeads(Rule body, Ctx sub, Set<Tuple> found) {
    if (sub.isEmpty()) {
      return;
    }
    List<Variable> head = body.vars();
    Rel res = sub.take(distinct(head), deadline);
    int[] cols = res.cols(head);
    for (int c : cols) {
      if (c < 0) {
        throw headUnbound(body);
      }
    }
    for (Object[] row : res.rows) {
      found.add(Tuple.of(row, cols));
    }
  }

  private static RuntimeException headUnbound(Rule body) {
    return Errors.error("query/insufficient-binding", "Rule " + body.name()
        + " does not bind all its head variables", "rule", body.name());
  }

  private static List<Variable> distinct(List<Variable> vs) {
    return new ArrayList<>(new LinkedHashSet<>(vs));
  }

}
