package datalith.store;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Comparator;
import jnr.ffi.Pointer;
import org.lmdbjava.BufferProxy;

/**
 * lmdbjava buffer proxy whose output buffers are read-only direct buffers re-pointed in place
 * at LMDB's memory on every call: zero-copy, no allocation per read, and no way for a caller to
 * write into the (read-only) memory map. Input buffers must be direct; their bytes between
 * position and limit are passed to LMDB.
 */
final class ReadOnlyBufferProxy extends BufferProxy<ByteBuffer> {

  static final ReadOnlyBufferProxy INSTANCE = new ReadOnlyBufferProxy();

  // sun.misc.Unsafe through method handles: javac -Werror rejects naming the class.
  private static final MethodHandle GET_ADDRESS; // (long address) -> long
  private static final MethodHandle PUT_ADDRESS; // (long address, long value) -> void
  private static final MethodHandle GET_INT; // (long address) -> int
  private static final MethodHandle GET_BYTE; // (long address) -> byte
  private static final MethodHandle GET_SHORT; // (long address) -> short
  private static final MethodHandle GET_FIELD_LONG; // (Object, long offset) -> long
  private static final MethodHandle PUT_FIELD_LONG; // (Object, long offset, long) -> void
  private static final MethodHandle PUT_FIELD_INT; // (Object, long offset, int) -> void
  private static final long ADDRESS_OFFSET; // java.nio.Buffer.address
  private static final long CAPACITY_OFFSET; // java.nio.Buffer.capacity
  private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

  static {
    try {
      Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
      Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
      theUnsafe.setAccessible(true);
      Object unsafe = theUnsafe.get(null);
      MethodHandles.Lookup lookup = MethodHandles.lookup();
      GET_ADDRESS = lookup.findVirtual(unsafeClass, "getLong",
          MethodType.methodType(long.class, long.class)).bindTo(unsafe);
      PUT_ADDRESS = lookup.findVirtual(unsafeClass, "putLong",
          MethodType.methodType(void.class, long.class, long.class)).bindTo(unsafe);
      GET_INT = lookup.findVirtual(unsafeClass, "getInt",
          MethodType.methodType(int.class, long.class)).bindTo(unsafe);
      GET_BYTE = lookup.findVirtual(unsafeClass, "getByte",
          MethodType.methodType(byte.class, long.class)).bindTo(unsafe);
      GET_SHORT = lookup.findVirtual(unsafeClass, "getShort",
          MethodType.methodType(short.class, long.class)).bindTo(unsafe);
      GET_FIELD_LONG = lookup.findVirtual(unsafeClass, "getLong",
          MethodType.methodType(long.class, Object.class, long.class)).bindTo(unsafe);
      PUT_FIELD_LONG = lookup.findVirtual(unsafeClass, "putLong",
          MethodType.methodType(void.class, Object.class, long.class, long.class)).bindTo(unsafe);
      PUT_FIELD_INT = lookup.findVirtual(unsafeClass, "putInt",
          MethodType.methodType(void.class, Object.class, long.class, int.class)).bindTo(unsafe);
      MethodHandle fieldOffset = lookup.findVirtual(unsafeClass, "objectFieldOffset",
          MethodType.methodType(long.class, Field.class)).bindTo(unsafe);
      ADDRESS_OFFSET = (long) fieldOffset.invokeExact(Buffer.class.getDeclaredField("address"));
      CAPACITY_OFFSET = (long) fieldOffset.invokeExact(Buffer.class.getDeclaredField("capacity"));
    } catch (Throwable e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private static final Comparator<ByteBuffer> UNSIGNED = ReadOnlyBufferProxy::compareUnsigned;

  private ReadOnlyBufferProxy() {}

  /** Unsigned lexicographic order of the remaining bytes. */
  static int compareUnsigned(ByteBuffer a, ByteBuffer b) {
    int i = a.mismatch(b);
    if (i < 0) {
      return 0;
    }
    if (i == a.remaining() || i == b.remaining()) {
      return a.remaining() - b.remaining();
    }
    return Byte.toUnsignedInt(a.get(a.position() + i)) - Byte.toUnsignedInt(b.get(b.position() + i));
  }

  /**
   * Empties {@code buffer} (one of ours) so that it no longer points into the map: any later
   * read throws instead of touching memory that may be unmapped.
   */
  static void detach(ByteBuffer buffer) {
    point(buffer, 0L, 0);
  }

  /** The buffer every view duplicates: the one that allocated (its memory is its own). */
  private static final ByteBuffer TEMPLATE = ByteBuffer.allocateDirect(0).asReadOnlyBuffer();

  /**
   * A new read-only direct buffer that can be pointed anywhere; it owns no memory. A duplicate
   * of one buffer made once: no native memory and no cleaner a view, as a buffer allocated
   * direct would have (a point get makes one).
   */
  static ByteBuffer newView() {
    return TEMPLATE.duplicate();
  }

  /** Points {@code buffer} (one of ours) at {@code size} bytes at {@code address}, big-endian. */
  static void point(ByteBuffer buffer, long address, int size) {
    try {
      PUT_FIELD_LONG.invokeExact((Object) buffer, ADDRESS_OFFSET, address);
      PUT_FIELD_INT.invokeExact((Object) buffer, CAPACITY_OFFSET, size);
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
    buffer.clear();
    buffer.order(ByteOrder.BIG_ENDIAN);
  }

  /** The native-order long at {@code address}, which must be readable native memory. */
  static long nativeLong(long address) {
    try {
      return (long) GET_ADDRESS.invokeExact(address);
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
  }

  /** The unsigned byte at {@code address}, which must be readable native memory. */
  static int nativeByte(long address) {
    try {
      return Byte.toUnsignedInt((byte) GET_BYTE.invokeExact(address));
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
  }

  /**
   * Unsigned lexicographic order of the {@code an} bytes at address {@code a} and the
   * {@code bn} bytes at {@code b}, a prefix first, both readable native memory: eight bytes a
   * step, without a buffer's checks.
   */
  static int compareUnsigned(long a, int an, long b, int bn) {
    int n = Math.min(an, bn);
    int i = 0;
    for (; i + Long.BYTES <= n; i += Long.BYTES) {
      long x = nativeLong(a + i);
      long y = nativeLong(b + i);
      if (x != y) {
        return LITTLE_ENDIAN
            ? Long.compareUnsigned(Long.reverseBytes(x), Long.reverseBytes(y))
            : Long.compareUnsigned(x, y);
      }
    }
    for (; i < n; i++) {
      int d = nativeByte(a + i) - nativeByte(b + i);
      if (d != 0) {
        return d;
      }
    }
    return an - bn;
  }

  /** The native-order int at {@code address}, which must be readable native memory. */
  static int nativeInt(long address) {
    try {
      return (int) GET_INT.invokeExact(address);
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
  }

  /** The native-order unsigned short at {@code address}, which must be readable native memory. */
  static int nativeShort(long address) {
    try {
      return Short.toUnsignedInt((short) GET_SHORT.invokeExact(address));
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
  }

  /** The address of {@code buffer}'s first byte (position 0); it must be direct. */
  static long base(ByteBuffer buffer) {
    try {
      return (long) GET_FIELD_LONG.invokeExact((Object) buffer, ADDRESS_OFFSET);
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
  }

  private static long address(ByteBuffer buffer) {
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException("LMDB needs a direct buffer");
    }
    try {
      return (long) GET_FIELD_LONG.invokeExact((Object) buffer, ADDRESS_OFFSET) + buffer.position();
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
  }

  private static void putVal(long val, long size, long data) {
    try {
      PUT_ADDRESS.invokeExact(val + STRUCT_FIELD_OFFSET_SIZE, size);
      PUT_ADDRESS.invokeExact(val + STRUCT_FIELD_OFFSET_DATA, data);
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
  }

  @Override
  protected ByteBuffer allocate() {
    return newView();
  }

  @Override
  protected void deallocate(ByteBuffer buffer) {
    // owns no memory
  }

  @Override
  protected byte[] getBytes(ByteBuffer buffer) {
    byte[] bytes = new byte[buffer.remaining()];
    buffer.get(buffer.position(), bytes);
    return bytes;
  }

  @Override
  protected Comparator<ByteBuffer> getSignedComparator() {
    return ByteBuffer::compareTo;
  }

  @Override
  protected Comparator<ByteBuffer> getUnsignedComparator() {
    return UNSIGNED;
  }

  @Override
  protected void in(ByteBuffer buffer, Pointer ptr, long ptrAddr) {
    putVal(ptrAddr, buffer.remaining(), address(buffer));
  }

  @Override
  protected void in(ByteBuffer buffer, int size, Pointer ptr, long ptrAddr) {
    putVal(ptrAddr, size, address(buffer));
  }

  @Override
  protected ByteBuffer out(ByteBuffer buffer, Pointer ptr, long ptrAddr) {
    long size;
    long data;
    try {
      size = (long) GET_ADDRESS.invokeExact(ptrAddr + STRUCT_FIELD_OFFSET_SIZE);
      data = (long) GET_ADDRESS.invokeExact(ptrAddr + STRUCT_FIELD_OFFSET_DATA);
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
    // a size no buffer holds comes only from a damaged page: the view is then left empty at
    // address 0, which every reader of LMDB's results rejects (see LmdbReadTxn#check)
    if (size < 0 || size > Integer.MAX_VALUE) {
      point(buffer, 0L, 0);
    } else {
      point(buffer, data, (int) size);
    }
    return buffer;
  }
}
