package datalith.store;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import org.lmdbjava.Env;

/**
 * A pause of fsync on an LMDB environment opened durable: sets {@code MDB_NOSYNC} with
 * {@code mdb_env_set_flags} (which lmdbjava reaches but does not expose: its {@code Library.LIB}
 * is read by reflection), and on close forces the map to disk ({@code mdb_env_sync}, lmdbjava's
 * {@code Env.sync(true)}) before it clears the flag. LMDB lets MDB_NOSYNC change at any time
 * between transactions of the environment; the caller makes sure no other thread commits while
 * it changes. When this lmdbjava keeps its library elsewhere, the pause does nothing and commits
 * stay durable (the slow, plain path).
 */
final class LmdbSyncPause implements Store.SyncPause {
  private static final int MDB_NOSYNC = 0x10000;
  private static final Object LIB = library();
  private static final Method SET_FLAGS = setFlags(LIB);
  private static final Field ENV_PTR = envPointer();

  private final Env<?> env;
  private final Object pointer; // the MDB_env's jnr Pointer
  private final String where;
  private boolean closed;

  private LmdbSyncPause(Env<?> env, Object pointer, String where) {
    this.env = env;
    this.pointer = pointer;
    this.where = where;
  }

  /** Sets MDB_NOSYNC on {@code env}; a pause that does nothing when it cannot. */
  static Store.SyncPause begin(Env<?> env, String where) {
    Object pointer = pointerOf(env);
    if (SET_FLAGS == null || pointer == null) {
      return () -> {};
    }
    LmdbSyncPause p = new LmdbSyncPause(env, pointer, where);
    p.flag(1);
    return p;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      env.sync(true);
    } catch (RuntimeException e) {
      throw Errors.error(Errors.IO, where, "Cannot sync the store to disk: " + e, e);
    } finally {
      flag(0);
    }
  }

  private void flag(int onoff) {
    int rc;
    try {
      rc = (Integer) SET_FLAGS.invoke(LIB, pointer, MDB_NOSYNC, onoff);
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw Errors.error(Errors.IO, where, "Cannot set MDB_NOSYNC: " + e, e);
    }
    if (rc != 0) {
      throw Errors.error(Errors.IO, where, "mdb_env_set_flags failed with " + rc, null);
    }
  }

  private static Object library() {
    try {
      Field f = Class.forName("org.lmdbjava.Library").getDeclaredField("LIB");
      f.setAccessible(true);
      return f.get(null);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  private static Method setFlags(Object lib) {
    if (lib == null) {
      return null;
    }
    try {
      Method m = Class.forName("org.lmdbjava.Library$Lmdb").getMethod("mdb_env_set_flags",
          jnr.ffi.Pointer.class, int.class, int.class);
      m.setAccessible(true);
      return m;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  private static Field envPointer() {
    try {
      Field f = Env.class.getDeclaredField("ptr");
      f.setAccessible(true);
      return f.getType() == jnr.ffi.Pointer.class ? f : null;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static Object pointerOf(Env<?> env) {
    try {
      return ENV_PTR == null ? null : ENV_PTR.get(env);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
