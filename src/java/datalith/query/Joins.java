package datalith.query;

import clojure.lang.Keyword;
import datalith.db.LongMap;
import datalith.db.Snapshot;
import datalith.query.parser.Pattern;
import datalith.query.parser.Variable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The joins of a pattern with the scope's rows that bind some of its variables, as the sizes
 * choose: index-lookup joins (one prefix scan per distinct binding, when the bound side is small),
 * hash joins (one scan, kept to the bound entities when the entity is bound), and semi-joins when
 * the pattern binds nothing still needed. {@link Evaluator} decides which a pattern needs; these
 * run it. Static methods: running a join makes no object of this class.
 */
final class Joins {
  // What one seek of an index-lookup join costs, in datoms a scan reads instead: decoded ones, and
  // ones of other entities that a scan keeping to the bound entities passes over undecoded
  // (sorted title lookups against one filtered title scan at 1M datoms: even at ~7,000 of 162,000)
  private static final long LOOKUP_COST = 3;
  private static final long LOOKUP_COST_UNDECODED = 20;
  // How many of an attribute's datoms per bound entity make an entity-ordered lookup join read
  // EAVT rather than AEVT (about half the keys of a leaf page; see DbPattern.Reuse#entityFirst)
  static final long SPARSE = 40;

  private Joins() {
  }

  /**
   * The rows of the scope that have a match of a pattern which binds nothing needed after it: one
   * probe (stopping at the first match) per distinct binding when they are few, else one scan,
   * kept to the bound entities when the entity is bound, whose matches' bindings are collected,
   * as the join would choose. When the rows are a set of entities, the scan's entities are them.
   */
  static String semiJoin(Ctx ctx, Pattern p, DbPattern dp, List<Variable> boundVars, Snapshot s,
      ValueRange range, Deadline deadline) {
    Rel r = ctx.take(boundVars, deadline);
    int[] keyCols = r.cols(boundVars);
    int[] givenPos = new int[boundVars.size()];
    for (int i = 0; i < givenPos.length; i++) {
      givenPos[i] = Rel.col(dp.vars, boundVars.get(i));
    }
    Variable ev = p.e() instanceof Variable v && boundVars.contains(v) ? v : null;
    long scanCost = dp.estimate(s, range);
    long lookupCost = ev == null ? LOOKUP_COST : LOOKUP_COST_UNDECODED;
    IdSet entities = ev != null && r.rows.size() * lookupCost >= scanCost
        ? IdSet.ofColumn(r.rows, r.col(ev)) : null;
    Map<Object, Object> groups = null;
    long distinctKeys;
    if (r.distinct && keyCols.length == r.vars.length) {
      distinctKeys = r.rows.size();
    } else if (keyCols.length == 1 && entities != null) {
      distinctKeys = entities.size();
    } else {
      groups = groupRows(r, keyCols);
      distinctKeys = groups.size();
    }
    if (distinctKeys * lookupCost >= scanCost && (ev == null || entities != null)
        && !namesEntities(r, dp, boundVars, ev)) {
      if (entities != null && r.vars.length == 1) {
        // the rows are the entities: the matches' entities, each once, are the answer
        int eAt = Rel.col(dp.vars, ev);
        IdCollector ids = new IdCollector(Math.min(entities.size(), dp.sizeHint()), deadline);
        dp.scan(s, null, dp.bindsOnlyEntity() ? ids : vals -> ids.acceptId((Long) vals[eAt]),
            Long.MAX_VALUE, range, entities);
        // one id a match: the entities are distinct only when each has one match, which is so
        // when the pattern binds nothing but the entity (one datom each)
        Rel matched = new Rel(r.vars, new Rel.IdRows(ids.ids, ids.n),
            dp.bindsOnlyEntity() && dp.distinctRows());
        ctx.add(matched.project(List.of(r.vars)));
        return "semi-join-scan-" + dp.lastIndexName();
      }
      Set<Object> matched = new HashSet<>();
      dp.scan(s, null, vals -> {
        matched.add(Tuple.key(vals, givenPos));
        deadline.tick(0);
      }, Long.MAX_VALUE, range, entities);
      ctx.add(r.semiJoin(boundVars, matched, true));
      return "semi-join-scan-" + dp.lastIndexName();
    }
    if (groups == null) {
      groups = groupRows(r, keyCols);
    }
    List<Object[]> out = new ArrayList<>();
    Object[] given = new Object[dp.vars.length];
    try (DbPattern.Reuse reuse = new DbPattern.Reuse()) {
      for (Object g : groups.values()) {
        deadline.tick(out.size());
        Object[] first = g instanceof Object[] one ? one : ((Rel.RowList) g).get(0);
        Arrays.fill(given, null);
        for (int i = 0; i < givenPos.length; i++) {
          given[givenPos[i]] = first[keyCols[i]];
        }
        if (dp.scan(s, given, vals -> { }, 1, range, null, reuse) > 0) {
          addRows(out, g);
        }
      }
    }
    ctx.add(r.filtered(out));
    return "semi-join-lookup-" + dp.lastIndexName();
  }

  private static void addRows(List<Object[]> out, Object rows) {
    if (rows instanceof Object[] row) {
      out.add(row);
    } else {
      out.addAll((Rel.RowList) rows);
    }
  }

  /** The join of a pattern with the scope's rows binding {@code boundVars}, as the sizes choose. */
  static String join(Ctx ctx, Pattern p, DbPattern dp, List<Variable> boundVars, Snapshot s,
      ValueRange range, Deadline deadline) {
    boolean distinct = dp.distinctRows();
    Rel r = ctx.take(boundVars, deadline);
    int[] keyCols = r.cols(boundVars);
    // when the entity is bound, datoms of other entities are skipped before decoding
    Variable ev = p.e() instanceof Variable v && boundVars.contains(v) ? v : null;
    long scanCost = dp.estimate(s, range);
    long lookupCost = ev == null ? LOOKUP_COST : LOOKUP_COST_UNDECODED;
    // the entities a hash join keeps its scan to, which also counts them: made when the rows
    // are enough for a hash join (before counting their distinct keys); null when an ident or
    // lookup ref is bound, which only the lookup join resolves
    IdSet entities = ev != null && r.rows.size() * lookupCost >= scanCost
        ? IdSet.ofColumn(r.rows, r.col(ev)) : null;
    // distinct rows bound on every column have as many distinct keys as rows
    boolean keyPerRow = r.distinct && keyCols.length == r.vars.length;
    // rows by key: one long column is grouped without boxing keys again or hashing objects
    LongMap<Object> longGroups = null;
    Map<Object, Object> groups = null;
    long distinctKeys;
    if (keyPerRow) {
      distinctKeys = r.rows.size();
    } else if (keyCols.length == 1 && entities != null) {
      distinctKeys = entities.size();
    } else {
      longGroups = keyCols.length == 1 ? Rel.longTable(r.rows, keyCols[0]) : null;
      groups = longGroups == null ? groupRows(r, keyCols) : null;
      distinctKeys = longGroups != null ? longGroups.size() : groups.size();
    }
    if (distinctKeys * lookupCost >= scanCost && (ev == null || entities != null)
        && !namesEntities(r, dp, boundVars, ev)) {
      Object[] byRank = entities != null && r.vars.length > 1 && keyCols.length == 1
          ? entities.rowsByRank(r.rows, keyCols[0]) : null;
      if (byRank != null) {
        // the join is done as the scan goes: its entities ascend, and so do their ranks in the
        // set, so each datom finds its rows in an array read in order (no hash table to build)
        ctx.add(joinByRank(r, dp, ev, entities, byRank, s, range, deadline));
        return "hash-join-" + dp.lastIndexName();
      }
      List<Object[]> rows = entities == null ? new ArrayList<>()
          : new ArrayList<>(Math.min(entities.size(), dp.sizeHint()));
      dp.scan(s, null, vals -> {
        rows.add(vals.clone());
        deadline.tick(rows.size());
      }, Long.MAX_VALUE, range, entities);
      Rel scanned = new Rel(dp.vars, rows, distinct);
      // when r is a set of entities, which the scan kept to, the join is the scan
      ctx.add(entities != null && r.vars.length == 1 ? scanned : Rel.join(r, scanned, deadline));
      return "hash-join-" + dp.lastIndexName();
    }
    // index-lookup join: one prefix scan per distinct binding of the bound variables, in
    // ascending order when the bindings are ids, so that the scans move forward through the index
    List<Object> ordered; // the rows of each binding: one row (Object[]) or a Rel.RowList
    if (longGroups == null && groups == null && keyCols.length == 1) {
      longGroups = Rel.longTable(r.rows, keyCols[0]);
    }
    if (longGroups != null) {
      long[] keys = longGroups.keys();
      IdSet.sortDistinct(keys);
      ordered = new ArrayList<>(keys.length);
      for (long k : keys) {
        ordered.add(longGroups.get(k));
      }
    } else {
      if (groups == null) {
        groups = groupRows(r, keyCols);
      }
      ordered = new ArrayList<>(groups.values());
    }
    int[] givenPos = new int[boundVars.size()];
    for (int i = 0; i < givenPos.length; i++) {
      givenPos[i] = Rel.col(dp.vars, boundVars.get(i));
    }
    Extension ext = Extension.of(r, dp);
    int[] freshCols = ext.cols();
    Variable[] outVars = ext.vars();
    List<Object[]> out = new ArrayList<>();
    Object[] given = new Object[dp.vars.length];
    // bound entities fewer than one in SPARSE of the attribute's datoms rarely share a page of
    // its AEVT keys: EAVT then holds everything the query reads of each entity on one page
    boolean entityFirst = ev != null && longGroups != null && ordered.size() * SPARSE < scanCost;
    try (DbPattern.Reuse reuse = new DbPattern.Reuse(entityFirst)) {
      for (Object g : ordered) {
        deadline.tick(out.size());
        Object[] first = g instanceof Object[] one ? one : ((Rel.RowList) g).get(0);
        Arrays.fill(given, null);
        for (int i = 0; i < givenPos.length; i++) {
          given[givenPos[i]] = first[keyCols[i]];
        }
        dp.scan(s, given, vals -> {
          if (g instanceof Object[] row) {
            out.add(Rel.concat(row, vals, freshCols));
          } else {
            for (Object[] row : (Rel.RowList) g) {
              out.add(Rel.concat(row, vals, freshCols));
            }
          }
          deadline.tick(out.size());
        }, Long.MAX_VALUE, range, null, reuse);
      }
    }
    ctx.add(new Rel(outVars, out, r.distinct && distinct));
    return "lookup-join-" + dp.lastIndexName();
  }

  /** The ids of a scan's matches, in a growing array. */
  static final class IdCollector implements DbPattern.IdSink {
    long[] ids;
    int n;

    private final Deadline deadline;

    IdCollector(int capacity, Deadline deadline) {
      ids = new long[Math.max(16, capacity)];
      this.deadline = deadline;
    }

    @Override
    public void acceptId(long e) {
      deadline.tick(n);
      if (n == ids.length) {
        ids = Arrays.copyOf(ids, n * 2);
      }
      ids[n++] = e;
    }
  }

  /** The rows of {@code r} by their key at {@code keyCols}: one row (Object[]) or a Rel.RowList. */
  private static Map<Object, Object> groupRows(Rel r, int[] keyCols) {
    Map<Object, Object> groups = new LinkedHashMap<>();
    for (Object[] row : r.rows) {
      groups.merge(Tuple.key(row, keyCols), row, Rel::addRow);
    }
    return groups;
  }

  /**
   * Whether a bound value is an ident or lookup ref where {@code dp} reads an id (entity,
   * attribute or ref value position): only the index-lookup join resolves those, not the hash join.
   * Variable {@code checked} (may be null) is not looked at again.
   */
  private static boolean namesEntities(Rel r, DbPattern dp, List<Variable> boundVars,
      Variable checked) {
    for (Variable v : boundVars) {
      if (v == checked) {
        continue;
      }
      int pos = dp.positionOf(v);
      if (pos > 2 || pos == 2 && (dp.constAttr() == null || !dp.constAttr().isRef())) {
        continue;
      }
      int col = r.col(v);
      for (Object[] row : r.rows) {
        if (row[col] instanceof Keyword || row[col] instanceof List) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * The join of {@code r} with the pattern's datoms, whose entity {@code ev} is the one variable
   * they share: a scan kept to {@code entities}, r's rows found by the rank of each datom's
   * entity in that set ({@link IdSet#rowsByRank}). Rows as {@link Rel#join} makes them.
   */
  private static Rel joinByRank(Rel r, DbPattern dp, Variable ev, IdSet entities,
      Object[] byRank, Snapshot s, ValueRange range, Deadline deadline) {
    Extension ext = Extension.of(r, dp);
    int[] freshCols = ext.cols();
    int eAt = Rel.col(dp.vars, ev);
    List<Object[]> out = new ArrayList<>(Math.min(r.rows.size(), dp.sizeHint()));
    dp.scan(s, null, vals -> {
      Object rows = byRank[entities.rank((Long) vals[eAt])];
      if (rows instanceof Object[] row) {
        out.add(Rel.concat(row, vals, freshCols));
      } else if (rows != null) {
        for (Object[] row : (Rel.RowList) rows) {
          out.add(Rel.concat(row, vals, freshCols));
        }
      }
      deadline.tick(out.size());
    }, Long.MAX_VALUE, range, entities);
    return new Rel(ext.vars(), out, r.distinct && dp.distinctRows());
  }

  /**
   * A join's output columns: {@code vars}, r's variables then the pattern's that r lacks, and
   * {@code cols}, where in the pattern's matches ({@code dp.vars}) those new ones are.
   */
  private record Extension(Variable[] vars, int[] cols) {
    static Extension of(Rel r, DbPattern dp) {
      List<Variable> fresh = new ArrayList<>();
      for (Variable v : dp.vars) {
        if (!r.has(v)) {
          fresh.add(v);
        }
      }
      int[] cols = new int[fresh.size()];
      Variable[] vars = Arrays.copyOf(r.vars, r.vars.length + fresh.size());
      for (int i = 0; i < cols.length; i++) {
        cols[i] = Rel.col(dp.vars, fresh.get(i));
        vars[r.vars.length + i] = fresh.get(i);
      }
      return new Extension(vars, cols);
    }
  }
}
