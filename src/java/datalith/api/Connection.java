package datalith.api;

import datalith.conn.Conn;
import datalith.log.Node;

/**
 * An open database: transactions and the latest value. Thread-safe; close it
 * when done. Every failure is a {@link DatalithException}.
 */
public final class Connection implements AutoCloseable {
  private final Conn conn;

  Connection(Conn conn) {
    this.conn = conn;
  }

  /**
   * The latest database value: immutable, it never sees later transactions.
   *
   * @return the database value as of the last commit
   * @throws DatalithException when the connection is closed
   */
  public Database db() {
    try {
      return new Database(conn.db());
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * Runs one transaction: all of it is committed (durably by default) or, on any
   * error, none of it.
   *
   * @param txData EDN text such as {@code "[{:user/name \"Ada\"}]"}, or Clojure data
   * @return what the transaction did
   * @throws DatalithException when the transaction fails (e.g. category
   *     "tx/unique"); nothing is written then
   */
  public TxResult transact(Object txData) {
    try {
      return new TxResult(conn.transact(Edn.read(Args.required(txData, "tx-data"), "tx-data")));
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * The latest database value once this connection applied every transaction committed
   * anywhere when it is called: on a node of a replicated database, every record its log held
   * then; embedded, the same as {@link #db}.
   *
   * @return the database value
   * @throws DatalithException when the connection is closed or the log fails
   */
  public Database sync() {
    try {
      if (conn.replicated() instanceof Node n) {
        n.sync();
      }
      return new Database(conn.db());
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }

  /**
   * Closes the database; later calls on this connection fail. Closing twice does nothing.
   *
   * @throws DatalithException when the store fails to close
   */
  @Override
  public void close() {
    try {
      conn.close();
    } catch (Exception ex) {
      throw DatalithException.of(ex);
    }
  }
}
