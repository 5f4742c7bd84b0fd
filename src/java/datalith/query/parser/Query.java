package datalith.query.parser;

import clojure.lang.Symbol;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

// query = [find-spec return-map-spec? with-clause? inputs? where-clauses?]
/**
 * A parsed, validated query: everything the planner and executor need. Immutable and safe to
 * share between threads. Two queries are equal when their find spec, return map, {@code :with},
 * {@code :in}, {@code :where}, timeout, slice ({@code :order-by}, {@code :limit},
 * {@code :offset}) and {@code :valid-at} are equal, whichever form (vector, map, string) they
 * were parsed from.
 *
 * <p>Validated at parse time: every variable of {@code :find}/{@code :with} is bound by
 * {@code :in} or {@code :where}; every predicate and function argument can be bound before the
 * clause runs; every not/or shares the variables it must with its scope; every source read is
 * declared by {@code :in}; rule invocations have a {@code %} input. What needs the rules
 * themselves is checked by {@link #validateRules(List)}.
 */
public final class Query {
  private final FindSpec find;
  private final List<FindElement> findElements;
  private final Optional<ReturnMap> returnMap;
  private final List<Variable> with;
  private final List<InBinding> in;
  private final List<Clause> where;
  private final OptionalLong timeout;
  private final Slice slice;
  private final List<ValidAt> validAt;
  private final Object form;
  private final Map<Object, Object> forms; // identity: AST node -> source form; never mutated
  /** The hash of the parts, computed once (0 until then): plans are cached by query. */
  private int hash;

  Query(FindSpec find, Optional<ReturnMap> returnMap, List<Variable> with, List<InBinding> in,
      List<Clause> where, OptionalLong timeout, Slice slice, List<ValidAt> validAt, Object form,
      Map<Object, Object> forms) {
    this.find = find;
    this.findElements = find.elements();
    this.returnMap = returnMap;
    this.with = List.copyOf(with);
    this.in = List.copyOf(in);
    this.where = List.copyOf(where);
    this.timeout = timeout;
    this.slice = slice;
    this.validAt = List.copyOf(validAt);
    this.form = form;
    this.forms = forms;
  }

  /** The find spec: relation, scalar, collection or tuple. */
  public FindSpec find() {
    return find;
  }

  /** The find elements in order (shortcut for {@code find().elements()}). */
  public List<FindElement> findElements() {
    return findElements;
  }

  /** {@code :keys}/{@code :strs}/{@code :syms}, when given; its keys match the find elements. */
  public Optional<ReturnMap> returnMap() {
    return returnMap;
  }

  /** {@code :with} variables, distinct, in order; empty when absent. */
  public List<Variable> with() {
    return with;
  }

  /** {@code :in} inputs in argument order; {@code [$]} when absent. */
  public List<InBinding> in() {
    return in;
  }

  /**
   * {@code :where} clauses in written order; empty when absent or empty (then {@code :in} binds
   * every :find and :with variable).
   */
  public List<Clause> where() {
    return where;
  }

  /** {@code :timeout} in milliseconds (positive), when given in the map form. */
  public OptionalLong timeout() {
    return timeout;
  }

  /**
   * What part of the answer a query asks for, in what order: {@code :order-by}, {@code :limit}
   * and {@code :offset}. With an order the answer is a sequence (a relation a vector); the
   * offset skips that many tuples of it, the limit keeps at most that many of the rest. Without
   * an order they apply to the answer in no set order (any {@code limit} of its tuples).
   *
   * @param order the keys, when {@code :order-by} is given
   * @param limit the most tuples, when {@code :limit} is given (non-negative)
   * @param offset the tuples skipped first (non-negative; 0 when absent)
   */
  public record Slice(Optional<Order> order, OptionalLong limit, long offset) {
    /** No order, no limit, no offset. */
    public static final Slice ALL = new Slice(Optional.empty(), OptionalLong.empty(), 0);

    /** True when the slice keeps every tuple in no set order. */
    public boolean isAll() {
      return order.isEmpty() && limit.isEmpty() && offset == 0;
    }

    /** The number of tuples from the first that the slice reads: offset + limit, or max. */
    public long reach() {
      return limit.isPresent() ? Math.min(Long.MAX_VALUE - offset, limit.getAsLong()) + offset
          : Long.MAX_VALUE;
    }
  }

  /** {@code :order-by}, {@code :limit} and {@code :offset}; {@link Slice#ALL} when absent. */
  public Slice slice() {
    return slice;
  }

  /**
   * The sources read as the facts valid at an instant show them ({@code :valid-at}), each
   * source at most once, in written order; empty when absent.
   */
  public List<ValidAt> validAt() {
    return validAt;
  }

  /** The object {@link QueryParser#parse(Object)} was given: vector, map or string. */
  public Object form() {
    return form;
  }

  /** Variables bound by {@code :in} bindings, in order. */
  public Set<Variable> inVars() {
    LinkedHashSet<Variable> out = new LinkedHashSet<>();
    for (InBinding b : in) {
      if (b instanceof Binding binding) {
        out.addAll(binding.vars());
      }
    }
    return Collections.unmodifiableSet(out);
  }

  /** Sources declared by {@code :in}, in order. */
  public Set<SrcVar> sources() {
    LinkedHashSet<SrcVar> out = new LinkedHashSet<>();
    for (InBinding b : in) {
      if (b instanceof SrcVar s) {
        out.add(s);
      }
    }
    return Collections.unmodifiableSet(out);
  }

  /** True when {@code :in} has {@code %}. */
  public boolean hasRules() {
    return in.contains(RulesVar.INSTANCE);
  }

  /** Every rule invocation in {@code :where}, nested ones included, in written order. */
  public List<RuleCall> ruleCalls() {
    return Collections.unmodifiableList(Analyzer.ruleCalls(where));
  }

  /**
   * The form an AST node of this query was parsed from (for error messages), or, for a node this
   * query did not parse, the equivalent form rebuilt from the node.
   */
  public Object formOf(Object node) {
    Object f = forms.get(node);
    return f != null ? f : Forms.of(node);
  }

  /**
   * Checks this query against the rule set passed as {@code %}: every invocation names a rule of
   * matching arity ({@code :query/missing-rules}), passes the rule's required variables bound
   * ({@code :query/insufficient-binding}) and runs it on a source {@code :in} declares when the
   * rule reads one ({@code :query/unknown-source}).
   *
   * @param rules the result of {@link QueryParser#parseRules(Object)}
   * @throws clojure.lang.ExceptionInfo naming the broken rule in {@code :error}
   */
  public void validateRules(List<Rule> rules) {
    Map<Symbol, List<Rule>> byName = QueryParser.byName(rules);
    Analyzer analyzer = new Analyzer(new IdentityHashMap<>(forms), byName, null);
    List<RuleCall> calls = Analyzer.ruleCalls(where);
    for (RuleCall call : calls) {
      analyzer.checkCall(call);
    }
    analyzer.analyze(where, inVars());
    analyzer.checkSources(calls, sources());
  }

  @Override
  public boolean equals(Object o) {
    return o == this || o instanceof Query q && hashCode() == q.hashCode() && find.equals(q.find) && returnMap.equals(q.returnMap)
        && with.equals(q.with) && in.equals(q.in) && where.equals(q.where)
        && timeout.equals(q.timeout) && slice.equals(q.slice) && validAt.equals(q.validAt);
  }

  @Override
  public int hashCode() {
    int h = hash;
    if (h == 0) {
      // racing threads compute the same value
      h = Objects.hash(find, returnMap, with, in, where, timeout, slice, validAt);
      hash = h;
    }
    return h;
  }

  /**
   * This query with its slice replaced (a query map's {@code :offset} and {@code :limit} cut its
   * answer further).
   *
   * @param slice the new slice
   * @return the query with {@code slice}
   */
  public Query withSlice(Slice slice) {
    return slice.equals(this.slice) ? this
        : new Query(find, returnMap, with, in, where, timeout, slice, validAt, form, forms);
  }

  /** The query in map form, EDN; parses back to an equal query. */
  @Override
  public String toString() {
    return Forms.print(this);
  }

  /** Variables of the find elements in order (with repeats), for the executor's projection. */
  public List<Variable> findVars() {
    List<Variable> out = new ArrayList<>();
    for (FindElement e : find.elements()) {
      out.add(e.var());
    }
    return Collections.unmodifiableList(out);
  }
}
