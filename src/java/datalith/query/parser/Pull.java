package datalith.query.parser;

// pull-expr = [ 'pull' src-var? variable (pattern-data-literal | pattern-name | variable) ]
/**
 * A column holding {@code (pull src var pattern)} of each entity bound to {@code var}. Exactly
 * one of {@code pattern} (the raw pattern vector, unparsed; the pull parser owns it) and
 * {@code patternName} (an {@code :in} input that supplies the pattern) is non-null. {@code src}
 * is never null ({@code $} when not written).
 */
public record Pull(SrcVar src, Variable var, Object pattern, PatternName patternName)
    implements FindElement {
  public Pull {
    if ((pattern == null) == (patternName == null)) {
      throw new IllegalArgumentException("A pull has either a pattern literal or a pattern name");
    }
  }

  @Override
  public String toString() {
    return Forms.print(this);
  }
}
