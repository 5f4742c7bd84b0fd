package datalith.api;

import datalith.conn.Conn;

/** An open database: transactions and the latest value. Thread-safe; close it when done. */
public final class Connection implements AutoCloseable {
  private final Conn conn;

  Connection(Conn conn) {
    this.conn = conn;
  }

  /** The latest database value: immutable, it never sees later transactions. */
  public Database db() {
    return new Database(conn.db());
  }

  /**
   * Runs one transaction: all of it is committed (durably by default) or, on any
   * error (a {@code clojure.lang.ExceptionInfo} whose data has an {@code :error}
   * key), none of it.
   *
   * @param txData EDN text such as {@code "[{:user/name \"Ada\"}]"}, or Clojure data
   */
  public TxResult transact(Object txData) {
    return new TxResult(conn.transact(Edn.read(txData, "tx-data")));
  }

  @Override
  public void close() {
    conn.close();
  }
}
