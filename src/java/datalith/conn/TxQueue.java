package datalith.conn;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The transactions waiting for a connection's next group commit, in the order they were given,
 * and the leader role: one thread at a time leads, taking the waiting transactions as a group
 * ({@link #take}) and running them; then it passes the role on ({@link #handOff}). Thread-safe.
 *
 * <p>Invariant: while the queue holds a transaction, some thread leads or has been told to (so
 * nothing waits for a leader that never comes); when it holds none, nobody leads once the last
 * leader has handed off.
 */
final class TxQueue {
  /** The most transactions one group takes. */
  static final int MAX_GROUP = 64;

  private final ArrayDeque<TxFuture> waiting = new ArrayDeque<>(); // guarded by this; FIFO
  private boolean leading; // guarded by this: a thread leads, or has been told to

  /** Queues {@code f}; whether its caller is now the leader (nobody was). */
  synchronized boolean add(TxFuture f) {
    waiting.addLast(f);
    if (leading) {
      return false;
    }
    leading = true;
    return true;
  }

  /** The next group, oldest first: up to {@link #MAX_GROUP} transactions. Leader only. */
  synchronized List<TxFuture> take() {
    List<TxFuture> group = new ArrayList<>(Math.min(waiting.size(), MAX_GROUP));
    while (group.size() < MAX_GROUP && !waiting.isEmpty()) {
      group.add(waiting.pollFirst());
    }
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
