(ns datalith.tx-writers-property-test
  "Generated schemas and transactions (datalith.tx-property-support's) written
  through more than one way in: on two connections over one store, each
  transaction on one of them at random, held to the naive model (datalith.naive)
  by datalith.tx-model-check's harness as tx-property-test holds them; and given
  with transact-async while a transaction holds the writer, so that they commit
  in one group, each ending as it did one by one and the database as the serial
  run's. DATALITH_TRIALS=n raises the trial count."
  (:require [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.naive :as naive]
            [datalith.test-util :as tu]
            [datalith.tx-model-check :refer [attempt check-verified current-tuples diff
                                             history-tuples outcome run-tx tx-out]]
            [datalith.tx-property-support :refer [engine-new-eid engine-schema free-attrs gen-schema
                                                  gen-txs interpret-tx trials]])
  (:import (datalith.conn Conn)
           (datalith.store LmdbStore MemStore)
           (java.io File)))

;; ---------------------------------------------------------------- two connections, one store
;; Two connections over one store object, each transaction on one of them at
;; random: a connection whose last value is stale must build on the other's
;; commits (t, entity ids, statistics, schema) as on its own, as it must on an
;; LMDB directory that another process writes to. The db-before of each
;; transaction comes from the connection that wrote last, so that the one
;; transacting finds out under the write lock, not through `d/db`.

(defn- open-twins
  "Two connections over one new store of kind `store`, the schema installed
  through the first: [a b close-fn]."
  [store schema]
  (let [dir (when (= store :lmdb) (tu/temp-dir))
        s (if dir (LmdbStore/open (.toPath ^File dir) {}) (MemStore/open))
        a (Conn/open s)
        b (Conn/open s)]
    (d/transact! a (vec (for [[ident props] (engine-schema schema)] (assoc props :db/ident ident))))
    [a b #(do (d/close a) (d/close b) (some-> dir tu/delete-tree))]))

(defn run-twin-case
  "Like run-case, with each transaction on the connection `twins` names
  (false: the first, true: the second) of two over one store."
  [store schema txs twins]
  (let [[a b close] (open-twins store schema)]
    (try
      (let [db0 (d/db a)
            reserved (set (map :e (d/datoms db0 :eavt)))
            model0 (naive/empty-db schema (d/basis-t db0) reserved)]
        (loop [state {:conn a :model model0 :dbs [db0] :wdb db0}, log [], txs txs, twins twins]
          (if-let [[make-tx & more] (seq txs)]
            (let [tx-data (make-tx (:model state))
                  log (conj log tx-data)
                  r (run-tx (assoc state :conn (if (first twins) b a) :before-conn (:conn state))
                            tx-data)]
              (if-let [f (:failure r)]
                (assoc f :store store :schema schema :txs log :twins (take (count log) twins))
                (recur r log more (rest twins))))
            nil)))
      (finally (close)))))

(defspec two-connections-on-one-store-agree-with-the-model (max 1 (quot trials 4))
  (prop/for-all [schema gen-schema
                 txs gen-txs
                 twins (gen/vector gen/boolean 8)]
    (outcome (keep #(run-twin-case % schema (map (fn [ops] (fn [m] (interpret-tx m ops))) txs)
                                   twins)
                   tu/stores))))

;; ---------------------------------------------------------------- group commit (issue #17)
;; The generated transactions run one by one against the model, which gives their concrete
;; tx-data; then the same tx-data runs again on a fresh database, given with transact-async
;; while a transaction holds the writer, so that they all commit in one group, each on the
;; overlay of the ones before it. Each must end as it did alone (accepted with the same
;; tempids and datoms, or refused with the same error: a refused one amid the group fails
;; alone), and the database after the group must be the serial run's, verified whole.

(defn- open-fresh
  "A connection on a new `store` database with the schema installed: [conn close-fn]."
  [store schema]
  (let [dir (when (tu/durable? store) (tu/temp-dir))
        opts (tu/store-opts store {:schema (engine-schema schema)})
        conn (if dir (d/connect (.getPath ^File dir) opts) (d/connect :mem opts))]
    [conn #(do (d/close conn) (some-> dir tu/delete-tree))]))

(defn- serial-run
  "Runs txs (model -> tx-data) one by one on `conn` against the model, after an empty
  transaction (the group run's holding one); {:txs [tx-data] :outcomes [attempt] :model m}."
  [conn schema txs]
  (d/transact! conn [])
  (let [db0 (d/db conn)
        model0 (naive/empty-db schema (d/basis-t db0) (set (map :e (d/datoms db0 :eavt))))]
    (loop [m model0, out {:txs [] :outcomes []}, txs txs]
      (if-let [[make-tx & more] (seq txs)]
        (let [tx-data (make-tx m)
              engine (attempt #(d/transact! conn tx-data))
              expected (naive/transact m tx-data (engine-new-eid (:report engine)))]
          (recur (or (:model expected) m)
                 (-> out (update :txs conj tx-data) (update :outcomes conj engine))
                 more))
        (assoc out :model m)))))

(defn- grouped-run
  "Gives every tx-data to `conn` with transact-async while a transaction holds the writer:
  the attempts, in order."
  [conn txs]
  (let [started (promise)
        release (promise)
        held (future (d/transact! conn [[:db.fn/call (fn [_]
                                                        (deliver started true)
                                                        (deref release 20000 nil)
                                                        [])]]))]
    (deref started 20000 nil)
    (let [fs (mapv #(d/transact-async conn %) txs)]
      (deliver release true)
      @held
      (mapv #(attempt (fn [] (deref % 20000 :timeout))) fs))))

(defn run-group-case
  "nil when the transactions committed in one group end as they did one by one on `store`,
  else the failure."
  [store schema txs]
  (let [[serial close-serial] (open-fresh store schema)
        [grouped close-grouped] (open-fresh store schema)]
    (try
      (let [{:keys [model outcomes] :as run} (serial-run serial schema txs)
            attrs (into (set free-attrs) (keys (:schema model)))
            got (grouped-run grouped (:txs run))
            outcome (fn [{:keys [report error crash]}]
                      (if report
                        [(d/basis-t (:db-after report)) (:tempids report) (tx-out attrs report)]
                        [(or error crash)]))
            view (fn [conn]
                   (let [db (d/db conn)]
                     [(d/basis-t db) (current-tuples attrs (d/datoms db :eavt))
                      (history-tuples attrs (d/datoms (d/history db) :eavt))]))]
        (some-> (or (some (fn [[i a b]] (diff [:group-outcome i] (outcome a) (outcome b)))
                          (map vector (range) outcomes got))
                    (diff :group-db (view serial) (view grouped))
                    (check-verified grouped))
                (assoc :store store :schema schema :txs (:txs run))))
      (finally (close-serial) (close-grouped)))))

(defspec transactions-committed-in-one-group-end-as-one-by-one (max 1 (quot trials 4))
  (prop/for-all [schema gen-schema
                 txs gen-txs]
    (outcome (keep #(run-group-case % schema (map (fn [ops] (fn [m] (interpret-tx m ops))) txs))
                   tu/stores))))
