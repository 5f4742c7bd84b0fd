package datalith.query.parser;

import java.util.List;

// find-coll = [ find-elem '...' ]
/** {@code :find [?x ...]}: a collection of values. */
public record FindColl(FindElement element) implements FindSpec {
  @Override
  public List<FindElement> elements() {
    return List.of(element);
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
