package datalith.bench.jmh;

import datalith.api.Database;
import datalith.api.Datalith;
import datalith.api.PreparedQuery;
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

/**
 * A point query through the Java API ({@code datalith.api}): the query as a String read on every
 * call ({@code Database.q}, {@code Database.query}) against a {@link PreparedQuery} parsed once.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"})
public class ApiBench {
  private static final String POINT =
      "[:find ?n . :in $ ?email :where [?e :user/email ?email] [?e :user/name ?n]]";

  @Param({"lmdb"})
  public String store;

  @Param({"100k"})
  public String scale;

  private Fixture fixture;
  private Database db;
  private PreparedQuery prepared;

  @Setup(Level.Trial)
  public void setup() {
    fixture = new Fixture(store, scale);
    db = Database.of(fixture.conn.db());
    prepared = Datalith.prepare(POINT);
    Object name = pointPrepared();
    if (name == null || !name.equals(pointString()) || !name.equals(pointStringTyped())) {
      throw new IllegalStateException("the point query finds nothing, or not the same name");
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    fixture.close();
  }

  /** {@code Database.q} with the query as a String, read (EDN) on every call. */
  @Benchmark
  public Object pointString() {
    return db.q(POINT, "user42@example.com");
  }

  /** {@code Database.query} with the query as a String: read on every call, typed result. */
  @Benchmark
  public Object pointStringTyped() {
    return db.query(POINT, "user42@example.com").scalar();
  }

  /** The same query prepared once: no reading, parsing or cache lookup by form per call. */
  @Benchmark
  public Object pointPrepared() {
    return prepared.run(db, "user42@example.com").scalar();
  }
}
