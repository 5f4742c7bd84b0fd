package datalith.codec;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Reads of key bytes that stay fast whatever the buffer's class. Keys come as
 * heap, direct and read-only buffers (the in-memory store, LMDB's map, key
 * builders); {@code ByteBuffer.getLong} is a virtual call that the JIT stops
 * inlining once a call site has seen more than two of those classes, while a
 * view VarHandle reads any of them without one.
 */
public final class Bytes {
  private static final VarHandle LONG_BE =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
  private static final VarHandle ARRAY_LONG_BE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  private Bytes() {}

  /** The big-endian long at absolute index {@code i} of {@code b}, whatever b's byte order. */
  public static long longAt(ByteBuffer b, int i) {
    return (long) LONG_BE.get(b, i);
  }

  /** The big-endian long at index {@code i} of {@code b}. */
  public static long longAt(byte[] b, int i) {
    return (long) ARRAY_LONG_BE.get(b, i);
  }
}
