package datalith.query.parser;

import java.util.List;

// binding = (bind-scalar | bind-tuple | bind-coll | bind-rel)
/**
 * How a value is destructured into variables: an {@code :in} argument or the result of a function
 * binding {@code [(f ?x) binding]}.
 */
public sealed interface Binding extends InBinding
    permits BindScalar, BindTuple, BindColl, BindRel, BindIgnore {
  /** The variables bound, in order of appearance, without duplicates. */
  List<Variable> vars();
}
