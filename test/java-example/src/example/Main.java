package example;

import datalith.api.Connection;
import datalith.api.Database;
import datalith.api.Datalith;
import datalith.api.DatalithException;
import datalith.api.PreparedQuery;
import datalith.api.QueryResult;
import datalith.api.TxResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The datalith Java API from a plain Java program: open a durable database,
 * transact, query with typed results, prepare a query, pull without keywords,
 * handle a failure. Prints lines that bin/java-example compares with
 * expected-output.txt.
 */
public final class Main {
  private Main() {}

  /**
   * Runs the example in a new temporary directory.
   *
   * @param args ignored
   * @throws IOException when the temporary directory cannot be made
   */
  public static void main(String[] args) throws IOException {
    Path dir = Files.createTempDirectory("datalith-example");
    String schema = "[{:db/ident :user/email :db/valueType :db.type/string"
        + "  :db/unique :db.unique/identity}"
        + " {:db/ident :user/name :db/valueType :db.type/string}"
        + " {:db/ident :user/age :db/valueType :db.type/long}"
        + " {:db/ident :user/friend :db/valueType :db.type/ref"
        + "  :db/cardinality :db.cardinality/many}]";
    try (Connection conn = Datalith.open(dir, Map.of("schema", schema))) {
      TxResult tx = conn.transact("[{:db/id \"ada\" :user/email \"ada@example.com\""
          + " :user/name \"Ada\" :user/age 36}"
          + " {:user/email \"bob@example.com\" :user/name \"Bob\" :user/age 41"
          + "  :user/friend [\"ada\"]}]");
      System.out.println("ada is an entity: " + (tx.tempid("ada") != null));
      Database db = conn.db();

      QueryResult people = db.query("[:find ?n ?a :where [?e :user/name ?n] [?e :user/age ?a]]");
      List<String> rows = new ArrayList<>();
      for (List<Object> row : people.rel()) {
        rows.add(row.get(0) + " " + row.get(1));
      }
      rows.sort(null);
      System.out.println("people: " + rows);

      Object total = db.query("[:find (sum ?a) . :where [_ :user/age ?a]]").scalar();
      System.out.println("total age: " + total);

      PreparedQuery nameOf = Datalith.prepare(
          "[:find ?n . :in $ ?email :where [?e :user/email ?email] [?e :user/name ?n]]");
      System.out.println("prepared: " + nameOf.run(db, "bob@example.com").scalar());

      Map<String, Object> bob = db.pullNamed("[:user/name {:user/friend [:user/name]}]",
          new Object[] {"user/email", "bob@example.com"});
      System.out.println("pullNamed: " + new TreeMap<>(bob));

      try {
        db.query("[:find ?n . :where [_ :user/name ?n]]").rel();
      } catch (DatalithException e) {
        System.out.println("wrong accessor: " + e.category());
      }
      try {
        conn.transact("[[:db/add [:user/email \"bob@example.com\"] :user/email \"ada@example.com\"]]");
      } catch (DatalithException e) {
        System.out.println("conflict: " + e.category());
      }
      try {
        db.datoms("foo");
      } catch (DatalithException e) {
        System.out.println("bad index: " + e.category() + " " + e.data().get("index"));
      }
    } finally {
      delete(dir);
    }
  }

  private static void delete(Path dir) throws IOException {
    try (var paths = Files.walk(dir)) {
      for (Path p : paths.sorted((a, b) -> b.compareTo(a)).toList()) {
        Files.delete(p);
      }
    }
  }
}
