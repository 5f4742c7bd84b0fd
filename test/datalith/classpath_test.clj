(ns datalith.classpath-test
  "The classpath is the one declared: the tests run on the Clojure that project.clj
  pins (and deps.edn, which bin/check-deps keeps in step), not on one that a
  dependency's manifest Class-Path drags in ahead of it (Debian's jars name
  /usr/share/java/clojure.jar)."
  (:require [clojure.java.io :as io]
            [clojure.test :refer [deftest is]]))

(defn- pinned-clojure
  "The version of org.clojure/clojure in project.clj's :dependencies."
  []
  (let [form (binding [*read-eval* false] (read-string (slurp (io/file "project.clj"))))
        deps (:dependencies (apply hash-map (drop 3 form)))]
    (some (fn [[lib version]] (when (= 'org.clojure/clojure lib) version)) deps)))

(deftest runs-on-the-pinned-clojure
  (is (string? (pinned-clojure)))
  (is (= (pinned-clojure) (clojure-version))
      (str "clojure.lang.RT was loaded from "
           (.getLocation (.getCodeSource (.getProtectionDomain clojure.lang.RT))))))
