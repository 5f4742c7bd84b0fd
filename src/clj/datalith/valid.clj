(ns ^:no-doc datalith.valid
  "Valid time (#19) in export records: each event as the interval form that wrote it."
  (:import (datalith.db Db Schema ValidTime)))

(set! *warn-on-reflection* true)

(defn- readable
  "`inst`, or the end of time for an instant after it (written before the end
  was one), which reads back and means the same on import."
  ^java.util.Date [^java.util.Date inst]
  (if (< (.getTime inst) ValidTime/END_OF_TIME) inst (java.util.Date. ValidTime/END_OF_TIME)))

(defn- event-form
  "The tx-data form of the event `[aid e v added from to]`."
  [^Schema schema [aid e v added from to]]
  [(if added :db/add :db/retract) e (.ident schema (long aid)) v
   (cond-> {:db/valid-from (readable from)} to (assoc :db/valid-to (readable to)))])

(defn export-record
  "`rec` ({:t :tx-data}, from `db`'s log) with the install of :db.valid/event
  left out (the first transaction with an interval installs it again) and each
  of its datoms written as the interval form that made it, so that an import
  gives the same events."
  [^Db db {:keys [tx-data] :as rec}]
  (if-not (some #(or (and (map? %) (= ValidTime/EVENT (:db/id %)))
                     (and (vector? %) (= ValidTime/K_EVENT (nth % 2 nil))))
                tx-data)
    rec
    (assoc rec :tx-data
           (into [] (keep (fn [form]
                            (cond (and (map? form) (= ValidTime/EVENT (:db/id form))) nil
                                  (and (vector? form) (= ValidTime/K_EVENT (nth form 2 nil)))
                                  (event-form (.schema db) (nth form 3))
                                  :else form)))
                 tx-data))))
