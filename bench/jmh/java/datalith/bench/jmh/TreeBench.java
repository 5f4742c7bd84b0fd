package datalith.bench.jmh;

import datalith.store.MemStore;
import datalith.store.SubDb;
import datalith.store.WriteTxn;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The in-memory trees' puts as a staged import makes them (a MemStore edited in place): commits
 * of 1,000 entities' keys, eight attributes each, into EAVT (past the tree's end), AVET (spread
 * over each attribute's values) and VAET (refs to 2,000 users), the store grown by every
 * commit and made anew each iteration (about 200 commits: an import of 1.6M datoms). Time a
 * commit; divided by 8,000 + 8,000 + 2,000 puts, the cost of a put.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "-Xmx4g"})
public class TreeBench {
  private static final int ENTITIES = 1000;
  private static final int ATTRS = 8;
  private static final ByteBuffer EMPTY = ByteBuffer.allocate(0).asReadOnlyBuffer();

  private MemStore store;
  private long nextEntity;
  private long tx;
  private final Random random = new Random(42);
  private final ByteBuffer key = ByteBuffer.allocate(64);

  @Setup(Level.Iteration)
  public void fresh() {
    if (store != null) {
      store.close();
    }
    store = MemStore.openInPlace();
    nextEntity = 1L << 20;
    tx = 1L << 40;
  }

  @Benchmark
  public long commit() {
    tx++;
    try (WriteTxn w = store.beginWrite()) {
      for (int i = 0; i < ENTITIES; i++) {
        long e = nextEntity++;
        for (int a = 0; a < ATTRS; a++) {
          long v = random.nextLong();
          w.put(SubDb.EAVT, key(e, 70 + a, v, tx), EMPTY);
          w.put(SubDb.AVET, key(70 + a, v, e, tx), EMPTY);
        }
        for (int r = 0; r < 2; r++) {
          w.put(SubDb.VAET, key(random.nextInt(2000), 90 + r, e, tx), EMPTY);
        }
      }
      w.commit();
    }
    return nextEntity;
  }

  private ByteBuffer key(long a, long b, long c, long d) {
    key.clear();
    key.putLong(a).putLong(b).put((byte) 3).putLong(c).putLong(d);
    return key.flip();
  }
}
