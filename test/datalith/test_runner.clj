(ns datalith.test-runner
  "Plain clojure.test runner for the deps.edn classpath (no Leiningen).

    java <jvm-opts> -cp <deps.edn :test classpath> clojure.main -m datalith.test-runner [ns ...]

  Without arguments it runs every namespace whose file ends in _test.clj
  under test/. Prints `N passed, N failed` (assertions passed; failures +
  errors) as its last line and exits non-zero when anything failed, errored
  or could not be loaded. bin/check-deps uses it; `bin/test` (lein test) is
  the everyday command. Defines no tests itself, so `lein test` loading it
  is harmless."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :as t]))

(def test-dir "test")

(defn- file->ns [^java.io.File root ^java.io.File f]
  (let [rel (-> (.relativize (.toPath root) (.toPath f)) str)]
    (-> rel
        (str/replace #"\.clj$" "")
        (str/replace java.io.File/separator ".")
        (str/replace "_" "-")
        symbol)))

(defn test-namespaces
  "Namespaces of all *_test.clj files under dir, sorted."
  [dir]
  (let [root (.getCanonicalFile (io/file dir))]
    (->> (file-seq root)
         (filter #(and (.isFile ^java.io.File %)
                       (str/ends-with? (.getName ^java.io.File %) "_test.clj")))
         (map #(file->ns root (.getCanonicalFile ^java.io.File %)))
         sort)))

(defn run
  "Loads and runs nses; returns {:pass :fail :error :test :load-errors}."
  [nses]
  (let [load-errors (reduce (fn [errs ns-sym]
                              (try (require ns-sym) errs
                                   (catch Throwable e
                                     (binding [*out* *err*]
                                       (println "ERROR loading" ns-sym)
                                       (.printStackTrace e))
                                     (inc errs))))
                            0 nses)
        loaded (filter find-ns nses)
        summary (if (seq loaded)
                  (apply t/run-tests loaded)
                  {:test 0 :pass 0 :fail 0 :error 0})]
    (assoc summary :load-errors load-errors)))

(defn -main [& args]
  (let [nses (if (seq args) (map symbol args) (test-namespaces test-dir))
        _ (when (empty? nses)
            (println "WARNING: no *_test.clj namespaces found under" test-dir))
        {:keys [pass fail error load-errors] :as _summary} (run nses)
        failed (+ fail error load-errors)]
    (println)
    (println (str pass " passed, " failed " failed"))
    (flush)
    (shutdown-agents)
    (System/exit (if (zero? failed) 0 1))))
