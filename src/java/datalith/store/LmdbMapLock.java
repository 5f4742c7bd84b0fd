package datalith.store;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The map lock of an {@link LmdbMapGrowth}: shared by every open read transaction, exclusive
 * while the map is resized or the store closes. A read transaction's begin and end touch only a
 * counter of its own thread's stripe (one cache line of {@value #STRIPES}, picked by the
 * thread's id), so that readers on different cores do not pass one lock word back and forth, as
 * they did with a {@code StampedLock}'s read lock (its CAS on every begin and end was a tenth of
 * a two-thread point read).
 *
 * <p>The protocol: a reader adds one to its stripe, then reads the state; the exclusive side
 * sets the state to {@code HELD}, then reads every stripe, and holds the lock only when all are
 * zero, else sets the state back and tries again. Both sides write, then read, volatile
 * variables, so that at least one of them sees the other: a reader that sees {@code HELD} takes
 * its count back and waits; an exclusive side that sees a count goes back to waiting.
 *
 * <p>As with the {@code StampedLock} before it, a try of the shared lock fails only while the
 * exclusive one is held (not while it is waited for: a thread that holds a read transaction
 * must be able to begin another), and the blocking shared lock waits while the exclusive one
 * is held or wanted (so that a stream of new read transactions cannot keep a growth out).
 * Stamps: a shared stamp names its stripe (the read transaction may be closed by another
 * thread, as a growth closes the reads in its way); an exclusive stamp is 1.
 */
final class LmdbMapLock {
  private static final int STRIPES = 64;
  private static final int PAD = 16; // longs: 128 bytes, a stripe's own line(s)
  private static final int FREE = 0;
  private static final int WANTED = 1; // an exclusive taker waits for the readers to end
  private static final int HELD = 2;
  private static final long MAX_BACKOFF_NS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final VarHandle COUNTS = MethodHandles.arrayElementVarHandle(long[].class);

  private final long[] counts = new long[(STRIPES + 1) * PAD];
  private final Semaphore exclusive = new Semaphore(1); // one exclusive taker at a time; not reentrant
  private final Object changed = new Object(); // notified on every change of state
  private volatile int state = FREE;

  private static int stripe() {
    long id = Thread.currentThread().getId();
    return (int) ((id * 0x9E3779B97F4A7C15L) >>> 58); // 6 bits: STRIPES
  }

  private static int slot(int stripe) {
    return (stripe + 1) * PAD; // the first line left empty: nothing else's fields beside it
  }

  /** The shared lock, or 0 while the exclusive one is held. Never waits. */
  long tryShared() {
    int s = stripe();
    int i = slot(s);
    COUNTS.getAndAdd(counts, i, 1L);
    if (state != HELD) {
      return s + 1;
    }
    COUNTS.getAndAdd(counts, i, -1L);
    return 0;
  }

  /** The shared lock, once the exclusive one is neither held nor wanted. */
  long shared() {
    while (true) {
      awaitState(FREE);
      long stamp = tryShared();
      if (stamp != 0) {
        return stamp;
      }
    }
  }

  void unlockShared(long stamp) {
    COUNTS.getAndAdd(counts, slot((int) stamp - 1), -1L);
  }

  /** The exclusive lock if it is free and no read transaction is open, else 0. Never waits. */
  long tryExclusive() {
    if (!exclusive.tryAcquire()) {
      return 0;
    }
    if (takeIfNoReaders()) {
      return 1;
    }
    setState(FREE);
    exclusive.release();
    return 0;
  }

  /** The exclusive lock, waiting up to {@code timeout} for the read transactions to end; or 0. */
  long tryExclusive(long timeout, TimeUnit unit) throws InterruptedException {
    return tryExclusive(timeout, unit, null);
  }

  /**
   * {@link #tryExclusive(long, TimeUnit)}, running {@code meanwhile} (may be null) each time it
   * finds readers still in the way, before it waits again.
   */
  long tryExclusive(long timeout, TimeUnit unit, Runnable meanwhile) throws InterruptedException {
    long deadline = System.nanoTime() + unit.toNanos(timeout);
    if (!exclusive.tryAcquire(timeout, unit)) {
      return 0;
    }
    boolean held = false;
    try {
      held = awaitReaders(deadline, true, meanwhile);
      return held ? 1 : 0;
    } finally {
      if (!held) { // timed out, interrupted or failed: readers go on
        setState(FREE);
        exclusive.release();
      }
    }
  }

  /** The exclusive lock, once every read transaction has ended. Not interruptible. */
  long exclusive() {
    exclusive.acquireUninterruptibly();
    try {
      awaitReaders(0, false, null);
    } catch (InterruptedException e) {
      throw new AssertionError(e); // not interruptible
    }
    return 1;
  }

  void unlockExclusive(long stamp) {
    setState(FREE);
    exclusive.release();
  }

  /** Holding {@code exclusive}: sets HELD and keeps it when no reader is counted. */
  private boolean takeIfNoReaders() {
    setState(HELD);
    for (int s = 0; s < STRIPES; s++) {
      if ((long) COUNTS.getVolatile(counts, slot(s)) != 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * Holding {@code exclusive}: waits (until {@code deadline} when {@code timed}) for the
   * readers to end, new ones held off meanwhile; whether it holds the lock (HELD) now.
   */
  private boolean awaitReaders(long deadline, boolean timed, Runnable meanwhile)
      throws InterruptedException {
    long backoff = 1_000;
    boolean interrupted = false;
    try {
      while (!takeIfNoReaders()) {
        setState(WANTED); // nested readers may go on: one of them may be what this waits for
        if (timed && System.nanoTime() - deadline >= 0) {
          return false;
        }
        if (meanwhile != null) {
          meanwhile.run();
        }
        LockSupport.parkNanos(this, backoff);
        backoff = Math.min(2 * backoff, MAX_BACKOFF_NS);
        if (Thread.interrupted()) {
          if (timed) {
            throw new InterruptedException();
          }
          interrupted = true;
        }
      }
      return true;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void setState(int s) {
    synchronized (changed) {
      state = s;
      changed.notifyAll();
    }
  }

  /** Waits until the state is {@code s}; an interrupt is kept for later. */
  private void awaitState(int s) {
    if (state == s) {
      return;
    }
    boolean interrupted = false;
    synchronized (changed) {
      while (state != s) {
        try {
          changed.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
