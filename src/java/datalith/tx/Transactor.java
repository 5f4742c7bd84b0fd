package datalith.tx;

import clojure.lang.ExceptionInfo;
import clojure.lang.IPersistentMap;
import clojure.lang.ISeq;
import clojure.lang.Keyword;
import datalith.db.Db;
import datalith.db.Errors;
import datalith.db.Latest;
import datalith.db.Schema;
import datalith.db.Snapshot;
import datalith.db.TxChange;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.List;

/**
 * Turns tx-data into the datoms one transaction asserts and retracts, with
 * Datomic's semantics: map and list forms, tempids, upserts, lookup refs,
 * cardinality, uniqueness, cas, retractEntity, transaction functions, attribute predicates
 * and entity specs, and schema installed and altered as data. Reads the database through one
 * snapshot and writes nothing itself: a failed transaction leaves no trace.
 *
 * <p>It conducts the steps, each another class's job (see the package
 * description): declare the attributes maps define, expand tx-data into ops,
 * resolve tempids and upserts, apply the ops to the slots, derive composite
 * tuples, date the transaction, collect the datoms, check schema changes, uniqueness and
 * predicates.
 */
public final class Transactor {
  private static final Keyword ERROR = Keyword.intern("error");

  /** What a transaction does, before anything is written. */
  public static final class Result {
    public final List<TxChange> changes;
    /** User tempid -> entity id, plus {@code :db/current-tx}. */
    public final IPersistentMap tempids;
    public final Schema schema;
    public final long nextEid;
    public final long t;
    public final long tx;

    Result(List<TxChange> changes, IPersistentMap tempids, Schema schema, long nextEid, long t,
        long tx) {
      this.changes = changes;
      this.tempids = tempids;
      this.schema = schema;
      this.nextEid = nextEid;
      this.t = t;
      this.tx = tx;
    }
  }

  private Transactor() {}

  /**
   * Computes the transaction of {@code txData} against {@code db} (a current,
   * unfiltered value), reading through {@code snap}.
   *
   * @throws ExceptionInfo for any tx-data it refuses, with a namespaced
   *     {@code :error}; it throws nothing else ({@code :tx/too-deep} when tx-data
   *     or a transaction function recursed past the stack, {@code :tx/internal}
   *     for a fault of datalith's own)
   */
  public static Result run(Db db, Snapshot snap, Object txData) {
    return run(db, snap, txData, Latest.UNKNOWN_INSTANT, null);
  }

  /**
   * As {@link #run(Db, Snapshot, Object)}, given the {@code :db/txInstant} of {@code db}'s basis
   * transaction in epoch milliseconds ({@link Latest#instant}), which it then need not read, or
   * {@link Latest#UNKNOWN_INSTANT}; and resolving lookup refs through {@code lookups} (an
   * import's, kept across its chunks; null: none).
   */
  public static Result run(Db db, Snapshot snap, Object txData, long previousInstant,
      LookupCache lookups) {
    return run(db, snap, txData, previousInstant, lookups, System.currentTimeMillis());
  }

  /**
   * As {@link #run(Db, Snapshot, Object, long, LookupCache)}, dating the transaction at
   * {@code clock} (epoch milliseconds; the previous transaction's instant when that is later)
   * unless tx-data gives its instant: a replicated log's record time, the same on every node.
   */
  public static Result run(Db db, Snapshot snap, Object txData, long previousInstant,
      LookupCache lookups, long clock) {
    if (!(txData instanceof Collection) && !(txData instanceof ISeq) && txData != null) {
      throw Errors.error("tx/invalid-data", "tx-data must be a collection of maps and lists",
          "tx-data", txData);
    }
    try {
      return transact(db, snap, txData, previousInstant, lookups, clock);
    } catch (ExceptionInfo ex) {
      if (isDatalithError(ex)) {
        throw ex;
      }
      throw Errors.errorWithCause(ex, "tx/internal", "datalith failed on this transaction: " + ex,
          "tx-data", txData);
    } catch (StackOverflowError ex) {
      throw Errors.errorWithCause(ex, "tx/too-deep", "The transaction nests too deeply to process:"
          + " the stack overflowed");
    } catch (RuntimeException ex) {
      throw Errors.errorWithCause(ex, "tx/internal", "datalith failed on this transaction: " + ex,
          "tx-data", txData);
    }
  }

  /** Whether {@code ex} is an ex-info of datalith's kind: its data has a namespaced :error. */
  static boolean isDatalithError(ExceptionInfo ex) {
    return ex.getData() != null && ex.getData().valAt(ERROR) instanceof Keyword k
        && k.getNamespace() != null;
  }

  private static Result transact(Db db, Snapshot snap, Object txData, long previousInstant,
      LookupCache lookups, long clock) {
    Schema schema = db.schema();
    long t = db.basisT() + 1;
    long tx = Db.tToTx(t);
    // the transaction's own registries, shared by the steps that name entities and attributes
    EntityIds ids = new EntityIds(db.nextEid(), tx);
    PendingAttrs pending = new PendingAttrs(schema);
    Tempids temps = new Tempids();
    EntityRefs refs = new EntityRefs(db, snap, pending, temps, ids, tx, lookups);

    ValidForms valid = ValidForms.strip(txData);
    IdentityHashMap<Object, Object> mapEntities = pending.declareAll(valid.txData, temps);
    List<Op> ops = Expander.expand(valid.txData, db, tx, pending, temps, refs, mapEntities);
    List<Op> resolved = TempidResolver.resolve(ops, db, snap, temps, ids, pending);
    // :db/ensure is checked once the transaction is applied, and stored nowhere
    List<long[]> ensures = new ArrayList<>(0);
    resolved = Predicates.takeEnsures(resolved, ensures);
    Slots slots = new Slots(db, snap, tx, pending::get, resolved.size() + 1);
    Applier.applyAll(ValidEvents.plainOps(valid, resolved, tx), slots, db, snap);
    Composites.derive(pending, slots);
    TxInstant.stamp(db, snap, tx, slots, previousInstant, clock);
    List<TxChange> plain = slots.changes();
    // the install of :db.valid/event is datalith's own, not checked as a schema change
    List<TxChange> changes = ValidEvents.add(valid, resolved, plain, schema, tx);

    Schema next = schema.with(TxChange.datoms(changes));
    if (next != schema) {
      SchemaCheck.check(db, snap, schema, next, plain);
    }
    UniqueCheck.check(db, snap, changes, next);
    Predicates.checkAttrs(schema, resolved);
    if (!ensures.isEmpty()) {
      Predicates.checkEntities(db.withChanges(changes, next, t, ids.next()), ensures);
    }
    return new Result(changes, temps.toMap(tx), next, ids.next(), t, tx);
  }
}
