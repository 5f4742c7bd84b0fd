(ns build
  "Build tasks for datalith (alias :build in deps.edn).

    clojure -T:build compile   ; javac src/java -> target/classes
    clojure -T:build clean     ; rm -rf target/classes

  `compile` is also the deps.edn `:deps/prep-lib` step, so a project that
  uses datalith as a git or :local/root dep gets the Java classes compiled
  by `clojure -X:deps prep`. bin/check-deps runs it the same way.

  It resolves nothing: javac runs in this JVM (the JDK's compiler) on this
  JVM's classpath, which the :build alias makes of the libraries the Java
  sources compile against (Clojure and lmdbjava, at the versions of deps.edn's
  :deps). A consumer's own basis already holds those, so the prep step
  fetches nothing, whatever repositories (a mirror, say) the machine reaches.

  The javac options are read from project.clj (:javac-options), so
  Leiningen and this task compile with the same flags."
  (:refer-clojure :exclude [compile])
  (:require [clojure.java.io :as io])
  (:import (java.io File)
           (javax.tools ToolProvider)))

(def class-dir "target/classes")
(def java-src-dirs ["src/java"])

;; Used only if project.clj is missing or names no :javac-options.
(def fallback-javac-opts
  ["-source" "17" "-target" "17" "-Xlint:unchecked" "-Werror" "-Xlint:-options"
   "-Xpkginfo:always"])

(defn- project-clj-options
  "The key/value options of the defproject form in project.clj, or nil."
  []
  (let [f (io/file "project.clj")]
    (when (.exists f)
      (let [form (binding [*read-eval* false] (read-string (slurp f)))]
        (when (and (seq? form) (= 'defproject (first form)))
          (apply hash-map (drop 3 form)))))))

(defn javac-opts []
  (or (seq (:javac-options (project-clj-options))) fallback-javac-opts))

(defn- delete-tree [^File f]
  (when (.isDirectory f)
    (run! delete-tree (.listFiles f)))
  (.delete f))

(defn clean
  "Deletes target/classes."
  [_opts]
  (delete-tree (io/file class-dir)))

(defn- java-sources []
  (sort (for [dir java-src-dirs
              ^File f (file-seq (io/file dir))
              :when (and (.isFile f) (.endsWith (.getName f) ".java"))]
          (.getPath f))))

(defn compile
  "Compiles src/java into target/classes with the JDK's javac, on this JVM's
  classpath. Throws (so `clojure -T:build compile` exits non-zero) when javac
  fails or this JVM has no compiler (a JRE). Takes no options."
  [_opts]
  (let [sources (java-sources)]
    (.mkdirs (io/file class-dir))
    (if (empty? sources)
      (println "build/compile: no Java sources under" (pr-str java-src-dirs))
      (let [javac (or (ToolProvider/getSystemJavaCompiler)
                      (throw (ex-info "build/compile: this JVM has no javac (a JRE?): run it on a JDK"
                                      {:java-home (System/getProperty "java.home")})))
            opts (vec (javac-opts))
            _ (println "build/compile: javac" (count sources) "files in" (pr-str java-src-dirs)
                       "->" class-dir (pr-str opts))
            exit (.run javac nil nil nil
                       (into-array String (concat opts
                                                  ["-cp" (System/getProperty "java.class.path")
                                                   "-d" class-dir]
                                                  sources)))]
        (when-not (zero? exit)
          (throw (ex-info (str "build/compile: javac failed (exit " exit ")") {:exit exit})))))))
