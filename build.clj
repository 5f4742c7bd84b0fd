(ns build
  "tools.build tasks for datalith (alias :build in deps.edn).

    clojure -T:build compile   ; javac src/java -> target/classes
    clojure -T:build clean     ; rm -rf target/classes

  `compile` is also the deps.edn `:deps/prep-lib` step, so a project that
  uses datalith as a git or :local/root dep gets the Java classes compiled
  by `clojure -X:deps prep`. bin/check-deps runs it the same way.

  The javac options are read from project.clj (:javac-options), so
  Leiningen and tools.build compile with the same flags."
  (:refer-clojure :exclude [compile])
  (:require [clojure.java.io :as io]
            [clojure.tools.build.api :as b]))

(def class-dir "target/classes")
(def java-src-dirs ["src/java"])

;; Used only if project.clj is missing or names no :javac-options.
(def fallback-javac-opts
  ["-source" "17" "-target" "17" "-Xlint:unchecked" "-Werror" "-Xlint:-options"])

(defn- project-clj-options
  "The key/value options of the defproject form in project.clj, or nil."
  []
  (let [f (io/file (b/resolve-path "project.clj"))]
    (when (.exists f)
      (let [form (binding [*read-eval* false] (read-string (slurp f)))]
        (when (and (seq? form) (= 'defproject (first form)))
          (apply hash-map (drop 3 form)))))))

(defn javac-opts []
  (or (seq (:javac-options (project-clj-options))) fallback-javac-opts))

(defn clean
  "Deletes target/classes."
  [_opts]
  (b/delete {:path class-dir}))

(defn- java-sources? []
  (some (fn [dir]
          (some #(and (.isFile ^java.io.File %) (.endsWith (.getName ^java.io.File %) ".java"))
                (file-seq (io/file (b/resolve-path dir)))))
        java-src-dirs))

(defn compile
  "Compiles src/java into target/classes against the project's deps.edn basis.
  Throws (so `clojure -T:build compile` exits non-zero) when javac fails.

  Options (all optional):
    :extra - extra deps.edn data merged into the basis, e.g.
             {:mvn/repos {\"debian\" {:url \"file:///usr/share/maven-repo\"}}}
             for a machine that cannot reach Clojars (bin/check-deps passes it)."
  [{:keys [extra] :as _opts}]
  (if-not (java-sources?)
    (do (println "build/compile: no Java sources under" (pr-str java-src-dirs))
        (.mkdirs (io/file (b/resolve-path class-dir))))
    (let [basis (b/create-basis (cond-> {:project "deps.edn"}
                                  extra (assoc :extra extra)))
          opts (vec (javac-opts))]
      (println "build/compile: javac" (pr-str java-src-dirs) "->" class-dir (pr-str opts))
      (b/javac {:src-dirs java-src-dirs
                :class-dir class-dir
                :basis basis
                :javac-opts opts}))))
