package datalith.query.parser;

import java.util.List;

// bind-coll = [ variable '...' ]
/** Binds each element of a collection to the variable, one result row per element. */
public record BindColl(Variable var) implements Binding {
  @Override
  public List<Variable> vars() {
    return List.of(var);
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
