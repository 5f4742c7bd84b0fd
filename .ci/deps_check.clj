;; Proves deps.edn and project.clj agree, and that the deps.edn build works.
;; Run by bin/check-deps (which puts tools.deps on the classpath):
;;
;;   java -cp <tools.deps classpath> clojure.main .ci/deps_check.clj [--local-repo]
;;
;; from the project root. --local-repo: Clojars is unreachable, so resolve
;; with Debian's /usr/share/maven-repo in its place (like bin/setup does for
;; Leiningen).
;;
;; Steps:
;;   a. basis of deps.edn with alias :test
;;   b. its top-level libs/versions/exclusions (and paths, jvm-opts) against
;;      project.clj :dependencies + :profiles :dev :dependencies; every lib it
;;      resolves, transitive ones too, against the jars of `lein classpath`
;;      (--lein-classpath FILE), at the same versions; then every
;;      other project.clj profile (:bench, :jmh, ...) against the deps.edn
;;      alias of the same name: declared and resolved libs, paths, jvm-opts
;;   c. the :deps/prep-lib step: its alias's libs must all be in the project's
;;      basis at the same versions and resolve with no remote repository (so a
;;      consumer's prep fetches nothing its basis lacks, e.g. behind a mirror);
;;      then build/compile on that alias basis, as tools.deps prep-libs! runs
;;      it, must create target/classes
;;   d. tests on the :test classpath via datalith.test-runner: the same jars as the
;;      suite lein ran (b), so the namespaces of what differs here: the classpath's
;;      order (Clojure first), the Java classes build/compile made, the README's
;;      tour and Java example, the Java API, and the core's everyday paths
(ns deps-check
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.set :as set]
            [clojure.string :as str]
            [clojure.tools.deps :as deps])
  (:import (java.io File)
           (java.util List)))

(def local-repo? (boolean (some #{"--local-repo"} *command-line-args*)))

(def extra
  (when local-repo?
    {:mvn/repos {"clojars" nil
                 "debian" {:url "file:///usr/share/maven-repo"}}}))

(defn fail! [& msg]
  (binding [*out* *err*]
    (println)
    (println (str "check-deps: FAILED: " (str/join " " msg))))
  (System/exit 1))

(defn step [s] (println) (println (str "--- check-deps: " s)) (flush))

;; ---------------------------------------------------------------- project.clj

(defn read-project []
  (let [form (binding [*read-eval* false] (read-string (slurp "project.clj")))]
    (when-not (and (seq? form) (= 'defproject (first form)))
      (fail! "project.clj does not start with (defproject ...)"))
    (apply hash-map (drop 3 form))))

(defn lein-lib
  "Leiningen's name for a lib -> tools.deps lib symbol (foo == foo/foo)."
  [sym]
  (if (namespace sym) sym (symbol (name sym) (name sym))))

(defn lein-exclusions [excl]
  (set (map #(lein-lib (if (sequential? %) (first %) %)) excl)))

(defn lein-deps
  "{lib {:version v :exclusions #{...}}} of a Leiningen :dependencies vector."
  [dep-vec]
  (into (sorted-map)
        (for [[lib version & opts] dep-vec
              :let [opts (apply hash-map opts)]]
          [(lein-lib lib) {:version version
                           :exclusions (lein-exclusions (:exclusions opts))}])))

;; ------------------------------------------------------------------- deps.edn

(defn edn-deps
  "{lib {:version v :exclusions #{...}}} of a deps.edn deps map."
  [deps-map]
  (into (sorted-map)
        (for [[lib coord] deps-map]
          [lib {:version (or (:mvn/version coord) coord)
                :exclusions (set (:exclusions coord))}])))

(defn top-level-resolved
  "{lib version} of the libs the basis resolved as top-level deps."
  [basis]
  (into (sorted-map)
        (for [[lib coord] (:libs basis)
              :when (contains? (set (:parents coord)) [])]
          [lib (or (:mvn/version coord) (select-keys coord [:local/root :git/sha]))])))

;; --------------------------------------------------------------------- checks

(defn diff-maps
  "Lines describing how map a (named an) and map b (named bn) differ."
  [an a bn b]
  (for [k (sort-by str (set/union (set (keys a)) (set (keys b))))
        :let [va (get a k) vb (get b k)]
        :when (not= va vb)]
    (format "  %-32s %s: %-40s %s: %s" k an (pr-str va) bn (pr-str vb))))

(defn check-agreement [project basis edn]
  (let [lein (merge (lein-deps (:dependencies project))
                    (lein-deps (get-in project [:profiles :dev :dependencies])))
        test-alias (get-in edn [:aliases :test])
        declared (merge (edn-deps (:deps edn)) (edn-deps (:extra-deps test-alias)))
        resolved (top-level-resolved basis)
        problems
        (concat
         (when-let [d (seq (diff-maps "project.clj" lein "deps.edn" declared))]
           (cons "deps.edn :deps + :test :extra-deps differ from project.clj :dependencies + :dev :dependencies:" d))
         (when-let [d (seq (diff-maps "project.clj" (update-vals lein :version)
                                      "resolved" resolved))]
           (cons "top-level libs resolved from deps.edn (:test) differ from project.clj:" d))
         (let [lein-paths (set (concat (:source-paths project) (:resource-paths project)))
               edn-paths (disj (set (:paths edn)) "target/classes")]
           (when (not= lein-paths edn-paths)
             [(str "paths: project.clj :source-paths+:resource-paths " (pr-str (sort lein-paths))
                   " vs deps.edn :paths (less target/classes) " (pr-str (sort edn-paths)))]))
         (when (not= (set (:test-paths project)) (set (:extra-paths test-alias)))
           [(str "test paths: project.clj :test-paths " (pr-str (:test-paths project))
                 " vs deps.edn :test :extra-paths " (pr-str (:extra-paths test-alias)))])
         (when (not= (vec (:jvm-opts project)) (vec (:jvm-opts test-alias)))
           [(str "jvm-opts: project.clj :jvm-opts " (pr-str (:jvm-opts project))
                 " vs deps.edn :test :jvm-opts " (pr-str (:jvm-opts test-alias)))]))]
    (if (seq problems)
      (do (binding [*out* *err*] (doseq [p problems] (println p)))
          (fail! "deps.edn and project.clj disagree (see above). Change both files together."))
      (doseq [[lib v] resolved]
        (println (format "  ok %-32s %s" lib v))))))

(def lein-tooling
  "Libs on Leiningen's classpath that Leiningen itself adds (its :base profile's REPL), not
  project.clj."
  '#{nrepl/nrepl org.nrepl/incomplete})

(defn jar-coords
  "[lib version] of a jar in a Maven layout (~/.m2/repository, /usr/share/maven-repo), the lib
  named as tools.deps names it (a classifier after a $); nil for anything else."
  [path]
  (when-let [[_ g a v file] (re-matches #".*/(?:repository|maven-repo)/(.+)/([^/]+)/([^/]+)/([^/]+)\.jar"
                                        (str/trim path))]
    (let [classifier (not-empty (subs file (min (count file) (count (str a "-" v "-")))))]
      [(symbol (str/replace g "/" ".") (cond-> a classifier (str "$" classifier))) v])))

(defn check-same-classpath
  "Every lib of the deps.edn :test basis, transitive ones too, at the version of the jar
  Leiningen puts on the test classpath (`lein classpath`, in file `lein-cp`): Maven's nearest
  declaration wins where tools.deps takes the newest version, so the two can differ below the
  top level. Where they agree, the suite lein ran ran on the same jars."
  [basis lein-cp]
  (let [edn-libs (into (sorted-map) (for [[lib coord] (:libs basis)] [lib (:mvn/version coord)]))
        lein-libs (into (sorted-map)
                        (comp (keep jar-coords) (remove (comp lein-tooling first)))
                        (str/split (slurp lein-cp) (re-pattern File/pathSeparator)))]
    (if-let [d (seq (diff-maps "lein classpath" lein-libs "deps.edn :test basis" edn-libs))]
      (do (binding [*out* *err*]
            (println "the libs of the two test classpaths differ:")
            (doseq [line d] (println line)))
          (fail! "deps.edn resolves other libs than project.clj (see above): pin or exclude in both files."))
      (println (format "  ok the same %d libs at the same versions on both test classpaths" (count edn-libs))))))

(defn- alias-basis
  "The basis of deps.edn with `alias` (nil and a message when it does not resolve)."
  [alias]
  (try [(deps/create-basis (cond-> {:project "deps.edn" :aliases [alias]}
                             extra (assoc :extra extra)))
        nil]
       (catch Exception e
         [nil (str "cannot resolve deps.edn with alias " alias ": " (ex-message e))])))

(defn check-profiles
  "Every project.clj profile but :dev against the deps.edn alias of its name:
  :dependencies = :extra-deps (versions, exclusions), :source-paths +
  :resource-paths = :extra-paths, project :jvm-opts + profile :jvm-opts =
  :jvm-opts, and the alias resolves with those libs at top level."
  [project edn]
  (let [base (lein-deps (:dependencies project))
        problems
        (for [[pname profile] (sort-by key (dissoc (:profiles project) :dev))
              :let [alias (get-in edn [:aliases pname])]
              problem
              (if-not alias
                [(str "project.clj profile " pname " has no deps.edn alias " pname)]
                (let [lein (lein-deps (:dependencies profile))
                      declared (edn-deps (:extra-deps alias))
                      [basis error] (alias-basis pname)
                      lein-paths (set (concat (:source-paths profile) (:resource-paths profile)))
                      edn-paths (set (:extra-paths alias))
                      lein-jvm (vec (concat (:jvm-opts project) (:jvm-opts profile)))
                      edn-jvm (vec (:jvm-opts alias))]
                  (concat
                   (when-let [d (seq (diff-maps "project.clj" lein "deps.edn" declared))]
                     (cons (str "deps.edn " pname " :extra-deps differ from project.clj profile "
                                pname " :dependencies:")
                           d))
                   (when error [error])
                   (when basis
                     (when-let [d (seq (diff-maps "project.clj"
                                                  (update-vals (merge base lein) :version)
                                                  "resolved" (top-level-resolved basis)))]
                       (cons (str "top-level libs resolved from deps.edn with " pname
                                  " differ from project.clj :dependencies + profile " pname ":")
                             d)))
                   (when (not= lein-paths edn-paths)
                     [(str "paths: project.clj profile " pname " :source-paths+:resource-paths "
                           (pr-str (sort lein-paths)) " vs deps.edn " pname " :extra-paths "
                           (pr-str (sort edn-paths)))])
                   (when (not= lein-jvm edn-jvm)
                     [(str "jvm-opts: project.clj :jvm-opts + profile " pname " :jvm-opts "
                           (pr-str lein-jvm) " vs deps.edn " pname " :jvm-opts " (pr-str edn-jvm))]))))]
          problem)]
    (if (seq problems)
      (do (binding [*out* *err*] (doseq [p problems] (println p)))
          (fail! "project.clj profiles and deps.edn aliases disagree (see above). Change both files together."))
      (doseq [pname (sort (keys (dissoc (:profiles project) :dev)))]
        (println (format "  ok profile %s = alias %s (%d libs)" pname pname
                         (count (get-in project [:profiles pname :dependencies]))))))))

;; ----------------------------------------------------------------- processes

(defn java-cmd []
  (or (System/getenv "JAVA_CMD")
      (when-let [h (System/getenv "JAVA_HOME")]
        (let [f (io/file h "bin" "java")] (when (.exists f) (str f))))
      "java"))

(defn run-process!
  "Runs args with inherited stdout/stderr, and `env` added to the environment;
  returns the exit code."
  ([args] (run-process! args {}))
  ([args env]
   (let [pb (doto (ProcessBuilder. ^List (vec args))
              (.inheritIO))]
     (.putAll (.environment pb) ^java.util.Map env)
     (.waitFor (.start pb)))))

(defn join-cp [roots] (str/join File/pathSeparator roots))

(defn- lib-versions
  "{lib version-or-coord} of every lib a basis resolved."
  [basis]
  (into (sorted-map)
        (for [[lib coord] (:libs basis)]
          [lib (or (:mvn/version coord) (select-keys coord [:local/root :git/sha]))])))

(def offline-extra
  "deps.edn data that removes every remote repository: resolution must then come from
  the local repository alone."
  {:mvn/repos {"central" nil "clojars" nil "debian" nil}})

(defn prep-basis
  "The basis tools.deps gives the prep alias (tool mode: alias deps only, paths [\".\"]),
  with `extra` merged in."
  [alias extra]
  (deps/create-basis (cond-> {:project "deps.edn"
                              :args {:replace-deps {} :replace-paths ["."]}
                              :aliases [alias]}
                       extra (assoc :extra extra))))

(defn check-prep-needs-nothing-new!
  "The prep step must fetch nothing that a consumer's basis lacks (a machine whose only
  repository is a mirror of what the consumer resolved): every lib of the prep alias's
  basis is in the project's basis at the same version, and the alias resolves with every
  remote repository removed, from what resolving the project put in the local repository."
  [project-basis alias]
  (let [project-libs (lib-versions project-basis)
        prep-libs (lib-versions (prep-basis alias extra))
        extra-libs (into (sorted-map) (remove (fn [[lib v]] (= v (get project-libs lib)))) prep-libs)]
    (when (seq extra-libs)
      (binding [*out* *err*]
        (doseq [[lib v] extra-libs]
          (println (format "  %-32s prep alias: %-12s project basis: %s"
                           lib (pr-str v) (pr-str (get project-libs lib))))))
      (fail! (str "the prep alias " alias " needs libs (or versions) that deps.edn's own basis"
                  " lacks (above): a consumer's `clojure -X:deps prep` would fetch them")))
    (try (prep-basis alias offline-extra)
         (catch Exception e
           (fail! (str "the prep alias " alias " does not resolve without remote repositories: "
                       (ex-message e)))))
    (println (format "  ok the %s alias resolves %d libs, all in the project's basis at its versions, offline"
                     alias (count prep-libs)))))

(defn prep-lib!
  "Runs the :deps/prep-lib step the way clojure.tools.deps/prep-libs! does:
  basis of the prep alias in tool mode (alias deps only, paths [\".\"]),
  then java -cp <that> clojure.main -e '((requiring-resolve 'build/compile) nil)'."
  [edn project-basis]
  (let [{alias :alias f :fn ensure :ensure :as prep} (:deps/prep-lib edn)]
    (when-not (and alias f ensure)
      (fail! "deps.edn has no complete :deps/prep-lib {:alias :fn :ensure}:" (pr-str prep)))
    (check-prep-needs-nothing-new! project-basis alias)
    (let [ensure-dir (io/file ensure)
          _ (doseq [^File x (reverse (file-seq ensure-dir))] (.delete x))
          basis (prep-basis alias offline-extra)
          ns-default (get-in edn [:aliases alias :ns-default])
          qf (if (qualified-symbol? f) f (symbol (str ns-default) (str f)))
          code (str "(do (if-let [f (requiring-resolve '" qf ")] (f nil)"
                    " (do (println \"cannot resolve " qf "\") (System/exit 1))) (shutdown-agents) nil)")
          _ (println "  running" qf "with the" alias "alias basis (resolved offline)")
          exit (run-process! [(java-cmd) "-cp" (join-cp (:classpath-roots basis)) "clojure.main" "-e" code])]
      (when-not (zero? exit)
        (fail! (str "prep-lib step " qf " exited with " exit)))
      (when-not (.isDirectory ensure-dir)
        (fail! (str "prep-lib step " qf " did not create " ensure)))
      (let [java-files (count (filter #(str/ends-with? (str %) ".java") (file-seq (io/file "src/java"))))
            class-files (count (filter #(str/ends-with? (str %) ".class") (file-seq ensure-dir)))]
        (when (and (pos? java-files) (zero? class-files))
          (fail! (str "prep-lib step left no .class files in " ensure)))
        (println (format "  ok %s: %d .java files -> %d .class files in %s"
                         qf java-files class-files ensure))))))

(defn clojure-first
  "The basis's classpath roots with Clojure's jar ahead of every other lib's (after the
  project's own paths). tools.deps orders libs by name, and a jar the JVM opens pushes the
  jars its manifest Class-Path names in front of the rest: Debian's nippy (com.taoensso,
  before org.clojure) names /usr/share/java/clojure.jar, which would shadow the pinned
  Clojure. datalith.classpath-test checks the version the suite runs on."
  [basis]
  (let [roots (:classpath-roots basis)
        lib-of (fn [root] (get-in basis [:classpath root :lib-name]))
        clojure? #(= 'org.clojure/clojure (lib-of %))]
    (concat (remove lib-of roots) (filter clojure? roots) (filter #(and (lib-of %) (not (clojure? %))) roots))))

(defn run-tests! [basis & namespaces]
  (let [jvm-opts (get-in basis [:argmap :jvm-opts])
        cmd (concat [(java-cmd)] jvm-opts
                    ["-cp" (join-cp (clojure-first basis))
                     "clojure.main" "-m" "datalith.test-runner"]
                    namespaces)
        _ (println "  java" (str/join " " jvm-opts) "-cp <deps.edn :test classpath> clojure.main -m datalith.test-runner"
                   (str/join " " namespaces))
        _ (flush)
        exit (run-process! cmd)]
    (when-not (zero? exit)
      (fail! (str "tests failed on the deps.edn :test classpath (exit " exit ")")))))

;; ----------------------------------------------------------------------- main

(let [project (read-project)
      deps-edn (edn/read-string (slurp "deps.edn"))
      _ (step (str "a. basis of deps.edn with alias :test"
                   (when local-repo? " (Clojars unreachable: using file:///usr/share/maven-repo)")))
      basis (try (deps/create-basis (cond-> {:project "deps.edn" :aliases [:test]}
                                      extra (assoc :extra extra)))
                 (catch Exception e
                   (fail! "cannot resolve deps.edn :test basis:" (ex-message e))))
      _ (println (format "  resolved %d libs, %d classpath roots"
                         (count (:libs basis)) (count (:classpath-roots basis))))]
  (step "b. deps.edn agrees with project.clj")
  (check-agreement project basis deps-edn)
  (check-same-classpath basis (second (drop-while #(not= "--lein-classpath" %) *command-line-args*)))
  (check-profiles project deps-edn)
  (step "c. :deps/prep-lib (build/compile: javac on the :build alias classpath, nothing fetched)")
  (prep-lib! deps-edn basis)
  (step "d. tests on the deps.edn :test classpath")
  (run-tests! basis "datalith.classpath-test" "datalith.readme-test" "datalith.java-api-test"
              "datalith.codec-test" "datalith.transact-test" "datalith.transact-ids-test"
              "datalith.transact-values-test" "datalith.query-basic-test" "datalith.pull-test")
  (shutdown-agents)
  (System/exit 0))
