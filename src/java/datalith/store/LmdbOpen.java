package datalith.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.LmdbException;

/**
 * Opening an {@link LmdbStore} ({@link LmdbStore#open}): its options read
 * ({@link LmdbOptions}), the directory's open lock entered ({@code LmdbWalRecovery.OpenLock}),
 * the log's recovery planned and its checkpoint written back when this open is alone, the files
 * checked before LMDB maps them ({@link LmdbFiles}), the environment and its sub-databases
 * opened, the log's records replayed, write-behind started when the open is alone (another
 * process then waits for it to hand the directory over); a failure at any step leaves the
 * directory as it was.
 */
final class LmdbOpen {
  /** The directories open in this process (real paths): one store each. */
  static final Set<Path> OPEN_DIRS = ConcurrentHashMap.newKeySet();

  private LmdbOpen() {}

  static LmdbStore open(Path dir, Map<String, Object> opts) {
    String where = dir.toAbsolutePath().toString();
    LmdbOptions o = LmdbOptions.of(opts, where);
    Path real;
    try {
      real = Files.createDirectories(dir).toRealPath();
    } catch (IOException e) {
      throw Errors.error(Errors.IO, where, "Cannot create the store directory: " + e, e);
    }
    if (!OPEN_DIRS.add(real)) {
      throw Errors.error(Errors.LMDB, where, "The store is already open in this process", null);
    }
    boolean existed;
    boolean lockCreated;
    LmdbWalRecovery.OpenLock openLock = null;
    LmdbWalRecovery.Plan plan = null;
    boolean openLockCreated = !Files.exists(real.resolve(LmdbWalRecovery.OPEN_LOCK));
    try {
      openLock = LmdbWalRecovery.OpenLock.enter(real, where);
      if (openLock.alone) {
        plan = LmdbWalRecovery.plan(real, where);
        if (plan != null && LmdbWalRecovery.mustRollBack(real, plan, where)) {
          LmdbWalRecovery.rollBack(real, plan.checkpoint, where);
        } else {
          plan = null; // nothing to replay
        }
      }
      // only with the directory ours in this process: the lock file is written while no other
      // process uses it, and closing it must not drop an open environment's locks on it
      existed = LmdbFiles.checkData(real, where);
      lockCreated = LmdbFiles.prepareLock(real, where, o.maxReaders);
    } catch (RuntimeException e) {
      if (openLock != null) {
        openLock.close();
      }
      if (openLockCreated) {
        deleteQuietly(real.resolve(LmdbWalRecovery.OPEN_LOCK)); // the directory as it was
      }
      OPEN_DIRS.remove(real);
      throw e;
    }
    Env<ByteBuffer> env = null;
    String step = "mdb_env_open"; // the call that failed, for the error
    try {
      EnvFlags[] flags = o.sync && !o.walCommits
          ? new EnvFlags[] {EnvFlags.MDB_NOTLS, EnvFlags.MDB_NORDAHEAD}
          : new EnvFlags[] {EnvFlags.MDB_NOTLS, EnvFlags.MDB_NORDAHEAD, EnvFlags.MDB_NOSYNC};
      env = Env.create(ReadOnlyBufferProxy.INSTANCE)
          .setMapSize(o.mapSize)
          .setMaxDbs(SubDb.values().length)
          .setMaxReaders(o.maxReaders)
          .open(dir.toFile(), flags);
      step = "mdb_reader_check";
      env.readerCheck(); // frees reader slots left by dead processes
      List<Dbi<ByteBuffer>> dbis = new ArrayList<>();
      for (SubDb db : SubDb.values()) {
        step = "mdb_dbi_open of " + db.name();
        dbis.add(env.openDbi(db.name(), DbiFlags.MDB_CREATE));
      }
      step = "the store's first reads";
      LmdbStore store = new LmdbStore(real, where, o.sync, env, List.copyOf(dbis),
          o.javaPages, o.walCommits, openLock);
      if (!existed) {
        store.pages.writtenHere(); // every page of a file this open made is a write's of LMDB's
      }
      try {
        store.recover(plan, openLock.alone);
        openLock.stay(where, o.writeBehind && openLock.alone);
        if (o.writeBehind) { // beside another process, into LMDB until it is alone
          store.behind = new LmdbBehind(store, store.wal, openLock, where, o.writeBackCommits,
              o.writeBackMs);
        }
      } catch (RuntimeException e) {
        store.closeAfterFailedOpen();
        env = null;
        throw e;
      }
      return store;
    } catch (RuntimeException e) {
      if (env != null) {
        env.close();
      }
      openLock.close();
      if (openLockCreated) {
        deleteQuietly(real.resolve(LmdbWalRecovery.OPEN_LOCK)); // the directory as it was
      }
      if (!existed && !LmdbFiles.holdsDatabase(real)) {
        deleteQuietly(real.resolve(LmdbFiles.DATA)); // a database never made: as it was
        if (lockCreated) {
          deleteQuietly(real.resolve(LmdbFiles.LOCK));
        }
        deleteQuietly(real.resolve(LmdbWal.FILE0)); // made by this open, for this database
        deleteQuietly(real.resolve(LmdbWal.FILE1));
      }
      OPEN_DIRS.remove(real);
      throw e instanceof LmdbException
          ? Errors.lmdb(where, "Cannot open the LMDB store (" + step + ")", (LmdbException) e) : e;
    }
  }

  private static void deleteQuietly(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      // left as it is: the failure being reported names the cause
    }
  }
}
