package datalith.conn;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * The transactions waiting for a connection's next group commit, in the order they were given,
 * and the leader role: one thread at a time leads, taking the waiting transactions as a group
 * ({@link #take}) and running them; then it passes the role on ({@link #handOff}). Thread-safe.
 *
 * <p>Before taking a group, a leader gives the writers of the recent groups a moment to queue
 * again ({@link #gather}), so that they commit together rather than in groups cut at whoever was
 * first back.
 *
 * <p>Invariant: while the queue holds a transaction, some thread leads or has been told to (so
 * nothing waits for a leader that never comes); when it holds none, nobody leads once the last
 * leader has handed off.
 */
final class TxQueue {
  /** The most transactions one group takes. */
  static final int MAX_GROUP = 64;

  /**
   * The longest a leader waits for the callers of the last group to queue again ({@link
   * #gather}): well under one durable commit (about 1 ms at 1M datoms), which every caller that
   * misses the group waits for in full.
   */
  static final long GATHER_NS = 200_000;

  private final ArrayDeque<TxFuture> waiting = new ArrayDeque<>(); // guarded by this; FIFO
  private boolean leading; // guarded by this: a thread leads, or has been told to
  // guarded by this: about the size of the recent groups (the last one, or half the one before
  // it if that was larger: a group cut short by gather's timeout does not end gathering, and
  // one writer left after a burst stops waiting within a few groups)
  private int lastGroup;
  private Thread gatherer; // guarded by this: the leader waiting in gather, unparked by add

  /** Queues {@code f}; whether its caller is now the leader (nobody was). */
  synchronized boolean add(TxFuture f) {
    waiting.addLast(f);
    if (gatherer != null && waiting.size() >= lastGroup) {
      LockSupport.unpark(gatherer);
    }
    if (leading) {
      return false;
    }
    leading = true;
    return true;
  }

  /**
   * Waits, at most {@link #GATHER_NS}, until as many transactions wait as the recent groups
   * held, when fewer do and those held more than one. The callers of a group are told their
   * results just before the next leader takes its group: without the wait, those that come back
   * a little later than the others miss it and make a small group of their own, with a sync of
   * its own (8 writer threads at 1M: 5.4-6.8 transactions a commit, 7.0-7.7 with it). One
   * writer alone never waits. Leader only, before {@link #take}.
   */
  void gather() {
    long deadline = 0;
    while (true) {
      synchronized (this) {
        if (waiting.size() >= lastGroup || lastGroup <= 1) {
          gatherer = null;
          return;
        }
        long now = System.nanoTime();
        if (deadline == 0) {
          deadline = now + GATHER_NS;
        } else if (now - deadline >= 0) {
          gatherer = null;
          return;
        }
        gatherer = Thread.currentThread();
      }
      LockSupport.parkNanos(this, GATHER_NS);
    }
  }

  /** The next group, oldest first: up to {@link #MAX_GROUP} transactions. Leader only. */
  synchronized List<TxFuture> take() {
    List<TxFuture> group = new ArrayList<>(Math.min(waiting.size(), MAX_GROUP));
    while (group.size() < MAX_GROUP && !waiting.isEmpty()) {
      group.add(waiting.pollFirst());
    }
    lastGroup = Math.max(group.size(), lastGroup / 2);
    return group;
  }

  /** Puts {@code fs} back at the head of the queue, in their order. Leader only. */
  synchronized void putBack(List<TxFuture> fs) {
    for (int i = fs.size() - 1; i >= 0; i--) {
      waiting.addFirst(fs.get(i));
    }
  }

  /**
   * Ends the leader's turn: with an empty queue nobody leads; else the caller of the oldest
   * waiting transaction that has one is told to lead (its group starts at the queue's head, so
   * the order holds). Returns the oldest transaction when none has a caller waiting (all are
   * async): its leader must be found elsewhere; else null. Leader only; the role stays taken
   * until the next leader leads.
   */
  synchronized TxFuture handOff() {
    if (waiting.isEmpty()) {
      leading = false;
      return null;
    }
    for (TxFuture f : waiting) {
      if (f.waited) {
        f.lead();
        return null;
      }
    }
    return waiting.peekFirst();
  }
}
