package datalith.query.parser;

import java.util.Set;

// clause = (not-clause | not-join-clause | or-clause | or-join-clause | expression-clause)
/**
 * One {@code :where} (or rule body) clause. The three variable sets, all in order of first
 * appearance and unmodifiable, are what the planner orders clauses by:
 *
 * <ul>
 *   <li>{@link #vars()}: the variables the clause mentions, excluding the local variables of a
 *       nested {@code not-join}/{@code or-join} (which never meet the enclosing scope);
 *   <li>{@link #needs()}: the variables that must be bound before the clause can run;
 *   <li>{@link #binds()}: the variables the clause binds when it runs.
 * </ul>
 *
 * {@code needs} and {@code binds} are subsets of {@code vars}. A {@link RuleCall}'s
 * {@code needs} does not know the rule's required variables (nor, therefore, does the
 * {@code needs} of a not/or around it); use {@link RuleCall#needs(Rule)}. The parser has already
 * checked that every clause can run once the clauses it depends on have.
 */
public sealed interface Clause permits Pattern, Predicate, FnBinding, RuleCall, Not, Or {
  /** Variables this clause shares with its scope (see the interface comment). */
  Set<Variable> vars();

  /** Variables bound by running this clause. */
  Set<Variable> binds();

  /** Variables that must be bound before this clause runs. */
  Set<Variable> needs();
}
