package datalith.query.parser;

// inputs = ':in' (src-var | binding | pattern-name | rules-var)+
/**
 * One {@code :in} input, in the order the query's arguments are given: a source, the rules, a pull
 * pattern name or a variable {@link Binding}.
 */
public sealed interface InBinding permits SrcVar, RulesVar, PatternName, Binding {}
