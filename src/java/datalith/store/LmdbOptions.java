package datalith.store;

import clojure.lang.Keyword;
import java.util.Collections;
import java.util.Map;

/**
 * The options of {@link LmdbStore#open}, read and checked: each of the wrong type or value is
 * an ex-info {@code :store/option} naming it (its value is not printed: it may nest too deep).
 */
final class LmdbOptions {
  private static final long MAP_SIZE_UNIT = 64 << 10; // map sizes are multiples of this

  final long mapSize;
  final boolean sync;
  final int maxReaders;
  final boolean javaPages; // "page-reader" "java"
  final boolean walCommits; // durable commits through the log: "commit" "wal" and "sync"
  final boolean writeBehind;
  final int writeBackCommits;
  final long writeBackMs;

  private LmdbOptions(Map<String, Object> opts, String where) {
    mapSize = roundUp(option(opts, "map-size", Number.class, LmdbStore.DEFAULT_MAP_SIZE, where)
        .longValue());
    sync = option(opts, "sync", Boolean.class, Boolean.TRUE, where);
    maxReaders = (int) whole(opts, "max-readers", LmdbStore.DEFAULT_MAX_READERS,
        LmdbStore.MAX_MAX_READERS, where);
    String reader = option(opts, "page-reader", String.class,
        System.getProperty(LmdbStore.PAGE_READER_PROPERTY, "java"), where);
    if (!reader.equals("java") && !reader.equals("lmdb")) {
      throw bad(where, "page-reader", reader, "\"java\" or \"lmdb\", got \"" + reader + "\"");
    }
    javaPages = reader.equals("java");
    String commit = option(opts, "commit", String.class,
        System.getProperty(LmdbStore.COMMIT_PROPERTY, LmdbStore.DEFAULT_COMMIT), where);
    if (!commit.equals("wal") && !commit.equals("lmdb-sync")) {
      throw bad(where, "commit", commit, "\"wal\" or \"lmdb-sync\", got \"" + commit + "\"");
    }
    walCommits = sync && commit.equals("wal");
    // the default (the property's, else true) applies where write-behind can: durable commits
    // through the log
    writeBehind = option(opts, "write-behind", Boolean.class,
        walCommits && !"false".equals(System.getProperty(LmdbStore.WRITE_BEHIND_PROPERTY)),
        where);
    if (writeBehind && !walCommits) {
      throw bad(where, "write-behind", true, "used with \"commit\" \"wal\" and \"sync\" true");
    }
    writeBackCommits = (int) whole(opts, "write-back-commits", LmdbBehind.WRITE_BACK_COMMITS,
        1 << 20, where);
    writeBackMs = whole(opts, "write-back-ms", LmdbBehind.WRITE_BACK_MS, 3_600_000, where);
  }

  /** The options {@code opts} (null: none) give a store in {@code where}. */
  static LmdbOptions of(Map<String, Object> opts, String where) {
    return new LmdbOptions(opts == null ? Collections.emptyMap() : opts, where);
  }

  private static <T> T option(Map<String, Object> opts, String key, Class<T> type, T otherwise,
      String where) {
    Object value = opts.get(key);
    if (value == null) {
      return otherwise;
    }
    if (!type.isInstance(value)) {
      throw Errors.error(Errors.OPTION, where,
          "Option \"" + key + "\" must be a " + type.getSimpleName() + ", got a "
              + value.getClass().getName(), null, // not the value: it may nest too deep to print
          Keyword.intern("option"), key, Keyword.intern("value"), value);
    }
    return type.cast(value);
  }

  /** Option {@code key}, a whole number from 1 to {@code max}. */
  private static long whole(Map<String, Object> opts, String key, long otherwise, long max,
      String where) {
    Number n = option(opts, key, Number.class, otherwise, where);
    if (!(n instanceof Integer || n instanceof Long || n instanceof Short || n instanceof Byte)
        || n.longValue() < 1 || n.longValue() > max) {
      throw bad(where, key, n, "a whole number from 1 to " + max + ", got " + n);
    }
    return n.longValue();
  }

  private static RuntimeException bad(String where, String key, Object value, String must) {
    return Errors.error(Errors.OPTION, where, "Option \"" + key + "\" must be " + must, null,
        Keyword.intern("option"), key, Keyword.intern("value"), value);
  }

  private static long roundUp(long size) {
    return Math.max(MAP_SIZE_UNIT, (size + MAP_SIZE_UNIT - 1) / MAP_SIZE_UNIT * MAP_SIZE_UNIT);
  }
}
