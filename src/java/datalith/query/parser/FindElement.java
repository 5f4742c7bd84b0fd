package datalith.query.parser;

// find-elem = (variable | pull-expr | aggregate | window)
/** One column of the result. */
public sealed interface FindElement permits FindVar, Aggregate, Pull, Window {
  /** The variable whose values this column is computed from. */
  Variable var();
}
