package datalith.codec;

import clojure.java.api.Clojure;
import clojure.lang.BigInt;
import clojure.lang.IFn;
import clojure.lang.IRecord;
import clojure.lang.ISeq;
import clojure.lang.IType;
import clojure.lang.Keyword;
import clojure.lang.PersistentHashSet;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.Sequential;
import clojure.lang.Symbol;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Arbitrary values (EDN) in a canonical form: values that are {@code =} get
 * identical bytes. The raw body is one node: collections are framed here
 * (sequentials as vectors, set elements and map entries sorted by their own
 * node bytes), numbers are normalised the way {@code =} compares them, common
 * scalars reuse their {@link Codec} encoding, and anything else is frozen by
 * nippy. Metadata is dropped. No order is promised between EDN values.
 */
final class Edn {

  // node tags, above every Codec tag, which scalar nodes start with
  private static final int LONG = 0x20;
  private static final int VECTOR = 0x21;
  private static final int SET = 0x22;
  private static final int MAP = 0x23;
  private static final int NIPPY = 0x24;

  private static final String ARRAY_ADVICE = ": arrays compare by identity, so no stored value"
      + " could be equal to it; give a vector, list or set instead";
  private static final String JAVA_ARRAY = "holds a Java array" + ARRAY_ADVICE;
  private static final String NESTED_TOO_DEEP = "nests collections more than "
      + Codec.MAX_NESTING + " levels deep";
  private static final String TWO_EQUAL_MEMBERS = "holds a Java set or map with two members that"
      + " are = to each other (such as 1 and (int 1))";

  /**
   * Why a value cannot be encoded, as a phrase for "the value ...": thrown
   * by {@link #encode}, read by {@link Codec#unstorable}.
   */
  static final class Unstorable extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    Unstorable(String phrase) {
      super(phrase);
    }
  }
  // stands for nil on the walk's stack, which holds no nulls
  private static final Object NO_VALUE = new Object();

  private Edn() {}

  /** Nippy's freeze and thaw, resolved on first use. */
  private static final class Nippy {
    static final IFn FREEZE = resolve("taoensso.nippy/freeze");
    static final IFn THAW = resolve("taoensso.nippy/thaw");
    // no compression (bytes depend on the value only), no metadata (= ignores it)
    static final Object FREEZE_OPTS = RT.map(Keyword.intern("compressor"), null,
        Keyword.intern("incl-metadata?"), Boolean.FALSE);

    private static IFn resolve(String name) {
      return (IFn) Clojure.var("clojure.core", "requiring-resolve").invoke(Clojure.read(name));
    }
  }

  static byte[] encode(int tag, Object v) {
    ByteSink out = new ByteSink(64);
    write(v, out, 1);
    return Escaping.wrap(tag, out.array(), out.length());
  }

  static Object decode(ByteBuffer b, int off) {
    return read(new ByteSource(Escaping.body(b, off + 1)));
  }

  private static byte[] node(Object v, int depth) {
    ByteSink out = new ByteSink(16);
    write(v, out, depth);
    return out.toArray();
  }

  // depth: v's own level, 1 for the value itself (see Codec.MAX_NESTING)
  private static void write(Object v, ByteSink out, int depth) {
    if (depth > Codec.MAX_NESTING) {
      throw new Unstorable(NESTED_TOO_DEEP);
    }
    if (v == null) {
      out.put(Codec.T_NIL);
    } else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
      writeLong(((Number) v).longValue(), out);
    } else if (v instanceof BigInt) {
      writeBigInt((BigInt) v, out);
    } else if (v instanceof BigInteger) {
      writeBigInt(BigInt.fromBigInteger((BigInteger) v), out);
    } else if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      // = holds between -0.0 and 0.0, and between a float and its double
      out.put(Codec.encode(d == 0.0 ? 0.0 : d, Codec.T_DOUBLE));
    } else if (v instanceof BigDecimal) {
      // = ignores the scale of bigdecs
      out.put(Codec.encode(((BigDecimal) v).stripTrailingZeros(), Codec.T_BIGDEC));
    } else if (v instanceof Boolean) {
      out.put(Codec.encode(v, Codec.T_BOOLEAN));
    } else if (v instanceof String || v instanceof Keyword || v instanceof Symbol || v instanceof UUID
        || v instanceof byte[]) {
      out.put(Codec.encode(v, Codec.inferTag(v)));
    } else if (v.getClass() == Date.class) {
      out.put(Codec.encode(v, Codec.T_INSTANT));
    } else if (v.getClass().isArray()) {
      throw new Unstorable(JAVA_ARRAY);
    } else if (v instanceof IRecord || v instanceof IType) {
      // frozen whole: nothing below may be an array or too deep (nippy would keep it)
      String problem = unstorable(v, depth);
      if (problem != null) {
        throw new Unstorable(problem);
      }
      writeFrozen(v, out);
    } else if (v instanceof Map) {
      writeMap((Map<?, ?>) v, out, depth);
    } else if (v instanceof Set) {
      writeSet((Set<?>) v, out, depth);
    } else if (v instanceof List || v instanceof Sequential) {
      out.put(VECTOR);
      out.putOrderedLong(RT.count(v));
      for (ISeq s = RT.seq(v); s != null; s = s.next()) {
        write(s.first(), out, depth + 1);
      }
    } else {
      writeFrozen(v, out);
    }
  }

  /** What {@link Codec#unstorable} says of {@code v}. */
  static String unstorable(Object v) {
    String problem = unstorable(v, 1);
    if (problem != null) {
      return problem;
    }
    try {
      encode(Codec.T_EDN, v);
      return null;
    } catch (Unstorable e) {
      return e.getMessage();
    } catch (RuntimeException e) {
      return null; // not a value for another reason (nippy cannot freeze it)
    }
  }

  // v at level depth: the first Java array (other than byte[]) in it, or too deep a nesting
  private static String unstorable(Object v, int depth) {
    ArrayDeque<Object> todo = new ArrayDeque<>();
    ArrayDeque<Integer> depths = new ArrayDeque<>();
    push(todo, depths, v, depth);
    while (!todo.isEmpty()) {
      Object x = todo.pop();
      int d = depths.pop();
      if (x.getClass().isArray() && !(x instanceof byte[])) {
        return d == depth ? "is a Java array (" + x.getClass().getSimpleName() + ")" + ARRAY_ADVICE
            : "holds a Java array (" + x.getClass().getSimpleName() + ")" + ARRAY_ADVICE;
      }
      if (x instanceof Map<?, ?> m) {
        if (!m.isEmpty() && d >= Codec.MAX_NESTING) {
          return NESTED_TOO_DEEP;
        }
        for (Map.Entry<?, ?> en : m.entrySet()) {
          push(todo, depths, en.getKey(), d + 1);
          push(todo, depths, en.getValue(), d + 1);
        }
      } else if (x instanceof Iterable<?> it) {
        for (Object c : it) {
          if (d >= Codec.MAX_NESTING) {
            return NESTED_TOO_DEEP;
          }
          push(todo, depths, c, d + 1);
        }
      }
    }
    return null;
  }

  private static void push(ArrayDeque<Object> todo, ArrayDeque<Integer> depths, Object x, int d) {
    todo.push(x == null ? NO_VALUE : x);
    depths.push(d);
  }

  private static void writeLong(long v, ByteSink out) {
    out.put(LONG);
    out.putOrderedLong(v);
  }

  // = holds between a bigint and the long of the same value
  private static void writeBigInt(BigInt v, ByteSink out) {
    if (v.bipart == null) {
      writeLong(v.lpart, out);
    } else {
      out.put(Codec.encode(v, Codec.T_BIGINT));
    }
  }

  private static void writeFrozen(Object v, ByteSink out) {
    byte[] frozen = (byte[]) Nippy.FREEZE.invoke(v, Nippy.FREEZE_OPTS);
    out.put(NIPPY);
    out.putOrderedLong(frozen.length);
    out.put(frozen);
  }

  private static void writeSet(Set<?> set, ByteSink out, int depth) {
    byte[][] elements = new byte[set.size()][];
    int n = 0;
    for (Object x : set) {
      elements[n++] = node(x, depth + 1);
    }
    Arrays.sort(elements, Arrays::compareUnsigned);
    out.put(SET);
    out.putOrderedLong(n);
    for (int i = 0; i < n; i++) {
      requireDistinct(elements, i);
      out.put(elements[i]);
    }
  }

  private static void writeMap(Map<?, ?> map, ByteSink out, int depth) {
    byte[][] keys = new byte[map.size()][];
    byte[][] vals = new byte[map.size()][];
    Integer[] order = new Integer[map.size()];
    int n = 0;
    for (Map.Entry<?, ?> e : map.entrySet()) {
      keys[n] = node(e.getKey(), depth + 1);
      vals[n] = node(e.getValue(), depth + 1);
      order[n] = n;
      n++;
    }
    Arrays.sort(order, (i, j) -> Arrays.compareUnsigned(keys[i], keys[j]));
    byte[][] sortedKeys = new byte[n][];
    for (int i = 0; i < n; i++) {
      sortedKeys[i] = keys[order[i]];
    }
    out.put(MAP);
    out.putOrderedLong(n);
    for (int i = 0; i < n; i++) {
      requireDistinct(sortedKeys, i);
      out.put(sortedKeys[i]);
      out.put(vals[order[i]]);
    }
  }

  // a Java collection can hold two members that = considers equal (Integer 1, Long 1)
  private static void requireDistinct(byte[][] sorted, int i) {
    if (i > 0 && Arrays.equals(sorted[i - 1], sorted[i])) {
      throw new Unstorable(TWO_EQUAL_MEMBERS);
    }
  }

  private static Object read(ByteSource in) {
    int tag = in.buf.get(in.pos) & 0xFF;
    if (tag < LONG) {
      Object x = Codec.decode(in.buf, in.pos);
      in.pos = Codec.skipKeyPart(in.buf, in.pos);
      return x;
    }
    in.pos++;
    // the value of a long node, the element, entry or byte count of the others
    long n = in.orderedLong();
    switch (tag) {
      case LONG:
        return n;
      case VECTOR:
        return PersistentVector.create(readAll(in, (int) n));
      case SET:
        return PersistentHashSet.create(readAll(in, (int) n));
      case MAP:
        return RT.mapUniqueKeys(readAll(in, (int) (2 * n)));
      case NIPPY:
        return Nippy.THAW.invoke(in.bytes((int) n));
      default:
        throw new IllegalArgumentException("malformed EDN encoding: node tag " + tag);
    }
  }

  private static Object[] readAll(ByteSource in, int n) {
    Object[] xs = new Object[n];
    for (int i = 0; i < n; i++) {
      xs[i] = read(in);
    }
    return xs;
  }
}
