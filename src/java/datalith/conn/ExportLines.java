package datalith.conn;

import clojure.lang.IFn;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentHashMap;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import java.util.ArrayList;
import java.net.URI;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * Reads one line of an export file (a record as {@code datalith.core/export} prints it:
 * {@code {:t 12, :tx-data [[:db/add 1000 :user/name "Ada"] {:db/id 1001, ...} ...]}}) several
 * times faster than the EDN reader, for the values export prints: longs, doubles, strings,
 * keywords, booleans, nil, vectors, maps, {@code #inst}, {@code #uuid}, {@code #datalith/bytes},
 * {@code #datalith/float} and {@code #datalith/uri}. A line holding anything else (a bigint, a set, a symbol, a
 * string escape or a number form it does not know) is left to the EDN reader: {@link #parse}
 * returns null, so the slow reader stays the reference, and the tests compare the two.
 * Stateless; any thread.
 */
public final class ExportLines {
  private static final Keyword T = Keyword.intern("t");
  private static final Keyword TX_DATA = Keyword.intern("tx-data");
  private static final IFn READ_INSTANT = RT.var("clojure.instant", "read-instant-date");

  /** A line this reader leaves to the EDN reader. */
  private static final class Unparsed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Unparsed() {
      super(null, null, false, false);
    }
  }

  private static final Unparsed UNPARSED = new Unparsed();

  private final String s;
  private int i;

  private ExportLines(String s) {
    this.s = s;
  }

  /**
   * The record {@code {:t t :tx-data [...]}} that {@code line} holds, equal to what the EDN
   * reader (with datalith's readers) reads from it; null when the line holds something else, or
   * something this reader leaves to the EDN reader.
   */
  public static Object parse(String line) {
    try {
      return new ExportLines(line).record();
    } catch (RuntimeException e) {
      return null; // Unparsed, or a number, instant, uuid or base64 this reader refuses: the
                   // EDN reader's call (which reads it, or explains why not)
    }
  }

  private Object record() {
    expect("{:t ");
    Object t = value();
    if (!(t instanceof Long)) {
      throw UNPARSED;
    }
    expect(", :tx-data ");
    Object txData = value();
    if (!(txData instanceof PersistentVector)) {
      throw UNPARSED;
    }
    expect("}");
    skipSpace();
    if (i != s.length()) {
      throw UNPARSED;
    }
    return PersistentArrayMap.createAsIfByAssoc(new Object[] {T, t, TX_DATA, txData});
  }

  private void expect(String text) {
    if (!s.startsWith(text, i)) {
      throw UNPARSED;
    }
    i += text.length();
  }

  private void skipSpace() {
    while (i < s.length() && (s.charAt(i) == ' ' || s.charAt(i) == ',')) {
      i++;
    }
  }

  private Object value() {
    char c = s.charAt(i);
    switch (c) {
      case '[':
        return vector();
      case '{':
        return map();
      case '"':
        return string();
      case ':':
        return keyword();
      case '#':
        return tagged();
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          return number();
        }
        return word();
    }
  }

  private PersistentVector vector() {
    i++; // [
    List<Object> items = new ArrayList<>();
    while (true) {
      skipSpace();
      if (s.charAt(i) == ']') {
        i++;
        return PersistentVector.create(items);
      }
      items.add(value());
    }
  }

  private Object map() {
    i++; // {
    List<Object> kvs = new ArrayList<>();
    Set<Object> keys = new HashSet<>();
    while (true) {
      skipSpace();
      if (s.charAt(i) == '}') {
        i++;
        Object[] a = kvs.toArray();
        return a.length <= 16 ? PersistentArrayMap.createAsIfByAssoc(a)
            : PersistentHashMap.create(a);
      }
      Object k = value();
      if (!keys.add(k)) {
        throw UNPARSED; // the EDN reader refuses a duplicate key
      }
      skipSpace();
      kvs.add(k);
      kvs.add(value());
    }
  }

  private String string() {
    i++; // "
    StringBuilder b = null;
    int from = i;
    while (true) {
      char c = s.charAt(i);
      if (c == '"') {
        String out = b == null ? s.substring(from, i) : b.append(s, from, i).toString();
        i++;
        return out;
      }
      if (c == '\\') {
        if (b == null) {
          b = new StringBuilder();
        }
        b.append(s, from, i);
        char e = s.charAt(i + 1);
        b.append(switch (e) {
          case '"' -> '"';
          case '\\' -> '\\';
          case 'n' -> '\n';
          case 't' -> '\t';
          case 'r' -> '\r';
          case 'b' -> '\b';
          case 'f' -> '\f';
          default -> throw UNPARSED;
        });
        i += 2;
        from = i;
      } else {
        i++;
      }
    }
  }

  /** The token from {@code i} to the next delimiter. */
  private String token() {
    int from = i;
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == ' ' || c == ',' || c == ']' || c == '}' || c == ')') {
        break;
      }
      i++;
    }
    return s.substring(from, i);
  }

  private Keyword keyword() {
    i++; // :
    String name = token();
    int slash = name.indexOf('/');
    if (name.isEmpty() || slash == 0 || slash == name.length() - 1
        || (slash > 0 && name.indexOf('/', slash + 1) >= 0)) {
      throw UNPARSED;
    }
    for (int k = 0; k < name.length(); k++) {
      char c = name.charAt(k);
      boolean plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || "*+!-_?<>=.$&%'/".indexOf(c) >= 0;
      if (!plain) {
        throw UNPARSED;
      }
    }
    return slash < 0 ? Keyword.intern(null, name)
        : Keyword.intern(name.substring(0, slash), name.substring(slash + 1));
  }

  private Object number() {
    String n = token();
    boolean integral = true;
    for (int k = 0; k < n.length(); k++) {
      char c = n.charAt(k);
      if (c >= '0' && c <= '9' || (k == 0 && c == '-')) {
        continue;
      }
      if (c == '.' || c == 'E' || c == 'e' || (k > 0 && (c == '-' || c == '+'))) {
        integral = false;
        continue;
      }
      throw UNPARSED; // N, M, ratios, radixes, ##NaN: the EDN reader's
    }
    if (integral) {
      if (n.length() > 1 && (n.charAt(0) == '0' || n.startsWith("-0"))) {
        throw UNPARSED; // octal, or the EDN reader's own handling of -0
      }
      return Long.parseLong(n); // too big: the EDN reader makes it a BigInt
    }
    if (!Character.isDigit(n.charAt(n.length() - 1)) || n.charAt(0) == '.') {
      throw UNPARSED;
    }
    return Double.parseDouble(n);
  }

  private Object word() {
    String w = token();
    return switch (w) {
      case "true" -> Boolean.TRUE;
      case "false" -> Boolean.FALSE;
      case "nil" -> null;
      default -> throw UNPARSED; // a symbol
    };
  }

  private Object tagged() {
    i++; // #
    String tag = token();
    if (s.charAt(i) != ' ') {
      throw UNPARSED;
    }
    i++;
    if (s.charAt(i) != '"') {
      throw UNPARSED;
    }
    String text = string();
    return switch (tag) {
      case "inst" -> READ_INSTANT.invoke(text);
      case "uuid" -> UUID.fromString(text);
      case "datalith/bytes" -> Base64.getDecoder().decode(text);
      case "datalith/float" -> (float) Double.parseDouble(text);
      case "datalith/uri" -> URI.create(text);
      default -> throw UNPARSED;
    };
  }
}
