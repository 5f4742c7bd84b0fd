(ns datalith.pull-property-test
  "Random small graphs (chains, cycles, self refs, diamonds, component trees
  and component cycles) and random pull patterns (nested patterns, recursion
  limits, `...`, reverse attributes, components, the wildcard, :limit): on
  both stores, d/pull, d/pull-many and pull in :find must give what the naive
  model (datalith.naive-pull) gives over the same triples; then a second
  transaction changes the graph, and the pulls of the database after it, as of
  before it and since it must give what the model gives of each.
  DATALITH_TRIALS=n raises the trial count."
  (:require [clojure.set]
            [clojure.test :refer [deftest is use-fixtures]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.naive-pull :as naive]
            [datalith.test-util :as tu]))

(def trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 60))

(def schema
  {:g/name {:db/valueType :db.type/string}
   :g/tags {:db/valueType :db.type/string :db/cardinality :db.cardinality/many}
   :g/r1 {:db/valueType :db.type/ref}
   :g/rm {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :g/c1 {:db/valueType :db.type/ref :db/isComponent true}
   :g/cm {:db/valueType :db.type/ref :db/isComponent true :db/cardinality :db.cardinality/many}})

(def model-schema
  {:g/name {} :g/tags {:many true}
   :g/r1 {:ref true} :g/rm {:ref true :many true}
   :g/c1 {:ref true :component true} :g/cm {:ref true :component true :many true}})

(def ref-attrs [:g/r1 :g/rm :g/c1 :g/cm])

;; ---------------------------------------------------------------- graphs

(defn- gen-graph-of
  "{:n n, :tags {i #{..}}, :edges [[i attr j]]}: at most one edge of a
  cardinality-one attribute per node, at most two of a many one (so that
  unbounded recursion over every path stays small)."
  [n]
  (gen/let [tags (gen/vector (gen/set (gen/elements ["a" "b" "c"]) {:max-elements 2}) n)
            one (gen/vector (gen/tuple (gen/elements [:g/r1 :g/c1]) (gen/choose 0 (dec n))
                                       (gen/choose 0 (dec n)))
                            0 (* 2 n))
            many (gen/vector (gen/tuple (gen/elements [:g/rm :g/cm]) (gen/choose 0 (dec n))
                                        (gen/choose 0 (dec n)))
                             0 (* 2 n))]
    {:n n
     :tags (zipmap (range n) tags)
     :edges (concat (vals (into {} (for [[a i j] one] [[a i] [i a j]])))
                    (->> (distinct many)
                         (group-by (juxt first second))
                         vals
                         (mapcat #(take 2 %))
                         (map (fn [[a i j]] [i a j]))))}))

(def gen-graph (gen/bind (gen/choose 1 5) gen-graph-of))

(def gen-graphs
  "A graph, and what a second transaction makes of it: the same nodes, other tags and
  edges, every odd node renamed."
  (gen/let [g gen-graph
            g2 (gen-graph-of (:n g))]
    [g (assoc g2 :renamed true)]))

(defn- tx-data
  "The graph as tx-data for a fresh set of entities, tempids \"0\" .. \"n-1\"."
  [{:keys [n tags edges]} trial]
  (concat (for [i (range n)]
            (cond-> {:db/id (str i) :g/name (str "t" trial "-n" i)}
              (seq (tags i)) (assoc :g/tags (tags i))))
          (for [[i a j] edges] [:db/add (str i) a (str j)])))

(defn- node-name [trial i renamed]
  (str "t" trial (if (and renamed (odd? i)) "-m" "-n") i))

(defn- model-db
  "The naive model of the graph, with the engine's ids."
  [{:keys [n tags edges renamed]} trial ids]
  (let [id #(get ids (str %))]
    {:schema model-schema
     :triples (set (concat (for [i (range n)] [(id i) :g/name (node-name trial i renamed)])
                           (for [i (range n) t (tags i)] [(id i) :g/tags t])
                           (for [[i a j] edges] [(id i) a (id j)])))}))

(defn- change-tx
  "The tx-data that takes the database from model `m1` to `m2` (triples of one set of
  entities): retract what `m2` lacks, assert what it adds."
  [m1 m2]
  (let [before (:triples m1) after (:triples m2)]
    (concat (for [[e a v] before :when (not (after [e a v]))] [:db/retract e a v])
            (for [[e a v] after :when (not (before [e a v]))] [:db/add e a v]))))

;; ---------------------------------------------------------------- patterns

(def gen-attr-key
  (gen/frequency [[4 (gen/elements ref-attrs)]
                  [2 (gen/elements (map #(keyword "g" (str "_" (name %))) ref-attrs))]
                  [1 (gen/fmap (fn [[a n]] [a :limit n])
                               (gen/tuple (gen/elements (concat ref-attrs [:g/_rm])) (gen/choose 1 2)))]]))

(defn- attr-name [k] (if (vector? k) (first k) k))

(defn- gen-pattern [depth]
  (gen/let [plain (gen/vector (gen/elements [:g/name :g/tags :db/id '* :g/r1 :g/rm :g/c1 :g/cm
                                             :g/_rm :g/_cm :g/_c1])
                              0 3)
            maps (gen/vector (gen/tuple gen-attr-key
                                        (if (pos? depth)
                                          (gen/frequency [[3 (gen/elements ['... 1 2 3])]
                                                          [2 (gen-pattern (dec depth))]])
                                          (gen/elements ['... 1 2 3])))
                             0 3)]
    ;; one spec an attribute: Datomic rejects two
    (let [maps (vals (into {} (for [[k v] maps] [(attr-name k) [k v]])))
          taken (set (map (comp attr-name first) maps))
          plain (distinct (remove taken plain))
          pattern (vec (concat plain (map (fn [[k v]] {k v}) maps)))]
      (if (empty? pattern) [:g/name] pattern))))

;; ---------------------------------------------------------------- the property

(defn- pulls-agree?
  "Every way of pulling every node of `eids` from `db` gives what the model does (pull in
  :find, of the nodes with datoms of their own in `db`: `[?e]` finds no other)."
  [db model pattern eids]
  (let [expected (mapv #(naive/pull model pattern %) eids)
        own? (set (map first (:triples model)))]
    (and (= expected (mapv #(d/pull db pattern %) eids))
         (= expected (d/pull-many db pattern eids))
         (= (keep #(when (own? %) (naive/pull model pattern %)) eids)
            (keep #(when (own? %) (d/q '[:find (pull ?e p) . :in $ p ?e :where [?e]] db pattern %))
                  eids)))))

(defn- check-store
  "Transacts the graph on `conn` and compares every way of pulling every node; with a
  second graph, transacts the change to it too and compares the pulls of the database
  after it, as of before it, and since (the datoms it added)."
  ([conn graph pattern trial] (check-store conn graph nil pattern trial))
  ([conn graph graph2 pattern trial]
   (let [ids (:tempids (d/transact! conn (tx-data graph trial)))
         model (model-db graph trial ids)
         eids (map #(get ids (str %)) (range (:n graph)))]
     (if-not graph2
       (pulls-agree? (d/db conn) model pattern eids)
       (let [t1 (d/basis-t (d/db conn))
             model2 (model-db graph2 trial ids)
             db (:db-after (d/transact! conn (vec (change-tx model model2))))
             since {:schema model-schema
                    :triples (clojure.set/difference (:triples model2) (:triples model))}]
         (and (pulls-agree? db model2 pattern eids)
              (pulls-agree? (d/as-of db t1) model pattern eids)
              (pulls-agree? (d/since db t1) since pattern eids)))))))

(def ^:dynamic *conns*
  "One connection per store for all trials: each trial adds a graph of new entities."
  nil)

(use-fixtures :once
  (fn [run]
    (let [opened (mapv #(tu/open-conn % {:schema schema}) tu/stores)]
      (try (binding [*conns* (mapv first opened)] (run))
           (finally (doseq [[conn cleanup] opened] (d/close conn) (cleanup)))))))

(defspec pull-matches-the-model trials
  (let [trial (atom 0)]
    (prop/for-all [[graph graph2] gen-graphs
                   pattern (gen-pattern 2)]
      (let [t (swap! trial inc)]
        (every? #(check-store % graph graph2 pattern t) *conns*)))))

;; ---------------------------------------------------------------- shrunk failures and corners

(defn- are-graphs
  "Checks each graph and pattern (alternating) on both stores."
  [& graphs-and-patterns]
  (doseq [[graph pattern] (partition 2 graphs-and-patterns)
          store tu/stores]
    (tu/with-conn [conn store {:schema schema}]
      (is (check-store conn graph pattern 0) (str store " " (pr-str graph pattern))))))

(deftest component-cycles-and-self-refs
  (are-graphs
   ;; a component cycle of two, a component that is its own component
   {:n 2 :tags {0 #{} 1 #{}} :edges [[0 :g/cm 1] [1 :g/c1 0]]} '[*]
   {:n 1 :tags {0 #{"a"}} :edges [[0 :g/c1 0] [0 :g/rm 0]]} '[* {:g/rm ...}]
   {:n 2 :tags {0 #{} 1 #{}} :edges [[0 :g/cm 1] [1 :g/cm 0]]} '[:g/name {:g/cm 2}]
   {:n 3 :tags {0 #{} 1 #{} 2 #{}} :edges [[0 :g/rm 1] [0 :g/rm 2] [1 :g/r1 2] [2 :g/r1 1]]}
   '[:db/id {:g/rm ... :g/r1 1} {:g/_r1 [:g/name]}]))
