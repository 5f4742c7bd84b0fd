package datalith.store;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * Feeds a write-behind layer ({@link LmdbBehind}), as of one read of its two stores, to a
 * {@link WriteLog.Replay} in key order: per sub-database, the entries put and the keys deleted,
 * merged. The layer's trees are sorted already, so nothing is sorted, and no key is logged
 * again: each key (and value) is copied once, from its leaf's array into a direct buffer whose
 * bytes LMDB reads where they lie; two buffers take turns, the current entry's and the next's,
 * which a put is told of ({@code nextPut}). A replay that fails (the map full) may run again.
 */
final class LayerReplay {
  private final MemReadTxn puts;
  private final MemReadTxn gone;
  private final ByteBuffer[] keys = {direct(512), direct(512)};
  private final ByteBuffer[] vals = {direct(512), direct(512)};

  LayerReplay(MemReadTxn puts, MemReadTxn gone) {
    this.puts = puts;
    this.gone = gone;
  }

  private static ByteBuffer direct(int size) {
    return ByteBuffer.allocateDirect(size);
  }

  /** The bytes of the layer's keys and values, for the growth of LMDB's map. */
  long bytes() {
    long n = 0;
    for (SubDb db : SubDb.values()) {
      for (MemReadTxn t : new MemReadTxn[] {puts, gone}) {
        for (BTree.Leaf leaf : leaves(t, db)) {
          n += leaf.bytes() + 16L * leaf.size;
          for (int i = 0; i < leaf.size; i++) {
            n += leaf.val(i).remaining();
          }
        }
      }
    }
    return n;
  }

  private static List<BTree.Leaf> leaves(MemReadTxn t, SubDb db) {
    return BTree.leaves(t.root(db));
  }

  /** Replays the layer into {@code to}. */
  void replay(WriteLog.Replay to) {
    for (SubDb db : SubDb.values()) {
      replay(db, leaves(puts, db), leaves(gone, db), to);
    }
  }

  private void replay(SubDb db, List<BTree.Leaf> put, List<BTree.Leaf> del, WriteLog.Replay to) {
    int pl = 0; // the leaf and entry of the next put
    int pi = 0;
    int dl = 0; // and of the next delete
    int di = 0;
    int cur = 0; // the buffers of the entry pending, whose next is being found
    boolean pending = false;
    boolean pendingPut = false;
    while (true) {
      while (pl < put.size() && pi == put.get(pl).size) {
        pl++;
        pi = 0;
      }
      while (dl < del.size() && di == del.get(dl).size) {
        dl++;
        di = 0;
      }
      boolean havePut = pl < put.size();
      boolean haveDel = dl < del.size();
      if (!havePut && !haveDel) {
        break;
      }
      boolean isPut = havePut;
      if (havePut && haveDel) {
        BTree.Leaf p = put.get(pl);
        BTree.Leaf d = del.get(dl);
        isPut = java.util.Arrays.compareUnsigned(p.data(), p.keyStart(pi), p.keyStart(pi + 1),
            d.data(), d.keyStart(di), d.keyStart(di + 1)) < 0;
      }
      int next = pending ? 1 - cur : cur;
      if (isPut) {
        BTree.Leaf p = put.get(pl);
        copyKey(next, p, pi);
        ByteBuffer v = p.val(pi);
        vals[next] = fit(vals[next], v.remaining());
        vals[next].clear();
        vals[next].put(v.duplicate()).flip();
        pi++;
      } else {
        BTree.Leaf d = del.get(dl);
        copyKey(next, d, di);
        di++;
      }
      if (pending) {
        emit(db, to, cur, pendingPut, isPut ? keys[next] : null, vals[next].remaining());
        cur = next;
      }
      pending = true;
      pendingPut = isPut;
    }
    if (pending) {
      emit(db, to, cur, pendingPut, null, 0);
      to.end(db);
    }
  }

  private void emit(SubDb db, WriteLog.Replay to, int b, boolean put, ByteBuffer nextPut,
      int nextValSize) {
    if (put) {
      to.put(db, keys[b], vals[b], nextPut, nextValSize);
    } else {
      to.delete(db, keys[b]);
    }
  }

  private void copyKey(int b, BTree.Leaf leaf, int i) {
    int len = leaf.keyLength(i);
    keys[b] = fit(keys[b], len);
    keys[b].clear();
    keys[b].put(leaf.data(), leaf.keyStart(i), len).flip();
  }

  private static ByteBuffer fit(ByteBuffer b, int size) {
    return b.capacity() >= size ? b : direct(Math.max(size, 2 * b.capacity()));
  }
}
