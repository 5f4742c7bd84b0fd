package datalith.query.parser;

import java.util.List;
import java.util.Set;

// data-pattern = [ src-var? (variable | constant | '_'){1,5} ]
/**
 * A data pattern {@code [?e :attr ?v ?tx ?added]} matched against the datoms of {@code src}.
 * {@code src} is never null: the source written, else the source of the enclosing
 * {@code ($src not ...)}/{@code ($src or ...)}, else {@code $}. {@code terms} has 1 to 5 elements,
 * each a {@link Variable}, {@link Constant} (raw value, never nil; a lookup ref stays a vector; a
 * symbol other than a variable, a source and {@code _} is a constant symbol, as in
 * {@code [?e :attr sym]}) or {@link Placeholder}; positions not written read as {@code _} through
 * {@link #e()} ...
 * {@link #added()}. An {@code added} constant is a Boolean. Runs with nothing bound; binds all its
 * variables.
 */
public record Pattern(SrcVar src, List<Term> terms) implements Clause {
  public Pattern {
    terms = List.copyOf(terms);
    if (terms.isEmpty() || terms.size() > 5) {
      throw new IllegalArgumentException("A pattern has 1 to 5 terms: " + terms);
    }
  }

  /** Entity position. */
  public Term e() {
    return term(0);
  }

  /** Attribute position. */
  public Term a() {
    return term(1);
  }

  /** Value position. */
  public Term v() {
    return term(2);
  }

  /** Transaction position. */
  public Term tx() {
    return term(3);
  }

  /** Added (assertion/retraction) position. */
  public Term added() {
    return term(4);
  }

  private Term term(int i) {
    return i < terms.size() ? terms.get(i) : Placeholder.INSTANCE;
  }

  @Override
  public Set<Variable> vars() {
    return Vars.ofTerms(terms);
  }

  @Override
  public Set<Variable> binds() {
    return vars();
  }

  @Override
  public Set<Variable> needs() {
    return Set.of();
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
