package datalith.query.parser;

import java.util.List;

// find-tuple = [ find-elem+ ]
/** {@code :find [?a ?b]}: a single tuple (nil when there is none). */
public record FindTuple(List<FindElement> elements) implements FindSpec {
  public FindTuple {
    elements = List.copyOf(elements);
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
