(ns datalith.bench.jmh-fixture
  "The database the JMH benchmarks read: the issue-tracker workload loaded
  into datalith (LMDB in a temporary directory, or in memory)."
  (:require [datalith.core :as d]
            [datalith.workload :as w])
  (:import (java.io File)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)))

(set! *warn-on-reflection* true)

(defn open
  "A connection to a new database of kind store (\"lmdb\" or \"mem\") holding
  the workload at scale (\"100k\", ...); returns [conn dir-or-nil]."
  [store scale]
  (let [dir (when (= "lmdb" store)
              (.toFile (Files/createTempDirectory "datalith-jmh" (make-array FileAttribute 0))))
        conn (d/connect (if dir (.getPath ^File dir) :mem) {:schema w/schema :sync false})]
    (w/load! (w/generate (keyword scale))
             {:transact (fn [tx-data]
                          (let [r (d/transact! conn tx-data)]
                            {:t (d/basis-t (:db-after r)) :tempids (:tempids r)}))})
    [conn dir]))

(defn close
  "Closes conn and deletes dir (when not nil)."
  [conn ^File dir]
  (d/close conn)
  (when dir
    (doseq [^File f (reverse (file-seq dir))] (.delete f))))
