package datalith.query.parser;

import java.util.List;

// find-spec = ':find' (find-rel | find-coll | find-tuple | find-scalar)
/** The shape of the result: a set of tuples, one value, a collection of values or one tuple. */
public sealed interface FindSpec permits FindRel, FindScalar, FindColl, FindTuple {
  /** The find elements in order; never empty. */
  List<FindElement> elements();
}
