package datalith.tx;

import clojure.lang.ExceptionInfo;
import clojure.lang.Keyword;
import clojure.lang.PersistentVector;
import datalith.db.Errors;
import java.util.List;
import java.util.Set;

/**
 * The keys of the {@code :db} namespaces that tx-data may name: datalith's own attributes, and
 * the error for any other, which lists them and says when Datomic has the key but datalith does
 * not implement it (so that {@code {:db/fulltext true}} is refused with a reason rather than
 * installed, or ignored).
 */
final class SchemaKeys {
  /** The :db attributes datalith has (its bootstrap schema). */
  static final List<Keyword> SUPPORTED = List.of(kw("db", "ident"), kw("db", "valueType"),
      kw("db", "cardinality"), kw("db", "unique"), kw("db", "index"), kw("db", "isComponent"),
      kw("db", "noHistory"), kw("db", "doc"), kw("db", "tupleAttrs"), kw("db", "tupleType"),
      kw("db", "tupleTypes"), kw("db", "txInstant"), kw("db.attr", "preds"),
      kw("db.entity", "attrs"), kw("db.entity", "preds"), kw("db", "ensure"));
  /** Keys Datomic's schema and tx-data know that datalith does not implement. */
  private static final Set<Keyword> DATOMIC_ONLY = Set.of(kw("db", "fulltext"), kw("db", "fn"), kw("db", "code"), kw("db", "lang"),
      kw("db", "excise"), kw("db.excise", "attrs"), kw("db.excise", "beforeT"),
      kw("db.excise", "before"), kw("db.install", "attribute"), kw("db.alter", "attribute"),
      kw("db.install", "partition"), kw("db.install", "valueType"), kw("db.install", "function"),
      kw("db", "system-tx"));

  private SchemaKeys() {}

  private static Keyword kw(String ns, String name) {
    return Keyword.intern(ns, name);
  }

  /** The error for {@code k}, a key of a {@code :db} namespace that names no attribute. */
  static ExceptionInfo unknown(Keyword k, Object form) {
    if (SUPPORTED.contains(k)) { // a database made before datalith had it
      return Errors.error("tx/invalid-attribute", "No attribute " + k + ": this database was made"
          + " before datalith had " + k + " (export it and import the export into a new database"
          + " to use " + k + ")", "attribute", k, "form", form);
    }
    String why = DATOMIC_ONLY.contains(k)
        ? "Datomic's " + k + " is not supported by datalith"
            + (k.getNamespace().startsWith("db.install") || k.getNamespace().equals("db.alter")
                ? " (nor needed: a map with :db/ident and :db/valueType installs or alters an"
                    + " attribute)" : "")
        : "No attribute " + k + " (the :db namespaces are datalith's own, so it cannot be"
            + " installed on first use)";
    return Errors.error("tx/invalid-attribute", why + "; the :db attributes are "
        + SUPPORTED, "attribute", k, "supported", PersistentVector.create(SUPPORTED),
        "form", form);
  }
}
