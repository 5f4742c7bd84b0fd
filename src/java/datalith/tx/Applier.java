package datalith.tx;

import datalith.db.Attr;
import datalith.db.Db;
import datalith.db.IndexScan;
import datalith.db.Schema;
import datalith.db.Snapshot;
import datalith.index.Datom;
import datalith.index.Index;
import datalith.index.KeyBuilder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Applies resolved {@link Op}s to a transaction's {@link Slots}: additions,
 * retractions and cas go to their slot; a {@code retractEntity} becomes the
 * retraction of every datom of the entity, of every ref to it, and so of the
 * entities its component attributes refer to.
 */
final class Applier {
  private Applier() {}

  /**
   * Applies {@code ops}, whose entities and ref values are ids (resolved by
   * {@link TempidResolver}), to {@code slots}, reading {@code db} through
   * {@code snap} for what retractEntity retracts.
   */
  static void applyAll(List<Op> ops, Slots slots, Db db, Snapshot snap) {
    for (Op op : ops) {
      long e = (Long) op.e();
      switch (op.kind()) {
        case ADD -> slots.add(e, op.attr(), op.v(), op.form());
        case RETRACT -> slots.retract(e, op.attr(), op.v(), op.form());
        case RETRACT_ATTR -> slots.retractAll(e, op.attr(), op.form());
        case RETRACT_ENTITY -> retractEntity(e, op.form(), slots, db, snap);
        case CAS -> slots.cas(e, op.attr(), op.old(), op.v(), op.form());
      }
    }
  }

  /**
   * Retracts every datom of {@code e0} and every ref to it, and so for the
   * entities its component attributes refer to, however deep (a work list,
   * not recursion). A transaction's {@code :db/txInstant} stays: it dates the
   * transaction.
   */
  private static void retractEntity(long e0, Object form, Slots slots, Db db, Snapshot snap) {
    Schema schema = db.schema();
    Set<Long> visited = new HashSet<>();
    ArrayDeque<Long> todo = new ArrayDeque<>();
    todo.push(e0);
    while (!todo.isEmpty()) {
      long e = todo.pop();
      if (!visited.add(e)) {
        continue;
      }
      List<Attr> attrs = new ArrayList<>();
      IndexScan scan = db.scan(snap, Index.EAVT, new KeyBuilder().putLong(e).view());
      long lastAid = -1;
      while (scan.next()) {
        Datom d = scan.datom();
        Attr a = schema.attr(d.aid);
        if (a == null || d.aid == Schema.TX_INSTANT) {
          continue;
        }
        if (d.aid != lastAid) {
          attrs.add(a);
          lastAid = d.aid;
        }
        if (a.component && d.v instanceof Long c) {
          todo.push(c);
        }
      }
      scan.close();
      List<long[]> refsIn = new ArrayList<>();
      IndexScan vaet = db.scan(snap, Index.VAET, new KeyBuilder().putLong(e).view());
      while (vaet.next()) {
        Datom d = vaet.datom();
        refsIn.add(new long[] {d.e, d.aid});
      }
      vaet.close();
      for (Attr a : attrs) {
        slots.retractAll(e, a, form);
      }
      for (long[] in : refsIn) {
        Attr a = schema.attr(in[1]);
        if (a != null) {
          slots.retract(in[0], a, e, form);
        }
      }
    }
  }
}
