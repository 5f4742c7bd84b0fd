package datalith.query.parser;

// find-elem = (variable | pull-expr | aggregate)
/** One column of the result. */
public sealed interface FindElement permits FindVar, Aggregate, Pull {
  /** The variable whose values this column is computed from. */
  Variable var();
}
