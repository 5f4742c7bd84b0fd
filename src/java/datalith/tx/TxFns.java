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
 * {@code (ns/f db arg ...)} on the database before the transaction, and its
 * result, tx-data, is expanded in the call's place ({@link Expander}).
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
    Object result;
    try {
      result = fn.applyTo(RT.cons(db, RT.seq(l.subList(1, l.size()))));
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
