package datalith.query.parser;

import java.util.List;

// bind-tuple = [ binding+ ]
/**
 * Binds the positions of one tuple (a list, vector, array or map entry, at least as long as
 * {@code elements}; further positions are ignored), each with its own binding, which may itself
 * be a tuple, collection or relation: the rows are every combination of the positions' rows.
 * Never empty; no variable twice.
 */
public record BindTuple(List<Binding> elements) implements Binding {
  public BindTuple {
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
