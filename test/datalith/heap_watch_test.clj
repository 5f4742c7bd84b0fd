(ns datalith.heap-watch-test
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [datalith.heap-watch :as heap-watch]))

(deftest the-report-names-every-thread-and-the-largest-classes
  (let [r (heap-watch/report "why")]
    (is (str/starts-with? r "heap-watch: why\n"))
    (is (str/includes? r (str "\"" (.getName (Thread/currentThread)) "\" RUNNABLE")))
    (is (str/includes? r "at datalith.heap_watch"))
    (is (re-find #"\n +1: +\d+ +\d+ +\S+" r) "the histogram's first row")))
