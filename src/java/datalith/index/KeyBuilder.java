package datalith.index;

import java.nio.ByteBuffer;

/** A reusable builder of index keys; not thread-safe. */
public final class KeyBuilder {
  private final boolean direct;
  private ByteBuffer buf;
  private ByteBuffer shared; // the view sharedView() re-points, a duplicate of buf

  /** A builder backed by a heap buffer: cheap to make, copied by the store when it seeks. */
  public KeyBuilder() {
    this(false);
  }

  public KeyBuilder(boolean direct) {
    this.direct = direct;
    this.buf = direct ? ByteBuffer.allocateDirect(512) : ByteBuffer.allocate(64);
  }

  /** Empties the builder. */
  public KeyBuilder reset() {
    buf.clear();
    return this;
  }

  public KeyBuilder putLong(long x) {
    ensure(8);
    buf.putLong(x);
    return this;
  }

  public KeyBuilder put(byte[] b) {
    ensure(b.length);
    buf.put(b);
    return this;
  }

  /** Copies {@code len} bytes of {@code src} from absolute {@code off}. */
  public KeyBuilder put(ByteBuffer src, int off, int len) {
    ensure(len);
    buf.put(buf.position(), src, off, len);
    buf.position(buf.position() + len);
    return this;
  }

  public int length() {
    return buf.position();
  }

  /** A view of the bytes written so far: valid until the next change to this builder. */
  public ByteBuffer view() {
    return buf.duplicate().flip();
  }

  /**
   * Like {@link #view()}, but the same buffer on every call (no allocation): valid until the
   * next change to this builder or the next call.
   */
  public ByteBuffer sharedView() {
    ByteBuffer v = shared;
    if (v == null) {
      v = buf.duplicate();
      shared = v;
    }
    return v.clear().limit(buf.position());
  }

  /** A copy of the bytes written so far. */
  public byte[] toBytes() {
    byte[] out = new byte[buf.position()];
    buf.get(0, out);
    return out;
  }

  private void ensure(int n) {
    if (buf.remaining() < n) {
      int cap = Math.max(buf.capacity() * 2, buf.position() + n);
      ByteBuffer bigger = direct ? ByteBuffer.allocateDirect(cap) : ByteBuffer.allocate(cap);
      buf.flip();
      bigger.put(buf);
      buf = bigger;
      shared = null;
    }
  }
}
