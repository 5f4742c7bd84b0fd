(ns datalith.layering-test
  "The Java packages form layers, and every dependency runs one way: down. A
  package uses its own classes and those of lower layers, never a peer's or a
  higher one's. The test reads the sources under src/java: their imports and
  any other package-qualified name in the code (comments and string literals
  aside, so javadoc may still point anywhere)."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is are testing]]))

(def layers
  "Bottom to top. Packages of one layer are peers: neither uses the other."
  [#{"codec"}                    ; order-preserving encoding
   #{"store"}                    ; LMDB and the in-memory store
   #{"index"}                    ; datoms, index orders, keys
   #{"db"}                       ; database values, scans, schema, writes
   #{"tx" "pull" "query.parser"} ; the transactor, pull, the query parser
   #{"query"}                    ; the query engine (its find specs pull)
   #{"conn"}                     ; connections: transact, with, the latest value
   #{"log"}                      ; a node following a replicated transaction log (Kafka)
   #{"api"}])                    ; the Java API

(def rank
  (into {} (for [[i layer] (map-indexed vector layers), p layer] [p i])))

(def src-root (io/file "src/java/datalith"))

(defn- package-of
  "The package of a source file under src/java/datalith, without the datalith. prefix."
  [^java.io.File f]
  (-> (.relativize (.toPath ^java.io.File src-root) (.toPath (.getParentFile f)))
      str
      (str/replace java.io.File/separator ".")))

(defn code-only
  "Java source with its comments, string and char literals blanked out."
  [src]
  (str/replace src #"(?s)/\*.*?\*/|//[^\n]*|\"\"\".*?\"\"\"|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
               " "))

(defn uses
  "The datalith packages (without the prefix) that Java source `src` names:
  imports, static imports, and qualified names in its code."
  [src]
  (->> (re-seq #"\bdatalith\.([a-z][a-z0-9]*(?:\.[a-z][a-z0-9]*)*)\.[A-Z*]" (code-only src))
       (map second)
       set))

(defn sources []
  (->> (file-seq src-root)
       (filter #(str/ends-with? (.getName ^java.io.File %) ".java"))
       (sort-by str)))

(defn upward-uses
  "[file package used] for every use of a package that is not in a lower layer."
  []
  (for [f (sources)
        :let [p (package-of f)]
        u (sort (uses (slurp f)))
        :when (and (not= u p)
                   (not (< (rank u Long/MAX_VALUE) (rank p Long/MIN_VALUE))))]
    [(str f) p u]))

(deftest uses-found-in-code-not-in-comments
  (are [src found] (= found (uses src))
    "import datalith.db.Db;"                                  #{"db"}
    "import static datalith.db.Errors.error;"                 #{"db"}
    "import datalith.query.parser.*;"                         #{"query.parser"}
    "x = datalith.codec.Codec.encode(v, t);"                  #{"codec"}
    "/** See {@link datalith.conn.Conn}. */ class A {}"       #{}
    "// datalith.conn.Conn writes it\nclass A {}"             #{}
    "String s = \"datalith.conn.Conn\";"                      #{}
    "String s = \"/* \"; datalith.tx.Op o; String t = \"*/\";" #{"tx"}
    "char c = '\"'; datalith.index.Datom d; String s = \"\";"  #{"index"}))

(deftest every-package-has-a-layer
  (let [packages (set (map package-of (sources)))]
    (is (seq packages))
    (is (= #{} (set (remove rank packages))) "add the new package to `layers`")))

(deftest dependencies-run-down
  (testing "no package uses a peer or a higher layer's classes"
    (is (= [] (vec (upward-uses))))))
