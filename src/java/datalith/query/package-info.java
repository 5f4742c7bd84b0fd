/**
 * The query engine: runs parsed queries ({@link datalith.query.parser}) on databases and
 * collections. {@code Engine} conducts: {@code Bindings} binds the inputs (and function results)
 * by the nested binding forms, a plan is asked for, and {@code Results} projects the bindings
 * into the answer's shape ({@code :with} bags, pulls, {@code Grouper} for aggregates, which
 * {@code Aggregates} computes; for {@code Engine.qseq}, {@code LazyPulls} makes the answer a
 * lazy sequence pulled as it is read); {@code Functions} finds what a query calls (built-ins,
 * Clojure functions, function values bound to a variable); {@code Compare} is the one order of values (Datomic's, across
 * types) used by predicates, ranges and aggregates; {@code Planner} orders a scope's clauses by what binds what and by cost into a
 * {@code Plan}, which also says which variables each step leaves needed (the rest are projected
 * away); {@code Evaluator} runs plans clause by clause over {@code Ctx} relations ({@code Rel}),
 * patterns through {@code DbPattern} index scans (kept to the {@code ValueRange} that the
 * comparisons on the value's variable allow), a pattern some of whose variables the rows so
 * far bind through {@code Joins} (index-lookup, hash or semi-join, as the sizes choose), and runs
 * of patterns {@code [?e attr ?v]} on a few bound entities as one {@code StarJoin} (one EAVT
 * position per entity for all of them);
 * {@code Rules} tables rule calls to a fixpoint.
 * {@code Deadline} holds a query's {@code :timeout} and {@code :max-rows}, checked in every loop.
 * The answer's slice: {@code Slices} sorts it by {@code :order-by} (a bounded heap under a
 * limit) and cuts {@code :offset} and {@code :limit}; {@code OrderedWalk} finds the top k of an
 * order on a long or instant attribute by walking its AVET index in that order, chunk by chunk;
 * {@code Chunks} reads a first-step scan a chunk at a time (short reads resumed after the last
 * key), so a limit without an order stops early and {@code qseq} reads chunks as its sequence is
 * consumed; {@code Windows} computes window columns over the answer's rows, sorting row indexes
 * by {@code RowOrder} (columns of integers compared as longs); {@code Inputs} puts
 * inputs given by name in {@code :in} order; a {@code :valid-at} section binds its sources to
 * their valid-at views ({@code Db.validAt}) before anything reads them. {@code Prepared} is a query made ready to run many
 * times ({@code Engine.runPrepared}): it holds its find's variables and the plan of its last run,
 * reused while the rules form and the databases' size classes stay.
 *
 * <p>Threading: {@code Engine.q} and {@code Engine.qseq} may be called from any thread (the
 * lazy sequence of qseq too: each row pulls through a read of its own, each chunk is read
 * through an evaluator and snapshots of its own); each call has its own
 * {@code Engine}, {@code Results}, {@code Evaluator}, {@code Planner}, {@code Rules} and {@code Deadline}, none of
 * them shared. Parsed queries and top-level plans are cached in concurrent maps, and are immutable;
 * a {@code Prepared} swaps its held plan whole (a volatile field).
 */
package datalith.query;
