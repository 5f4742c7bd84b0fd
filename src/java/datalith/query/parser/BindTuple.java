package datalith.query.parser;

import java.util.List;

// bind-tuple = [ (variable | '_')+ ]
/**
 * Binds the positions of one tuple. Each element is a {@link BindScalar} or {@link BindIgnore};
 * never empty; no variable twice.
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
