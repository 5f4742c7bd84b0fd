package datalith.query.parser;

import java.util.List;

// bind-rel = [ [ binding+ ] ]
/**
 * Binds a relation: a collection of tuples, each destructured by position as a
 * {@link BindTuple} of {@code elements} would (the same as {@code [[binding+] ...]}). Never
 * empty; no variable twice.
 */
public record BindRel(List<Binding> elements) implements Binding {
  public BindRel {
    elements = List.copyOf(elements);
  }

  @Override
  public List<Variable> vars() {
    return Vars.ofBindings(elements);
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
