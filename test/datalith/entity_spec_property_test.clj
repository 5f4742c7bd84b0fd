(ns datalith.entity-spec-property-test
  "Entity specs (:db/ensure) against a model, on both stores: an entity with some of :s/a, :s/b,
  :s/c and :s/tags, then a transaction that sets, retracts (a value, or the attribute) or
  leaves each, adds and retracts tags, or retracts the entity, and ensures none, one or both of
  two specs (:s/ab: attributes :s/a and :s/b; :s/nonneg: attribute :s/a and a predicate that
  refuses a negative :s/a), in map or list form, on an entity made before or in the
  transaction. The spec is checked against the entity as the transaction leaves it: the model
  applies the ops to the entity's attributes and says which refusals are possible
  (:tx/entity-attrs for a spec's missing attribute, :tx/entity-pred for a predicate's refusal
  of an entity that has the spec's attributes); a refused transaction leaves the entity and
  the basis t as they were, a taken one leaves the model's attributes. DATALITH_TRIALS=n
  raises the trial count."
  (:require [clojure.test :refer [deftest is testing]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.test-util :as tu]))

(set! *warn-on-reflection* true)

(def ^:private trials (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 150))

(defn nonneg-a? [db e] (not (neg? (or (:s/a (d/entity db e)) 0))))

(def ^:private schema
  [{:db/ident :s/id :db/valueType :db.type/long :db/unique :db.unique/identity}
   {:db/ident :s/a :db/valueType :db.type/long}
   {:db/ident :s/b :db/valueType :db.type/long}
   {:db/ident :s/c :db/valueType :db.type/long}
   {:db/ident :s/tags :db/valueType :db.type/long :db/cardinality :db.cardinality/many}
   {:db/ident :s/ab :db.entity/attrs [:s/a :s/b]}
   {:db/ident :s/nonneg :db.entity/attrs [:s/a] :db.entity/preds `nonneg-a?}])

(def ^:private specs {:s/ab {:attrs [:s/a :s/b]} :s/nonneg {:attrs [:s/a] :pred :s/a}})

(def ^:private one-attrs [:s/a :s/b :s/c])

(def ^:private gen-value (gen/choose -2 2))

(def ^:private gen-case
  (gen/let [new? (gen/frequency [[3 (gen/return false)] [1 (gen/return true)]])
            init (gen/let [vs (gen/vector (gen/one-of [(gen/return nil) gen-value]) 3)
                           tags (gen/set (gen/choose 1 3))]
                   (cond-> (into {} (remove (comp nil? val)) (zipmap one-attrs vs))
                     (seq tags) (assoc :s/tags tags)))
            ops (gen/vector (gen/frequency [[3 (gen/return :keep)] [3 (gen/tuple (gen/return :set) gen-value)]
                                            [1 (gen/return :retract-value)] [1 (gen/return :retract-attr)]])
                            3)
            add-tags (gen/set (gen/choose 1 4))
            drop-tags (gen/set (gen/choose 1 4))
            retract-entity? (gen/frequency [[9 (gen/return false)] [1 (gen/return true)]])
            ensure (gen/elements [[] [:s/ab] [:s/nonneg] [:s/ab :s/nonneg]])
            map-form? gen/boolean]
    {:new? new? :init (if new? {} init) :ops (zipmap one-attrs ops)
     :add-tags add-tags :drop-tags (if new? #{} drop-tags)
     :retract-entity? (and retract-entity? (not new?)) :ensure ensure :map-form? map-form?}))

(defn- after
  "The entity's attributes as the case's transaction leaves them, by the model."
  [{:keys [init ops add-tags drop-tags retract-entity?]}]
  (if retract-entity?
    {}
    (let [one (reduce-kv (fn [m a op]
                           (cond (= :keep op) m
                                 (and (vector? op) (= :set (first op))) (assoc m a (second op))
                                 :else (dissoc m a)))
                         (select-keys init one-attrs) ops)
          tags (-> (set (:s/tags init)) (into add-tags) (as-> t (reduce disj t (remove add-tags drop-tags))))]
      (cond-> one (seq tags) (assoc :s/tags tags)))))

(defn- refusals
  "The refusals the model allows for the case (empty: it is taken)."
  [{:keys [ensure] :as c}]
  (let [m (after c)]
    (set (for [s ensure
               :let [{:keys [attrs pred]} (specs s)
                     missing? (some #(nil? (get m %)) attrs)]
               :when (or missing? (and pred (neg? (get m pred 0))))]
           (if missing? :tx/entity-attrs :tx/entity-pred)))))

(defn- tx-data
  "The case's transaction on entity `e` (an id, or the tempid \"e\" for a new entity)."
  [{:keys [init ops add-tags drop-tags retract-entity? ensure map-form? new?]} id e]
  (if retract-entity?
    (into [[:db/retractEntity e]] (for [s ensure] [:db/add e :db/ensure s]))
    (let [sets (for [[a op] ops :when (vector? op)] [:db/add e a (second op)])
          retracts (for [[a op] ops
                         :when (#{:retract-value :retract-attr} op)
                         :when (or (= :retract-attr op) (contains? init a))]
                     (if (= :retract-attr op) [:db/retract e a] [:db/retract e a (get init a)]))
          ;; a tag both added and dropped is added (retracting it would conflict)
          tags (concat (for [t add-tags] [:db/add e :s/tags t])
                       (for [t (remove add-tags drop-tags)] [:db/retract e :s/tags t]))
          ensures (if (and map-form? (seq ensure))
                    [{:db/id e :db/ensure (if (= 1 (count ensure)) (first ensure) ensure)}]
                    (for [s ensure] [:db/add e :db/ensure s]))]
      (vec (concat (when new? [[:db/add e :s/id id]]) sets retracts tags ensures)))))

(defn- entity-map [db e]
  (when e
    (let [m (into {} (d/entity db e))]
      (cond-> (select-keys m one-attrs) (seq (:s/tags m)) (assoc :s/tags (set (:s/tags m)))))))

(defn- check-case
  "nil when the engine did as the model says, else what differed."
  [conn id c]
  (let [e (when-not (:new? c)
            (get-in (d/transact! conn [(assoc (:init c) :db/id "e" :s/id id)]) [:tempids "e"]))
        before (d/db conn)
        expected (refusals c)
        result (try {:report (d/transact! conn (tx-data c id (or e "e")))}
                    (catch clojure.lang.ExceptionInfo x {:error (:error (ex-data x))}))
        db (d/db conn)
        e (or e (d/entid db [:s/id id]))]
    (cond
      (:error result)
      (cond (not (contains? expected (:error result)))
            {:refused (:error result) :model-allows expected}
            (not= (d/basis-t before) (d/basis-t db)) {:refused-but-wrote (:error result)}
            (not= (entity-map before e) (entity-map db e)) {:refused-but-changed (entity-map db e)})
      (seq expected) {:taken true :model-refuses expected}
      (not= (after c) (or (entity-map db e) {}))
      {:entity (entity-map db e) :model (after c)}
      (some #(= :db/ensure (d/ident db (:a %))) (:tx-data (:report result)))
      {:ensure-stored true})))

(deftest ensure-against-a-model
  (doseq [store tu/stores]
    (testing (str "store " store)
      (tu/with-conn [conn store]
        (d/transact! conn schema)
        (let [ids (atom 0)
              r (tc/quick-check trials
                                (prop/for-all [c gen-case]
                                  (let [f (check-case conn (swap! ids inc) c)]
                                    (or (nil? f) (throw (ex-info "differs" (assoc f :case c))))))
                                :seed (some-> (System/getenv "DATALITH_SEED") parse-long))]
          (is (:pass? r) (pr-str (select-keys r [:seed :shrunk :result-data]))))))))
