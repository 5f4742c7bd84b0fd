/**
 * Query parser: Datomic-dialect Datalog queries (EDN data or an EDN string) in, an immutable AST
 * out, validated before any execution.
 *
 * <p>Entry points: {@link datalith.query.parser.QueryParser#parse(Object)} for a query (vector,
 * map or string form) and {@link datalith.query.parser.QueryParser#parseRules(Object)} for the
 * {@code %} input. The result is a {@link datalith.query.parser.Query}; the planner and executor
 * read only these AST classes, never the raw forms. Every AST class carries, as a one-line comment
 * above it, the grammar rule it parses. {@code SliceParser} parses what orders and cuts the
 * answer: {@code :order-by}, {@code :limit}, {@code :offset} ({@link datalith.query.parser.Order},
 * {@link datalith.query.parser.Query.Slice}) and the window elements of {@code :find}
 * ({@link datalith.query.parser.Window}). {@code ValidAtParser} parses {@code :valid-at}, the
 * instant at which a source is read in valid time ({@link datalith.query.parser.ValidAt}).
 *
 * <p>Errors: every rejection is an {@code ex-info} built by {@link datalith.db.Errors} whose data
 * has a namespaced {@code :error} key naming the rule broken ({@code :parser/query},
 * {@code :parser/find}, {@code :parser/with}, {@code :parser/in}, {@code :parser/where},
 * {@code :parser/rule}, {@code :parser/order-by}, {@code :parser/limit}, {@code :parser/offset}, {@code :parser/valid-at}, {@code :query/unbound-var}, {@code :query/insufficient-binding},
 * {@code :query/missing-rules}, {@code :query/unknown-source}) and the offending {@code :form}.
 * Collections nested more than a hundred deep in a query or rule set are refused
 * ({@code :parser/query}, {@code :parser/rule}) before anything recurses along them, so no
 * input overflows the stack of the parser, the validation or the executor.
 *
 * <p>Threading: parsing is a pure function of its input; every AST value is immutable and may be
 * shared freely between threads. {@link datalith.query.parser.Variable} instances are interned
 * through a concurrent table, so {@code ==} compares variables.
 */
package datalith.query.parser;
