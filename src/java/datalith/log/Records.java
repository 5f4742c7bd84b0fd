package datalith.log;

import clojure.java.api.Clojure;
import clojure.lang.ExceptionInfo;
import clojure.lang.Fn;
import clojure.lang.IFn;
import clojure.lang.Keyword;
import clojure.lang.RT;
import clojure.lang.Util;
import datalith.db.Errors;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The bytes of a log record. Its value is the tx-data frozen by nippy (exact types: a float stays
 * a float, a BigDecimal keeps its scale, so that every node transacts the very values the writer
 * gave; EDN would not), uncompressed and without metadata. Its key names the record's writer and
 * the writer's sequence number ({@code "node-id/seq"}), so that the node that wrote it completes
 * its waiting {@code transact}.
 *
 * <p>Only data goes into the log: function values (a {@code :db.fn/call} of a fn, an attribute
 * value that is a fn) cannot be frozen and are refused with {@code :log/unserializable}, as is any
 * value that does not come back equal from the bytes. A transaction function named by a symbol is
 * data: every node resolves and runs it at apply time (it must be pure and present on every node).
 */
final class Records {
  private static final IFn FREEZE = resolve("taoensso.nippy/freeze");
  private static final IFn THAW = resolve("taoensso.nippy/thaw");
  private static final Object OPTS = RT.map(Keyword.intern("compressor"), null,
      Keyword.intern("incl-metadata?"), Boolean.FALSE);

  private Records() {}

  private static IFn resolve(String name) {
    return (IFn) Clojure.var("clojure.core", "requiring-resolve").invoke(Clojure.read(name));
  }

  /**
   * The record value of {@code txData}.
   *
   * @throws ExceptionInfo {@code :log/unserializable} for tx-data that is not plain data
   */
  static byte[] encode(Object txData) {
    Object fn = findFn(txData, 0);
    if (fn != null) {
      throw Errors.error("log/unserializable", "A replicated transaction holds data only: a"
          + " function value cannot go into the log (name a transaction function by its symbol)",
          "value", fn, "tx-data", txData);
    }
    byte[] b;
    Object back;
    try {
      b = (byte[]) FREEZE.invoke(txData, OPTS);
      back = THAW.invoke(b, OPTS);
    } catch (RuntimeException e) {
      throw Errors.errorWithCause(e, "log/unserializable", "The tx-data cannot be written to the"
          + " log: " + e.getMessage(), "tx-data", txData);
    }
    if (!Util.equiv(back, txData)) {
      throw Errors.error("log/unserializable", "The tx-data does not come back equal from the"
          + " log's encoding (a value of a type nippy does not keep)", "tx-data", txData);
    }
    return b;
  }

  /**
   * The tx-data of the record value {@code b} at {@code offset}.
   *
   * @throws ExceptionInfo {@code :log/corrupt-record} when it cannot be read
   */
  static Object decode(byte[] b, long offset) {
    try {
      return THAW.invoke(b, OPTS);
    } catch (RuntimeException e) {
      throw Errors.errorWithCause(e, "log/corrupt-record", "The log record at offset " + offset
          + " cannot be read: " + e.getMessage(), "offset", offset);
    }
  }

  /** The key of the record written by node {@code node} as its {@code seq}th. */
  static byte[] key(String node, long seq) {
    return (node + "/" + seq).getBytes(StandardCharsets.UTF_8);
  }

  /** The sequence number of the record with key {@code key} when node {@code node} wrote it, else -1. */
  static long seqOf(byte[] key, String node) {
    if (key == null) {
      return -1;
    }
    String k = new String(key, StandardCharsets.UTF_8);
    int slash = k.lastIndexOf('/');
    if (slash != node.length() || !k.startsWith(node)) {
      return -1;
    }
    try {
      return Long.parseLong(k.substring(slash + 1));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** The first function value in {@code x} (searched to a bounded depth), else null. */
  private static Object findFn(Object x, int depth) {
    if (x instanceof Fn) {
      return x;
    }
    if (depth > 64) {
      return null; // the transactor refuses deeper data itself
    }
    if (x instanceof Map<?, ?> m) {
      for (Map.Entry<?, ?> e : m.entrySet()) {
        Object f = findFn(e.getKey(), depth + 1);
        if (f == null) {
          f = findFn(e.getValue(), depth + 1);
        }
        if (f != null) {
          return f;
        }
      }
    } else if (x instanceof Iterable<?> it) {
      for (Object y : it) {
        Object f = findFn(y, depth + 1);
        if (f != null) {
          return f;
        }
      }
    }
    return null;
  }
}
