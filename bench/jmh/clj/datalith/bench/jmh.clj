(ns datalith.bench.jmh
  "`lein jmh [JMH OPTIONS] [REGEX]`: runs the JMH benchmarks of bench/jmh/java
  (compiled, with JMH's annotation processor, by the :jmh profile's javac)
  with JMH's own command-line options, e.g. `lein jmh -f 1 -wi 2 -i 3 Codec`.
  Results also go to bench/out/jmh.json."
  (:require [clojure.java.io :as io])
  (:import (org.openjdk.jmh.results.format ResultFormatType)
           (org.openjdk.jmh.runner Runner)
           (org.openjdk.jmh.runner.options CommandLineOptions OptionsBuilder)))

(set! *warn-on-reflection* true)

(defn -main [& args]
  (let [cli (CommandLineOptions. (into-array String args))
        out (io/file "bench/out/jmh.json")
        _ (io/make-parents out)
        builder (doto (OptionsBuilder.)
                  (.parent cli)
                  (.resultFormat ResultFormatType/JSON)
                  (.result (.getPath out)))
        _ (when (empty? (.getIncludes cli))
            (.include builder "datalith\\.bench\\.jmh\\..*"))
        opts (.build builder)]
    (.run (Runner. opts))
    (shutdown-agents)
    (System/exit 0)))
