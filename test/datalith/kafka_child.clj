(ns datalith.kafka-child
  "A node of a replicated database in a child JVM, for the Kafka tests (datalith.kafka-test,
  kafka-faults-test and kafka-catch-up-test): connects to DIR following TOPIC on BOOTSTRAP,
  writes N transactions tagged NAME (new entities, and upserts of one shared identity), waits
  until the node applied T-EXPECTED transactions, then prints its basis t and every datom of
  EAVT and of the history, as EDN on one line. With N \"forever\", writes until killed,
  printing `ack i eid` once transaction i is acknowledged (the kill -9 test). With N
  \"catch-up\", only follows the topic, and `pause-in-child` (a transaction function of the
  topic) writes the file T-EXPECTED and blocks there (the kill -9 of a staged catch-up)."
  (:require [datalith.core :as d]
            [datalith.child-jvm :as child])
  (:import (datalith.index Datom)))

(set! *warn-on-reflection* true)

(defn- rows [db]
  (mapv (fn [^Datom x] [(.e x) (.aid x) (.v x) (.tx x) (.added x)]) (d/datoms db :eavt)))

(defn- forever [conn name]
  (doseq [i (range)]
    (let [r (d/transact! conn [{:db/id "u" :user/name (str name i) :user/n i}])]
      (println "ack" i (get-in r [:tempids "u"]))
      (flush))))

(def ^:private pause-file
  "The file `pause-in-child` writes before it blocks: nil (it returns at once) but in a child
  started with N \"catch-up\"."
  (atom nil))

(defn pause-in-child
  "A transaction function that adds nothing: in a child following the topic (N \"catch-up\"),
  it writes the pause file, then blocks its node's applier until the child is killed."
  [_db]
  (when-let [f @pause-file]
    (spit f "paused")
    (Thread/sleep Long/MAX_VALUE))
  [])

(defn -main [dir bootstrap topic name n t-expected]
  (child/exit-with-parent!)
  (when (= n "catch-up")
    (reset! pause-file t-expected)
    (d/connect dir {:log {:kafka {:bootstrap-servers bootstrap :topic topic}}})
    (Thread/sleep Long/MAX_VALUE))
  (when (= n "forever")
    (forever (d/connect dir {:log {:kafka {:bootstrap-servers bootstrap :topic topic}}}) name))
  (with-open [conn (d/connect dir {:log {:kafka {:bootstrap-servers bootstrap :topic topic}}})]
    (dotimes [i (parse-long n)]
      (d/transact! conn [{:db/id "u" :user/name (str name i) :user/n i}
                         {:user/email "shared@x" :user/name (str name i)}]))
    (loop []
      (when (< (d/basis-t (d/sync conn)) (parse-long t-expected))
        (Thread/sleep 50)
        (recur)))
    (let [db (d/db conn)]
      (prn {:basis-t (d/basis-t db) :eavt (rows db) :history (rows (d/history db))})))
  (shutdown-agents)
  (System/exit 0))
