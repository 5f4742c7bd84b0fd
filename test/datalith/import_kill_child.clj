(ns datalith.import-kill-child
  "The child JVM of datalith.import-test's kill tests: imports an export file into an LMDB
  directory with :resume? true, staged or not (STAGED: true or false), writing `chunk N` to
  stdout after each committed (or staged) chunk, until its parent kills it (or the import
  ends: `done`).

    java ... clojure.main -m datalith.import-kill-child DIR FILE STAGED"
  (:require [datalith.child-jvm :as child]
            [datalith.core :as d]))

(defn -main [dir file staged]
  (child/exit-with-parent!)
  (with-open [conn (d/connect dir)]
    (d/import! conn file {:resume? true
                          :staged (= "true" staged)
                          :progress (fn [{:keys [chunk]}]
                                      (println "chunk" chunk)
                                      (flush))}))
  (println "done")
  (flush)
  (shutdown-agents))
