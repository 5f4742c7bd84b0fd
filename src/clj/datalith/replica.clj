(ns datalith.replica
  "A connection as a node of a replicated database (issue #20): its transactions go through a
  transaction log that every node follows, each keeping its own full copy of the indexes.
  The log is an Apache Kafka topic of one partition (datalith.log.KafkaLog); datalith.log.Node
  applies its records in order. `datalith.core/connect` calls `follow!` for its `:log` option."
  (:require [datalith.args :refer [error]])
  (:import (datalith.conn Conn)
           (datalith.log KafkaLog Node)))

(set! *warn-on-reflection* true)

(defn- kafka-log
  "The KafkaLog of the `:kafka` option map {:bootstrap-servers \"h:p,...\" :topic \"t\"}."
  ^KafkaLog [{:keys [bootstrap-servers topic] :as kafka}]
  (when-not (and (string? bootstrap-servers) (seq bootstrap-servers))
    (throw (error :db/invalid-options ":log {:kafka {:bootstrap-servers \"host:port,...\"}} is a string"
                  {:kafka kafka})))
  (when-not (and (string? topic) (seq topic))
    (throw (error :db/invalid-options ":log {:kafka {:topic \"name\"}} is a string" {:kafka kafka})))
  (KafkaLog/open bootstrap-servers topic))

(defn follow!
  "Makes `conn` a node following the log that `log-opts` names ({:kafka {...}}); returns conn."
  ^Conn [^Conn conn log-opts]
  (when-not (and (map? log-opts) (= [:kafka] (keys log-opts)) (map? (:kafka log-opts)))
    (throw (error :db/invalid-options ":log is {:kafka {:bootstrap-servers \"h:p\" :topic \"t\"}}"
                  {:log log-opts})))
  (Node/start conn (kafka-log (:kafka log-opts)))
  conn)

(defn sync!
  "When `conn` is a node, waits until it applied every record its log held at the call."
  [^Conn conn]
  (when-let [n (.replicated conn)]
    (.sync ^Node n)))
