package datalith.api;

import datalith.conn.Conn;
import datalith.db.Errors;
import datalith.log.Node;
import java.time.Duration;

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
   * The latest database value once it includes transaction {@code t}: on a node of a
   * replicated database, waits until the node applied it (from whichever node wrote it), at
   * most {@link Node#SYNC_TIMEOUT}; embedded, {@link #sync()} checked to include it.
   *
   * @param t a basis t, as {@link Database#basisT} gives it
   * @return the database value
   * @throws DatalithException {@code log/timeout} when the node did not reach t in time;
   *     {@code db/invalid-t} when an embedded database has no transaction t yet
   */
  public Database sync(long t) {
    return sync(t, Node.SYNC_TIMEOUT);
  }

  /**
   * As {@link #sync(long)}, waiting at most {@code timeout} on a node.
   *
   * @param t a basis t
   * @param timeout how long a node waits at most
   * @return the database value
   * @throws DatalithException as {@link #sync(long)}
   */
  public Database sync(long t, Duration timeout) {
    try {
      if (conn.replicated() instanceof Node n) {
        n.awaitT(t, Args.required(timeout, "timeout"));
        return new Database(conn.db());
      }
      Database d = sync();
      if (d.basisT() < t) {
        throw Errors.error("db/invalid-t", "No transaction with this t was committed yet", "t", t,
            "basis-t", d.basisT());
      }
      return d;
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
