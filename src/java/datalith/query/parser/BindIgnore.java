package datalith.query.parser;

import java.util.List;

// bind-ignore = '_'
/** Ignores the value (or one tuple position). */
public final class BindIgnore implements Binding {
  /** The only instance. */
  public static final BindIgnore INSTANCE = new BindIgnore();

  private BindIgnore() {}

  @Override
  public List<Variable> vars() {
    return List.of();
  }

  @Override
  public String toString() {
    return "_";
  }
}
