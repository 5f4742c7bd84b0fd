(ns datalith.readme-test
  "README.md as tests, so that the README stays true: its ```clojure blocks (the REPL
  tour) run verbatim, form by form, each `;; =>` comment compared with the value of the
  form before it; its ```java block compiled with javac and run in a child JVM, its
  output compared with its `// prints` comments; its CLI usage is the CLI's --help. The
  Java API's own test is below."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [datalith.cli :as cli]
            [datalith.core :as d]
            [datalith.readers :as readers]
            [datalith.test-util :as tu])
  (:import (clojure.lang LineNumberingPushbackReader TaggedLiteral)
           (datalith.api Datalith Database)
           (java.io File StringReader)
           (java.util List Map Set)
           (java.util.concurrent TimeUnit)
           (javax.tools ToolProvider)))

(defn- readme [] (slurp (io/file "README.md")))

(defn- blocks
  "The text of each of README's ```LANG blocks, in order."
  [lang]
  (map second (re-seq (re-pattern (str "(?ms)^```" lang "\\n(.*?)^```$")) (readme))))

;; ---------------------------------------------------------------- the REPL tour

(def ^:private result-line
  "A comment giving the value of the form before it: `;; => value` (or `; => value`)."
  #"^\s*;+\s*=>\s*(.*)$")

(defn- expected-text
  "The `;; =>` text that follows the form ending at (1-based) line `line`, column `col`:
  on the rest of that line, or on the next line and the `;;  ` lines (indented
  continuation) after it; nil when the form has none."
  [lines line col]
  (let [rest-of-line (subs (nth lines (dec line)) (min (dec col) (count (nth lines (dec line)))))]
    (if-let [[_ v] (re-matches result-line rest-of-line)]
      v
      (when-let [[_ v] (some->> (get lines line) (re-matches result-line))]
        (str/join " " (cons v (map second (take-while some? (map #(re-matches #"^;;\s{2,}(\S.*)$" %)
                                                                  (drop (inc line) lines))))))))))

(defn- wildcard-match?
  "Whether `actual` (printed and read back) is what `expected` (read from the README)
  shows: `..` stands for any value, and for the rest of a vector when it ends one;
  tagged literals (#datalith/db) match by tag and form; anything else by equality."
  [expected actual]
  (cond
    (= '.. expected) true
    (instance? TaggedLiteral expected)
    (and (instance? TaggedLiteral actual)
         (= (:tag expected) (:tag actual))
         (wildcard-match? (:form expected) (:form actual)))
    (map? expected)
    (and (map? actual)
         (= (set (keys expected)) (set (keys actual)))
         (every? (fn [[k v]] (wildcard-match? v (get actual k))) expected))
    (and (vector? expected) (= '.. (peek expected)))
    (and (sequential? actual)
         (<= (dec (count expected)) (count actual))
         (every? true? (map wildcard-match? (pop expected) actual)))
    (vector? expected)
    (and (sequential? actual)
         (= (count expected) (count actual))
         (every? true? (map wildcard-match? expected actual)))
    :else (= expected actual)))

(defn- as-printed
  "x printed and read back as EDN: datoms as datoms, other tags as tagged literals."
  [x]
  (edn/read-string {:readers readers/readers :default tagged-literal}
                   (binding [*print-namespace-maps* false] (pr-str x))))

(defn- run-tour!
  "Reads and evaluates every form of README's ```clojure blocks in order, in a fresh
  namespace, checking each `;; =>`; returns the number of checks made."
  []
  (let [ns (create-ns (gensym "datalith.readme-tour-"))]
    (try
      (binding [*ns* ns]
        (refer 'clojure.core)
        (reduce
         (fn [checks block]
           (let [lines (vec (str/split-lines block))
                 r (LineNumberingPushbackReader. (StringReader. block))]
             (loop [checks checks]
               (let [form (read {:eof ::eof} r)]
                 (if (= ::eof form)
                   checks
                   (let [line (.getLineNumber r)
                         value (try (eval form)
                                    (catch Exception e
                                      (throw (ex-info (str "README tour: the form ending on line " line
                                                           " of its block threw: " (ex-message e))
                                                      {:form form} e))))
                         expected (expected-text lines line (.getColumnNumber r))]
                     (when expected
                       (is (wildcard-match? (as-printed (edn/read-string {:readers readers/readers
                                                                          :default tagged-literal}
                                                                         expected))
                                            (as-printed value))
                           (str "README tour, the form ending on line " line " of its block:\n"
                                (pr-str form) "\nis\n" (pr-str value) "\nREADME says\n" expected)))
                     (recur (cond-> checks expected inc))))))))
         0 (blocks "clojure")))
      (finally (remove-ns (ns-name ns))))))

(deftest readme-tour-runs-as-written
  (doseq [store tu/stores]
    (testing (str "store " store)
      ;; The tour names a directory; each run gets a fresh one (or :mem) in its place. Its
      ;; in-memory databases stay in memory.
      (let [dir (tu/temp-dir)
            connect d/connect]
        (try
          (with-redefs [d/connect (fn [target & opts]
                                    (apply connect (cond (not (string? target)) target
                                                         (tu/durable? store) (.getPath dir)
                                                         :else :mem)
                                           opts))]
            (is (<= 7 (run-tour!)) "the tour's ;; => checks were found"))
          (finally (tu/delete-tree dir)))))))

;; ---------------------------------------------------------------- the command line

(deftest readme-cli-usage-is-the-cli's
  (let [usage (some #(when (str/starts-with? % "usage: datalith") %) (blocks "text"))]
    (is usage "README shows the CLI's usage in a ```text block")
    (is (= (str/trim (with-out-str (is (= 0 (cli/run ["--help"])))))
           (some-> usage str/trim)))))

;; ---------------------------------------------------------------- the Java example

(defn- java-prints
  "The lines the Java block says it prints: its `// prints X` comments, in order."
  [src]
  (map second (re-seq #"(?m)//\s*prints (.*?)\s*$" src)))

(deftest readme-java-example-compiles-and-runs
  (let [src (first (blocks "java"))
        cls (second (re-find #"(?m)^public (?:final )?class (\w+)" src))
        work (tu/temp-dir)
        classes (io/file work "classes")
        file (io/file work (str cls ".java"))]
    (try
      (is cls "README's Java block is a public class")
      (.mkdirs classes)
      (spit file src)
      (let [err (java.io.ByteArrayOutputStream.)
            rc (.run (ToolProvider/getSystemJavaCompiler) nil nil err
                     (into-array String ["-cp" (System/getProperty "java.class.path")
                                         "-d" (.getPath classes) "-Xlint:all,-path" "-Werror"
                                         (.getPath file)]))]
        (is (zero? rc) (str "javac of README's Java block:\n" err))
        (when (zero? rc)
          (let [^List cmd [(str (System/getProperty "java.home") "/bin/java")
                           "--add-opens=java.base/java.nio=ALL-UNNAMED"
                           "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
                           (str "-Djava.io.tmpdir=" work)
                           "-cp" (str classes File/pathSeparator (System/getProperty "java.class.path"))
                           cls]
                p (-> (ProcessBuilder. cmd) (.redirectErrorStream true) (.start))
                out (future (slurp (.getInputStream p)))]
            (if-not (.waitFor p 120 TimeUnit/SECONDS)
              (do (.destroyForcibly p)
                  (is false "the Java example did not end"))
              (do (is (zero? (.exitValue p)) @out)
                  (is (seq (java-prints src)))
                  (is (= (java-prints src) (str/split-lines @out))))))))
      (finally (tu/delete-tree work)))))

(deftest java-api
  (doseq [open [#(Datalith/open (.toPath (tu/temp-dir))
                               {"schema" "[{:db/ident :user/email :db/valueType :db.type/string
                                            :db/unique :db.unique/identity}]"})
                #(doto (Datalith/openInMemory)
                   (.transact "[{:db/ident :user/email :db/valueType :db.type/string
                                 :db/unique :db.unique/identity}]"))]]
    (with-open [conn ^datalith.api.Connection (open)]
      (let [tx (.transact conn "[{:db/id \"a\" :user/email \"ada@example.com\" :user/name \"Ada\"}]")
            ^Database db (.db conn)]
        (is (instance? Long (.tempid tx "a")))
        (is (= "Ada" (.q db "[:find ?n . :in $ ?e :where [?p :user/email ?e] [?p :user/name ?n]]"
                         (object-array ["ada@example.com"]))))
        (is (instance? Set (.q db "[:find ?e ?n :where [?e :user/name ?n]]" (object-array 0))))
        (is (instance? List (first (.q db "[:find ?e ?n :where [?e :user/name ?n]]" (object-array 0)))))
        (let [^Map ada (.pull db "[*]" (List/of (Datalith/kw "user/email") "ada@example.com"))]
          (is (= "Ada" (.get ada (Datalith/kw "user/name")))))
        (is (nil? (.pull (.asOf db 0) "[:user/name]" (.tempid tx "a"))))
        (is (= 1 (count (.datoms db "avet" (object-array [(Datalith/kw "user/email")])))))
        (testing "errors are ex-info with a namespaced :error"
          (is (= :api/edn (:error (ex-data (try (.transact conn "[{:a") (catch Exception e e))))))
          (is (= :tx/nil-value (:error (ex-data (try (.transact conn "[{:user/name nil}]")
                                                     (catch Exception e e)))))))))))
