(ns datalith.bench.small-heap
  "Run by `lein bench` in a child JVM with -Xmx256m: opens the datalith LMDB
  database the parent loaded and times the reads on it. Prints
  {:results {op stats}} as its last line of stdout.

    java -Xmx256m ... clojure.main -m datalith.bench.small-heap PLAN.edn"
  (:require [clojure.edn :as edn]
            [datalith.bench.datalith :as datalith]
            [datalith.bench.harness :as harness]
            [datalith.bench.system :as system])
  (:import (java.io File)
           (java.util HashMap)))

(set! *warn-on-reflection* true)

(defn -main [plan-file]
  (let [{:keys [dir points args ids] :as plan} (edn/read-string (slurp plan-file))
        s (datalith/lmdb-existing (File. ^String dir) (HashMap. ^java.util.Map ids))]
    (system/prepare! s points)
    (binding [*out* *err*]
      (println (format "  max heap %d MiB" (quot (.maxMemory (Runtime/getRuntime)) 1048576))))
    (let [results (into {}
                        (for [op system/read-ops]
                          [op (harness/measure #(system/run-op s nil op %) (args op) plan)]))]
      (datalith/release! s)
      (prn {:results results})
      (shutdown-agents)
      (System/exit 0))))
