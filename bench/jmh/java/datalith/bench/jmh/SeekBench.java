package datalith.bench.jmh;

import clojure.lang.Keyword;
import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.IndexScan;
import datalith.db.Snapshot;
import datalith.index.Index;
import datalith.index.KeyBuilder;
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
 * Index seeks through {@link Db#scan}: the AVET seek of a unique value (the first step of Q1),
 * and a scan of all of one attribute's datoms in AEVT (the whole of Q3's reading).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"})
public class SeekBench {
  @Param({"lmdb", "mem"})
  public String store;

  @Param({"100k"})
  public String scale;

  private Fixture fixture;
  private Db db;
  private Attr email;
  private Attr state;
  private byte[][] emailParts;
  private int next;

  @Setup(Level.Trial)
  public void setup() {
    fixture = new Fixture(store, scale);
    db = fixture.conn.db();
    email = db.schema().attr(Keyword.intern("user", "email"));
    state = db.schema().attr(Keyword.intern("issue", "state"));
    emailParts = new byte[64][];
    for (int i = 0; i < emailParts.length; i++) {
      emailParts[i] = Db.valuePart(email, "user" + (i * 3) + "@example.com");
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    fixture.close();
  }

  /** Seek AVET to (:user/email, v) and read the entity id, in its own short read. */
  @Benchmark
  public long seekUniqueValue() {
    byte[] v = emailParts[next++ & 63];
    try (Snapshot s = db.snapshot()) {
      IndexScan scan = db.scan(s, Index.AVET, new KeyBuilder().putLong(email.id).put(v).view());
      long e = scan.next() ? scan.e() : -1;
      scan.close();
      return e;
    }
  }

  /** Read every :issue/state datom in AEVT: entity id and value. */
  @Benchmark
  public long scanAttribute() {
    long sum = 0;
    try (Snapshot s = db.snapshot()) {
      IndexScan scan = db.scan(s, Index.AEVT, new KeyBuilder().putLong(state.id).view());
      while (scan.next()) {
        sum += scan.e() + scan.v().hashCode();
      }
      scan.close();
    }
    return sum;
  }
}
