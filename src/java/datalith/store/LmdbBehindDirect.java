package datalith.store;

import java.nio.ByteBuffer;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One of LMDB's own write transactions as write-behind ({@link LmdbBehind}) hands it out, during
 * a pause of the sync or while the directory is shared: it holds write-behind's commit lock,
 * which its close releases, after LMDB's transaction's. Used by the thread that began it.
 */
final class LmdbBehindDirect implements WriteTxn {
  private final WriteTxn w;
  private final ReentrantLock commits; // write-behind's, held by the calling thread until close
  private boolean open = true;

  LmdbBehindDirect(WriteTxn w, ReentrantLock commits) {
    this.w = w;
    this.commits = commits;
  }

  @Override
  public void put(SubDb db, ByteBuffer key, ByteBuffer val) {
    w.put(db, key, val);
  }

  @Override
  public void delete(SubDb db, ByteBuffer key) {
    w.delete(db, key);
  }

  @Override
  public void expect(SubDb db, ByteBuffer key, ByteBuffer val) {
    w.expect(db, key, val);
  }

  @Override
  public void commit() {
    w.commit();
  }

  @Override
  public void close() {
    if (open) {
      open = false;
      try {
        w.close();
      } finally {
        commits.unlock();
      }
    }
  }
}
