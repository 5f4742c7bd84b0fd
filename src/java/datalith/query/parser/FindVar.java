package datalith.query.parser;

// find-elem = variable
/** A column holding the variable's value. */
public record FindVar(Variable var) implements FindElement {
  @Override
  public String toString() {
    return var.toString();
  }
}
