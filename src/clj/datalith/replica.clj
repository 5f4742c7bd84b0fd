(ns datalith.replica
  "A connection as a node of a replicated database (issue #20): its transactions go through a
  transaction log that every node follows, each keeping its own full copy of the indexes.
  The log is an Apache Kafka topic of one partition (datalith.log.KafkaLog); datalith.log.Node
  applies its records in order. `datalith.core/connect` calls `follow!` for its `:log` option."
  (:require [datalith.args :refer [error]])
  (:import (datalith.conn Conn)
           (datalith.log KafkaLog Node)
           (java.time Duration)))

(set! *warn-on-reflection* true)

(defn- kafka-log
  "The KafkaLog of the `:kafka` option map {:bootstrap-servers \"h:p,...\" :topic \"t\"},
  with :timeout-ms (at least 1000, default 30000) how long an append waits for Kafka before
  failing with :log/unknown-outcome."
  ^KafkaLog [{:keys [bootstrap-servers topic timeout-ms] :as kafka}]
  (when-not (and (string? bootstrap-servers) (seq bootstrap-servers))
    (throw (error :db/invalid-options ":log {:kafka {:bootstrap-servers \"host:port,...\"}} is a string"
                  {:kafka kafka})))
  (when-not (and (string? topic) (seq topic))
    (throw (error :db/invalid-options ":log {:kafka {:topic \"name\"}} is a string" {:kafka kafka})))
  (when-not (or (nil? timeout-ms) (int? timeout-ms))
    (throw (error :db/invalid-options ":log {:kafka {:timeout-ms ms}} is a whole number"
                  {:kafka kafka})))
  (KafkaLog/open bootstrap-servers topic (long (or timeout-ms KafkaLog/TIMEOUT_MS))))

(defn follow!
  "Makes `conn` a node following the log that `log-opts` names ({:kafka {...}}); returns conn."
  ^Conn [^Conn conn log-opts]
  (when-not (and (map? log-opts) (= [:kafka] (keys log-opts)) (map? (:kafka log-opts)))
    (throw (error :db/invalid-options ":log is {:kafka {:bootstrap-servers \"h:p\" :topic \"t\"}}"
                  {:log log-opts})))
  (Node/start conn (kafka-log (:kafka log-opts)))
  conn)

(def default-timeout-ms
  "How long `sync` waits for a node at most, by default."
  (.toMillis ^Duration Node/SYNC_TIMEOUT))

(defn await-t!
  "When `conn` is a node, waits until its basis t is at least `t`, at most `timeout-ms`
  (:log/timeout), and returns true; nil when `conn` is embedded."
  [^Conn conn t timeout-ms]
  (when-let [n (.replicated conn)]
    (when (neg? (long timeout-ms))
      (throw (error :db/invalid-t "A timeout is a count of milliseconds, not negative"
                    {:timeout-ms timeout-ms})))
    (.awaitT ^Node n (long t) (Duration/ofMillis timeout-ms))
    true))

(defn sync!
  "When `conn` is a node, waits until it applied every record its log held at the call."
  [^Conn conn]
  (when-let [n (.replicated conn)]
    (.sync ^Node n)))

(defn- import-report [{:keys [transactions datoms t-first t-last skipped stopped-at start]}]
  {:transactions transactions :datoms datoms :t-first t-first :t-last t-last :skipped skipped
   :stopped-at stopped-at :elapsed-ms (quot (- (System/nanoTime) start) 1000000)})

(defn- import-error
  "`e`, the error of chunk `chunk`, with :import/chunk and :import/report, as an embedded
  import gives it."
  [^Throwable e chunk st]
  (let [info (if (and (instance? clojure.lang.ExceptionInfo e) (ex-data e))
               e
               (error :import/failed (str "The import failed: " e) {}))]
    (ex-info (str (ex-message info) " (import chunk " chunk ")")
             (assoc (ex-data info) :import/chunk chunk :import/report (import-report st))
             info)))

(defn import-chunks!
  "import! on a node: each chunk of tx-data one record of the log, transacted through it as
  `transact!` does, one after another (a chunk that fails stops the import and nothing after it
  is appended); the report and errors of an embedded import (datalith.conn.Import). An export
  record {:t :tx-data} is refused: its explicit t and entity ids hold only in the database it
  came from, so import an export into an embedded database, then seed every node from a backup
  of it (`d/backup`) on a new topic."
  [^Conn conn chunks progress skip]
  (let [^Node n (.replicated conn)]
    (loop [chunks (seq chunks)
           st {:chunk 0 :transactions 0 :datoms 0 :t-first nil :t-last nil :skipped 0
               :stopped-at nil :start (System/nanoTime)}]
      (let [step (try (when chunks {:c (first chunks) :more (next chunks)})
                      (catch Exception e (throw (import-error e (:chunk st) st))))]
        (if-not step
          (import-report st)
          (let [{:keys [c more]} step
                i (:chunk st)]
            (cond
              (< i (long (or skip 0)))
              (recur more (-> st (update :chunk inc) (update :skipped inc)))

              (and (map? c) (contains? c :tx-data))
              (throw (import-error
                      (error :import/record-t
                             (str "An export record imports only into an embedded database: import"
                                  " it there, then seed the nodes from its backup")
                             {:t (:t c)})
                      i st))

              :else
              (let [r (try (.transact n c) (catch Exception e (throw (import-error e i st))))
                    t (.basisT ^datalith.db.Db (.-dbAfter ^datalith.conn.TxReport r))
                    st (-> st
                           (update :chunk inc)
                           (update :transactions inc)
                           (update :datoms + (count (.-txData ^datalith.conn.TxReport r)))
                           (update :t-first #(or % t))
                           (assoc :t-last t))]
                (if (and progress
                         (= :stop (try (progress {:chunk i :transactions (:transactions st)
                                                  :datoms (:datoms st) :basis-t t
                                                  :elapsed-ms (quot (- (System/nanoTime)
                                                                       (:start st))
                                                                    1000000)})
                                       (catch Exception e (throw (import-error e i st))))))
                  (import-report (assoc st :stopped-at (inc i)))
                  (recur more st))))))))))
