package datalith.query.parser;

import java.util.List;

// bind-coll = [ binding '...' ]
/**
 * Binds each element of a collection with {@code element}: the rows of every element, together.
 * A map is the collection of its entries ({@code [k v]}).
 */
public record BindColl(Binding element) implements Binding {
  @Override
  public List<Variable> vars() {
    return element.vars();
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
