package datalith.store;

import clojure.lang.ExceptionInfo;
import clojure.lang.IExceptionInfo;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.lmdbjava.Cursor;
import org.lmdbjava.Env;
import org.lmdbjava.LmdbException;
import org.lmdbjava.LmdbNativeException;

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
  static final Keyword CORRUPT = Keyword.intern("store", "corrupt");
  static final Keyword IO = Keyword.intern("store", "io");
  static final Keyword ORDER = Keyword.intern("store", "order");

  private static final Keyword DB = Keyword.intern("db");
  private static final Keyword PAGE = Keyword.intern("page");

  static final Keyword ERROR = Keyword.intern("error");
  private static final Keyword STORE = Keyword.intern("store");

  private Errors() {}

  /** An ex-info with data {:error code, :store where, k v ...}. */
  static ExceptionInfo error(Keyword code, String where, String message, Throwable cause,
      Object... more) {
    return new ExceptionInfo(message + " (" + where + ")", data(code, where, more), cause);
  }

  /**
   * A damaged store: {@code :store/corrupt}, naming the sub-database (null: none in particular)
   * and the page (-1: none in particular) where the damage was found.
   */
  static ExceptionInfo corrupt(String where, SubDb db, long page, String message) {
    String at = (db == null ? "" : " in " + db) + (page < 0 ? "" : " at page " + page);
    Object[] more = db == null
        ? (page < 0 ? new Object[0] : new Object[] {PAGE, page})
        : (page < 0 ? new Object[] {DB, db.name()} : new Object[] {DB, db.name(), PAGE, page});
    return error(CORRUPT, where, message + at, null, more);
  }

  /**
   * An LMDB failure: {@code :store/corrupt} for the errors LMDB gives on a damaged file (a page
   * number past the snapshot's last page, a page of the wrong kind, a branch path deeper than a
   * cursor holds, a file that is not LMDB's), else {@code :store/lmdb}.
   */
  static ExceptionInfo lmdb(String where, String what, LmdbException e) {
    boolean damaged = e instanceof LmdbNativeException.PageNotFoundException
        || e instanceof LmdbNativeException.PageCorruptedException
        || e instanceof Cursor.FullException
        || e instanceof Env.FileInvalidException
        || e instanceof Env.VersionMismatchException;
    return error(damaged ? CORRUPT : LMDB, where, what + ": " + e.getMessage(), e);
  }

  /** Use of a closed store or transaction: an {@link IllegalStateException} carrying ex-data. */
  static IllegalStateException closed(String where, String what) {
    return new Closed(what + " is closed (" + where + ")", data(CLOSED, where));
  }

  /**
   * Throws unless a write transaction is {@code open} and not {@code committed}: an
   * IllegalStateException, whose ex-data says {@code :store/closed} after its close.
   */
  static void checkWritable(String where, boolean open, boolean committed) {
    if (!open) {
      throw closed(where, "The write transaction");
    }
    if (committed) {
      throw new IllegalStateException("The write transaction is committed (" + where + ")");
    }
  }

  /** Throws unless {@code key} has 1 to {@link #MAX_KEY_SIZE} bytes remaining. */
  static void checkKey(String where, ByteBuffer key) {
    checkKeySize(where, key.remaining());
  }

  /** Throws unless {@code size}, a key's, is 1 to {@link #MAX_KEY_SIZE}. */
  static void checkKeySize(String where, int size) {
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
