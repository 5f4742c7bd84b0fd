package datalith.bench.jmh;

import clojure.java.api.Clojure;
import clojure.lang.IDeref;
import clojure.lang.IFn;
import datalith.db.Db;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/** Joins through {@code datalith.core/q}: Q1 (two clauses on one entity) and Q2 (ref traversal). */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"})
public class JoinBench {
  @Param({"lmdb"})
  public String store;

  @Param({"100k"})
  public String scale;

  private Fixture fixture;
  private Db db;
  private IFn q;
  private Object q1;
  private Object q2;

  @Setup(Level.Trial)
  public void setup() {
    fixture = new Fixture(store, scale);
    db = fixture.conn.db();
    q = Clojure.var("datalith.core", "q");
    IFn q1Of = Clojure.var("datalith.workload", "q1");
    q1 = q1Of.invoke("user42@example.com");
    q2 = ((IDeref) Clojure.var("datalith.workload", "q2")).deref();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    fixture.close();
  }

  @Benchmark
  public Object q1PointLookup() {
    return q.invoke(q1, db);
  }

  @Benchmark
  public Object q2RefTraversal() {
    return q.invoke(q2, db, "user42@example.com");
  }
}
