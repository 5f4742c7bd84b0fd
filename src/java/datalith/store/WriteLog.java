package datalith.store;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * The puts and deletes of one LMDB write transaction, copied out of the caller's buffers so that
 * they can be replayed whole (after the map grows, for one). Entries are laid out in heap chunks
 * as [op:1][db:1][keySize:2][valSize:4][key][val]; beside them, each entry's place, its
 * sub-database and its key's first {@code PREFIX} bytes as numbers, so that sorting them
 * compares numbers and reads a key only when those tie. Used by the writer thread, and while it
 * replays a large log, by the helpers that write its record to the write-ahead log and sort its
 * later sub-databases (reading it: nothing changes it then).
 */
final class WriteLog extends EntrySort {

  /**
   * Receives the logged operations sorted by sub-database, and by key within each (LMDB's order:
   * unsigned bytes, a prefix first); one key's operations keep the order they were logged in.
   * Buffers are valid during the call only.
   */
  interface Replay {
    /**
     * {@code nextPut}: the key of the next operation when it is a put into the same
     * sub-database (its value is {@code nextValSize} bytes), else null.
     */
    void put(SubDb db, ByteBuffer key, ByteBuffer val, ByteBuffer nextPut, int nextValSize);

    void delete(SubDb db, ByteBuffer key);

    /** Called after the last operation on {@code db}. */
    void end(SubDb db);
  }

  private static final byte PUT = 1;
  private static final byte DELETE = 2;
  private static final int HEADER = 8;
  private static final int CHUNK = 64 * 1024;
  private static final int KEPT_CHUNKS = 16; // retained across transactions
  private static final SubDb[] DBS = SubDb.values();
  private static final int INITIAL_ENTRIES = 1024;
  // the bytes of a key kept with its entry as numbers, for sorting: enough to tell apart the
  // index keys of most datoms (an AVET key of a ref is 33 bytes, its datom's e ends at 25)
  private static final int PREFIX = 32;
  private static final int LONGS = PREFIX / 8;
  private static final int KEPT_ENTRIES = 64 * 1024; // entry arrays retained up to this size
  private static final int ORDERED = 256 << 10; // bytes of entries a replay batch copies in order
  /**
   * A replay of this many entries or more sorts the sub-databases after its first on a helper
   * thread while it puts the first's.
   */
  static final int SORT_AHEAD_ENTRIES = 4096;
  private static final ExecutorService SORTERS = PlatformThreads.daemons("datalith-lmdb-sort");

  private final ArrayList<ByteBuffer> chunks = new ArrayList<>(); // heap, each filled to position
  private int current; // index of the chunk being filled
  private long bytes; // total logged, for sizing map growth
  // per entry, in the order logged: where it is (chunk index << 32 | offset), its
  // sub-database's ordinal, and its key's first PREFIX bytes as LONGS numbers (for sorting)
  private int count;
  private long[] entries = new long[INITIAL_ENTRIES];
  private byte[] dbs = new byte[INITIAL_ENTRIES];
  private long[] prefixes = new long[LONGS * INITIAL_ENTRIES];
  // the entries of a replay in its order, a batch at a time (grown for one larger entry), and
  // views of it: the key and value of the entry replayed, and the key of the next one
  private ByteBuffer ordered; // made by the first replay
  private final ByteBuffer key = ReadOnlyBufferProxy.newView();
  private final ByteBuffer val = ReadOnlyBufferProxy.newView();
  private final ByteBuffer nextKey = ReadOnlyBufferProxy.newView();

  /** Bytes logged since the last {@link #clear()}. */
  long bytes() {
    return bytes;
  }

  void put(SubDb db, ByteBuffer k, ByteBuffer v) {
    append(PUT, db, k, v);
  }

  void delete(SubDb db, ByteBuffer k) {
    append(DELETE, db, k, null);
  }

  /** Forgets every entry, keeping a few chunks for the next transaction. */
  void clear() {
    for (int i = chunks.size() - 1; i >= 0; i--) {
      if (i >= KEPT_CHUNKS || chunks.get(i).capacity() != CHUNK) {
        chunks.remove(i);
      } else {
        chunks.get(i).clear();
      }
    }
    current = 0;
    bytes = 0;
    count = 0;
    if (entries.length > KEPT_ENTRIES) {
      entries = new long[INITIAL_ENTRIES];
      dbs = new byte[INITIAL_ENTRIES];
      prefixes = new long[LONGS * INITIAL_ENTRIES];
    }
    if (ordered != null && ordered.capacity() > ORDERED) {
      ordered = null;
    }
  }

  /**
   * Calls {@code to} once per entry, in the order {@link Replay} describes. The entries are first
   * copied in that order into a direct buffer, a batch at a time, and passed to {@code to} where
   * they lie there: read one after another, rather than each from its place in the order logged
   * (a cache miss each, behind LMDB's put of the one before, which evicts them).
   */
  void replay(Replay to) {
    int[] order = new int[count];
    int[] other = new int[count];
    int[] starts = bucket(dbs, count, order);
    int first = 0; // the first sub-database written, sorted here; the others maybe ahead
    while (first < DBS.length - 1 && starts[first + 1] == 0) {
      first++;
    }
    int rest = starts[first + 1]; // the entries of the sub-databases after it
    int next = first + 1;
    Runnable sortRest = () -> {
      for (int d = next; d < DBS.length; d++) {
        sortBucket(order, other, starts[d], starts[d + 1]);
      }
    };
    Future<?> sorting = null;
    if (count >= SORT_AHEAD_ENTRIES && rest < count) {
      sorting = SORTERS.submit(sortRest);
    } else {
      sortRest.run();
    }
    sortBucket(order, other, starts[first], rest);
    try {
      replay(to, order, sorting, rest);
    } finally {
      if (sorting != null && !sorting.isDone()) {
        // the replay failed: the helper reads this log, which the next transaction refills
        try {
          PlatformThreads.join(sorting);
        } catch (RuntimeException | Error e) {
          // the replay's own failure is the one thrown
        }
      }
    }
  }

  /**
   * Replays the entries in {@code order}, of which those from {@code rest} on are sorted by
   * {@code sorting} (null: all are sorted), waited for before they are read. An entry's next,
   * looked at for a put's {@code nextPut}, may be read while unsorted: it is of a later
   * sub-database then (each sub-database's entries stay in their range of {@code order}), which
   * is all that is asked of it.
   */
  private void replay(Replay to, int[] order, Future<?> sorting, int rest) {
    ByteBuffer[] views = new ByteBuffer[chunks.size()]; // of each chunk, for a nextPut past a batch
    try {
      for (int from = 0; from < order.length; ) {
        if (sorting != null && from >= rest) {
          PlatformThreads.join(sorting);
          sorting = null;
        }
        int end = gather(order, from, sorting != null ? rest : order.length);
        long base = ReadOnlyBufferProxy.base(ordered);
        int at = 0; // in ordered, of entry i
        for (int i = from; i < end; i++) {
          int x = order[i];
          SubDb db = DBS[dbs[x]];
          int keySize = Short.toUnsignedInt(ordered.getShort(at + 2));
          int valSize = ordered.getInt(at + 4);
          int next = at + HEADER + keySize + valSize;
          ReadOnlyBufferProxy.point(key, base + at + HEADER, keySize);
          if (ordered.get(at) == PUT) {
            ReadOnlyBufferProxy.point(val, base + at + HEADER + keySize, valSize);
            ByteBuffer nextPut = null;
            int nextValSize = 0;
            if (i + 1 < order.length && dbs[order[i + 1]] == dbs[x]) {
              if (i + 1 < end) {
                if (ordered.get(next) == PUT) {
                  ReadOnlyBufferProxy.point(nextKey, base + next + HEADER,
                      Short.toUnsignedInt(ordered.getShort(next + 2)));
                  nextPut = nextKey;
                  nextValSize = ordered.getInt(next + 4);
                }
              } else { // the next batch's first entry, read where it was logged
                long y = entries[order[i + 1]];
                int c = (int) (y >>> 32);
                ByteBuffer chunk = chunks.get(c);
                int nat = (int) y;
                if (chunk.get(nat) == PUT) {
                  if (views[c] == null) {
                    views[c] = chunk.duplicate();
                  }
                  nextPut = views[c].clear().limit(nat + HEADER + keySize(chunk.array(), nat))
                      .position(nat + HEADER);
                  nextValSize = chunk.getInt(nat + 4);
                }
              }
            }
            to.put(db, key, val, nextPut, nextValSize);
          } else {
            to.delete(db, key);
          }
          if (i + 1 == order.length || dbs[order[i + 1]] != dbs[x]) {
            to.end(db);
          }
          at = next;
        }
        from = end;
      }
    } finally {
      ReadOnlyBufferProxy.detach(key);
      ReadOnlyBufferProxy.detach(val);
      ReadOnlyBufferProxy.detach(nextKey);
    }
  }

  /**
   * Copies the entries {@code order[from..to)} into {@link #ordered}, one after another from its
   * start, as many as it holds (at least one: it grows for an entry larger than it); returns the
   * index past the last one copied.
   */
  private int gather(int[] order, int from, int to) {
    if (ordered == null) {
      ordered = ByteBuffer.allocateDirect(ORDERED);
    }
    ordered.clear();
    int i = from;
    for (; i < to; i++) {
      long e = entries[order[i]];
      byte[] array = chunks.get((int) (e >>> 32)).array();
      int at = (int) e;
      int size = HEADER + keySize(array, at) + intAt(array, at + 4);
      if (ordered.remaining() < size) {
        if (i > from) {
          break;
        }
        ordered = ByteBuffer.allocateDirect(size);
      }
      ordered.put(array, at, size);
    }
    return i;
  }

  private static int intAt(byte[] array, int at) {
    return (array[at] & 0xFF) << 24 | (array[at + 1] & 0xFF) << 16 | (array[at + 2] & 0xFF) << 8
        | (array[at + 3] & 0xFF);
  }

  /** Copies every entry, in the order logged, into {@code to} ({@link #bytes()} bytes). */
  void copyTo(ByteBuffer to) {
    for (int i = 0; i <= current && i < chunks.size(); i++) {
      ByteBuffer chunk = chunks.get(i);
      to.put(chunk.array(), 0, chunk.position());
    }
  }

  /**
   * Logs the entries that {@link #copyTo} wrote into {@code from} (position to limit), as
   * {@code from} was read: false when they do not parse.
   */
  boolean copyFrom(ByteBuffer from) {
    ByteBuffer b = from.duplicate();
    while (b.remaining() >= HEADER) {
      int at = b.position();
      byte op = b.get(at);
      int db = b.get(at + 1);
      int keySize = Short.toUnsignedInt(b.getShort(at + 2));
      int valSize = b.getInt(at + 4);
      if ((op != PUT && op != DELETE) || db < 0 || db >= DBS.length || valSize < 0
          || (op == DELETE && valSize != 0) || b.remaining() - HEADER < keySize
          || b.remaining() - HEADER - keySize < valSize) {
        return false;
      }
      ByteBuffer k = b.duplicate().position(at + HEADER).limit(at + HEADER + keySize);
      ByteBuffer v = b.duplicate().position(at + HEADER + keySize)
          .limit(at + HEADER + keySize + valSize);
      append(op, DBS[db], k, op == PUT ? v : null);
      b.position(at + HEADER + keySize + valSize);
    }
    return !b.hasRemaining();
  }

  private static int keySize(byte[] array, int at) {
    return (array[at + 2] & 0xFF) << 8 | (array[at + 3] & 0xFF);
  }

  /**
   * The order of entries {@code x} and {@code y} of one sub-database: by key as LMDB's (the
   * first {@code PREFIX} bytes as numbers, then the rest), then by number.
   */
  @Override
  int compare(int x, int y) {
    int c = comparePrefixes(prefixes, LONGS, x, y);
    if (c != 0) {
      return c;
    }
    c = compareKeys(x, y);
    return c != 0 ? c : Integer.compare(x, y);
  }

  /** The order of the keys of entries {@code x} and {@code y}, equal in their prefixes. */
  private int compareKeys(int x, int y) {
    byte[] a = chunks.get((int) (entries[x] >>> 32)).array();
    byte[] b = chunks.get((int) (entries[y] >>> 32)).array();
    int ax = (int) entries[x];
    int by = (int) entries[y];
    int aSize = keySize(a, ax);
    int bSize = keySize(b, by);
    // the first PREFIX bytes are equal, but a shorter key's were padded with zeros
    int skip = Math.min(PREFIX, Math.min(aSize, bSize));
    return Arrays.compareUnsigned(a, ax + HEADER + skip, ax + HEADER + aSize,
        b, by + HEADER + skip, by + HEADER + bSize);
  }

  private void append(byte op, SubDb db, ByteBuffer k, ByteBuffer v) {
    int keySize = k.remaining();
    int valSize = v == null ? 0 : v.remaining();
    int size = HEADER + keySize + valSize;
    ByteBuffer chunk = chunkFor(size);
    int at = chunk.position();
    chunk.put(at, op);
    chunk.put(at + 1, (byte) db.ordinal());
    chunk.putShort(at + 2, (short) keySize);
    chunk.putInt(at + 4, valSize);
    chunk.put(at + HEADER, k, k.position(), keySize);
    if (v != null) {
      chunk.put(at + HEADER + keySize, v, v.position(), valSize);
    }
    chunk.position(at + size);
    bytes += size;
    if (count == entries.length) {
      entries = Arrays.copyOf(entries, 2 * count);
      dbs = Arrays.copyOf(dbs, 2 * count);
      prefixes = Arrays.copyOf(prefixes, 2 * LONGS * count);
    }
    entries[count] = (long) current << 32 | at;
    dbs[count] = (byte) db.ordinal();
    for (int i = 0; i < LONGS; i++) {
      prefixes[LONGS * count + i] = prefix(chunk, at + HEADER, keySize, 8 * i);
    }
    count++;
  }

  /** Bytes {@code from..from+8} of the key at {@code at}, big-endian, zeros past its end. */
  private static long prefix(ByteBuffer chunk, int at, int keySize, int from) {
    if (keySize >= from + 8) {
      return chunk.getLong(at + from);
    }
    byte[] array = chunk.array();
    long p = 0;
    for (int i = from; i < from + 8; i++) {
      p = p << 8 | (i < keySize ? array[at + i] & 0xFF : 0);
    }
    return p;
  }

  private ByteBuffer chunkFor(int size) {
    if (chunks.isEmpty()) {
      chunks.add(ByteBuffer.allocate(Math.max(CHUNK, size)));
      current = 0;
    }
    ByteBuffer chunk = chunks.get(current);
    if (chunk.remaining() >= size) {
      return chunk;
    }
    current++;
    if (current < chunks.size() && chunks.get(current).capacity() >= size) {
      return chunks.get(current);
    }
    ByteBuffer fresh = ByteBuffer.allocate(Math.max(CHUNK, size));
    chunks.add(current, fresh);
    return fresh;
  }
}
