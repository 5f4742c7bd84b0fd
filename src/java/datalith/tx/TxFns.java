package datalith.tx;

import clojure.lang.ExceptionInfo;
import clojure.lang.IFn;
import clojure.lang.ISeq;
import clojure.lang.RT;
import clojure.lang.Symbol;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Fns;
import java.util.Collection;
import java.util.List;

/**
 * Calls transaction functions: {@code [ns/f arg ...]} in tx-data runs
 * {@code (ns/f db arg ...)} on the database before the transaction, and
 * {@code [:db.fn/call f arg ...]} runs {@code (f db arg ...)} for a function
 * value {@code f} (DataScript's form); the result, tx-data, is expanded in the
 * call's place ({@link Expander}).
 */
final class TxFns {
  private TxFns() {}

  /**
   * The tx-data that the function {@code sym} returns for call {@code l}
   * (a list whose head is {@code sym}), on {@code db}.
   *
   * @throws ExceptionInfo {@code :tx/unknown-fn} when sym names no function;
   *     {@code :tx/fn-failed} when it throws (its own ex-info with a
   *     namespaced {@code :error} passes through as it is);
   *     {@code :tx/fn-result} when it returns no collection
   */
  static Object call(Db db, Symbol sym, List<?> l) {
    if (sym.getNamespace() == null) {
      throw Errors.error("tx/unknown-fn", "A transaction function must be a fully qualified symbol",
          "fn", sym, "form", l);
    }
    Object f;
    try {
      f = Fns.resolve(sym);
    } catch (Exception ex) {
      throw Errors.errorWithCause(ex, "tx/unknown-fn", "Cannot load transaction function " + sym,
          "fn", sym, "form", l);
    }
    if (!(f instanceof IFn fn)) {
      throw Errors.error("tx/unknown-fn", "No transaction function " + sym, "fn", sym, "form", l);
    }
    return apply(db, fn, sym, l.subList(1, l.size()), l);
  }

  /**
   * The tx-data that {@code [:db.fn/call f arg ...]} (the list {@code l}) returns on
   * {@code db}.
   *
   * @throws ExceptionInfo {@code :tx/invalid-op} when {@code f} is no function; else as
   *     {@link #call}
   */
  static Object callValue(Db db, List<?> l) {
    Object f = l.size() < 2 ? null : l.get(1);
    if (!(f instanceof IFn fn) || f instanceof clojure.lang.Keyword || f instanceof Symbol
        || f instanceof clojure.lang.IPersistentCollection) {
      throw Errors.error("tx/invalid-op", "Expected [:db.fn/call f arg ...] with f a function",
          "fn", f, "form", l);
    }
    return apply(db, fn, f, l.subList(2, l.size()), l);
  }

  /** {@code (fn db args...)}, checked to be tx-data; {@code sym} names fn in errors. */
  private static Object apply(Db db, IFn fn, Object sym, List<?> args, List<?> l) {
    Object result;
    try {
      result = fn.applyTo(RT.cons(db, RT.seq(args)));
    } catch (ExceptionInfo ex) {
      if (Transactor.isDatalithError(ex)) {
        throw ex;
      }
      throw Errors.errorWithCause(ex, "tx/fn-failed",
          "Transaction function " + sym + " threw: " + ex.getMessage(), "fn", sym, "form", l,
          "data", ex.getData());
    } catch (Exception | StackOverflowError ex) {
      throw Errors.errorWithCause(ex, "tx/fn-failed",
          "Transaction function " + sym + " threw: " + ex, "fn", sym, "form", l);
    }
    if (result != null && !(result instanceof Collection) && !(result instanceof ISeq)) {
      throw Errors.error("tx/fn-result", "A transaction function must return tx-data",
          "fn", sym, "result", result);
    }
    return result;
  }
}
