(ns datalith.query-star-join-test
  "Star joins: patterns [?e attr ?v] on one entity variable bound to a few entities, answered
  from one EAVT position per entity. Their answers are the naive evaluator's on every view
  (current, as-of, since, history, filtered), with cardinality-many attributes, entities
  missing an attribute, retracted and changed values, and one attribute read twice."
  (:require [clojure.test :refer [deftest is testing]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.naive-query :as naive]
            [datalith.naive-where :as nw]
            [datalith.test-util :as tu :refer [each-store]]))

(def schema
  {:s/id {:db/valueType :db.type/long :db/unique :db.unique/identity}
   :s/name {:db/valueType :db.type/string}
   :s/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :s/score {:db/valueType :db.type/long}
   :s/owner {:db/valueType :db.type/ref}})

(def n 400)

(defn- load!
  "n entities (owned by entity 0 or 1, by id mod 50): every one named, most tagged (0-3
  tags), two in three scored; then a transaction that renames and untags some and one that
  unscores some. The basis t after each of the three."
  [conn]
  (let [t! (fn [tx] (d/basis-t (:db-after (d/transact! conn tx))))
        t1 (t! (for [i (range n)]
                 (cond-> {:s/id i :s/name (str "n" i)}
                   (pos? (mod i 4)) (assoc :s/tags (take (mod i 4) [:a :b :c]))
                   (pos? (mod i 3)) (assoc :s/score (mod i 7)))))
        t2 (t! (concat (for [i (range 2 n)] [:db/add [:s/id i] :s/owner [:s/id (if (zero? (mod i 50)) 0 1)]])
                       (for [i (range 0 n 5)] [:db/add [:s/id i] :s/name (str "m" i)])
                       (for [i (range 1 n 6) :when (pos? (mod i 4))] [:db/retract [:s/id i] :s/tags :a])
                       (for [i (range 3 n 10)] [:db/add [:s/id i] :s/tags :d])))
        t3 (t! (for [i (range 2 n 8) :when (pos? (mod i 3))]
                 [:db/retract [:s/id i] :s/score (mod i 7)]))]
    [t1 t2 t3]))

(defn- hidden?
  "Whether a filtered view hides `datom`: the data of every seventh entity (not the schema)."
  [datom]
  (and (= "s" (namespace (:a datom))) (zero? (mod (:e datom) 7))))

(defn- views
  "[label engine-db oracle-db] of each view checked."
  [db [t1 t2]]
  (let [events (map (fn [dm] [(:e dm) (:a dm) (:v dm) (:tx dm) (:added dm)])
                    (d/datoms (d/history db) :eavt))
        current (d/datoms db :eavt)]
    [[:current db (nw/db current)]
     [:as-of (d/as-of db t1) (nw/db (nw/as-of-datoms events (d/t->tx t1)))]
     [:as-of-2 (d/as-of db t2) (nw/db (nw/as-of-datoms events (d/t->tx t2)))]
     ;; the oracle of a since view keeps the schema's datoms, which name the attributes
     [:since (d/since db t1) (nw/db (filter #(or (> (:tx %) (d/t->tx t1)) (not= "s" (namespace (:a %))))
                                            current))]
     [:history (d/history db) (nw/db events)]
     [:filtered (d/filter db (fn [_ datom] (not (hidden? datom))))
      (nw/db (remove hidden? current))]]))

(def queries
  {:tags '[:find ?e ?n ?t :in $ [?e ...] :where [?e :s/name ?n] [?e :s/tags ?t]]
   :three '[:find ?e ?n ?s ?t :in $ [?e ...] :where [?e :s/name ?n] [?e :s/score ?s] [?e :s/tags ?t]]
   :bag '[:find ?n :with ?e ?t :in $ [?e ...] :where [?e :s/tags ?t] [?e :s/name ?n]]
   :twice '[:find ?e ?t ?u :in $ [?e ...] :where [?e :s/tags ?t] [?e :s/tags ?u]]
   :scalar-out '[:find ?e ?s ?n :in $ [?e ...] :where [?e :s/score ?s] [?e :s/name ?n]]
   :owned '[:find ?e ?n ?t :in $ ?owner :where [?o :s/id ?owner] [?e :s/owner ?o]
            [?e :s/name ?n] [?e :s/tags ?t]]})

(defn- entities [db ids]
  (mapv #(d/q '[:find ?e . :in $ ?id :where [?e :s/id ?id]] db %) ids))

(defn- input [db query-key ids]
  (if (= :owned query-key) 0 (entities db ids)))

(defn- methods-of [query db input]
  (mapv :method (:clauses (d/explain query db input))))

(deftest star-joins-agree-with-the-naive-evaluator
  (each-store [conn {:schema schema}]
    (let [ts (load! conn)
          db (d/db conn)
          ids [0 2 3 5 13 20]]
      (testing "the patterns on the bound entities are one star join"
        (is (= [:star-join-eavt :star-join-eavt] (methods-of (:tags queries) db (entities db ids))))
        (is (= [:lookup-join-avet :lookup-join-vaet :star-join-eavt :star-join-eavt]
               (methods-of (:owned queries) db 0)))
        (is (= 3 (count (:clauses (d/explain (:three queries) db (entities db ids)))))
            "one step a clause"))
      (doseq [[label view oracle] (views db ts)
              [k query] queries]
        (testing (str label " " k)
          (let [in (input db k ids)]
            (is (naive/agrees? (naive/answer query oracle in) (d/q query view in)))))))))

(deftest dense-entities-are-not-a-star-join
  (each-store [conn {:schema schema}]
    (load! conn)
    (let [db (d/db conn)
          es (entities db (range 0 n 2))]
      (is (not-any? #{:star-join-eavt} (methods-of (:tags queries) db es)))
      (is (= (naive/q (:tags queries) (nw/db (d/datoms db :eavt)) es)
             (d/q (:tags queries) db es))))))

(def trials 40)

(deftest star-joins-over-random-entities-and-views
  ;; one database per store (its load is the slow part), random entities, queries and views
  (each-store [conn {:schema schema :sync false}]
    (let [ts (load! conn)
          db (d/db conn)
          vs (views db ts)
          result (tc/quick-check
                  trials
                  (prop/for-all [ids (gen/vector (gen/choose 0 (dec n)) 1 9)
                                 k (gen/elements (sort (keys queries)))
                                 view-at (gen/choose 0 (dec (count vs)))]
                    (let [[_ view oracle] (nth vs view-at)
                          in (input db k ids)]
                      (naive/agrees? (naive/answer (queries k) oracle in) (d/q (queries k) view in)))))]
      (is (:pass? result) (pr-str (:shrunk result))))))
