package datalith.query.parser;

import clojure.lang.Keyword;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Parses a query's {@code :valid-at} section ({@link ValidAt}): one instant, for {@code $}, or
 * pairs of a source and its instant. An instant is an {@code #inst} literal, a variable bound by
 * an {@code :in} scalar binding, or {@code :any-valid-time} (every version, with its interval). Stateless; errors as {@link QueryParser}'s, under
 * {@code :parser/valid-at}.
 */
final class ValidAtParser {
  private static final Keyword ANY_VALID_TIME = Keyword.intern("any-valid-time");

  private ValidAtParser() {}

  /** Whether {@code k} is {@code :any-valid-time}, an item of a {@code :valid-at} section. */
  static boolean isAnyValidTime(Object k) {
    return ANY_VALID_TIME.equals(k);
  }

  // valid-at = ':valid-at' (instant | (src-var instant)+)
  static List<ValidAt> parse(List<Object> items, Set<SrcVar> sources, List<InBinding> in,
      Object data) {
    if (items.size() == 1 && !Syntax.isSrcVar(items.get(0))) {
      return List.of(validAt(SrcVar.DEFAULT, items.get(0), sources, in, items));
    }
    if (items.isEmpty() || items.size() % 2 != 0) {
      throw Syntax.error("parser/valid-at", ":valid-at takes an instant (for $) or pairs of a"
          + " source and an instant, such as :valid-at $ ?when, got "
          + Syntax.show(Syntax.vector(items)), data, "valid-at", Syntax.vector(items));
    }
    List<ValidAt> out = new ArrayList<>();
    Set<SrcVar> seen = new HashSet<>();
    for (int i = 0; i < items.size(); i += 2) {
      Object s = items.get(i);
      if (!Syntax.isSrcVar(s)) {
        throw Syntax.error("parser/valid-at", ":valid-at pairs a source ($ or $name) with an"
            + " instant, got " + Syntax.show(s) + " where a source goes", data, "valid-at",
            Syntax.vector(items));
      }
      SrcVar src = new SrcVar(((clojure.lang.Symbol) s).getName());
      if (!seen.add(src)) {
        throw Syntax.error("parser/valid-at", ":valid-at names " + src + " twice", data,
            "valid-at", Syntax.vector(items));
      }
      out.add(validAt(src, items.get(i + 1), sources, in, items));
    }
    return List.copyOf(out);
  }

  private static ValidAt validAt(SrcVar src, Object instant, Set<SrcVar> sources,
      List<InBinding> in, List<Object> items) {
    if (!sources.contains(src)) {
      throw Syntax.error("parser/valid-at", ":valid-at reads source " + src + ", which :in does"
          + " not declare", Syntax.vector(items), "source", src.symbol());
    }
    if (instant instanceof Date || ANY_VALID_TIME.equals(instant)) {
      return new ValidAt(src, new Constant(instant));
    }
    if (Syntax.isVariable(instant)) {
      Variable v = Variable.of((clojure.lang.Symbol) instant);
      for (InBinding b : in) {
        if (b instanceof BindScalar scalar && scalar.var().equals(v)) {
          return new ValidAt(src, v);
        }
      }
      throw Syntax.error("parser/valid-at", ":valid-at takes " + instant + " from :in, but :in"
          + " binds no scalar " + instant + "; add it to :in", Syntax.vector(items), "var",
          instant);
    }
    throw Syntax.error("parser/valid-at", ":valid-at takes an instant (#inst \"...\"), a"
        + " ?variable of :in or :any-valid-time, got " + Syntax.show(instant), Syntax.vector(items), "instant",
        instant);
  }
}
