package datalith.query.parser;

// placeholder = the symbol '_'
/** The placeholder {@code _}: a position that matches anything and binds nothing. */
public final class Placeholder implements Term {
  /** The only instance. */
  public static final Placeholder INSTANCE = new Placeholder();

  private Placeholder() {}

  @Override
  public String toString() {
    return "_";
  }
}
