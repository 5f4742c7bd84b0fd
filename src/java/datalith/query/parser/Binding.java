package datalith.query.parser;

import java.util.List;

// binding = (bind-scalar | bind-tuple | bind-coll | bind-rel | '_')
/**
 * How a value is destructured into variables: an {@code :in} argument or the result of a function
 * binding {@code [(f ?x) binding]}. Bindings nest: a tuple's positions and a collection's
 * elements are bindings themselves. A binding with no variable (such as {@code _} or
 * {@code [_ ...]}) accepts any value and binds nothing.
 */
public sealed interface Binding extends InBinding
    permits BindScalar, BindTuple, BindColl, BindRel, BindIgnore {
  /** The variables bound, in order of appearance, without duplicates. */
  List<Variable> vars();
}
