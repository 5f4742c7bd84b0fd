package datalith.query.parser;

import java.util.List;

// bind-scalar = variable
/** Binds the whole value to one variable. */
public record BindScalar(Variable var) implements Binding {
  @Override
  public List<Variable> vars() {
    return List.of(var);
  }

  @Override
  public String toString() {
    return var.toString();
  }
}
