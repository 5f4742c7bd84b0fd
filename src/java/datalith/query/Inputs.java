package datalith.query;

import clojure.lang.Keyword;
import clojure.lang.PersistentVector;
import clojure.lang.Symbol;
import datalith.db.Errors;
import datalith.query.parser.BindColl;
import datalith.query.parser.BindScalar;
import datalith.query.parser.InBinding;
import datalith.query.parser.PatternName;
import datalith.query.parser.Query;
import datalith.query.parser.RulesVar;
import datalith.query.parser.SrcVar;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** A query's inputs given by name, put in {@code :in} order. Stateless. */
final class Inputs {
  private Inputs() {}

  /**
   * The inputs of {@code query} in {@code :in} order, from {@code named}: a map from each
   * input's name to its value. An input's name is the keyword of its symbol without the
   * {@code ?}: {@code :email} for {@code ?email} and for {@code [?email ...]}, {@code :$} and
   * {@code :$src} for sources, {@code :%} for the rules, {@code :pattern} for a pull pattern name.
   *
   * @throws clojure.lang.ExceptionInfo {@code :query/inputs} when a name is missing, unknown, or
   *     an input (a tuple or relation binding) has no name
   */
  static Object[] byName(Query query, Map<?, ?> named) {
    List<InBinding> in = query.in();
    Object[] out = new Object[in.size()];
    Set<Object> used = new HashSet<>();
    for (int i = 0; i < out.length; i++) {
      Keyword name = inputName(in.get(i));
      if (name == null) {
        throw Errors.error("query/inputs", "Input " + query.formOf(in.get(i)) + " has no name;"
            + " pass the inputs by position", "input", query.formOf(in.get(i)));
      }
      if (!named.containsKey(name)) {
        throw Errors.error("query/inputs", "No input named " + name + " for " + query.formOf(
            in.get(i)), "missing", name, "given", PersistentVector.create(named.keySet()));
      }
      used.add(name);
      out[i] = named.get(name);
    }
    for (Object k : named.keySet()) {
      if (!used.contains(k)) {
        throw Errors.error("query/inputs", "The query has no input named " + k, "unknown", k);
      }
    }
    return out;
  }

  /** The name of an :in input (see {@link #namedInputs}), null for a tuple or relation. */
  private static Keyword inputName(InBinding b) {
    Object sym = b instanceof BindScalar s ? s.var().symbol()
        : b instanceof BindColl c
            && c.element() instanceof BindScalar s ? s.var().symbol()
        : b instanceof SrcVar s ? s.symbol()
        : b instanceof RulesVar ? Symbol.intern("%")
        : b instanceof PatternName p ? p.symbol() : null;
    if (sym == null) {
      return null;
    }
    String name = ((Symbol) sym).getName();
    return Keyword.intern(name.startsWith("?") ? name.substring(1) : name);
  }
}
