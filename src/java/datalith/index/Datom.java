package datalith.index;

import clojure.lang.Counted;
import clojure.lang.ILookup;
import clojure.lang.ISeq;
import clojure.lang.Indexed;
import clojure.lang.Keyword;
import clojure.lang.RT;
import clojure.lang.Seqable;
import clojure.lang.Util;
import java.util.Arrays;

/**
 * One fact {@code [e a v tx added]}: immutable. {@code a} is the attribute's
 * ident; refs are entity ids (longs). Supports {@code (:e d)} lookups and
 * {@code [e a v tx added]} destructuring, {@code seq}, {@code vec} and {@code into} from
 * Clojure (it is {@code Iterable}; not {@code Sequential}, which would make
 * {@code (= [e a v tx added] d)} true while {@code (= d [e a v tx added])} is false). Two datoms are equal when
 * those five are: when they print the same, so that a printed datom
 * ({@code #datalith/datom [e a v tx added]}) reads back as an equal one.
 */
public final class Datom implements ILookup, Indexed, Counted, Seqable, Iterable<Object> {
  static final Keyword K_E = Keyword.intern("e");
  static final Keyword K_A = Keyword.intern("a");
  static final Keyword K_V = Keyword.intern("v");
  static final Keyword K_TX = Keyword.intern("tx");
  static final Keyword K_ADDED = Keyword.intern("added");

  /** The {@link #aid} of a datom read from text, where no database names the attribute's id. */
  public static final long UNKNOWN_AID = -1;

  public final long e;
  /** The attribute's entity id; {@link #UNKNOWN_AID} in a datom read from its printed form. */
  public final long aid;
  /** The attribute's ident; never null. */
  public final Keyword a;
  /** The value: never null; a Long entity id for refs. */
  public final Object v;
  public final long tx;
  public final boolean added;

  public Datom(long e, long aid, Keyword a, Object v, long tx, boolean added) {
    this.e = e;
    this.aid = aid;
    this.a = a;
    this.v = v;
    this.tx = tx;
    this.added = added;
  }

  @Override
  public Object valAt(Object key) {
    return valAt(key, null);
  }

  @Override
  public Object valAt(Object key, Object notFound) {
    if (key == K_E) {
      return e;
    } else if (key == K_A) {
      return a;
    } else if (key == K_V) {
      return v;
    } else if (key == K_TX) {
      return tx;
    } else if (key == K_ADDED) {
      return added;
    }
    return notFound;
  }

  @Override
  public Object nth(int i) {
    switch (i) {
      case 0: return e;
      case 1: return a;
      case 2: return v;
      case 3: return tx;
      case 4: return added;
      default: throw new IndexOutOfBoundsException("datom has 5 elements: " + i);
    }
  }

  @Override
  public Object nth(int i, Object notFound) {
    return i >= 0 && i < 5 ? nth(i) : notFound;
  }

  @Override
  public int count() {
    return 5;
  }

  @Override
  public ISeq seq() {
    return RT.seq(RT.vector(e, a, v, tx, added));
  }

  /** Its five parts in order, {@code e a v tx added}: so {@code (vec d)} and {@code (into [] d)} work. */
  @Override
  public java.util.Iterator<Object> iterator() {
    return Arrays.asList(e, a, v, tx, added).iterator();
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Datom)) {
      return false;
    }
    Datom d = (Datom) o;
    return e == d.e && a.equals(d.a) && tx == d.tx && added == d.added && valueEquals(v, d.v);
  }

  /** Equality of datom values: byte arrays by content, everything else by Clojure's {@code =}. */
  public static boolean valueEquals(Object x, Object y) {
    if (x instanceof byte[] bx && y instanceof byte[] by) {
      return Arrays.equals(bx, by);
    }
    return Util.equiv(x, y);
  }

  @Override
  public int hashCode() {
    int h = Long.hashCode(e);
    h = 31 * h + a.hashCode();
    h = 31 * h + valueHash(v);
    h = 31 * h + Long.hashCode(tx);
    return 31 * h + (added ? 1 : 0);
  }

  /**
   * The hash of a datom value, consistent with {@link #valueEquals}: byte arrays by content, a
   * Float as the Double it equals (Clojure's {@code =} holds between the two, its hashes differ),
   * so that a float datom read back from its printed form, where its value is a double, hashes
   * alike.
   */
  private static int valueHash(Object v) {
    if (v instanceof byte[] b) {
      return Arrays.hashCode(b);
    }
    return Util.hasheq(v instanceof Float f ? (Object) f.doubleValue() : v);
  }

  @Override
  public String toString() {
    return "#datalith/datom [" + e + " " + a + " " + RT.printString(v) + " " + tx + " " + added + "]";
  }
}
