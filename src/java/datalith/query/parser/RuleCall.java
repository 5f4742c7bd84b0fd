package datalith.query.parser;

import clojure.lang.Symbol;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

// rule-expr = [ src-var? rule-name (variable | constant | '_')+ ]
/**
 * A rule invocation {@code (ancestor ?a ?b)}. {@code src} is never null (written, else inherited
 * from an enclosing {@code ($src not ...)}/{@code ($src or ...)}, else {@code $}); inside the
 * rule's body {@code $} means this source. {@code name} is an unqualified symbol; {@code args} are
 * {@link Variable}s, {@link Constant}s and {@link Placeholder}s, positionally matching the rule's
 * {@link Rule#vars()}. Binds all its variables; {@link #needs()} is empty because the rule is
 * unknown to the clause; {@link #needs(Rule)} gives the arguments the rule requires bound.
 */
public record RuleCall(SrcVar src, Symbol name, List<Term> args) implements Clause {
  public RuleCall {
    args = List.copyOf(args);
  }

  @Override
  public Set<Variable> vars() {
    return Vars.ofTerms(args);
  }

  @Override
  public Set<Variable> binds() {
    return vars();
  }

  @Override
  public Set<Variable> needs() {
    return Set.of();
  }

  /** The variables passed in {@code rule}'s required positions; {@code rule} must match. */
  public Set<Variable> needs(Rule rule) {
    LinkedHashSet<Variable> out = new LinkedHashSet<>();
    for (int i = 0; i < rule.requiredVars().size() && i < args.size(); i++) {
      if (args.get(i) instanceof Variable v) {
        out.add(v);
      }
    }
    return Collections.unmodifiableSet(out);
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
