package datalith.query.parser;

import clojure.lang.Symbol;
import java.util.List;

// rule = [ [rule-name rule-vars] clause+ ] ; rule-vars = [ variable+ | ([variable+] variable*) ]
/**
 * One body of a rule: {@code [(name [?req] ?a ?b) clause+]}. A rule with several bodies is
 * several {@code Rule}s with the same {@code name} and arity. {@code vars} are the head variables
 * by position, {@code requiredVars} (a prefix of {@code vars}) being those an invocation must pass
 * bound. {@code clauses} are the body; its default source {@code $} is the invocation's source.
 */
public record Rule(Symbol name, List<Variable> requiredVars, List<Variable> vars,
    List<Clause> clauses) {
  public Rule {
    requiredVars = List.copyOf(requiredVars);
    vars = List.copyOf(vars);
    clauses = List.copyOf(clauses);
  }

  /** Number of head variables. */
  public int arity() {
    return vars.size();
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
