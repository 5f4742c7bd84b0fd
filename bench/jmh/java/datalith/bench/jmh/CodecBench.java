package datalith.bench.jmh;

import clojure.lang.Keyword;
import datalith.codec.Codec;
import datalith.index.KeyBuilder;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/** Key encoding: values to their order-preserving key parts, an AVET key, and back. */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"})
public class CodecBench {
  private final Long priority = 4L;
  private final String email = "user1234@example.com";
  private final Keyword state = Keyword.intern("state", "open");
  private ByteBuffer encodedEmail;
  private final KeyBuilder key = new KeyBuilder();

  @Setup
  public void setup() {
    byte[] full = Codec.encode(email, Codec.T_STRING);
    encodedEmail = ByteBuffer.allocateDirect(full.length).put(full).flip();
  }

  @Benchmark
  public byte[] encodeLong() {
    return Codec.keyPart(Codec.encode(priority, Codec.T_LONG));
  }

  @Benchmark
  public byte[] encodeString() {
    return Codec.keyPart(Codec.encode(email, Codec.T_STRING));
  }

  @Benchmark
  public byte[] encodeKeyword() {
    return Codec.keyPart(Codec.encode(state, Codec.T_KEYWORD));
  }

  /** An AVET key: attribute id, value, entity id. */
  @Benchmark
  public ByteBuffer avetKey() {
    return key.reset().putLong(1001).put(Codec.keyPart(Codec.encode(email, Codec.T_STRING)))
        .putLong(4242).view();
  }

  @Benchmark
  public Object decodeString() {
    return Codec.decode(encodedEmail, 0);
  }
}
