(ns datalith.tx-property-support
  "The generated schemas and transactions of the generative transaction tests
  (datalith.tx-property-test and tx-writers-property-test; the import tests and
  the bench's tx-differential take them too): abstract ops, turned into concrete
  tx-data against the naive model's (datalith.naive) current state by
  `interpret-tx`, and `engine-new-eid`, which tells the model the ids the engine
  gave its new entities. DATALITH_TRIALS=n raises the trial count."
  (:require [clojure.string :as str]
            [clojure.test.check.generators :as gen]
            [datalith.naive :as naive])
  (:import (java.net URI)))

(def trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 40))

;; ---------------------------------------------------------------- schema

(def gen-schema
  "The attribute roles are fixed; their types and shapes vary (a fifth of :k/name's and of
  :k/tags's types are those of doubles, instants, UUIDs, big decimals, booleans, big integers
  and symbols, since stop 46, and URIs, since stop 47). Half the schemas have a composite,
  :k/pair of :k/name and :k/rank, unique by value or not. A quarter give :k/name an
  attribute predicate (naive/acceptable?, since stop 47)."
  (gen/let [name-type (gen/frequency [[4 (gen/return :string)] [2 (gen/return :long)]
                                      [1 (gen/elements [:double :instant :uuid :bigdec :boolean
                                                        :bigint :symbol :uri])]])
            tag-type (gen/frequency [[2 (gen/return :long)] [2 (gen/return :keyword)]
                                     [1 (gen/elements [:double :instant :uuid :bigdec :boolean
                                                       :bigint :symbol :uri])]])
            name-pred (gen/frequency [[3 (gen/return false)] [1 (gen/return true)]])
            part-card (gen/elements [:one :many])
            part-component gen/boolean
            composite (gen/elements [nil nil :plain :unique])]
    (cond-> {:k/id {:type :long :card :one :unique :identity}
             :k/email {:type :string :card :one :unique :value}
             :k/name (cond-> {:type name-type :card :one} name-pred (assoc :pred true))
             :k/tags {:type tag-type :card :many}
             :k/friend {:type :ref :card :one}
             :k/likes {:type :ref :card :many}
             :k/part {:type :ref :card part-card :component part-component}}
      composite (assoc :k/rank {:type :long :card :one}
                       :k/pair (cond-> {:type :tuple :card :one :tuple-attrs [:k/name :k/rank]}
                                 (= :unique composite) (assoc :unique :value))))))

(defn- composite-parts
  "The attributes of `schema` that are composites or their parts: never named by tx-data
  (a composite), nor altered (either)."
  [schema]
  (set (for [[a {:keys [tuple-attrs]}] schema :when tuple-attrs
             x (cons a tuple-attrs)]
         x)))

(defn engine-schema
  "The model's schema as datalith schema."
  [schema]
  (into {} (for [[a {:keys [type card unique component tuple-attrs pred]}] schema]
             [a (cond-> {:db/valueType (keyword "db.type" (name type))
                         :db/cardinality (keyword "db.cardinality" (name card))}
                  unique (assoc :db/unique (keyword "db.unique" (name unique)))
                  component (assoc :db/isComponent true)
                  tuple-attrs (assoc :db/tupleAttrs tuple-attrs)
                  pred (assoc :db.attr/preds `naive/acceptable?))])))

;; ---------------------------------------------------------------- transactions
;; The generator emits abstract ops whose numbers choose among the entities
;; and values that exist when the op is interpreted (`interpret-tx`), so that
;; ops hit existing entities and values often, and shrink well.

(def gen-choice
  "An entity or value choice: [kind n]; kind matters only for refs (:nested:
  a nested entity map where a map allows one, else like :eid; :new-id: an
  explicit id no entity has, just above every id in use; :tx-id: the id of
  a transaction, a past one, this one, or (refused) a future one)."
  (gen/tuple (gen/frequency [[6 (gen/return :eid)] [3 (gen/return :tmp)] [1 (gen/return :lookup)]
                             [1 (gen/return :nested)] [1 (gen/return :new-id)]
                             [1 (gen/return :tx-id)]])
             (gen/choose 0 7)))

(def free-attrs
  "Attributes outside every schema: the first transaction that names one installs it."
  [:free/a :free/b])

(def gen-attrs
  "Attribute choices of an entity map, each with one or two values."
  (gen/vector (gen/tuple gen/nat (gen/vector gen-choice 1 2)) 1 3))

(def gen-op
  (gen/frequency
    [[6 (gen/hash-map :op (gen/return :add) :e gen-choice :a gen/nat :v gen-choice)]
     [3 (gen/hash-map :op (gen/return :retract) :e gen-choice :a gen/nat :v gen-choice
                      :existing gen/boolean)]
     [1 (gen/hash-map :op (gen/return :retract-attr) :e gen-choice :a gen/nat)]
     [2 (gen/hash-map :op (gen/return :retract-entity) :e gen-choice)]
     [4 (gen/hash-map :op (gen/return :map) :e (gen/one-of [(gen/return nil) gen-choice])
                      :id gen/nat :attrs gen-attrs)]
     [3 (gen/hash-map :op (gen/return :upsert) :n gen/nat :tmp (gen/elements [nil 0 1 2])
                      :attrs gen-attrs)]
     [2 (gen/hash-map :op (gen/return :readd) :n gen/nat)]
     [1 (gen/hash-map :op (gen/return :tx-meta) :a gen/nat :v gen-choice)]
     [2 (gen/hash-map :op (gen/return :cas) :e gen-choice :a gen/nat
                      :old-is (gen/elements [:current :current :nil :other])
                      :old gen-choice :v gen-choice)]
     [1 (gen/hash-map :op (gen/return :alter) :a gen/nat :change gen/nat)]]))

(def gen-txs (gen/vector (gen/vector gen-op 0 6) 1 8))

(def ^:private long-string (apply str (repeat 600 "x")))

(def domains
  "Small, so that values collide; with edge cases of the value encoding:
  extreme longs, empty and non-ASCII strings, strings too long for a key
  (some sharing a 600-character prefix)."
  {:id [0 1 2 3 -7 Long/MIN_VALUE]
   :long [0 1 -1 Long/MAX_VALUE Long/MIN_VALUE 2]
   :string ["s0" "s1" "" "\u0000" "ß∂😀" long-string (str long-string "y") (str "y" long-string)]
   :keyword [:w0 :kw/w0 :kw/w1 :a.b/c]
   ;; values one rule of equality holds for (no -0.0 beside 0.0, no bigdec of two scales:
   ;; README's Known limits), at their encodings' edges: negative, subnormal and extreme
   ;; doubles, instants before the epoch, UUIDs with the high bit set
   :double [0.0 1.5 -2.25 Double/MIN_VALUE (- Double/MAX_VALUE) 1e300]
   :instant [#inst "1970-01-01T00:00:00.000-00:00" #inst "2026-01-01T00:00:00.000-00:00"
             #inst "1969-12-31T23:59:59.999-00:00" #inst "1900-01-01T00:00:00.000-00:00"]
   :uuid [#uuid "00000000-0000-0000-0000-000000000000" #uuid "ffffffff-ffff-ffff-ffff-ffffffffffff"
          #uuid "12345678-9abc-4def-8123-456789abcdef" #uuid "80000000-0000-4000-8000-000000000001"]
   :bigdec [0M 1.5M -1.5M 12345678901234567890.125M -0.001M]
   :boolean [true false]
   :bigint [0N 1N -1N 123456789012345678901234567890N -98765432109876543210N]
   :symbol ['s0 'ns/s1 'a.b/c]
   ;; opaque and hierarchical, escapes and characters outside ASCII, one too long for a key
   :uri [(URI. "http://a.example/") (URI. "http://a.example/b?c=1#d") (URI. "urn:isbn:0451450523")
         (URI. "https://ex.example/%C3%A4/ä") (URI. "mailto:x@y.example")
         (URI. (str "http://a.example/" long-string))]
   :any [0 "s0" :w0 1 "" -7 :kw/w1 "ß∂😀"]})

(defn domain [schema a]
  (if (= a :k/id) (:id domains) (domains (get-in schema [a :type] :any))))

(defn new-id
  "An entity id no entity has: the n-th above every id the model knows to
  be in use or named, so at or just above the engine's next id."
  [model n]
  (+ 1 (mod n 3) (apply max (filter #(< % naive/tx0)
                                    (concat (:reserved model) (:ents model) (:named model))))))

(defn- tx-id
  "A transaction's entity id: the last one, this one, the first one, or a
  future one (which no transaction may name)."
  [model n]
  (+ naive/tx0 (case (int (mod n 4))
                 0 (:t model)
                 1 (inc (:t model))
                 2 (:t0 model)
                 3 (+ (:t model) 2 n))))

(defn pick [xs n] (when (seq xs) (nth xs (mod n (count xs)))))

(defn- alteration
  "The schema alteration an :alter op makes of the model's `schema`: an attribute of the
  schema other than :k/id made cardinality-one or many, one that is not a ref made unique
  (value or identity) or not, a ref attribute made a component or not. Every kind may meet
  data the transaction writes, or data held, that it cannot stand."
  [schema {:keys [a change]}]
  (let [attr (pick (vec (sort (remove (into (conj (set free-attrs) :k/id) (composite-parts schema))
                                       (keys schema))))
                   a)
        {:keys [type card unique component]} (schema attr)
        card-to #(vector :db/add attr :db/cardinality (keyword "db.cardinality" (name %)))]
    (case (int (mod change 4))
      0 (card-to (if (= :many card) :one :many))
      1 (cond (= :ref type) [(if component :db/retract :db/add) attr :db/isComponent true]
              unique (card-to :one)
              :else (card-to :many))
      (2 3) (cond (= :ref type) (card-to :one)
                  unique [:db/retract attr :db/unique (keyword "db.unique" (name unique))]
                  :else [:db/add attr :db/unique (if (= 2 (int (mod change 4)))
                                                   :db.unique/value :db.unique/identity)]))))

(defn interpret-tx
  "Abstract ops -> concrete tx-data against the model's current state."
  [model ops]
  (let [schema (:schema model)
        fs (naive/facts model)
        ents (vec (naive/entities model))
        composites (set (for [[a {:keys [tuple-attrs]}] schema :when tuple-attrs] a))
        attrs (vec (sort (remove composites (into (set free-attrs) (keys schema)))))
        ids (vec (sort (for [[_ a v] fs :when (= a :k/id)] v)))
        lookup (fn [n] [:k/id (if (and (seq ids) (< n 6)) ; mostly an existing value
                                (pick ids n)
                                (pick (domain schema :k/id) n))])
        entity (fn [[kind n]] ; an entity position of an assertion
                 (case kind
                   :tmp (str "t" (mod n 3))
                   :lookup (lookup n)
                   :new-id (new-id model n)
                   :tx-id (tx-id model n)
                   (or (pick ents n) (str "t" (mod n 3)))))
        existing (fn [[kind n]] ; an entity position of a retraction, or nil
                   (case kind
                     :lookup (lookup n)
                     :new-id (new-id model n)
                     :tx-id (tx-id model n)
                     (pick ents n)))
        attr #(pick attrs %)
        ;; maps may also use reverse attributes
        map-attr #(pick (into attrs (for [a attrs :when (naive/ref-attr? schema a)]
                                      (keyword (namespace a) (str "_" (name a)))))
                        %)
        card-one-attrs (vec (filter #(not= :many (get-in schema [% :card])) attrs))
        ;; tempids in entity positions: the only ones ref values may use
        temps (vec (sort (set (filter string?
                                      (for [op ops]
                                        (case (:op op)
                                          (:add :map) (some-> (:e op) entity)
                                          :upsert (some->> (:tmp op) (str "t"))
                                          nil))))))
        value (fn [a [kind n]] ; a value of a, or nil
                (if (naive/ref-attr? schema a)
                  (case kind
                    :tmp (or (pick temps n) (pick ents n))
                    :lookup (lookup n)
                    :new-id (new-id model n)
                    :tx-id (tx-id model n)
                    (or (pick ents n) (pick temps n)))
                  (pick (domain schema a) n)))
        map-value (fn [a [kind n :as choice]] ; in a map: refs may be nested maps
                    (if (and (= kind :nested) (naive/ref-attr? schema a))
                      (cond-> {:k/id (second (lookup n)) :k/name (pick (domain schema :k/name) n)}
                        (odd? n) (assoc :db/id (str "t" (mod n 3))))
                      (value a choice)))
        map-attrs (fn [choices]
                    (into {} (for [[ai vcs] choices
                                   :let [k (map-attr ai)
                                         fwd (keyword (namespace k) (str/replace (name k) #"^_" ""))
                                         vs (keep #(map-value fwd %) vcs)]
                                   :when (seq vs)]
                               [k (if (or (not= k fwd) (= :many (get-in schema [k :card])))
                                    (set vs)
                                    (first vs))])))
        values-of (fn [e a] (vec (sort (for [[e' a' v] fs :when (and (= e e') (= a a'))] v))))]
    (vec
      (for [op ops
            :let [form
                  (case (:op op)
                    :add (let [a (attr (:a op)) v (value a (:v op))]
                           (when (some? v) [:db/add (entity (:e op)) a v]))
                    :retract (let [a (attr (:a op)) e (existing (:e op))
                                   v (or (when (:existing op)
                                           (pick (values-of e a) (second (:v op))))
                                         (value a (:v op)))]
                               (when (and e (some? v)) [:db/retract e a v]))
                    :retract-attr (when-let [e (existing (:e op))]
                                    [(if (even? (:a op)) :db/retract :db.fn/retractAttribute)
                                     e (attr (:a op))])
                    :retract-entity (when-let [e (existing (:e op))] [:db/retractEntity e])
                    :map (let [m (map-attrs (:attrs op))]
                           (if-let [e (some-> (:e op) entity)]
                             (cond ;; a map of :db/id alone (a lookup ref may name nothing)
                                   (zero? (mod (:id op) 5)) {:db/id e}
                                   (seq m) (assoc m :db/id e))
                             (assoc m :k/id (pick (domain schema :k/id) (:id op)))))
                    :upsert (let [id (or (pick ids (:n op)) (pick (domain schema :k/id) (:n op)))]
                              (cond-> (assoc (map-attrs (:attrs op)) :k/id id)
                                (:tmp op) (assoc :db/id (str "t" (:tmp op)))))
                    :readd (when-let [[e a v] (pick (vec (sort (remove #(composites (second %)) fs)))
                                                    (:n op))]
                             [:db/add e a v])
                    :tx-meta (let [a (attr (:a op)) v (value a (:v op))]
                               (when (some? v) [:db/add "datomic.tx" a v]))
                    :alter (alteration schema op)
                    :cas (let [a (pick card-one-attrs (:a op))
                               e (existing (:e op))
                               old (case (:old-is op)
                                     :current (first (values-of e a))
                                     :nil nil
                                     :other (value a (:old op)))
                               v (value a (:v op))]
                           (when (and e (some? v)) [:db/cas e a old v])))]
            :when form]
        form))))

;; ---------------------------------------------------------------- the model beside the engine

(defn engine-new-eid
  "The id the engine gave a new entity of the model's: by tempid, or by the
  identity value it asserted; or the id of an attribute it installed, by
  the attribute's :db/ident datom."
  [report]
  (let [fallback (atom -1)]
    (fn [{:keys [tempids identities attribute]}]
      (cond
        (not report) (swap! fallback dec)
        attribute (some #(when (and (= :db/ident (:a %)) (= attribute (:v %)) (:added %)) (:e %))
                        (:tx-data report))
        :else
        (or (some #(get (:tempids report) %) tempids)
            (some (fn [[a v]] (some #(when (and (= a (:a %)) (= v (:v %)) (:added %)) (:e %))
                                    (:tx-data report)))
                  identities))))))
