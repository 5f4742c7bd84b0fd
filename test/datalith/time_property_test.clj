(ns datalith.time-property-test
  "Random transaction histories (adds, cardinality-one replacements,
  retractions, cardinality-many values, retracted entities), on both stores.
  For every t, pull and a few fixed queries on `(as-of db t)`, on the db value
  taken right after t, on `(since db t)` and on history views must equal what
  plain Clojure computes over the datom sets of the naive model
  (datalith.naive). DATALITH_TRIALS=n raises the trial count."
  (:require [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.naive :as naive]
            [datalith.test-util :as tu]))

(def trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 60))

(def model-schema
  {:p/name {:type :string :card :one}
   :p/age {:type :long :card :one}
   :p/tags {:type :keyword :card :many}
   :p/friend {:type :ref :card :one}
   :p/likes {:type :ref :card :many}})

(def schema
  {:p/name {:db/valueType :db.type/string}
   :p/age {:db/valueType :db.type/long}
   :p/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :p/friend {:db/valueType :db.type/ref}
   :p/likes {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}})

(def attrs (vec (sort (keys model-schema))))

(def n-entities 4)

(defn- many? [a] (= :many (get-in model-schema [a :card])))
(defn- ref? [a] (= :ref (get-in model-schema [a :type])))

;; ---------------------------------------------------------------- histories
;; Ops are abstract: numbers pick the entity, attribute and value when the
;; history is interpreted against the entity ids the engine gave.

(def gen-op
  (gen/frequency
    [[6 (gen/tuple (gen/return :add) (gen/choose 0 9) (gen/choose 0 9) (gen/choose 0 9))]
     [3 (gen/tuple (gen/return :retract) (gen/choose 0 9) (gen/choose 0 9) (gen/choose 0 9))]
     [1 (gen/tuple (gen/return :retract-attr) (gen/choose 0 9) (gen/choose 0 9))]
     [1 (gen/tuple (gen/return :retract-entity) (gen/choose 0 9))]]))

(def gen-history (gen/vector (gen/vector gen-op 1 4) 1 8))

(def long-string
  "Too long for an index key: stored in part outside the key."
  (apply str "long-" (repeat 600 "x")))

(defn- value [a n eids]
  (case (get-in model-schema [a :type])
    :string (if (= 9 n) long-string (str "s" (mod n 3)))
    :long (mod n 4)
    :keyword (keyword (str "k" (mod n 4)))
    :ref (nth eids (mod n (count eids)))))

(defn- tx-form [[op e a v] eids]
  (let [e (nth eids (mod e (count eids)))
        a (when a (nth attrs (mod a (count attrs))))]
    (case op
      :add [:db/add e a (value a v eids)]
      :retract [:db/retract e a (value a v eids)]
      :retract-attr [:db/retract e a]
      :retract-entity [:db/retractEntity e])))

;; ---------------------------------------------------------------- expected values

(defn- triples
  "[e a v] of the model's [e a v t] datoms."
  [datoms]
  (set (map #(subvec (vec %) 0 3) datoms)))

(defn- expected-pull
  "(d/pull db '[*] e) computed over the triples: cardinality many as sets."
  [ts e]
  (into {:db/id e}
        (for [[a vs] (group-by second (filter #(= e (first %)) ts))]
          (let [vs (map #(cond->> (nth % 2) (ref? a) (hash-map :db/id)) vs)]
            [a (if (many? a) (set vs) (first vs))]))))

(defn- normalize-pull
  "A pulled map with cardinality-many vectors as sets; :bad when one is not a vector."
  [m]
  (into {} (for [[k v] m]
             [k (if (many? k) (if (vector? v) (set v) :bad) v)])))

(def queries
  "[query (fn [triples] expected-result)]"
  (let [sel (fn [ts a] (for [[e a' v] ts :when (= a a')] [e v]))]
    [['[:find ?e ?n :where [?e :p/name ?n]]
      (fn [ts] (set (sel ts :p/name)))]
     ['[:find ?n ?t :where [?e :p/name ?n] [?e :p/tags ?t]]
      (fn [ts] (set (for [[e n] (sel ts :p/name) [e' t] (sel ts :p/tags) :when (= e e')] [n t])))]
     ['[:find ?n1 ?n2 :where [?a :p/friend ?b] [?a :p/name ?n1] [?b :p/name ?n2]]
      (fn [ts] (set (for [[a b] (sel ts :p/friend) [a' n1] (sel ts :p/name) [b' n2] (sel ts :p/name)
                          :when (and (= a a') (= b b'))]
                      [n1 n2])))]
     ['[:find ?e :where [?e :p/likes] (not [?e :p/age])]
      (fn [ts] (let [aged (set (map first (sel ts :p/age)))]
                 (set (for [[e] (sel ts :p/likes) :when (not (aged e))] [e]))))]
     ['[:find ?e (count ?l) :where [?e :p/likes ?l]]
      (fn [ts] (set (for [[e ls] (group-by first (sel ts :p/likes))] [e (count ls)])))]
     ['[:find ?e (pull ?e [:db/id :p/age {:p/friend [:db/id :p/name]}]) :where [?e :p/age]]
      (fn [ts] (set (for [[e age] (sel ts :p/age)]
                      [e (let [[f] (for [[e' f] (sel ts :p/friend) :when (= e e')] f)
                               [fname] (for [[f' n] (sel ts :p/name) :when (= f f')] n)]
                           (cond-> {:db/id e :p/age age}
                             f (assoc :p/friend (cond-> {:db/id f} fname (assoc :p/name fname)))))])))]]))

(defn- history-query [a]
  [:find '?e '?v '?tx '?added :where ['?e a '?v '?tx '?added]])

;; ---------------------------------------------------------------- the property

(defn- mismatch [what expected actual]
  (when (not= expected actual)
    {:what what :expected expected :actual actual}))

(defn- check-view
  "Mismatches of pull and the queries on `view` against the triples `ts`."
  [label view ts eids]
  (concat
    (for [e eids
          :let [m (mismatch [label :pull e] (expected-pull ts e)
                            (normalize-pull (d/pull view '[*] e)))]
          :when m]
      m)
    (for [[q f] queries
          :let [m (mismatch [label q] (f ts) (set (d/q q view)))]
          :when m]
      m)))

(defn- run-history
  "Runs `history` on a fresh `store`; returns the first mismatches (empty when
  the engine agrees with the model everywhere)."
  [store history]
  (tu/with-conn [conn store {:schema schema}]
    (let [db0 (d/db conn)
          t0 (d/basis-t db0)
          r1 (d/transact! conn (for [i (range n-entities)] {:db/id (str "e" i) :p/name (str "s" i)}))
          eids (mapv #(get-in r1 [:tempids (str "e" %)]) (range n-entities))
          {model :model} (naive/transact (naive/empty-db model-schema t0 #{})
                                         (for [i (range n-entities)] {:db/id (str "e" i) :p/name (str "s" i)})
                                         #(get-in r1 [:tempids (first (:tempids %))]))
          ;; dbs: t -> the db value taken right after t; txs: t -> the tx-data of t
          [model dbs txs] (reduce (fn [[model dbs txs] ops]
                                    (let [tx (mapv #(tx-form % eids) ops)
                                          r (naive/transact model tx (fn [_] (throw (ex-info "no new entities" {}))))
                                          t (:t (:model r))]
                                      (if (:error r)
                                        [model dbs txs]
                                        (do (d/transact! conn tx)
                                            [(:model r) (assoc dbs t (d/db conn)) (assoc txs t tx)]))))
                                  [model {t0 db0 (:t model) (d/db conn)} {}]
                                  history)
          db (d/db conn)
          tn (:t model)
          ts-at (fn [t] (triples (naive/current model t)))]
      (->> (concat
             (when (not= tn (d/basis-t db)) [{:what :basis-t :expected tn :actual (d/basis-t db)}])
             (mapcat (fn [t]
                       (concat
                         (check-view [:as-of t] (d/as-of db t) (ts-at t) eids)
                         (check-view [:db-at t] (get dbs t) (ts-at t) eids)
                         (check-view [:since t] (d/since db t) (triples (naive/since-datoms model t tn)) eids)
                         (when-let [tx (txs (inc t))]
                           ;; t+1 again, speculatively on the value of t: alone and as of t
                           (let [w (:db-after (d/with (get dbs t) tx))]
                             (concat (check-view [:with (inc t)] w (ts-at (inc t)) eids)
                                     (check-view [:with-as-of t] (d/as-of w t) (ts-at t) eids))))
                         (let [mid (quot (+ t0 t) 2)
                               h (d/history (d/since (d/as-of db t) mid))]
                           (for [a attrs
                                 :let [expected (set (for [[e a' v tt added] (naive/history-datoms model t)
                                                           :when (and (= a a') (> tt mid))]
                                                       [e v (d/t->tx tt) added]))
                                       m (mismatch [:history t :since mid a] expected (set (d/q (history-query a) h)))]
                                 :when m]
                             m))))
                     (range t0 (inc tn))))
           (take 3)
           vec))))

(defspec as-of-since-and-history-agree-with-the-model trials
  (prop/for-all [history gen-history]
    (every? (fn [store]
              (let [ms (run-history store history)]
                (or (empty? ms)
                    (do (println "store" store "mismatches:" (pr-str ms)) false))))
            tu/checked-stores)))
