package datalith.query.parser;

import java.util.List;

// bind-rel = [ [ (variable | '_')+ ] ]
/**
 * Binds a relation: a collection of tuples, each destructured by position. Each element is a
 * {@link BindScalar} or {@link BindIgnore}; never empty; no variable twice.
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
