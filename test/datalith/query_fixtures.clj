(ns datalith.query-fixtures
  "Schema and data shared by the query feature tests (query_*_test.clj)."
  (:require [datalith.core :as d]))

(def schema
  {:person/name {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :person/age {:db/valueType :db.type/long}
   :person/score {:db/valueType :db.type/double}
   :person/friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :person/tag {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :person/color {:db/valueType :db.type/ref}
   :node/id {:db/valueType :db.type/long :db/unique :db.unique/identity}
   :node/next {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}})

(defn people!
  "Transacts four people into `conn` and returns {name eid}:
    Alice 30, tags :x :y, color :red
    Bob   25, color :blue, friend of Alice
    Carol 30, friend of Alice and Bob
    Dan   no age, no friends
  plus :red and :blue, the enum entities."
  [conn]
  (let [enums (:tempids (d/transact! conn [{:db/id "red" :db/ident :red}
                                           {:db/id "blue" :db/ident :blue}]))
        ids (:tempids (d/transact! conn
                                   [{:db/id "Alice" :person/name "Alice" :person/age 30
                                     :person/score 1.5 :person/tag [:x :y] :person/color :red}
                                    {:db/id "Bob" :person/name "Bob" :person/age 25
                                     :person/score 2.5 :person/friend "Alice" :person/color :blue}
                                    {:db/id "Carol" :person/name "Carol" :person/age 30
                                     :person/friend ["Alice" "Bob"]}
                                    {:db/id "Dan" :person/name "Dan"}]))]
    (assoc (select-keys ids ["Alice" "Bob" "Carol" "Dan"])
           :red (enums "red") :blue (enums "blue"))))

(defn graph!
  "Transacts nodes 0..n-1 with :node/next edges i -> i+1 and, for each [from to]
  of `extra`, from -> to; returns {i eid}."
  ([conn n] (graph! conn n []))
  ([conn n extra]
   (let [ids (:tempids (d/transact! conn (for [i (range n)] {:db/id (str i) :node/id i})))
         eid (fn [i] (ids (str i)))]
     (d/transact! conn (concat (for [i (range (dec n))] [:db/add (eid i) :node/next (eid (inc i))])
                               (for [[a b] extra] [:db/add (eid a) :node/next (eid b)])))
     (into {} (for [i (range n)] [i (eid i)])))))

(defn failure
  "{:error ..} plus the :form of the ex-info (f) throws; :no-error when it returns."
  [f]
  (try (f) :no-error
       (catch clojure.lang.ExceptionInfo e
         (select-keys (ex-data e) [:error :form]))))
