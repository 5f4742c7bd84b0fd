package datalith.pull;

import clojure.lang.IFn;
import clojure.lang.IPersistentVector;
import clojure.lang.ISeq;
import clojure.lang.Keyword;
import clojure.lang.RT;
import clojure.lang.Symbol;
import clojure.lang.Var;
import datalith.db.Errors;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

// pattern = [attr-spec+]
/**
 * A parsed pull pattern: an immutable tree that names attributes only (they
 * are resolved against a database when pulled, so one parse serves every
 * database). Grammar (Datomic's):
 * <pre>
 * attr-spec        = attr-name | wildcard | map-spec | attr-expr
 * attr-name        = keyword (":db/id", ":ns/name", or ":ns/_name" for a reverse ref)
 * wildcard         = '*' | "*"
 * map-spec         = { (attr-name | attr-expr) (pattern | recursion-limit)+ }
 * attr-expr        = [attr-name attr-option+] | (attr-name attr-option+)
 *                  | (limit attr-name n) | (default attr-name v)
 * attr-option      = :as any | :limit (positive-long | nil) | :default any | :xform symbol-or-fn
 * recursion-limit  = positive-long | '...'
 * </pre>
 * A pattern nests at most {@link #MAX_DEPTH} levels of map specs: parsing, pulling and
 * printing stay well inside any thread's stack, and a deeper one is {@code :pull/too-deep}.
 */
public final class PullPattern {
  private static final Keyword AS = Keyword.intern("as");
  private static final Keyword LIMIT = Keyword.intern("limit");
  private static final Keyword DEFAULT = Keyword.intern("default");
  private static final Keyword XFORM = Keyword.intern("xform");
  private static final Symbol STAR = Symbol.intern("*");
  private static final Symbol DOTS = Symbol.intern("...");
  private static final Symbol LIMIT_SYM = Symbol.intern("limit");
  private static final Symbol DEFAULT_SYM = Symbol.intern("default");
  /** Datomic's default limit on the values of one cardinality-many attribute. */
  static final long DEFAULT_LIMIT = 1000;
  /** The deepest nesting of patterns that parses (the top pattern is level 1). */
  public static final int MAX_DEPTH = 200;
  private static final Var PRINT_LEVEL = RT.var("clojure.core", "*print-level*");
  private static final Var PRINT_LENGTH = RT.var("clojure.core", "*print-length*");

  // attr-spec: one attribute to pull, with its options
  /** One attribute of a pattern. */
  public static final class AttrSpec {
    /** The attribute as written: forward ident, {@code :db/id}, or reverse {@code :ns/_name}. */
    public final Keyword name;
    /** The forward attribute ident (the name without its underscore for a reverse ref). */
    public final Keyword attr;
    public final boolean reverse;
    /** The key in the result map. */
    public final Object as;
    /** Maximum values of a cardinality-many attribute; -1 for none. */
    public final long limit;
    public final boolean hasDefault;
    public final Object defaultValue;
    /** Applied to the value; null for none. */
    public final IFn xform;
    /** What to pull of the referenced entities; null to give {@code {:db/id n}}. */
    public final PullPattern sub;
    /** Recursion: 0 none, n levels, or -1 unbounded ({@code ...}). */
    public final int recursion;

    AttrSpec(Keyword name, Object as, long limit, boolean hasDefault, Object defaultValue,
        IFn xform, PullPattern sub, int recursion) {
      this.name = name;
      this.reverse = name.getName().startsWith("_");
      this.attr = reverse ? Keyword.intern(name.getNamespace(), name.getName().substring(1)) : name;
      this.as = as;
      this.limit = limit;
      this.hasDefault = hasDefault;
      this.defaultValue = defaultValue;
      this.xform = xform;
      this.sub = sub;
      this.recursion = recursion;
    }

    AttrSpec withSub(PullPattern s, int rec) {
      return new AttrSpec(name, as, limit, hasDefault, defaultValue, xform, s, rec);
    }
  }

  public final boolean wildcard;
  public final List<AttrSpec> attrs;
  /**
   * The recursion limit of each of {@link #attrs}, by position: 0 for an attribute that does
   * not recurse, -1 for {@code ...}. Never written: a puller copies it to count down.
   */
  final int[] depths;
  final Object form;

  private PullPattern(boolean wildcard, List<AttrSpec> attrs, Object form) {
    this.wildcard = wildcard;
    this.attrs = Collections.unmodifiableList(attrs);
    this.form = form;
    this.depths = new int[attrs.size()];
    for (int i = 0; i < depths.length; i++) {
      depths[i] = attrs.get(i).recursion;
    }
  }

  /** The wildcard pattern {@code [*]}. */
  static final PullPattern ALL = new PullPattern(true, List.of(), RT.vector(STAR));

  /**
   * Parses a pattern: a vector, or a string of EDN; throws {@code :pull/pattern}, or
   * {@code :pull/too-deep} for one nested deeper than {@link #MAX_DEPTH}.
   */
  public static PullPattern parse(Object form) {
    if (form instanceof String s) {
      // a level is a vector and a map; the deepest adds an attribute expression's brackets
      if (nesting(s) > 2 * MAX_DEPTH + 2) {
        throw tooDeep(s);
      }
      try {
        form = clojure.lang.EdnReader.readString(s, clojure.lang.PersistentHashMap.EMPTY);
      } catch (RuntimeException ex) {
        throw Errors.errorWithCause(ex, "pull/pattern", "Unreadable pull pattern: "
            + (s.length() > 200 ? s.substring(0, 200) + "..." : s),
            "pattern", s);
      }
    }
    return parse(form, form, 1);
  }

  private static clojure.lang.ExceptionInfo tooDeep(Object pattern) {
    return Errors.error("pull/too-deep", "A pull pattern nests at most " + MAX_DEPTH
        + " levels of patterns", "pattern", pattern, "limit", MAX_DEPTH);
  }

  /**
   * How deeply the brackets of EDN text nest, outside strings, characters and comments: an
   * upper bound of the depth of the pattern it reads as, found without reading it (the
   * reader recurses once a bracket).
   */
  static int nesting(String s) {
    int depth = 0;
    int max = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"') {
        for (i++; i < s.length() && s.charAt(i) != '"'; i++) {
          if (s.charAt(i) == '\\') {
            i++;
          }
        }
      } else if (c == '\\') {
        i++;
      } else if (c == ';') {
        while (i < s.length() && s.charAt(i) != '\n') {
          i++;
        }
      } else if (c == '[' || c == '{' || c == '(') {
        max = Math.max(max, ++depth);
      } else if (c == ']' || c == '}' || c == ')') {
        depth--;
      }
    }
    return max;
  }

  // pattern at nesting level `level` of `top`, the whole pattern given
  private static PullPattern parse(Object top, Object form, int level) {
    if (level > MAX_DEPTH) {
      throw tooDeep(top);
    }
    if (!(form instanceof List<?> l) || form instanceof ISeq) {
      throw Errors.error("pull/pattern", "A pull pattern is a vector", "pattern", form);
    }
    if (l.isEmpty()) {
      throw Errors.error("pull/pattern", "A pull pattern names at least one attribute: []",
          "pattern", form, "element", form);
    }
    boolean wildcard = false;
    List<AttrSpec> out = new ArrayList<>();
    for (Object el : l) {
      if (STAR.equals(el) || "*".equals(el)) {
        wildcard = true;
      } else if (el instanceof Keyword k) {
        out.add(plain(k));
      } else if (el instanceof Map<?, ?> m) {
        if (m.isEmpty()) {
          throw bad(form, el, "An empty map spec");
        }
        for (Map.Entry<?, ?> en : m.entrySet()) {
          AttrSpec spec = attrExpr(form, en.getKey());
          Object v = en.getValue();
          if (DOTS.equals(v) || "...".equals(v)) {
            out.add(spec.withSub(null, -1));
          } else if (positive(v)) {
            out.add(spec.withSub(null, (int) Math.min(Integer.MAX_VALUE, clamped((Number) v))));
          } else if (v instanceof List<?> && !(v instanceof ISeq)) {
            out.add(spec.withSub(parse(top, v, level + 1), 0));
          } else {
            throw bad(form, el, "A map spec's value is a pattern, a positive recursion limit or ...");
          }
        }
      } else if (el instanceof IPersistentVector || el instanceof ISeq) {
        out.add(attrExpr(form, el));
      } else {
        throw bad(form, el, "Unknown pattern element");
      }
    }
    return new PullPattern(wildcard, out, form);
  }

  private static AttrSpec plain(Keyword k) {
    return new AttrSpec(k, k, DEFAULT_LIMIT, false, null, null, null, 0);
  }

  /** Whether {@code v} is a whole number above 0 (a long, int, short, byte or big integer). */
  private static boolean positive(Object v) {
    if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
      return ((Number) v).longValue() > 0;
    }
    if (v instanceof clojure.lang.BigInt b) {
      return b.toBigInteger().signum() > 0;
    }
    return v instanceof java.math.BigInteger b && b.signum() > 0;
  }

  /** A whole number as a long, {@code Long.MAX_VALUE} for a larger one. */
  private static long clamped(Number n) {
    java.math.BigInteger big = n instanceof clojure.lang.BigInt b ? b.toBigInteger()
        : n instanceof java.math.BigInteger b ? b : null;
    return big != null && big.bitLength() > 63 ? Long.MAX_VALUE : n.longValue();
  }

  private static clojure.lang.ExceptionInfo bad(Object pattern, Object el, String why) {
    return Errors.error("pull/pattern", why + ": " + shortString(el), "pattern", pattern,
        "element", el);
  }

  /** {@code x} printed for a message: at most a few levels and elements of it. */
  static String shortString(Object x) {
    Var.pushThreadBindings(RT.map(PRINT_LEVEL, 6, PRINT_LENGTH, 20));
    try {
      return RT.printString(x);
    } finally {
      Var.popThreadBindings();
    }
  }

  private static AttrSpec attrExpr(Object pattern, Object x) {
    if (x instanceof Keyword k) {
      return plain(k);
    }
    if (!(x instanceof List<?> l) || l.isEmpty()) {
      throw bad(pattern, x, "Expected an attribute or [attribute options]");
    }
    Object head = l.get(0);
    if (LIMIT_SYM.equals(head) || DEFAULT_SYM.equals(head)) {
      if (l.size() != 3 || !(l.get(1) instanceof Keyword k)) {
        throw bad(pattern, x, "Expected (" + head + " :attribute value)");
      }
      AttrSpec p = plain(k);
      return LIMIT_SYM.equals(head)
          ? new AttrSpec(k, k, limitOf(pattern, x, l.get(2)), false, null, null, null, 0)
          : new AttrSpec(k, k, p.limit, true, l.get(2), null, null, 0);
    }
    if (!(head instanceof Keyword k)) {
      throw bad(pattern, x, "An attribute expression starts with the attribute");
    }
    if (l.size() % 2 != 1) {
      throw bad(pattern, x, "Attribute options come in pairs");
    }
    Object as = k;
    long limit = DEFAULT_LIMIT;
    boolean hasDefault = false;
    Object dflt = null;
    IFn xform = null;
    for (int i = 1; i < l.size(); i += 2) {
      Object opt = l.get(i);
      Object val = l.get(i + 1);
      if (AS.equals(opt)) {
        as = val;
      } else if (LIMIT.equals(opt)) {
        limit = limitOf(pattern, x, val);
      } else if (DEFAULT.equals(opt)) {
        hasDefault = true;
        dflt = val;
      } else if (XFORM.equals(opt)) {
        xform = xformOf(pattern, x, val);
      } else {
        throw bad(pattern, x, "Unknown attribute option " + shortString(opt));
      }
    }
    return new AttrSpec(k, as, limit, hasDefault, dflt, xform, null, 0);
  }

  private static long limitOf(Object pattern, Object x, Object v) {
    if (v == null) {
      return -1;
    }
    if (positive(v)) {
      return clamped((Number) v);
    }
    throw bad(pattern, x, ":limit is a positive whole number or nil");
  }

  private static IFn xformOf(Object pattern, Object x, Object v) {
    if (v instanceof Symbol s) {
      if (s.getNamespace() == null) {
        s = Symbol.intern("clojure.core", s.getName());
      }
      Object r;
      try {
        r = datalith.db.Fns.resolve(s);
      } catch (Exception ex) { // a missing namespace: FileNotFoundException
        throw bad(pattern, x, "Cannot load :xform function " + s);
      }
      if (r instanceof Var var && var.deref() instanceof IFn) {
        return var;
      }
      throw bad(pattern, x, "No :xform function " + s);
    }
    if (v instanceof IFn f && !(v instanceof Keyword)) {
      return f;
    }
    throw bad(pattern, x, ":xform is a fully qualified function symbol");
  }

  @Override
  public String toString() {
    return shortString(form);
  }
}
