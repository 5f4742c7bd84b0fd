package datalith.query;

import datalith.db.Errors;
import datalith.query.parser.SrcVar;
import java.util.Map;

/** Where {@code $} and named sources point in one rule or query scope. */
final class Scope {
  final Map<String, Object> sources;

  Scope(Map<String, Object> sources) {
    this.sources = sources;
  }

  /** The source {@code s} names; throws {@code :query/unknown-source} when none was given. */
  Object source(SrcVar s) {
    Object src = sources.get(s.name());
    if (src == null) {
      throw Errors.error("query/unknown-source", "No source " + s.name() + " was given",
          "source", s.name());
    }
    return src;
  }
}
