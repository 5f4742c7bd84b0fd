package datalith.store;

import clojure.lang.ExceptionInfo;
import clojure.lang.IExceptionInfo;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/** The one place where the store package builds its exceptions. */
final class Errors {

  /** LMDB's limit on key length (its default build), applied by both stores alike. */
  static final int MAX_KEY_SIZE = 511;

  static final Keyword LMDB = Keyword.intern("store", "lmdb");
  static final Keyword MAP_FULL = Keyword.intern("store", "map-full");
  static final Keyword MAP_RESIZED = Keyword.intern("store", "map-resized");
  static final Keyword CONFLICT = Keyword.intern("store", "conflict");
  static final Keyword CLOSED = Keyword.intern("store", "closed");
  static final Keyword KEY_SIZE = Keyword.intern("store", "key-size");
  static final Keyword OPTION = Keyword.intern("store", "option");

  private static final Keyword ERROR = Keyword.intern("error");
  private static final Keyword STORE = Keyword.intern("store");

  private Errors() {}

  /** An ex-info with data {:error code, :store where, k v ...}. */
  static ExceptionInfo error(Keyword code, String where, String message, Throwable cause,
      Object... more) {
    return new ExceptionInfo(message + " (" + where + ")", data(code, where, more), cause);
  }

  /** Use of a closed store or transaction: an {@link IllegalStateException} carrying ex-data. */
  static IllegalStateException closed(String where, String what) {
    return new Closed(what + " is closed (" + where + ")", data(CLOSED, where));
  }

  /** Throws unless {@code key} has 1 to {@link #MAX_KEY_SIZE} bytes remaining. */
  static void checkKey(String where, ByteBuffer key) {
    int size = key.remaining();
    if (size < 1 || size > MAX_KEY_SIZE) {
      throw error(KEY_SIZE, where,
          "Key of " + size + " bytes, must be 1 to " + MAX_KEY_SIZE + " bytes", null,
          Keyword.intern("size"), size);
    }
  }

  /** A failed {@link WriteTxn#expect}: {@code key} of {@code db} holds {@code found}. */
  static ExceptionInfo conflict(String where, SubDb db, byte[] key, byte[] expected,
      byte[] found) {
    return error(CONFLICT, where, "Another writer changed the store under this write transaction"
        + " (key \"" + new String(key, StandardCharsets.ISO_8859_1) + "\" of " + db
        + " no longer holds what the transaction was built on); nothing was written", null,
        Keyword.intern("sub-db"), db.name(), Keyword.intern("key"), key,
        Keyword.intern("expected"), expected, Keyword.intern("found"), found);
  }

  private static IPersistentMap data(Keyword code, String where, Object... more) {
    Object[] kvs = new Object[4 + more.length];
    kvs[0] = ERROR;
    kvs[1] = code;
    kvs[2] = STORE;
    kvs[3] = where;
    System.arraycopy(more, 0, kvs, 4, more.length);
    return new PersistentArrayMap(kvs);
  }

  /** An {@link IllegalStateException} that {@code ex-data} can read. */
  static final class Closed extends IllegalStateException implements IExceptionInfo {
    private static final long serialVersionUID = 1L;
    private final IPersistentMap data;

    Closed(String message, IPersistentMap data) {
      super(message);
      this.data = data;
    }

    @Override
    public IPersistentMap getData() {
      return data;
    }
  }
}
