package datalith.query.parser;

import java.util.List;

// find-scalar = find-elem '.'
/** {@code :find ?x .}: a single value (nil when there is none). */
public record FindScalar(FindElement element) implements FindSpec {
  @Override
  public List<FindElement> elements() {
    return List.of(element);
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
