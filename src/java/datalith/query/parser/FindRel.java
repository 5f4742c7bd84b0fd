package datalith.query.parser;

import java.util.List;

// find-rel = find-elem+
/** {@code :find ?a ?b}: a set of tuples. */
public record FindRel(List<FindElement> elements) implements FindSpec {
  public FindRel {
    elements = List.copyOf(elements);
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
