(ns datalith.import-support
  "What the import tests share (datalith.import-test, import-transact-test and
  import-staged-test): the view of a database that an equal one must have equal, and that view
  without the txInstants, transactions of chunks one by one until transact! refuses one,
  stagings that merge with the store, and the trial count of their generated tests."
  (:require [datalith.core :as d]))

(set! *warn-on-reflection* true)

(defn view
  "Everything an equal database must have equal."
  [db]
  {:basis-t (d/basis-t db)
   :schema (d/schema db)
   :indexes (into {} (for [ix [:eavt :aevt :avet :vaet]] [ix (vec (d/datoms db ix))]))
   :history (vec (d/datoms (d/history db) :eavt))
   :as-of (vec (for [t (range (inc (d/basis-t db)))] (vec (d/datoms (d/as-of db t) :eavt))))
   :log (vec (for [{:keys [t data]} (d/tx-range db nil nil)] [t (set data)]))})

(def trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 25))

(defn merging
  "Calls `f` with stagings that merge their reads with the store's however small it is (none
  copied into the delta: the path of a large database), when `merge?`."
  [merge? f]
  (if merge?
    (do (System/setProperty "datalith.staged.absorb" "0")
        (try (f) (finally (System/clearProperty "datalith.staged.absorb"))))
    (f)))

(defn instant-free
  "`view` of `db` without the :db/txInstant datoms, the one thing an import of
  the same tx-data writes differently (its own clock)."
  [db]
  (let [keep? (fn [d] (not= :db/txInstant (:a d)))
        strip (fn [ds] (vec (filter keep? ds)))
        v (view db)]
    (-> v
        (update :indexes update-vals strip)
        (update :history strip)
        (update :as-of #(mapv strip %))
        (update :log #(vec (for [[t data] %] [t (set (filter keep? data))]))))))

(defn transact-chunks!
  "Transacts `chunks` one by one until the first that transact! refuses; returns
  how many it committed."
  [conn chunks]
  (reduce (fn [n chunk]
            (if (try (d/transact! conn chunk) (catch clojure.lang.ExceptionInfo _ nil))
              (inc n)
              (reduced n)))
          0 chunks))
