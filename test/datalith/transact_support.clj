(ns datalith.transact-support
  "What the transact! tests share (datalith.transact-test, transact-ids-test and
  transact-values-test): their schema, and reading a transaction's outcome: an
  entity's [a v] pairs, a report's tx-data without its instant, the entity of a
  lookup ref, the :error of a refused transaction."
  (:require [datalith.core :as d]))

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/handle {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/ssn {:db/valueType :db.type/string :db/unique :db.unique/value}
   :user/name {:db/valueType :db.type/string}
   :user/age {:db/valueType :db.type/long}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/friends {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :user/manager {:db/valueType :db.type/ref}
   :issue/title {:db/valueType :db.type/string}
   :issue/assignee {:db/valueType :db.type/ref}
   :issue/body {:db/valueType :db.type/ref :db/isComponent true}
   :issue/comments {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many
                    :db/isComponent true}
   :comment/text {:db/valueType :db.type/string}
   :comment/replies {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many
                     :db/isComponent true}
   :tx/source {:db/valueType :db.type/string}})

(defn facts
  "The [a v] pairs entity `e` has in `db` (refs as ids)."
  [db e]
  (set (map (juxt :a :v) (d/datoms db :eavt e))))

(defn tx-facts
  "The [e a v added] of a report's :tx-data, without the :db/txInstant datom."
  [report]
  (set (for [[e a v _ added] (:tx-data report) :when (not= :db/txInstant a)] [e a v added])))

(defn lookup [conn a v] (d/entid (d/db conn) [a v]))

(defn error-of
  "The :error key of the ex-info `f` throws, or :no-error."
  [f]
  (try (f) :no-error
       (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))
