package datalith.store;

import java.lang.reflect.Field;
import org.lmdbjava.Cursor;
import org.lmdbjava.Env;
import org.lmdbjava.Txn;

/**
 * The native addresses of LMDB's structs behind lmdbjava's objects (its private {@code ptr}
 * fields), for reading them by {@link LmdbLayout}. Each is 0 when this lmdbjava keeps it
 * elsewhere: callers then leave the reading to LMDB.
 */
final class LmdbPointers {
  private static final Field ENV = pointerField(Env.class, "ptr");
  private static final Field TXN = pointerField(Txn.class, "ptr");
  private static final Field CURSOR = pointerField(Cursor.class, "ptrCursor");

  private LmdbPointers() {}

  private static Field pointerField(Class<?> type, String name) {
    try {
      Field f = type.getDeclaredField(name);
      f.setAccessible(true);
      return f.getType() == jnr.ffi.Pointer.class ? f : null;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static long address(Field f, Object owner) {
    try {
      return f == null ? 0 : ((jnr.ffi.Pointer) f.get(owner)).address();
    } catch (ReflectiveOperationException | RuntimeException e) {
      return 0;
    }
  }

  /** The address of the environment's MDB_env, or 0. */
  static long env(Env<?> env) {
    return address(ENV, env);
  }

  /** The address of the transaction's MDB_txn, or 0. */
  static long txn(Txn<?> txn) {
    return address(TXN, txn);
  }

  /** The address of the cursor's MDB_cursor, or 0. */
  static long cursor(Cursor<?> cursor) {
    return address(CURSOR, cursor);
  }
}
