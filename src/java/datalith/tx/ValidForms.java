package datalith.tx;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentHashMap;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.ISeq;
import datalith.db.Errors;
import datalith.db.ValidTime;
import java.util.ArrayList;
import java.util.Date;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The valid-time intervals tx-data gives, taken out of it before it is expanded: the tx-data
 * without them, the interval of each form that had one (by identity of the form left in its
 * place), and the transaction's own interval. The forms:
 * <ul>
 *   <li>{@code [:db/add e a v {:db/valid-from f :db/valid-to t}]} and the same with
 *       {@code :db/retract}: one fact;
 *   <li>an entity map with {@code :db/valid-from} and/or {@code :db/valid-to} keys: every
 *       attribute of that map (not of the maps nested in it);
 *   <li>{@code {:db/id "datomic.tx" :db/valid-from f ...}} (or {@code :db/current-tx}): every
 *       {@code :db/add} and {@code :db/retract} of the transaction that gives none of its own.
 * </ul>
 * Bounds are instants; a missing {@code :db/valid-from} is the transaction's txInstant, a missing
 * {@code :db/valid-to}, or one at or after {@link ValidTime#END_OF_TIME} (the end every open
 * interval is handed out with), leaves the interval open; a valid-from after the end is the end.
 * Immutable once made.
 */
final class ValidForms {
  static final Keyword FROM = Keyword.intern("db", "valid-from");
  static final Keyword TO = Keyword.intern("db", "valid-to");
  private static final Keyword DB_ID = Keyword.intern("db", "id");
  private static final Keyword DB_ADD = Keyword.intern("db", "add");
  private static final Keyword DB_RETRACT = Keyword.intern("db", "retract");
  private static final Keyword CURRENT_TX = Keyword.intern("db", "current-tx");

  /**
   * An interval {@code [from, to)} in epoch milliseconds; {@code from} null = the transaction's
   * txInstant, {@code to} null = open-ended; neither after {@link ValidTime#END_OF_TIME}, {@code to}
   * never at it.
   */
  record Interval(Long from, Long to, Object form) {}

  private static final ValidForms NONE = new ValidForms(null, new IdentityHashMap<>(), null);

  /** The tx-data to expand (the original when it gives no interval). */
  final Object txData;
  /** Form left in tx-data -> its interval. */
  final IdentityHashMap<Object, Interval> byForm;
  /** The transaction's interval, or null. */
  final Interval txLevel;

  private ValidForms(Object txData, IdentityHashMap<Object, Interval> byForm, Interval txLevel) {
    this.txData = txData;
    this.byForm = byForm;
    this.txLevel = txLevel;
  }

  /** Whether tx-data gave no interval at all. */
  boolean isEmpty() {
    return byForm.isEmpty() && txLevel == null;
  }

  /** Takes the intervals out of {@code txData}; allocates nothing when it has none. */
  static ValidForms strip(Object txData) {
    if (!hasInterval(txData)) {
      return new ValidForms(txData, NONE.byForm, null);
    }
    List<Object> out = new ArrayList<>();
    IdentityHashMap<Object, Interval> byForm = new IdentityHashMap<>();
    Interval txLevel = null;
    for (ISeq s = RT.seq(txData); s != null; s = s.next()) {
      Object form = s.first();
      if (form instanceof Map<?, ?> jm && !(form instanceof IPersistentMap)) {
        form = PersistentHashMap.create(jm);
      }
      if (form instanceof IPersistentMap m && (m.containsKey(FROM) || m.containsKey(TO))) {
        Interval iv = interval(m.valAt(FROM), m.valAt(TO), m, m.containsKey(FROM));
        IPersistentMap rest = m.without(FROM).without(TO);
        if (isTx(rest.valAt(DB_ID))) {
          if (txLevel != null) {
            throw Errors.error("tx/invalid-interval", "A transaction has one valid-time interval",
                "form", form);
          }
          txLevel = iv;
          if (rest.count() > 1) {
            out.add(rest); // the transaction's other metadata, without an interval
          }
        } else {
          out.add(rest);
          byForm.put(rest, iv);
        }
      } else if (isListWithInterval(form)) {
        List<?> l = (List<?>) form;
        Map<?, ?> opts = (Map<?, ?>) l.get(4);
        for (Object k : opts.keySet()) {
          if (k != FROM && k != TO) {
            throw Errors.error("tx/invalid-interval", "An interval map has :db/valid-from and"
                + " :db/valid-to only", "form", form, "key", k);
          }
        }
        Object plain = PersistentVector.create(l.subList(0, 4));
        byForm.put(plain, interval(opts.get(FROM), opts.get(TO), form, opts.containsKey(FROM)));
        out.add(plain);
      } else {
        out.add(form);
      }
    }
    return new ValidForms(out, byForm, txLevel);
  }

  private static boolean hasInterval(Object txData) {
    for (ISeq s = RT.seq(txData); s != null; s = s.next()) {
      Object form = s.first();
      if (form instanceof Map<?, ?> m && (m.containsKey(FROM) || m.containsKey(TO))
          || isListWithInterval(form)) {
        return true;
      }
    }
    return false;
  }

  private static boolean isListWithInterval(Object form) {
    return form instanceof List<?> l && l.size() == 5 && l.get(4) instanceof Map
        && (l.get(0) == DB_ADD || l.get(0) == DB_RETRACT);
  }

  private static boolean isTx(Object id) {
    return "datomic.tx".equals(id) || id == CURRENT_TX;
  }

  /** The interval of bounds {@code from} and {@code to}, checked; {@code form} names the error. */
  private static Interval interval(Object from, Object to, Object form, boolean fromGiven) {
    Long f = bound(from, fromGiven, form, FROM);
    Long t = bound(to, to != null, form, TO);
    if (f != null && t != null && t <= f) {
      throw Errors.error("tx/invalid-interval", "A valid-time interval ends after it starts",
          "form", form, "valid-from", from, "valid-to", to);
    }
    return new Interval(f, t, form);
  }

  private static Long bound(Object x, boolean given, Object form, Keyword key) {
    if (!given) {
      return null;
    }
    if (!(x instanceof Date d)) {
      throw Errors.error("tx/invalid-valid-time", key + " must be an instant (a java.util.Date)",
          "form", form, "value", x);
    }
    if (d.getTime() < ValidTime.END_OF_TIME) {
      return d.getTime();
    }
    // a to at or after the end of time is open, so that a handed-out interval goes back in; a
    // from there is the end (its interval holds at no instant: valid-at takes none after it)
    return key == TO ? null : ValidTime.END_OF_TIME;
  }
}
