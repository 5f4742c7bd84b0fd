(ns datalith.tx-property-test
  "Random schemas and transaction sequences (schema alterations among their
  data), run on both stores and on the naive model (datalith.naive); after
  every transaction the engine must agree
  with the model on acceptance, tempids, tx-data, the current datoms, every
  as-of and since view, history, and on every index holding the same datoms.
  DATALITH_TRIALS=n raises the trial count."
  (:require [clojure.set :as set]
            [clojure.string :as str]
            [clojure.walk :as walk]
            [clojure.test :refer [deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [clojure.test.check.results :as results]
            [datalith.core :as d]
            [datalith.naive :as naive]
            [datalith.test-util :as tu])
  (:import (datalith.conn Conn)
           (datalith.index Datom)
           (datalith.store LmdbStore MemStore)
           (java.io File)
           (java.net URI)))

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

(def ^:private domains
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

(defn- domain [schema a]
  (if (= a :k/id) (:id domains) (domains (get-in schema [a :type] :any))))

(defn- new-id
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

(defn- pick [xs n] (when (seq xs) (nth xs (mod n (count xs)))))

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

(defn- interpret-tx
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

;; ---------------------------------------------------------------- comparing

(defn- current-tuples [attrs ds]
  (into #{} (comp (filter #(contains? attrs (:a %)))
                  (map (fn [x] [(:e x) (:a x) (:v x) (d/tx->t (:tx x))])))
        ds))

(defn- history-tuples [attrs ds]
  (into #{} (comp (filter #(contains? attrs (:a %)))
                  (map (fn [x] [(:e x) (:a x) (:v x) (d/tx->t (:tx x)) (:added x)])))
        ds))

(defn- diff [check expected actual]
  (when (not= expected actual)
    (if (and (coll? expected) (coll? actual))
      {:check check
       :missing (set/difference (set expected) (set actual))
       :extra (set/difference (set actual) (set expected))}
      {:check check :expected expected :actual actual})))

(defn- sorted-by? [keyfn ds]
  (let [ks (map keyfn ds)]
    (every? (fn [[x y]] (<= (compare x y) 0)) (partition 2 1 ks))))

(defn- check-indexes
  "The four indexes of `db` hold the same datoms, each in its order; nil or a failure."
  [label schema attrs db tuples]
  (let [ref? #(naive/ref-attr? schema (:a %))
        eavt (d/datoms db :eavt)
        aevt (d/datoms db :aevt)
        avet (d/datoms db :avet)
        vaet (d/datoms db :vaet)
        user (fn [ds] (filter #(contains? attrs (:a %)) ds))]
    (or (diff [label :aevt] (tuples eavt) (tuples aevt))
        (diff [label :avet] (tuples eavt) (tuples avet))
        (diff [label :vaet] (tuples (filter ref? (user eavt))) (tuples (user vaet)))
        (when-not (sorted-by? (fn [x] [(:e x) (.aid ^Datom x)]) eavt)
          {:check [label :eavt-order] :datoms (vec eavt)})
        (when-not (sorted-by? (fn [x] [(.aid ^Datom x) (:e x)]) aevt)
          {:check [label :aevt-order] :datoms (vec aevt)})
        (when-not (sorted-by? (fn [x] (.aid ^Datom x)) avet)
          {:check [label :avet-order] :datoms (vec avet)})
        (when-not (sorted-by? (fn [x] [(:v x) (.aid ^Datom x)]) vaet)
          {:check [label :vaet-order] :datoms (vec vaet)}))))

(defn- order-key
  "A value as far as index order is checked. Strings too long for a key sort
  by a hash of the full value after their first ~380 bytes (see
  Codec/keyPart), so `index-range` and AVET order are checked on their first
  300 characters only: `(index-range db a long-string nil)` and AVET order
  among long strings that share a prefix are known to be wrong."
  [v]
  (if (and (string? v) (> (count v) 300)) (subs v 0 300) v))

(defn- check-value-order
  "AVET and `index-range` of each long or string attribute follow value
  order (Clojure's `compare`), bounds included; nil or a failure."
  [schema db now]
  (some (fn [a]
          (let [dom (sort (distinct (map order-key (domain schema a))))
                in-range (fn [lo hi]
                           (set (filter (fn [[_ a' v]] (and (= a a')
                                                            (or (nil? lo) (<= (compare lo v) 0))
                                                            (or (nil? hi) (neg? (compare v hi)))))
                                        now)))
                ordered? (fn [ds] (sorted-by? (comp order-key :v) ds))
                avet (d/datoms db :avet a)]
            (or (when-not (ordered? avet)
                  {:check [:avet-value-order a] :values (mapv :v avet)})
                (some (fn [[lo hi]]
                        (let [ds (d/index-range db a lo hi)]
                          (or (diff [:index-range a lo hi] (in-range lo hi)
                                    (current-tuples #{a} ds))
                              (when-not (ordered? ds)
                                {:check [:index-range-order a lo hi] :values (mapv :v ds)}))))
                      (concat (for [v dom] [v nil])
                              (for [v dom] [nil v])
                              (partition 2 1 dom))))))
        (for [[a {:keys [type]}] schema :when (#{:long :string :double :instant :uuid :bigdec :bigint :boolean :keyword :symbol} type)] a)))

(defn- sample
  "At most about n of xs, spread over them."
  [n xs]
  (take-nth (max 1 (quot (count xs) n)) xs))

(defn- check-prefixes
  "`datoms` with one to three leading components, entities named by id or
  lookup ref, current and history, for a sample of entities; nil or a failure."
  [model db now]
  (let [schema (:schema model)
        attrs (into (set free-attrs) (keys schema))
        cur #(current-tuples attrs %)
        hist (naive/history-datoms model (:t model))
        where (fn [pred xs] (set (filter pred xs)))]
    (some (fn [e]
            (let [own (where #(= e (first %)) now)]
              (or (diff [:history-eavt e] (where #(= e (first %)) hist)
                        (history-tuples attrs (d/datoms (d/history db) :eavt e)))
                  (some (fn [[_ a v]]
                          (let [ref? (naive/ref-attr? schema a)]
                            (or (when (get-in schema [a :unique])
                                  (diff [:lookup-ref-eavt a v] own (cur (d/datoms db :eavt [a v]))))
                                (diff [:eavt e a] (where #(= a (second %)) own)
                                      (cur (d/datoms db :eavt e a)))
                                (diff [:eavt e a v] (where #(= [e a v] (subvec % 0 3)) now)
                                      (cur (d/datoms db :eavt e a v)))
                                (diff [:aevt a e] (where #(= a (second %)) own)
                                      (cur (d/datoms db :aevt a e)))
                                (diff [:avet a v] (where #(= [a v] (subvec % 1 3)) now)
                                      (cur (d/datoms db :avet a v)))
                                (when ref?
                                  (diff [:vaet v a] (where #(= [a v] (subvec % 1 3)) now)
                                        (cur (d/datoms db :vaet v a)))))))
                        (sort own)))))
          (sample 10 (naive/entities model)))))

(defn- check-db
  "The engine's db value at the model's t against the model; nil or a failure."
  [model db]
  (let [schema (:schema model)
        attrs (into (set free-attrs) (keys schema))
        t (:t model)
        now (naive/current model t)
        cur #(current-tuples attrs %)
        hist #(history-tuples attrs %)]
    (or (diff :basis-t t (d/basis-t db))
        (diff :eavt now (cur (d/datoms db :eavt)))
        (check-indexes :current schema attrs db cur)
        (check-value-order schema db now)
        (some (fn [e]
                (or (diff [:eavt e] (set (filter #(= e (first %)) now))
                          (cur (d/datoms db :eavt e)))
                    (diff [:vaet e] (set (filter (fn [[_ a v]] (and (naive/ref-attr? schema a)
                                                                    (= v e)))
                                                 now))
                          (cur (d/datoms db :vaet e)))))
              (sample 40 (naive/entities model)))
        (check-prefixes model db now)
        (some (fn [a] (diff [:aevt a] (set (filter #(= a (second %)) now))
                            (cur (d/datoms db :aevt a))))
              attrs)
        (some (fn [v] (diff [:avet :k/id v] (set (filter (fn [[_ a v']] (and (= a :k/id) (= v v')))
                                                         now))
                            (cur (d/datoms db :avet :k/id v))))
              (domain schema :k/id))
        (diff :history (naive/history-datoms model t) (hist (d/datoms (d/history db) :eavt)))
        (check-indexes :history schema attrs (d/history db) hist)
        (some (fn [t']
                (let [as-of (d/as-of db t')]
                  (or (diff [:as-of t'] (naive/current model t') (cur (d/datoms as-of :eavt)))
                      (check-indexes [:as-of t'] schema attrs as-of cur)
                      (diff [:as-of-history t'] (naive/history-datoms model t')
                            (hist (d/datoms (d/history as-of) :eavt)))
                      (diff [:since t'] (naive/since-datoms model t' t)
                            (cur (d/datoms (d/since db t') :eavt)))
                      (diff [:since-history t']
                            (set (filter #(> (nth % 3) t') (naive/history-datoms model t)))
                            (hist (d/datoms (d/history (d/since db t')) :eavt)))
                      (diff [:as-of-since t'] (naive/since-datoms model (dec t') t')
                            (cur (d/datoms (d/since as-of (dec t')) :eavt))))))
              (range (:t0 model) t)))))

(defn- check-snapshots
  "Earlier db values still show their own t; nil or a failure."
  [model dbs]
  (let [attrs (into (set free-attrs) (keys (:schema model)))]
    (some (fn [db]
            (let [t (d/basis-t db)]
              (or (diff [:snapshot t] (naive/current model t)
                        (current-tuples attrs (d/datoms db :eavt)))
                  (diff [:snapshot-history t] (naive/history-datoms model t)
                        (history-tuples attrs (d/datoms (d/history db) :eavt))))))
          dbs)))

(defn- engine-new-eid
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

(defn- attempt
  "{:report r}, {:error kind :message m} for an ex-info, or {:crash text}."
  [f]
  (try {:report (f)}
       (catch clojure.lang.ExceptionInfo ex
         {:error (:error (ex-data ex)) :message (ex-message ex)})
       (catch Throwable ex {:crash (str ex)})))

(defn- tx-out
  "A report's :tx-data as the set of user [e a v added]."
  [attrs report]
  (set (for [[e a v _ added] (history-tuples attrs (:tx-data report))] [e a v added])))

(defn- check-log
  "The transaction log (`tx-range`) against the model's; nil or a failure."
  [model conn]
  (let [attrs (into (set free-attrs) (keys (:schema model)))
        one (fn [t] (for [{:keys [data]} (d/tx-range conn t (inc t))] (tx-out attrs {:tx-data data})))]
    (or
     (some (fn [{:keys [t datoms]}] (diff [:tx-range t] [(set datoms)] (one t)))
           (:log model))
     (diff :tx-range
          (into {} (for [{:keys [t datoms]} (:log model)] [t (set datoms)]))
          (into {} (for [{:keys [t data]} (d/tx-range conn (inc (:t0 model)) nil)]
                     [t (tx-out attrs {:tx-data data})]))))))

(defn- check-with-chain
  "`with` applied to the previous `with` result (overlays on overlays) against
  the model; returns {:wdb db} or {:check ...}."
  [model expected wdb tx-data]
  (let [attrs (into (set free-attrs) (keys (:schema model)))
        w (attempt #(d/with wdb tx-data))]
    (cond
      (:crash w) {:check :with-chain-crash :with w}
      (not= (boolean (:report w)) (boolean (:model expected)))
      {:check :with-chain-acceptance :with w}
      (:error w) {:wdb wdb}
      :else
      (let [m (:model expected)
            db (:db-after (:report w))]
        (or (diff :with-chain-tempids (:tempids expected)
                  (dissoc (:tempids (:report w)) :db/current-tx))
            (diff :with-chain-tx-data (:datoms expected) (tx-out attrs (:report w)))
            (diff :with-chain-eavt (naive/current m (:t m))
                  (current-tuples attrs (d/datoms db :eavt)))
            (check-indexes :with-chain (:schema m) attrs db #(current-tuples attrs %))
            (diff :with-chain-history (naive/history-datoms m (:t m))
                  (history-tuples attrs (d/datoms (d/history db) :eavt)))
            {:wdb db})))))

(defn- check-verified
  "d/verify of the store after a transaction (issue #13): every index, the history, BLOBS
  and META agree with the log; and the database rebuilt from the log reads the same. nil
  or a failure."
  [conn]
  (let [r (d/verify conn)]
    (if-not (:ok? r)
      {:check :verify :problems (:problems r)}
      (let [{rebuilt :conn} (d/rebuild-indexes conn :mem)
            view (fn [db] [(d/basis-t db) (set (d/datoms db :eavt)) (vec (d/datoms db :avet))
                           (set (d/datoms (d/history db) :eavt))])]
        (try (diff :rebuilt (view (d/db conn)) (view (d/db rebuilt)))
             (finally (d/close rebuilt)))))))

(defn- run-tx
  "Runs `tx-data` on the engine (transact!, with on the db before, with on
  the previous with) and on the model, and compares everything; returns the
  next {:conn :model :dbs :wdb} or {:failure {...}}."
  [{:keys [conn model dbs wdb] :as state} tx-data]
  (let [before (d/db (get state :before-conn conn)) ; see run-twin-case
        attrs (into (set free-attrs) (keys (:schema model)))
        engine (attempt #(d/transact! conn tx-data))
        with (attempt #(d/with before tx-data))
        report (:report engine)
        expected (naive/transact model tx-data (engine-new-eid report))
        fail #(hash-map :failure (merge {:tx-data tx-data :engine (dissoc engine :report)
                                         :model (dissoc expected :model)}
                                        %))]
    (cond
      (:crash engine) (fail {:check :engine-crash})
      (:crash with) (fail {:check :with-crash :with with})
      (:bad-eid expected) (fail {:check :fresh-eid})
      (and (:error expected) report)
      (fail {:check :engine-accepted :tx-data-out (tx-out attrs report)})
      (and (:error engine) (not (:error expected))) (fail {:check :engine-rejected})
      (not= (boolean (:report with)) (boolean report)) (fail {:check :with-acceptance :with with})

      (:error engine)
      (let [chain (check-with-chain model expected wdb tx-data)]
        (if-let [f (or (diff :rejected-basis-t (d/basis-t before) (d/basis-t (d/db conn)))
                       (check-db model (d/db conn))
                       (when-not (:wdb chain) chain))]
          (fail f)
          state))

      :else
      (let [m (:model expected)
            t (:t m)
            chain (check-with-chain model expected wdb tx-data)
            f (or (diff :tempids (:tempids expected) (dissoc (:tempids report) :db/current-tx))
                  (diff :tx-data (:datoms expected) (tx-out attrs report))
                  (diff :with-tempids (:tempids report) (:tempids (:report with)))
                  (diff :with-tx-data (tx-out attrs report) (tx-out attrs (:report with)))
                  (diff :with-eavt (naive/current m t)
                        (current-tuples attrs (d/datoms (:db-after (:report with)) :eavt)))
                  (diff :with-history (naive/history-datoms m t)
                        (history-tuples attrs (d/datoms (d/history (:db-after (:report with)))
                                                        :eavt)))
                  (when-not (:wdb chain) chain)
                  (check-db m (d/db conn))
                  (check-snapshots m dbs)
                  (check-log m conn)
                  (check-verified conn))]
        (if f
          (fail f)
          (assoc state :model m :dbs (conj dbs (d/db conn)) :wdb (:wdb chain)))))))

(defn run-case
  "Runs transactions on a fresh `store` database and the model: `txs` is a
  sequence of functions model -> tx-data. With :reopen-at k (LMDB only), the
  database is closed and reopened before the k-th transaction. nil when all
  agree, else the failure with the concrete tx-data that led to it."
  ([store schema txs] (run-case store schema txs nil))
  ([store schema txs {:keys [reopen-at]}]
   (let [dir (when (tu/durable? store) (tu/temp-dir))
         ;; a reopen names the schema as the model has it then (connect's :schema would alter
         ;; the database back to the first one), but for the attributes installed by first use
         open (fn [schema]
                (let [opts (tu/store-opts store {:schema (engine-schema
                                                           (into {} (remove #(= :any (:type (val %))))
                                                                 schema))})]
                  (if dir (d/connect (.getPath ^File dir) opts) (d/connect :mem opts))))
         conn (atom (open schema))]
     (try
       (let [db0 (d/db @conn)
             reserved (set (map :e (d/datoms db0 :eavt)))
             model0 (naive/empty-db schema (d/basis-t db0) reserved)]
         (loop [state {:conn @conn :model model0 :dbs [db0] :wdb db0}, log [], txs txs, i 0]
           (if-let [[make-tx & more] (seq txs)]
             (let [state (if (and dir (= i reopen-at))
                           (do (d/close @conn)
                               (reset! conn (open (:schema (:model state))))
                               (assoc state :conn @conn :dbs [] :wdb (d/db @conn)))
                           state)
                   reopened (when (and dir (= i reopen-at))
                              (check-db (:model state) (d/db @conn)))
                   tx-data (make-tx (:model state))
                   log (conj log tx-data)
                   r (if reopened {:failure (assoc reopened :reopened-before i)}
                                  (run-tx state tx-data))]
               (if-let [f (:failure r)]
                 (assoc f :store store :schema schema :txs log :reopen-at reopen-at)
                 (recur r log more (inc i))))
             nil)))
       (finally
         (d/close @conn)
         (some-> dir tu/delete-tree))))))

(defn- brief
  "Failure data with long strings shortened, for reading."
  [x]
  (walk/postwalk #(if (and (string? %) (> (count %) 40))
                    (str (subs % 0 12) "...(" (count %) " chars)..." (subs % (- (count %) 12)))
                    %)
                 x))

(defn- outcome [failures]
  (reify results/Result
    (pass? [_] (empty? failures))
    (result-data [_] (brief (first failures)))))

(defspec transactions-agree-with-the-model trials
  (prop/for-all [schema gen-schema
                 txs gen-txs
                 reopen-at (gen/frequency [[1 (gen/return nil)] [1 (gen/choose 1 8)]])]
    (outcome (keep #(run-case % schema (map (fn [ops] (fn [m] (interpret-tx m ops))) txs)
                              {:reopen-at reopen-at})
                   tu/checked-stores))))

;; Transactions of more datoms than one chunk of `d/datoms` (512), so that
;; scans resume mid-index, with retractions and re-assertions whose history
;; datoms straddle chunk boundaries.

(defn- bulk-txs [n tags-per step]
  (let [names #(pick (domain %1 :k/name) %2)]
    [(fn [m]
       (vec (for [i (range n)]
              {:db/id (str "b" i)
               :k/name (names (:schema m) i)
               :k/tags (set (take (inc (mod i tags-per)) (domain (:schema m) :k/tags)))})))
     (fn [m]
       (vec (for [[e a v] (sort (naive/facts m)) :when (and (= a :k/name) (zero? (mod e step)))]
              [:db/retract e a v])))
     (fn [m]
       (vec (for [[e a v] (sort (naive/facts m)) :when (and (= a :k/tags) (odd? e))]
              [:db/retract e a v])))
     (fn [m]
       (vec (for [e (naive/entities m) :when (zero? (mod e (inc step)))]
              [:db/add e :k/name (names (:schema m) (inc e))])))]))

(defspec chunked-scans-agree-with-the-model (max 1 (quot trials 40))
  (prop/for-all [schema gen-schema
                 extra (gen/choose 0 60)
                 tags-per (gen/choose 1 4)
                 step (gen/choose 2 5)]
    ;; entities enough for ~600 user datoms: 1 name and (tags-per + 1) / 2 tags each
    (let [n (+ extra (quot 1200 (+ 3 tags-per)))]
      (outcome (keep #(run-case % schema (bulk-txs n tags-per step)) tu/checked-stores)))))

;; ---------------------------------------------------------------- fixed cases
;; Hand-picked transaction sequences, replayed through the same harness.

(defn- replay
  "Runs concrete tx-data sequences on both stores against the model."
  [schema txs]
  (doseq [store tu/stores]
    (is (nil? (run-case store schema (map constantly txs))) (str "store " store))))

(def ^:private base-schema
  {:k/id {:type :long :card :one :unique :identity}
   :k/email {:type :string :card :one :unique :value}
   :k/name {:type :string :card :one}
   :k/tags {:type :long :card :many}
   :k/friend {:type :ref :card :one}
   :k/likes {:type :ref :card :many}
   :k/part {:type :ref :card :many :component true}})

(deftest order-of-tx-data-does-not-matter
  ;; Each pair of operations touches one entity's attribute within one
  ;; transaction; both orders must give the same result (accepted or
  ;; rejected), the model's. Guards the Transactor's `asserted`/`retracted`
  ;; bookkeeping (its first version decided these by position in tx-data).
  (let [setup [{:db/id "a" :k/id 1 :k/name "s0" :k/tags #{1}}
               {:db/id "b" :k/id 2 :k/friend "a" :k/likes #{"a"}}]
        a [:k/id 1]
        pairs [[[:db/add a :k/name "s0"] [:db/retract a :k/name "s0"]]
               [[:db/add a :k/name "s0"] [:db/add a :k/name "s1"]]
               [[:db/retract a :k/tags 3] [:db/add a :k/tags 3]]
               [[:db/add a :k/tags 3] [:db/retractEntity a]]
               [[:db/add a :k/name "s0"] [:db/retractEntity a]]
               [[:db/add a :k/name "s1"] [:db/retract a :k/name]]
               [[:db/add [:k/id 2] :k/likes a] [:db/retractEntity a]]
               [[:db/cas a :k/name "s0" "s1"] [:db/retract a :k/name "s0"]]
               [[:db/add a :k/id 5] {:db/id "x" :k/id 1 :k/name "s1"}]]]
    (doseq [[x y] pairs]
      (testing (pr-str [x y])
        (replay base-schema [setup [x y]])
        (replay base-schema [setup [y x]])))))

(deftest model-sanity
  (testing "the harness itself: plain creation, upsert, retractEntity"
    (replay base-schema
            [[{:db/id "t0" :k/id 1 :k/name "s0" :k/tags #{1 2}}
              {:db/id "t1" :k/id 2 :k/friend "t0" :k/part #{"t2"}}
              {:db/id "t2" :k/id 3}]
             [{:k/id 1 :k/name "s1"}]
             [[:db/retractEntity [:k/id 2]]]])))

(deftest explicit-ids-next-to-installed-attributes
  ;; An explicit id at the allocator's next id, in a transaction that also
  ;; installs attributes on first use and makes new entities: the engine
  ;; must give them other ids (the model's `claim!` checks), then and after
  ;; reopening.
  (doseq [reopen-at [nil 1 2]
          store tu/stores]
    (is (nil? (run-case store base-schema
                        [(fn [m] [[:db/add "t0" :free/a 1] [:db/add (new-id m 0) :k/name "s0"]
                                  [:db/add (new-id m 1) :free/b 2]])
                         (fn [m] [{:db/id "t1" :k/name "s1" :k/friend (new-id m 2)}
                                  [:db/add (new-id m 0) :free/a 3]])
                         (fn [m] [{:db/id "t2" :k/id 5} [:db/retract (new-id m 0) :k/name "s0"]])]
                        {:reopen-at reopen-at}))
        (str store " reopened before " reopen-at))))

;; ---------------------------------------------------------------- any input
;; Whatever tx-data holds, transact! and with either accept it or throw an
;; ex-info with a namespaced :error (never :tx/internal, datalith's own
;; fault), and a refused transaction writes nothing.

(def ^:private odd-values
  "Values a careless or hostile caller might put anywhere in tx-data."
  [nil 0 1 -1 1000 2000 (dec naive/tx0) naive/tx0 (inc naive/tx0) Long/MAX_VALUE Long/MIN_VALUE
   (int 5) 1.5 ##NaN 2N 1.5M "" "t0" "datomic.tx" "x" :db/add :db/retract :db/retractEntity
   :db/cas :db/id :db/ident :db/valueType :db/cardinality :db/unique :db/isComponent
   :db/tupleAttrs :db/tupleTypes :db/tupleType :db/txInstant :db/doc :db/index
   :db.type/ref :db.type/string :db.type/long :db.type/tuple :db.cardinality/many
   :db.unique/identity :db/current-tx :k/id :k/ref :k/many :k/part :k/pair :k/id+ref :k/_ref
   :k/_part :free/x :no/such 'datalith.tx-property-test/no-fn 'no-ns-fn true
   #inst "2020-01-01" (java.util.UUID. 0 0)])

(def ^:private gen-odd
  (gen/recursive-gen
    (fn [inner] (gen/one-of [(gen/vector inner 0 4) (gen/list inner) (gen/set inner {:max-elements 3})
                             (gen/map inner inner {:max-elements 3})]))
    (gen/one-of [(gen/elements odd-values) gen/large-integer gen/string-ascii
                 (gen/fmap (fn [n] (object-array (range n))) (gen/choose 0 2))
                 (gen/return inc) (gen/fmap (fn [_] (Object.)) gen/nat)])))

(def ^:private gen-odd-form
  "Forms shaped like tx-data, and not."
  (let [pick (gen/elements odd-values)]
    (gen/one-of [(gen/tuple (gen/elements [:db/add :db/retract]) pick pick gen-odd)
                 (gen/tuple (gen/elements [:db/add :db/retract :db/cas :db/retractEntity])
                            gen-odd gen-odd)
                 (gen/tuple (gen/return :db/cas) pick pick gen-odd gen-odd)
                 (gen/map pick gen-odd {:max-elements 4})
                 (gen/fmap #(assoc % :db/ident (keyword "new" (str "a" (count %))))
                           (gen/map pick gen-odd {:max-elements 3}))
                 gen-odd])))

(def ^:private odd-schema
  [{:db/ident :k/id :db/valueType :db.type/long :db/unique :db.unique/identity}
   {:db/ident :k/ref :db/valueType :db.type/ref :db/unique :db.unique/identity}
   {:db/ident :k/many :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   {:db/ident :k/part :db/valueType :db.type/ref :db/cardinality :db.cardinality/many
    :db/isComponent true}
   {:db/ident :k/pair :db/valueType :db.type/tuple :db/tupleTypes [:db.type/long :db.type/string]}
   {:db/ident :k/id+ref :db/valueType :db.type/tuple :db/tupleAttrs [:k/id :k/ref]
    :db/unique :db.unique/identity}])

(defn- odd-outcome
  ":ok when `f` returns, :refused when it throws an ex-info with a namespaced
  :error other than :tx/internal, else what it threw."
  [f]
  (try (f) :ok
       (catch clojure.lang.ExceptionInfo ex
         (let [e (:error (ex-data ex))]
           (if (and (keyword? e) (namespace e) (not= :tx/internal e))
             :refused
             {:error e :message (ex-message ex) :cause (str (ex-cause ex))})))
       (catch Throwable t {:thrown (str t)})))

(defn- odd-tx-failure
  "nil when `with` and `transact!` both accept `tx`, or both refuse it
  cleanly and nothing is written; else what went wrong."
  [conn tx]
  (let [before (d/db conn)
        with (odd-outcome #(d/with before tx))
        real (odd-outcome #(d/transact! conn tx))]
    (when-not (and (#{:ok :refused} real) (= with real)
                   (or (= :ok real) (= (d/basis-t before) (d/basis-t (d/db conn)))))
      {:tx tx :with with :transact real})))

(defspec any-tx-data-is-accepted-or-refused-cleanly trials
  (prop/for-all [txs (gen/vector (gen/vector gen-odd-form 0 4) 1 4)]
    (outcome
      (for [store tu/stores
            :let [f (tu/with-conn [conn store {:schema odd-schema}]
                      (some #(odd-tx-failure conn %) txs))]
            :when f]
        (assoc f :store store)))))

;; ---------------------------------------------------------------- two connections, one store
;; Two connections over one store object, each transaction on one of them at
;; random: a connection whose last value is stale must build on the other's
;; commits (t, entity ids, statistics, schema) as on its own, as it must on an
;; LMDB directory that another process writes to. The db-before of each
;; transaction comes from the connection that wrote last, so that the one
;; transacting finds out under the write lock, not through `d/db`.

(defn- open-twins
  "Two connections over one new store of kind `store`, the schema installed
  through the first: [a b close-fn]."
  [store schema]
  (let [dir (when (= store :lmdb) (tu/temp-dir))
        s (if dir (LmdbStore/open (.toPath ^File dir) {}) (MemStore/open))
        a (Conn/open s)
        b (Conn/open s)]
    (d/transact! a (vec (for [[ident props] (engine-schema schema)] (assoc props :db/ident ident))))
    [a b #(do (d/close a) (d/close b) (some-> dir tu/delete-tree))]))

(defn run-twin-case
  "Like run-case, with each transaction on the connection `twins` names
  (false: the first, true: the second) of two over one store."
  [store schema txs twins]
  (let [[a b close] (open-twins store schema)]
    (try
      (let [db0 (d/db a)
            reserved (set (map :e (d/datoms db0 :eavt)))
            model0 (naive/empty-db schema (d/basis-t db0) reserved)]
        (loop [state {:conn a :model model0 :dbs [db0] :wdb db0}, log [], txs txs, twins twins]
          (if-let [[make-tx & more] (seq txs)]
            (let [tx-data (make-tx (:model state))
                  log (conj log tx-data)
                  r (run-tx (assoc state :conn (if (first twins) b a) :before-conn (:conn state))
                            tx-data)]
              (if-let [f (:failure r)]
                (assoc f :store store :schema schema :txs log :twins (take (count log) twins))
                (recur r log more (rest twins))))
            nil)))
      (finally (close)))))

(defspec two-connections-on-one-store-agree-with-the-model (max 1 (quot trials 4))
  (prop/for-all [schema gen-schema
                 txs gen-txs
                 twins (gen/vector gen/boolean 8)]
    (outcome (keep #(run-twin-case % schema (map (fn [ops] (fn [m] (interpret-tx m ops))) txs)
                                   twins)
                   tu/stores))))

;; ---------------------------------------------------------------- group commit (issue #17)
;; The generated transactions run one by one against the model, which gives their concrete
;; tx-data; then the same tx-data runs again on a fresh database, given with transact-async
;; while a transaction holds the writer, so that they all commit in one group, each on the
;; overlay of the ones before it. Each must end as it did alone (accepted with the same
;; tempids and datoms, or refused with the same error: a refused one amid the group fails
;; alone), and the database after the group must be the serial run's, verified whole.

(defn- open-fresh
  "A connection on a new `store` database with the schema installed: [conn close-fn]."
  [store schema]
  (let [dir (when (tu/durable? store) (tu/temp-dir))
        opts (tu/store-opts store {:schema (engine-schema schema)})
        conn (if dir (d/connect (.getPath ^File dir) opts) (d/connect :mem opts))]
    [conn #(do (d/close conn) (some-> dir tu/delete-tree))]))

(defn- serial-run
  "Runs txs (model -> tx-data) one by one on `conn` against the model, after an empty
  transaction (the group run's holding one); {:txs [tx-data] :outcomes [attempt] :model m}."
  [conn schema txs]
  (d/transact! conn [])
  (let [db0 (d/db conn)
        model0 (naive/empty-db schema (d/basis-t db0) (set (map :e (d/datoms db0 :eavt))))]
    (loop [m model0, out {:txs [] :outcomes []}, txs txs]
      (if-let [[make-tx & more] (seq txs)]
        (let [tx-data (make-tx m)
              engine (attempt #(d/transact! conn tx-data))
              expected (naive/transact m tx-data (engine-new-eid (:report engine)))]
          (recur (or (:model expected) m)
                 (-> out (update :txs conj tx-data) (update :outcomes conj engine))
                 more))
        (assoc out :model m)))))

(defn- grouped-run
  "Gives every tx-data to `conn` with transact-async while a transaction holds the writer:
  the attempts, in order."
  [conn txs]
  (let [started (promise)
        release (promise)
        held (future (d/transact! conn [[:db.fn/call (fn [_]
                                                        (deliver started true)
                                                        (deref release 20000 nil)
                                                        [])]]))]
    (deref started 20000 nil)
    (let [fs (mapv #(d/transact-async conn %) txs)]
      (deliver release true)
      @held
      (mapv #(attempt (fn [] (deref % 20000 :timeout))) fs))))

(defn run-group-case
  "nil when the transactions committed in one group end as they did one by one on `store`,
  else the failure."
  [store schema txs]
  (let [[serial close-serial] (open-fresh store schema)
        [grouped close-grouped] (open-fresh store schema)]
    (try
      (let [{:keys [model outcomes] :as run} (serial-run serial schema txs)
            attrs (into (set free-attrs) (keys (:schema model)))
            got (grouped-run grouped (:txs run))
            outcome (fn [{:keys [report error crash]}]
                      (if report
                        [(d/basis-t (:db-after report)) (:tempids report) (tx-out attrs report)]
                        [(or error crash)]))
            view (fn [conn]
                   (let [db (d/db conn)]
                     [(d/basis-t db) (current-tuples attrs (d/datoms db :eavt))
                      (history-tuples attrs (d/datoms (d/history db) :eavt))]))]
        (some-> (or (some (fn [[i a b]] (diff [:group-outcome i] (outcome a) (outcome b)))
                          (map vector (range) outcomes got))
                    (diff :group-db (view serial) (view grouped))
                    (check-verified grouped))
                (assoc :store store :schema schema :txs (:txs run))))
      (finally (close-serial) (close-grouped)))))

(defspec transactions-committed-in-one-group-end-as-one-by-one (max 1 (quot trials 4))
  (prop/for-all [schema gen-schema
                 txs gen-txs]
    (outcome (keep #(run-group-case % schema (map (fn [ops] (fn [m] (interpret-tx m ops))) txs))
                   tu/stores))))

;; h-txcpu: slots of many values. The domains above hold at most 8 values an attribute, so no
;; slot (entity, attribute) outgrows the transactor's linear scan; here two entities take up to
;; 41 tags each, added, retracted (conflicting or not) and retracted wholesale in one transaction.
(def ^:private gen-many-tags-txs
  (gen/vector (gen/vector (gen/tuple (gen/frequency [[5 (gen/return :add)] [4 (gen/return :retract)]
                                                     [1 (gen/return :retract-attr)]])
                                     (gen/choose 0 1) (gen/choose 0 40))
                          0 40)
              1 6))

(defn- many-tags-tx
  "The tx-data of `ops`, [kind entity-choice tag], on the entities named in `model`."
  [model ops]
  (let [es (vec (sort (set (for [[e a _] (naive/facts model) :when (= a :k/name)] e))))]
    (vec (for [[kind i tag] ops
               :let [e (pick es i)]
               :when e]
           (case kind
             :add [:db/add e :k/tags tag]
             :retract [:db/retract e :k/tags tag]
             :retract-attr [:db/retract e :k/tags])))))

(defspec many-values-of-one-attribute-agree-with-the-model (max 1 (quot trials 10))
  (prop/for-all [txs gen-many-tags-txs]
    (let [start (fn [_] [{:db/id "a" :k/name "a" :k/tags (set (range 0 40 3))}
                         {:db/id "b" :k/name "b" :k/tags (set (range 1 12))}])]
      (outcome (keep #(run-case % base-schema
                                (cons start (map (fn [ops] (fn [m] (many-tags-tx m ops))) txs)))
                     tu/checked-stores)))))
