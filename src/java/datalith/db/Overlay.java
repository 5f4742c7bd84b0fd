package datalith.db;

import datalith.codec.Codec;
import datalith.store.SubDb;
import java.nio.ByteBuffer;
import java.util.EnumMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The writes of speculative transactions ({@code with}) kept in memory over a
 * store snapshot: per sub-database, puts and tombstones. Immutable once built.
 */
final class Overlay {
  /** Marks a deleted key. */
  static final ByteBuffer TOMBSTONE = ByteBuffer.allocate(0);

  static int compare(ByteBuffer a, ByteBuffer b) {
    return Codec.compareBytes(a, 0, a.limit(), b, 0, b.limit());
  }

  final Map<SubDb, TreeMap<ByteBuffer, ByteBuffer>> maps = new EnumMap<>(SubDb.class);

  /** A copy of {@code base} (may be null) with room for more writes. */
  static Overlay copyOf(Overlay base) {
    Overlay o = new Overlay();
    if (base != null) {
      for (Map.Entry<SubDb, TreeMap<ByteBuffer, ByteBuffer>> e : base.maps.entrySet()) {
        o.maps.put(e.getKey(), new TreeMap<>(e.getValue()));
      }
    }
    return o;
  }

  TreeMap<ByteBuffer, ByteBuffer> map(SubDb db) {
    return maps.get(db);
  }

  void put(SubDb db, ByteBuffer key, ByteBuffer val) {
    maps.computeIfAbsent(db, k -> new TreeMap<>(Overlay::compare)).put(copy(key), copy(val));
  }

  void delete(SubDb db, ByteBuffer key) {
    maps.computeIfAbsent(db, k -> new TreeMap<>(Overlay::compare)).put(copy(key), TOMBSTONE);
  }

  private static ByteBuffer copy(ByteBuffer b) {
    ByteBuffer c = ByteBuffer.allocate(b.remaining());
    c.put(b.duplicate()).flip();
    return c.asReadOnlyBuffer();
  }
}
