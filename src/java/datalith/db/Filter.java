package datalith.db;

import clojure.lang.ExceptionInfo;
import clojure.lang.IFn;
import clojure.lang.RT;
import datalith.index.Datom;

/**
 * The predicates of a filtered database value ({@code (filter db pred)}, Datomic's and
 * DataScript's): a datom is visible when every predicate accepts it, each called as
 * {@code (pred db datom)} with the value it was applied to (itself filtered by the predicates
 * before it, as a chain). Immutable; {@link IndexScan} asks it of every datom it would give,
 * so every read of the value (datoms, query, pull, entity, lookup refs) sees only what it
 * accepts.
 */
final class Filter {
  private final Filter before; // the filters the base value already had, or null
  private final IFn pred;
  private final Db base; // the value pred was applied to

  Filter(Filter before, IFn pred, Db base) {
    this.before = before;
    this.pred = pred;
    this.base = base;
  }

  /**
   * Whether every predicate accepts {@code d}.
   *
   * @throws ExceptionInfo {@code :db/filter-failed} when a predicate throws (its own ex-info
   *     with a namespaced {@code :error} passes as it is)
   */
  boolean accepts(Datom d) {
    if (before != null && !before.accepts(d)) {
      return false;
    }
    try {
      return RT.booleanCast(pred.invoke(base, d));
    } catch (ExceptionInfo ex) {
      if (ex.getData().valAt(clojure.lang.Keyword.intern("error")) instanceof clojure.lang.Keyword k
          && k.getNamespace() != null) {
        throw ex;
      }
      throw Errors.errorWithCause(ex, "db/filter-failed", "The filter predicate threw: "
          + ex.getMessage(), "datom", d);
    } catch (RuntimeException | StackOverflowError ex) {
      throw Errors.errorWithCause(ex, "db/filter-failed", "The filter predicate threw: " + ex,
          "datom", d);
    }
  }
}
