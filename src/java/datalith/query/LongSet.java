package datalith.query;

import java.util.Arrays;

/** A set of longs by open addressing, without a box per member: entity filters of scans. */
final class LongSet {
  private static final long EMPTY = Long.MIN_VALUE;
  private long[] slots;
  private int size;
  private boolean hasEmpty; // whether EMPTY itself is a member

  LongSet(int expected) {
    int cap = Integer.highestOneBit(Math.max(4, expected) * 2 - 1) << 1;
    slots = new long[cap];
    Arrays.fill(slots, EMPTY);
  }

  private static int mix(long x) {
    long h = x * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32));
  }

  void add(long x) {
    if (x == EMPTY) {
      hasEmpty = true;
      return;
    }
    if ((size + 1) * 2 > slots.length) {
      grow();
    }
    int mask = slots.length - 1;
    int i = mix(x) & mask;
    while (slots[i] != EMPTY) {
      if (slots[i] == x) {
        return;
      }
      i = (i + 1) & mask;
    }
    slots[i] = x;
    size++;
  }

  boolean contains(long x) {
    if (x == EMPTY) {
      return hasEmpty;
    }
    int mask = slots.length - 1;
    int i = mix(x) & mask;
    while (true) {
      long s = slots[i];
      if (s == x) {
        return true;
      }
      if (s == EMPTY) {
        return false;
      }
      i = (i + 1) & mask;
    }
  }

  private void grow() {
    long[] old = slots;
    slots = new long[old.length * 2];
    Arrays.fill(slots, EMPTY);
    size = 0;
    for (long x : old) {
      if (x != EMPTY) {
        add(x);
      }
    }
  }
}
