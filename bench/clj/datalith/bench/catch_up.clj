(ns datalith.bench.catch-up
  "A fresh node's catch-up from a Kafka topic, repeated in one JVM (issue #20): node A loads
  the tracker through transact! (as datalith.bench.replicated does), then --reps fresh nodes,
  one after another, each catch up the whole topic: datoms/s after the connect, and the CPU
  time of the node's applier (the critical path) and of its reader (reads and decodes the log
  ahead of the applier). The first catch-up runs on cold code (the staged path's first calls),
  the later ones on warm code. See bench/README.md.

    lein with-profile +bench run -m datalith.bench.catch-up [options]
      --scale S     100k, 300k or 1m (default 300k)
      --reps N      catch-ups, each a fresh node (default 5)
      --out DIR     output directory (default bench/out)"
  (:require [clojure.java.io :as io]
            [datalith.bench.harness :as harness]
            [datalith.bench.replicated :as replicated]
            [datalith.bench.system :refer [delete-tree]]
            [datalith.core :as d]
            [datalith.kafka-broker :as broker]
            [datalith.workload :as w])
  (:import (java.io File)))

(set! *warn-on-reflection* true)

(def ^:private usage
  "lein with-profile +bench run -m datalith.bench.catch-up [--scale 100k|300k|1m] [--reps N] [--out DIR]")

(def ^:private defaults {:scale "300k" :reps 5 :out "bench/out"})

(def ^:private setters
  {"--scale" #(assoc %1 :scale %2)
   "--reps" #(assoc %1 :reps (parse-long %2))
   "--out" #(assoc %1 :out %2)})

(defn- run-all
  "The load, then the catch-ups: the rows."
  [{:keys [scale reps out]}]
  (let [data (w/generate (keyword scale))
        dir (io/file out "catch-up" scale)
        [^File da ^File db] (map #(io/file dir %) ["a" "b"])
        b (broker/start)
        log-opts {:kafka {:bootstrap-servers (:bootstrap b) :topic "tracker"}}]
    (try
      (delete-tree da)
      (with-open [a (d/connect (.getPath da) {:log log-opts :schema w/schema})]
        (w/load! data {:transact (fn [tx-data]
                                   (let [r (d/transact! a tx-data)]
                                     {:t (d/basis-t (:db-after r)) :tempids (:tempids r)}))})
        (let [datoms (count (d/datoms (d/history (d/db a)) :eavt))]
          (vec (for [i (range reps)]
                 (let [[conn row] (replicated/catch-up db log-opts datoms (str "catch-up-" i))]
                   (d/close conn)
                   (assoc row :scale scale))))))
      (finally
        (broker/delete b)
        (delete-tree dir)))))

(defn -main [& argv]
  (let [opts (harness/parse-args defaults setters usage argv)
        rows (run-all opts)
        out (io/file (:out opts) (str "catch-up-" (:scale opts) ".edn"))]
    (io/make-parents out)
    (spit out (pr-str {:machine (harness/machine) :rows rows}))
    (println (harness/machine))
    (doseq [{:keys [op datoms-per-s applier-cpu-s reader-cpu-s]} rows]
      (println (format "%s: %,.0f datoms/s, applier CPU %.2f s, reader CPU %.2f s"
                       op (double datoms-per-s) (double applier-cpu-s) (double reader-cpu-s))))
    (shutdown-agents)))
