(ns datalith.query-order-property-test
  "Random queries (datalith.query-property-support's generators) given :order-by, :limit and
  :offset, and windows in their :find: on both stores, `d/q` on the current database, as of an
  earlier t, since it and filtered must answer what the naive evaluator (datalith.naive-query)
  answers over the same datoms, sliced as the query says. DATALITH_TRIALS=n raises the trial
  count. Plain queries are query-property-test's."
  (:require [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.naive-query :as nq]
            [datalith.query-property-support :refer [both-answers check-views engine-schema
                                                     gen-data gen-query-spec gen-schema
                                                     interpret-query outcome pick trials]]
            [datalith.test-util :as tu]))

;; ---------------------------------------------------------------- ordered and sliced answers

(def gen-slice
  (gen/hash-map :keys (gen/vector (gen/tuple gen/nat gen/boolean) 0 3)
                :limit (gen/frequency [[1 (gen/return nil)] [3 (gen/choose 0 6)]])
                :offset (gen/frequency [[2 (gen/return nil)] [1 (gen/choose 0 4)]])))

(defn- find-section [query] (vec (take-while (complement keyword?) (rest query))))

(defn sliced-query
  "`query` (a vector query without :keys or pulls) with :order-by keys naming
  its :find variables and aggregates (picked by `slice`'s numbers, each :asc or
  :desc), :limit and :offset."
  [query {:keys [keys limit offset]}]
  (let [find (find-section query)
        els (cond (= '. (second find)) [(first find)]
                  (and (vector? (first find)) (= '... (last (first find)))) [(ffirst find)]
                  (vector? (first find)) (first find)
                  :else find)
        order (reduce (fn [acc [el desc]] (if (some #(= el (first %)) acc) acc (conj acc [el desc])))
                      [] (for [[n desc] keys] [(pick (vec els) n) desc]))]
    (cond-> query
      (seq order) (into [:order-by (mapv (fn [[el desc]] (if desc [el :desc] el)) order)])
      limit (into [:limit limit])
      offset (into [:offset offset]))))

(defn- sliceable? [query]
  (not (or (some #{:keys} query)
           (some #(and (seq? %) (= 'pull (first %))) (find-section query)))))

(defn- check-sliced-view
  "nil when the engine and the naive evaluator agree on the sliced `spec` over
  `db`, else a description of the difference."
  [label db model eids spec]
  (let [{:keys [query inputs expected actual]} (both-answers nq/sliced-answer db model eids spec)]
    (when-not (or (= :too-much-work expected)
                  (and (:kind expected) (nq/slice-agrees? expected actual)))
      {:view label :query query :inputs inputs
       :expected (if (:kind expected) (select-keys expected [:sliced :tuples]) expected)
       :actual actual})))

(defn run-sliced-case
  "Like query-property-test's `run-case`, the query given :order-by, :limit and :offset by
  `slice` (after `extend`, which may add :find elements)."
  [store schema data spec slice & [extend]]
  (let [qspec (cond-> (interpret-query schema spec) extend (update :query extend))]
    (when (sliceable? (:query qspec))
      (tu/with-conn [conn store {:schema (engine-schema schema) :sync false}]
        (check-views check-sliced-view conn schema data spec
                     (update qspec :query sliced-query slice))))))

(defspec sliced-queries-agree-with-the-naive-evaluator trials
  (prop/for-all [schema gen-schema
                 data gen-data
                 spec gen-query-spec
                 slice gen-slice]
    (outcome (some (fn [store] (some-> (run-sliced-case store schema data spec slice)
                                       (assoc :store store)))
                   tu/checked-stores))))

;; ---------------------------------------------------------------- windows

(def gen-window
  (gen/hash-map :fn (gen/elements '[count min max rank dense-rank row-number lag lead])
                :picks (gen/vector gen/nat 4)
                :shape (gen/elements [:both :partition :order])
                :desc gen/boolean
                :offset (gen/elements [nil 2])))

(defn windowed-query
  "`query` with a window appended to its :find when that is a relation of
  plain variables: `window`'s function over some of them (no sums: their types
  vary), partitioned and/or ordered by others."
  [query {f :fn [a p o o2] :picks :keys [shape desc offset]}]
  (let [find (find-section query)]
    (if (or (empty? find) (not-every? #(and (symbol? %) (not= '. %)) find) (some #{:keys} query))
      query
      (let [pick #(nth find (mod % (count find)))
            arg (when-not ('#{rank dense-rank row-number} f) (pick a))
            part (when (#{:both :partition} shape) [(pick p)])
            order (when (#{:both :order} shape)
                    (mapv #(if desc [% :desc] %) (distinct [(pick o) (pick o2)])))
            spec (cond-> {} part (assoc :partition-by part) order (assoc :order-by order))
            el (apply list (concat [f] (when arg [arg]) (when (and offset ('#{lag lead} f)) [offset])
                                   [:over spec]))]
        (vec (concat [:find] find [el] (drop (inc (count find)) query)))))))

(defspec windowed-queries-agree-with-the-naive-evaluator trials
  (prop/for-all [schema gen-schema
                 data gen-data
                 spec gen-query-spec
                 window gen-window
                 slice gen-slice]
    (outcome (some (fn [store] (some-> (run-sliced-case store schema data spec slice
                                                        #(windowed-query % window))
                                       (assoc :store store)))
                   tu/checked-stores))))
