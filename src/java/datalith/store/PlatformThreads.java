package datalith.store;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Runs an LMDB write transaction, from its begin to its commit, on a platform thread when the
 * caller is a virtual thread. LMDB's write lock is a mutex owned by the OS thread that began
 * the transaction; a virtual thread that blocks in between (the write-ahead log's append, a
 * wait for the tree-writing helper) may resume on another carrier, whose commit then cannot
 * release the mutex, and the next write transaction waits for it forever. A platform thread's
 * own call runs where it is.
 */
final class PlatformThreads {
  private static final MethodHandle IS_VIRTUAL = isVirtual(); // null before Java 21
  private static final ExecutorService POOL = daemons("datalith-lmdb-write");

  private PlatformThreads() {}

  /** A pool of platform threads, made as needed, daemons named {@code name}. */
  static ExecutorService daemons(String name) {
    return Executors.newCachedThreadPool(task -> {
      Thread t = new Thread(task, name);
      t.setDaemon(true);
      return t;
    });
  }

  private static MethodHandle isVirtual() {
    try {
      return MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual",
          MethodType.methodType(boolean.class));
    } catch (NoSuchMethodException | IllegalAccessException e) {
      return null;
    }
  }

  /** Whether the calling thread is a virtual thread. */
  static boolean virtual() {
    if (IS_VIRTUAL == null) {
      return false;
    }
    try {
      return (boolean) IS_VIRTUAL.invokeExact(Thread.currentThread());
    } catch (Throwable e) {
      return false;
    }
  }

  /**
   * {@code task}'s result, computed on this thread, or on a platform thread when this one is
   * virtual; its exception thrown here either way. Waits for it to end even when interrupted
   * (a commit in flight is not abandoned), then restores the interrupt.
   */
  static <T> T call(Supplier<T> task) {
    return virtual() ? onPlatformThread(task) : task.get();
  }

  /**
   * {@code task}'s result, computed on a pooled platform thread whichever thread calls, as
   * {@link #call} says: for channel I/O that no interrupt of the caller may close.
   */
  static <T> T apart(Supplier<T> task) {
    return onPlatformThread(task);
  }

  /** {@link #call} of a long result, not boxed unless this thread is virtual. */
  static long callLong(LongSupplier task) {
    return virtual() ? onPlatformThread(task::getAsLong) : task.getAsLong();
  }

  /** {@code task}'s result, computed on a pooled platform thread, as {@link #call} says. */
  private static <T> T onPlatformThread(Supplier<T> task) {
    Future<T> f = POOL.submit(task::get);
    boolean[] interrupted = new boolean[1];
    try {
      return await(f, interrupted);
    } finally {
      if (interrupted[0]) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Waits for {@code f} without being interrupted, as {@link #await} does, then sets the
   * thread's interrupt status again if an interrupt came meanwhile; its task's RuntimeException
   * or Error thrown as it is.
   */
  static void join(Future<?> f) {
    boolean[] interrupted = new boolean[1];
    try {
      await(f, interrupted);
    } finally {
      if (interrupted[0]) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * The result of {@code f}, waited for without being interrupted: its task's RuntimeException
   * or Error thrown as it is. An interrupt that comes meanwhile sets {@code interrupted[0]}; the
   * caller sets the thread's status again when it may.
   */
  static <T> T await(Future<T> f, boolean[] interrupted) {
    while (true) {
      try {
        return f.get();
      } catch (InterruptedException e) {
        interrupted[0] = true;
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException r) {
          throw r;
        }
        if (cause instanceof Error err) {
          throw err;
        }
        throw new IllegalStateException(cause);
      }
    }
  }
}
