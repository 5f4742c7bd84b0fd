package datalith.query.parser;

/**
 * An argument position in a clause: a {@link Variable}, a {@link Constant}, the
 * {@link Placeholder} {@code _}, or a {@link SrcVar}. Which kinds a position admits is stated by
 * the clause that holds it.
 */
public sealed interface Term permits Variable, Constant, Placeholder, SrcVar {}
