(ns datalith.kafka-support
  "What the tests of the transaction log on Apache Kafka share (datalith.kafka-test,
  kafka-faults-test and kafka-catch-up-test): a real KRaft broker in a child JVM
  (datalith.kafka-broker) for each namespace's tests, a topic of its own for each test, nodes
  and the checks that two of them hold the same database, a node in a child JVM
  (datalith.kafka-child), and a transaction function the nodes run."
  (:require [clojure.test :refer [is]]
            [datalith.core :as d]
            [datalith.kafka-broker :as broker])
  (:import (datalith.index Datom)
           (clojure.lang ExceptionInfo)
           (java.io File)
           (java.util Random)))

(set! *warn-on-reflection* true)

(def ^:dynamic *broker* nil)

(def live
  "The running broker's map (its process changes when a test restarts it)."
  (atom nil))

(defn with-broker
  "The :once fixture of each Kafka test namespace: a broker started for its tests, bound to
  *broker* (its running map kept in `live`), and deleted after them."
  [run]
  (let [b (reset! live (broker/start))]
    (try (binding [*broker* b] (run))
         (finally (broker/delete @live)))))

(def schema
  {:user/email {:db/valueType :db.type/string :db/cardinality :db.cardinality/one
                :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   :user/n {:db/valueType :db.type/long :db/cardinality :db.cardinality/one}
   :user/score {:db/valueType :db.type/float :db/cardinality :db.cardinality/one}
   :user/friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}})

(def topics (atom 0))

(defn log-opts
  "The :log option of a new topic (each test its own)."
  []
  {:kafka {:bootstrap-servers (:bootstrap *broker*) :topic (str "t" (swap! topics inc))}})

(defn node ^datalith.conn.Conn [^File dir log]
  (d/connect (str dir) {:log log}))

(defn rows
  "Every datom of index `index` in `db` as vectors."
  [db index]
  (mapv (fn [^Datom x] [(.e x) (.aid x) (.v x) (.tx x) (.added x)]) (d/datoms db index)))

(defn same-everywhere
  "Asserts that every index of every value derived from db-a and db-b holds the same datoms:
  the latest, as-of a few random t, and the history."
  [db-a db-b]
  (is (= (d/basis-t db-a) (d/basis-t db-b)))
  (doseq [index [:eavt :aevt :avet :vaet]]
    (is (= (rows db-a index) (rows db-b index)) (str index)))
  (is (= (rows (d/history db-a) :eavt) (rows (d/history db-b) :eavt)) "history")
  (let [r (Random. 20)]
    (dotimes [_ 5]
      (let [t (inc (.nextInt r (int (d/basis-t db-a))))]
        (is (= (rows (d/as-of db-a t) :eavt) (rows (d/as-of db-b t) :eavt)) (str "as-of " t))))))

(defn ex-error [f]
  (try (f) nil (catch ExceptionInfo e (:error (ex-data e)))))

(defn start-child
  "A child JVM running datalith.kafka-child with `args`; its stderr to a file in `dir`."
  ^Process [^File dir & args]
  (let [cmd (concat [(str (System/getProperty "java.home") "/bin/java")
                     "-cp" (System/getProperty "java.class.path")
                     "--add-opens=java.base/java.nio=ALL-UNNAMED"
                     "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
                     "-XX:+UseSerialGC" "-XX:TieredStopAtLevel=1" "-Xmx256m"
                     "clojure.main" "-m" "datalith.kafka-child"]
                    (map str args))]
    (-> (ProcessBuilder. ^java.util.List (vec cmd))
        (.redirectError (java.io.File. dir "child.err"))
        (.start))))

(defn inc-n
  "A transaction function for the node tests: sets `email`'s :user/n to one more than it is."
  [db email]
  (let [n (ffirst (d/q '[:find ?n :in $ ?m :where [?e :user/email ?m] [?e :user/n ?n]] db email))]
    [{:user/email email :user/n (inc (or n 0))}]))
