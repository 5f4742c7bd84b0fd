package datalith.query.parser;

// rules-var = the symbol "%"
/** The {@code %} input: the rule set the query's rule invocations refer to. */
public final class RulesVar implements InBinding {
  /** The only instance. */
  public static final RulesVar INSTANCE = new RulesVar();

  private RulesVar() {}

  @Override
  public String toString() {
    return "%";
  }
}
