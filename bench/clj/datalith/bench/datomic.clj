(ns datalith.bench.datomic
  "Datomic Local (com.datomic/local, client API), in memory or on disk."
  (:require [datalith.bench.queries :as queries]
            [datalith.bench.system :as system]
            [datalith.workload :as workload]
            [datomic.client.api :as d])
  (:import (java.io File)
           (java.util Map)))

(set! *warn-on-reflection* true)

(def ^:private db-name "issues")

(defn- transact-fn [conn]
  (fn [tx-data]
    (let [r (d/transact conn {:tx-data tx-data})]
      {:t (:t (:db-after r)) :tempids (:tempids r)})))

(defn- eid [^Map ids tempid] (.get ids tempid))

(deftype Datomic [kind ^File dir state]
  system/BenchSystem
  (system-name [_] (str "datomic-" (name kind)))

  (load-data! [_ data opts]
    (when dir (system/delete-tree dir))
    (let [client (d/client {:server-type :datomic-local
                            :system (str "bench-" (name kind))
                            :storage-dir (if dir (.getAbsolutePath dir) :mem)})
          _ (d/delete-database client {:db-name db-name})
          _ (d/create-database client {:db-name db-name})
          conn (d/connect client {:db-name db-name})
          _ (d/transact conn {:tx-data workload/schema})
          result (workload/load! data (assoc opts :transact (transact-fn conn)))]
      (swap! state assoc :client client :conn conn :ids (:ids result))
      result))

  (prepare! [_ {:keys [as-of-t since-t]}]
    (let [db (d/db (:conn @state))]
      (swap! state assoc :db db :as-of (d/as-of db as-of-t) :since (d/since db since-t))))

  (session [_] nil)
  (end-session [_ _])

  (run-op [_ _ op arg]
    (let [{:keys [db ids]} @state]
      (case op
        :q1-point (d/q (:query arg) db)
        :q1-param (d/q queries/q1-param db arg)
        :q2-ref (d/q queries/q2 db arg)
        :q3-aggregate (d/q queries/q3 db)
        :q4-predicate (d/q queries/q4 db)
        :pull-star (d/pull db queries/pull-star (eid ids arg))
        :pull-nested (d/pull db queries/pull-nested (eid ids arg))
        :in-bindings (d/q queries/in-bindings db arg)
        :as-of-q2 (d/q queries/q2 (:as-of @state) arg)
        :since (d/q queries/since (:since @state))
        :top20-open-recent (->> (d/q queries/open-created db)
                                (sort-by second #(compare %2 %1))
                                (take 20)
                                vec))))

  (transact-one! [_ n]
    (d/transact (:conn @state) {:tx-data [[:db/add "t" :issue/title (str "bench " n)]]}))

  (writer [_] nil)
  (end-writer [_ _])
  (transact-in! [s _ n] (system/transact-one! s n))

  (relax-sync! [_] false)

  (close! [_]
    (when-let [client (:client @state)]
      (d/delete-database client {:db-name db-name}))
    (reset! state {})
    (when dir (system/delete-tree dir))))

(defn mem "Datomic Local in memory." [] (->Datomic :mem nil (atom {})))

(defn disk "Datomic Local on disk in `dir`." [^File dir] (->Datomic :disk dir (atom {})))
