package datalith.bench.jmh;

import clojure.java.api.Clojure;
import clojure.lang.IFn;
import clojure.lang.IPersistentVector;
import datalith.conn.Conn;

/** A loaded workload database for a benchmark's trial, through {@code datalith.bench.jmh-fixture}. */
final class Fixture implements AutoCloseable {
  private static final IFn OPEN;
  private static final IFn CLOSE;

  static {
    Clojure.var("clojure.core", "require").invoke(Clojure.read("datalith.bench.jmh-fixture"));
    OPEN = Clojure.var("datalith.bench.jmh-fixture", "open");
    CLOSE = Clojure.var("datalith.bench.jmh-fixture", "close");
  }

  final Conn conn;
  private final Object dir;

  /** Loads the workload at {@code scale} ("100k", "300k", "1m") into {@code store} ("lmdb", "mem"). */
  Fixture(String store, String scale) {
    IPersistentVector r = (IPersistentVector) OPEN.invoke(store, scale);
    this.conn = (Conn) r.nth(0);
    this.dir = r.nth(1);
  }

  @Override
  public void close() {
    CLOSE.invoke(conn, dir);
  }
}
