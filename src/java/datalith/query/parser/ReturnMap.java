package datalith.query.parser;

import java.util.List;

// return-map-spec = (':keys' plain-symbol+ | ':strs' plain-symbol+ | ':syms' plain-symbol+)
/**
 * {@code :keys}, {@code :strs} or {@code :syms}: each result tuple becomes a map. {@code keys} are
 * the map keys, already converted ({@code Keyword}s for {@code :keys}, {@code String}s for
 * {@code :strs}, {@code Symbol}s for {@code :syms}); one per find element, in order, distinct.
 */
public record ReturnMap(Kind kind, List<Object> keys) {
  /** Which section was used. */
  public enum Kind {
    KEYS,
    STRS,
    SYMS
  }

  public ReturnMap {
    keys = List.copyOf(keys);
  }

  @Override
  public String toString() {
    return ":" + kind.name().toLowerCase() + " " + Forms.print(Forms.returnKeys(this));
  }
}
