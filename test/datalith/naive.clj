(ns datalith.naive
  "A deliberately naive model of a Datomic database, the oracle the property
  tests (datalith.tx-property-test and tx-writers-property-test, through
  datalith.tx-model-check) hold the engine to. It shares no code with
  the engine: plain sets, maps and loops, no indexes, no encoding.

  The model is a log: one entry {:t t :datoms #{[e a v added]}} per accepted
  transaction. The state at t is the log replayed up to t, a map
  [e a v] -> t-asserted; `current`, `history-datoms` and `since-datoms` are
  read off it. Nothing is ever updated in place.

  Entity ids. The model never invents the id of a new entity (nor of an
  attribute installed on first use): `transact`
  resolves every tempid itself (to an existing entity by upsert, or to \"a
  new entity\") and then asks its caller, through `new-eid`, which id the
  engine gave each new entity and attribute (read from the engine's :tempids
  or tx-data). Transaction t's own entity is tx0 + t.
  It checks that those ids are fresh and distinct: never an id in use, nor
  one that this or an earlier transaction named explicitly (`:named`);
  everything else (upserts, lookup refs, conflicts, retractions) it decides
  alone, and the caller compares its :tempids with the engine's.
  Explicit ids: any id below the transaction ids (tx0, 3 * 2^42) is an
  entity; from tx0 up, only the transactions so far and this one are, any
  other is refused (:tx/invalid-entity-id).

  Schema: {attr {:type :long|:string|:keyword|:ref|:any|:tuple, :card :one|:many,
  :unique nil|:identity|:value, :component bool, :tuple-attrs [a b], :pred bool}}: a :tuple
  attribute with :tuple-attrs is a composite of cardinality-one attributes (Datomic's
  :db/tupleAttrs), which tx-data never names itself. An attribute the
  schema lacks is installed by the first transaction that names it
  ({:type :any :card :one}: any value, compared by equality).

  tx-data language (the subset the generator emits):
    [:db/add e a v]  [:db/retract e a v]  [:db/retract e a]  [:db/retractEntity e]
    [:db.fn/retractAttribute e a] (= [:db/retract e a])
    [:db/cas e a old-or-nil new]
    {:db/id e? a v ...}  (a set value for a cardinality-many attribute)
  where an entity is an id (long), a tempid (string), \"datomic.tx\" (the
  transaction's own entity) or a lookup ref [unique-attr value], and a ref
  value is any of those. In a map, a ref value may also be a nested map (a
  new entity, or an upsert), and a reverse attribute {:db/id x :ns/_ref y}
  asserts [y :ns/ref x].

  Semantics (Datomic's; every operation reads the database as it was before
  the transaction, so the order of tx-data does not matter):
  - Lookup refs name the entity holding the value before the transaction.
  - Tempids that assert the same :db.unique/identity value are one entity;
    an entity whose identity value exists before the transaction is that
    entity (upsert). Two existing entities for one tempid: :tx/upsert-conflict.
    A tempid used only as a ref value or in retractions (no assertion about
    it): :tx/tempid-only-value. A tempid named only by a map with no
    attributes names nothing, and gets no id.
  - [:db/retractEntity x] and {:db/id x} (a map of :db/id alone, which
    asserts nothing) where x is a lookup ref that names nothing do nothing;
    the other operations refuse it (:tx/lookup-ref-not-found).
  - :tempids maps \"datomic.tx\" to the transaction when tx-data used it.
  - A = the asserted triples; R = the explicitly retracted triples, plus, for
    [:db/retract e a], every value of e's a, and for [:db/retractEntity e],
    every triple of e, every ref to e, recursively through component refs.
  - A triple in both A and R, or two values of a cardinality-one attribute
    of one entity in A, or two in R: :tx/conflict (Datomic's
    :db.error/datoms-conflict; a value held or not, R being what the
    tx-data retracts, not the values a cardinality-one assertion replaces).
  - [:db/cas e a old new] asserts new when e's a before the transaction is
    old (absent for nil), else :tx/cas-failed.
  - Asserting a cardinality-one value retracts the entity's other value.
  - Redundant assertions and retractions of absent triples change nothing.
  - Composites: an entity whose transaction asserts or retracts a value of a
    composite's part holds, afterwards, the composite [part values] of its
    parts' values after the transaction (nil for a part it lacks), or none
    when it holds no part; the change is the transaction's, a retraction of the
    old composite and an assertion of the new.
  - Afterwards, no two entities may hold one value of an attribute unique
    before the transaction or after it (composites too): :tx/unique.
  - Schema alterations, [:db/add attr prop v] and [:db/retract attr prop v]
    with prop :db/cardinality, :db/unique or :db/isComponent (attr an ident
    of the schema): the transaction's data is taken as the schema before it
    has it; the alteration is checked against the state the transaction
    leaves (an attribute made cardinality-one on which an entity holds two
    values, one made unique of which two entities hold one value, or
    isComponent of an attribute that is not a ref: :schema/alter), and the
    schema after it is the model's from then on."
  (:require [clojure.set :as set]))

;; ---------------------------------------------------------------- reading

(def refused-values
  "The values `acceptable?` refuses: one of each value type the generated schemas give :k/name
  (1 refuses the big integer 1N too: a set finds a value by Clojure's `=`)."
  #{"s1" 1 1.5 #inst "2026-01-01T00:00:00.000-00:00" #uuid "ffffffff-ffff-ffff-ffff-ffffffffffff"
    1.5M false 'ns/s1 (java.net.URI. "http://a.example/b?c=1#d")})

(defn acceptable?
  "The attribute predicate (:db.attr/preds) of a schema attribute with :pred true: every value
  but `refused-values`."
  [v]
  (not (contains? refused-values v)))

(defn empty-db
  "A model with no user datoms whose basis is `t`. `reserved`: entity ids
  already in use (schema, system), never valid for a new entity."
  [schema t reserved]
  {:schema schema :t t :t0 t :log [] :ents (sorted-set) :reserved (set reserved) :named #{}})

(def tx0
  "The first transaction entity id: transaction t is tx0 + t."
  (bit-shift-left 3 42))

(defn- apply-entry [state {:keys [t datoms]}]
  (let [state (reduce (fn [s [e a v added]] (if added s (dissoc s [e a v]))) state datoms)]
    (reduce (fn [s [e a v added]] (if added (assoc s [e a v] t) s)) state datoms)))

(defn state-at
  "{[e a v] t-asserted} valid at t."
  [model t]
  (reduce apply-entry {} (take-while #(<= (:t %) t) (:log model))))

(defn current
  "The set of [e a v t-asserted] valid at t."
  [model t]
  (set (for [[[e a v] at] (state-at model t)] [e a v at])))

(defn facts
  "The set of [e a v] valid now."
  [model]
  (set (keys (state-at model (:t model)))))

(defn history-datoms
  "Every assertion and retraction up to t: the set of [e a v t added]."
  [model t]
  (set (for [{tt :t ds :datoms} (:log model) :when (<= tt t)
             [e a v added] ds]
         [e a v tt added])))

(defn since-datoms
  "[e a v t-asserted] valid at t and asserted after `since`."
  [model since t]
  (set (filter #(> (nth % 3) since) (current model t))))

(defn entities
  "Every entity id that ever held a datom or was created, sorted."
  [model]
  (:ents model))

(defn ref-attr? [schema a] (= :ref (get-in schema [a :type])))

;; ---------------------------------------------------------------- transacting

(defn- reject [kind msg data]
  (throw (ex-info msg (assoc data ::reject kind))))

(defn- tempid? [x] (and (map? x) (contains? x :tempid)))
(defn- explicit? [x] (and (map? x) (contains? x :id)))
(defn- lookup? [x] (and (map? x) (contains? x :lookup)))

(defn- entity-ref [x form]
  (cond (integer? x) {:id (long x) :form form}
        (= "datomic.tx" x) ::tx
        (string? x) {:tempid x}
        (and (vector? x) (= 2 (count x))) {:lookup x}
        :else (reject :model/unsupported "entity reference outside the model's language"
                      {:entity x :form form})))

(defn- value-ref [schema a v form]
  (if (ref-attr? schema a) (entity-ref v form) v))

(defn- reverse-attr
  "The forward attribute of a reverse one (:k/_likes -> :k/likes), or nil."
  [schema k]
  (when (= \_ (first (name k)))
    (let [fwd (keyword (namespace k) (subs (name k) 1))]
      (when (ref-attr? schema fwd) fwd))))

(defn- expand-map
  "An entity map (nested ones too) -> [its entity, its ops]. A map without
  :db/id is an anonymous tempid, numbered by `anon`."
  [schema form anon]
  (let [e (if (contains? form :db/id)
            (entity-ref (:db/id form) form)
            {:tempid [::anon (swap! anon inc)]})
        ref-of (fn [x] ; a ref value: a nested map, or an entity reference
                 (if (map? x) (expand-map schema x anon) [(entity-ref x form) []]))]
    [e (into [{:op :mention :e e}]
             (mapcat
               (fn [[k v]]
                 (if-let [a (reverse-attr schema k)]
                   (mapcat (fn [x] (let [[src ops] (ref-of x)]
                                     (conj ops {:op :mention :e src} {:op :add :e src :a a :v e})))
                           (if (set? v) v [v]))
                   (mapcat (fn [x] (if (ref-attr? schema k)
                                     (let [[child ops] (ref-of x)]
                                       (conj ops {:op :add :e e :a k :v child}))
                                     [{:op :add :e e :a k :v x}]))
                           (if (and (= :many (get-in schema [k :card])) (set? v)) v [v]))))
               (dissoc form :db/id)))]))

(defn- expand
  "tx-data -> ops {:op :add|:retract|:retract-attr|:retract-entity|:cas|:mention :e :a :v :old}."
  [schema tx-data]
  (let [anon (atom 0)]
    (vec (mapcat
           (fn [form]
             (cond
               ;; a map of :db/id alone asserts nothing; a lookup ref in it that names
               ;; nothing is no error (transact* drops the mention), as in Datomic
               (and (map? form) (= [:db/id] (keys form)))
               [{:op :mention :e (entity-ref (:db/id form) form) :lenient true}]

               (map? form) (second (expand-map schema form anon))

               (vector? form)
               (let [[op e a v] form]
                 (case op
                   :db/add [{:op :add :e (entity-ref e form) :a a
                             :v (value-ref schema a v form)}]
                   :db/retract (if (= 3 (count form))
                                 [{:op :retract-attr :e (entity-ref e form) :a a}]
                                 [{:op :retract :e (entity-ref e form) :a a
                                   :v (value-ref schema a v form)}])
                   :db/retractEntity [{:op :retract-entity :e (entity-ref e form)}]
                   :db.fn/retractAttribute [{:op :retract-attr :e (entity-ref e form) :a a}]
                   :db/cas (let [[_ _ _ old new] form]
                             [{:op :cas :e (entity-ref e form) :a a
                               :old (when (some? old) (value-ref schema a old form))
                               :v (value-ref schema a new form)}])))

               :else (reject :model/unsupported "form outside the model's language"
                             {:form form})))
           tx-data))))

(defn- holder
  "The entity holding value v of attribute a in `fs`, or nil."
  [fs a v]
  (first (for [[e a' v'] fs :when (and (= a a') (= v v'))] e)))

(defn- tempid-classes
  "Tempids grouped into entities: those asserting one identity value are one."
  [tokens id-adds]
  (reduce (fn [classes [_ grp]]
            (let [toks (set (map first grp))
                  touching (filter #(seq (set/intersection % toks)) classes)]
              (conj (apply disj classes touching) (apply set/union toks touching))))
          (set (map hash-set tokens))
          (group-by (fn [[_ a v]] [a v]) id-adds)))

(defn- claim!
  "Adds `eid`, which the engine gave a new entity or attribute, to `taken`;
  throws ::bad-eid when it is not a fresh id."
  [taken eid data]
  (when-not (and (integer? eid) (not (contains? @taken eid)))
    (throw (ex-info "the engine gave a new entity an id in use" (assoc data ::bad-eid eid))))
  (swap! taken conj eid)
  eid)

(defn- named-ids
  "The entity ids below tx0 that `ops` name explicitly (entities and ref values)."
  [schema ops]
  (set (for [op ops
             x [(:e op) (when (ref-attr? schema (:a op)) (:v op)) (:old op)]
             :when (and (explicit? x) (< (:id x) tx0))]
         (:id x))))

(defn- resolve-tempids
  "{tempid eid}: upserts against `fs`, the rest new entities named by `new-eid`,
  each claimed in `taken`."
  [model fs ops new-eid taken]
  (let [schema (:schema model)
        tokens (set (for [op ops :when (not= :mention (:op op))
                          x [(:e op) (:v op) (:old op)] :when (tempid? x)]
                      (:tempid x)))
        entity-tokens (set (for [op ops :when (#{:add :cas} (:op op))
                                 :when (tempid? (:e op))]
                             (:tempid (:e op))))
        id-adds (for [{:keys [op e a v]} ops
                      :when (and (= :add op) (tempid? e)
                                 (= :identity (get-in schema [a :unique])))]
                  [(:tempid e) a (if (explicit? v) (:id v) v)])]
    (into {}
          (for [cls (sort-by #(vec (sort (map str %))) (tempid-classes tokens id-adds))
                :let [idents (set (for [[tok a v] id-adds :when (cls tok)] [a v]))
                      holders (set (keep (fn [[a v]] (holder fs a v)) idents))
                      eid (cond
                            (> (count holders) 1)
                            (reject :tx/upsert-conflict "one entity, two existing identities"
                                    {:tempids cls :entities holders})

                            (= 1 (count holders)) (first holders)

                            (not-any? entity-tokens cls)
                            (reject :tx/tempid-only-value "a tempid used only as a value"
                                    {:tempids cls})

                            :else
                            (claim! taken (new-eid {:tempids (sort (filter string? cls))
                                                    :identities (sort idents)})
                                    {:tempids cls :identities idents}))]
                tok cls]
            [tok eid]))))

(defn- entity-retractions
  "Every triple of e, every ref to e, recursively through component refs."
  [schema fs e0]
  (loop [todo [e0] seen #{} out #{}]
    (if-let [[e & more] (seq todo)]
      (if (seen e)
        (recur more seen out)
        (let [own (filter #(= e (first %)) fs)
              refs-in (filter (fn [[_ a v]] (and (ref-attr? schema a) (= v e))) fs)
              parts (for [[_ a v] own :when (get-in schema [a :component])] v)]
          (recur (concat more parts) (conj seen e) (into out (concat own refs-in)))))
      out)))

;; ---------------------------------------------------------------- schema alterations

(def ^:private alter-props
  "The schema properties a transaction may alter, and their names in the model's schema."
  {:db/cardinality :card :db/unique :unique :db/isComponent :component})

(defn- alteration?
  "Whether tx-data `form` alters an attribute: [:db/add|:db/retract attr prop v]."
  [form]
  (and (vector? form) (#{:db/add :db/retract} (first form)) (keyword? (second form))
       (contains? alter-props (nth form 2 nil))))

(defn- prop-value [prop v]
  (if (= :component prop) (boolean v) (keyword (name v))))

(defn- altered-schema
  "`schema` after the alteration `forms`: each property is one value (two asserted, or one
  asserted and retracted, is :tx/conflict); a retraction of the value held removes it."
  [schema forms]
  (reduce (fn [s [[a k] fs]]
            (when-not (contains? schema a)
              (reject :model/unsupported "an alteration of an attribute outside the schema"
                      {:attribute a}))
            (let [prop (alter-props k)
                  adds (set (for [[op _ _ v] fs :when (= op :db/add)] (prop-value prop v)))
                  rets (set (for [[op _ _ v] fs :when (= op :db/retract)] (prop-value prop v)))]
              (when (or (> (count adds) 1) (seq (set/intersection adds rets)))
                (reject :tx/conflict "two values of one schema property" {:attribute a :property k}))
              (cond (seq adds) (assoc-in s [a prop] (first adds))
                    (contains? rets (get-in schema [a prop])) (update s a dissoc prop)
                    :else s)))
          schema
          (group-by (fn [[_ a k]] [a k]) forms)))

(defn- check-alterations
  "Rejects alterations from `before` to `after` that the state the transaction leaves
  (`facts`, [e a v] triples) cannot stand: :schema/alter."
  [before after facts]
  (doseq [[a props] after
          :let [was (get before a)]]
    (when (and (:component props) (not= :ref (:type props)))
      (reject :schema/alter "isComponent of an attribute that is not a ref" {:attribute a}))
    (when (and (= :many (:card was)) (= :one (:card props))
               (some (fn [[_ vs]] (> (count vs) 1))
                     (group-by first (filter #(= a (second %)) facts))))
      (reject :schema/alter "cardinality-one: an entity holds several values" {:attribute a}))
    (when (and (nil? (:unique was)) (:unique props)
               (some (fn [[_ es]] (> (count es) 1))
                     (group-by #(nth % 2) (filter #(= a (second %)) facts))))
      (reject :schema/alter "unique: two entities hold one value" {:attribute a}))))

(defn- composite-changes
  "[retracted asserted] of the composites of `schema` whose parts the transaction changed:
  `changed` the triples it asserted and retracted, `after` the state it leaves otherwise."
  [schema changed after]
  (let [value-of (fn [e a] (first (for [[e' a' v] after :when (and (= e e') (= a a'))] v)))]
    (reduce (fn [[rs as] [c e]]
              (let [parts (mapv #(value-of e %) (get-in schema [c :tuple-attrs]))
                    new (when (some some? parts) parts)
                    old (value-of e c)]
                (if (= old new)
                  [rs as]
                  [(cond-> rs (some? old) (conj [e c old]))
                   (cond-> as (some? new) (conj [e c new]))])))
            [#{} #{}]
            (set (for [[c {:keys [tuple-attrs]}] schema :when tuple-attrs
                       [e a] changed :when (some #{a} tuple-attrs)]
                   [c e])))))

(defn- new-attrs
  "The attributes `ops` name that `schema` lacks: installed by the transaction."
  [schema ops]
  (set (for [op ops :when (and (:a op) (not= :mention (:op op)))
             :when (not (contains? schema (:a op)))]
         (:a op))))

(defn- transact* [model tx-data new-eid]
  (let [schema (:schema model)
        fs (facts model)
        alterations (filter alteration? tx-data)
        altered (altered-schema schema alterations)
        ops (expand schema (remove alteration? tx-data))
        tx-named? (some #{::tx} (mapcat (juxt :e :v :old) ops))
        named (named-ids schema ops)
        taken (atom (into (:reserved model) cat [(:ents model) (:named model) named]))
        tempids (resolve-tempids model fs ops new-eid taken)
        installed (into {} (for [a (sort (new-attrs schema ops))]
                             [a (claim! taken (new-eid {:attribute a}) {:attribute a})]))
        schema (merge schema (zipmap (keys installed) (repeat {:type :any :card :one})))
        tx (delay (+ tx0 (inc (:t model))))
        eid (fn [x]
              (cond (tempid? x) (get tempids (:tempid x))
                    (= ::tx x) @tx
                    (explicit? x) (let [e (:id x)]
                                    (when (> e (+ tx0 (inc (:t model))))
                                      (reject :tx/invalid-entity-id "no transaction has that id"
                                              {:entity e :form (:form x)}))
                                    e)
                    (lookup? x) (let [[a v] (:lookup x)]
                                  (or (holder fs a v)
                                      (reject :tx/lookup-ref-not-found "no entity has the value"
                                              {:lookup-ref (:lookup x)})))
                    :else x))
        names-nothing? (fn [{:keys [op e lenient]}] ; a retractEntity (or a map of :db/id
                         ;; alone) of a lookup ref that matches nothing
                         (and (or (= :retract-entity op) lenient) (lookup? e)
                              (nil? (apply holder fs (:lookup e)))))
        ops (for [op ops :when (not (names-nothing? op))]
              (cond-> (update op :e eid)
                (and (contains? op :v) (ref-attr? schema (:a op))) (update :v eid)
                (and (some? (:old op)) (ref-attr? schema (:a op))) (update :old eid)))
        card-one? #(= :one (get-in schema [% :card]))
        _ (doseq [{:keys [op e a old]} ops :when (= op :cas)
                  :let [now (set (for [[e' a' v] fs :when (and (= e e') (= a a'))] v))]]
            (when-not (card-one? a)
              (reject :tx/invalid-op ":db/cas on a cardinality-many attribute" {:attribute a}))
            (when-not (= now (if (some? old) #{old} #{}))
              (reject :tx/cas-failed "the value is not the expected one"
                      {:entity e :attribute a :expected old :actual now})))
        A (set (for [{:keys [op e a v]} ops :when (#{:add :cas} op)] [e a v]))
        R (set (concat
                 (for [{:keys [op e a v]} ops :when (= op :retract)] [e a v])
                 (for [{:keys [op e a]} ops :when (= op :retract-attr)
                       [e' a' :as f] fs :when (and (= e e') (= a a'))]
                   f)
                 (mapcat #(entity-retractions schema fs (:e %))
                         (filter #(= :retract-entity (:op %)) ops))))
        ;; a value asserted (redundantly too) for an attribute with a predicate, as the schema
        ;; was before the transaction: Datomic's :db.attr/preds
        _ (doseq [[e a v] A :when (get-in (:schema model) [a :pred])]
            (when-not (acceptable? v)
              (reject :tx/attr-pred "a value the attribute's predicate refuses"
                      {:entity e :attribute a :value v})))
        both (set/intersection A R)
        _ (when (seq both)
            (reject :tx/conflict "a triple both asserted and retracted" {:triples both}))
        _ (doseq [[[e a] vs] (group-by (fn [[e a]] [e a]) A)
                  :when (and (card-one? a) (> (count vs) 1))]
            (reject :tx/conflict "two values of a cardinality-one attribute" {:triples vs}))
        _ (doseq [[[e a] vs] (group-by (fn [[e a]] [e a]) R)
                  :when (and (card-one? a) (> (count vs) 1))]
            (reject :tx/conflict "two values of a cardinality-one attribute retracted" {:triples vs}))
        implied (set (for [[e a v] A :when (card-one? a)
                           [e' a' v' :as f] fs :when (and (= e e') (= a a') (not= v v'))]
                       f))
        retracted (set/intersection (set/union R implied) fs)
        asserted (set/difference A fs)
        after (set/union (set/difference fs retracted) asserted)
        [c-retracted c-asserted] (composite-changes schema (set/union retracted asserted) after)
        retracted (set/union retracted c-retracted)
        asserted (set/union asserted c-asserted)
        after (set/union (set/difference after c-retracted) c-asserted)
        ;; the schema after the transaction: its alterations, and the attributes it installed
        schema' (merge altered (select-keys schema (keys installed)))]
    (check-alterations schema schema' after)
    (doseq [[[a v] holders] (group-by (fn [[_ a v]] [a v]) after)
            :when (and (or (get-in schema [a :unique]) (get-in schema' [a :unique]))
                       (> (count holders) 1))]
      (reject :tx/unique "two entities hold one unique value" {:attribute a :value v
                                                                 :entities (map first holders)}))
    (let [t (inc (:t model))]
      {:model (-> model
                  (assoc :t t :schema schema')
                  (update :log conj {:t t :datoms (into (set (map #(conj % false) retracted))
                                                        (map #(conj % true) asserted))})
                  (update :ents into (concat (vals tempids)
                                             (remove #(>= % tx0) (map first asserted))))
                  (update :reserved into (vals installed))
                  (update :named into named))
       :tempids (cond-> (into {} (filter (comp string? key) tempids))
                  tx-named? (assoc "datomic.tx" @tx))
       :datoms (into (set (map #(conj % false) retracted)) (map #(conj % true) asserted))})))

(defn transact
  "Applies tx-data to `model`. `new-eid` is called once per new entity with
  {:tempids [names] :identities [[attr value]]} and returns the id the engine
  gave it; for an attribute installed on first use, with {:attribute ident}.
  The transaction's own entity is tx0 + its t. Returns {:model m' :tempids {name eid} :datoms #{[e a v added]}},
  {:error kind :data {...}} when Datomic would reject the transaction, or
  {:bad-eid ...} when `new-eid` returned an id in use."
  [model tx-data new-eid]
  (try
    (transact* model tx-data new-eid)
    (catch clojure.lang.ExceptionInfo ex
      (let [data (ex-data ex)]
        (cond (::reject data) {:error (::reject data) :message (ex-message ex)
                               :data (dissoc data ::reject)}
              (contains? data ::bad-eid) {:bad-eid (::bad-eid data) :data data}
              :else (throw ex))))))

;; ---------------------------------------------------------------- valid time (h-valid, #19)
;; A history of transactions [{:t t :instant ms :ops [op ...]}], each op on its
;; own (e, a) pair of that transaction:
;;   [:add e a v]  [:retract e a v]        plain facts
;;   [:vadd e a v from to]  [:vretract e a v from to]   with a valid-time interval
;; (from nil: the transaction's instant; to nil: open-ended). `card` maps an
;; attribute to :one or :many. Valid time is modelled point by point: the values
;; at instant `at` are every event, replayed in transaction order, that covers
;; `at`. A plain assertion covers [its instant, forever) and is an event only when
;; it changes the plain (transaction-time) state; a plain retraction likewise; an
;; assertion with an interval is also a plain assertion; a retraction with one
;; leaves the plain state alone.

(defn- valid-step [card at [plain valid] {:keys [instant ops]}]
  (reduce
    (fn [[plain valid] [kind e a v from to]]
      (let [one? (= :one (card a))
            covers? (fn [f t] (and (<= (or f instant) at) (or (nil? t) (< at t))))
            assert-at (fn [valid] (if one? (assoc valid [e a] #{v})
                                      (update valid [e a] (fnil conj #{}) v)))
            plain-add (fn [plain] (if one? (assoc plain [e a] #{v})
                                      (update plain [e a] (fnil conj #{}) v)))
            present? (contains? (get plain [e a] #{}) v)]
        (case kind
          :add (if present?
                 [plain valid]
                 [(plain-add plain) (cond-> valid (covers? nil nil) assert-at)])
          :retract (if present?
                     [(update plain [e a] disj v)
                      (cond-> valid (covers? nil nil) (update [e a] disj v))]
                     [plain valid])
          :vadd [(plain-add plain) (cond-> valid (covers? from to) assert-at)]
          :vretract [plain (cond-> valid (covers? from to) (update [e a] disj v))])))
    [plain valid] ops))

(defn valid-facts
  "The [e a v] triples valid at instant `at` (ms) as known after the
  transactions of `history` with t <= `as-of-t`."
  [card history as-of-t at]
  (let [[_ valid] (reduce (partial valid-step card at) [{} {}]
                          (filter #(<= (:t %) as-of-t) history))]
    (set (for [[[e a] vs] valid, v vs] [e a v]))))

(defn plain-facts
  "The [e a v] triples of the plain (transaction-time) state after the
  transactions of `history` with t <= `as-of-t`."
  [card history as-of-t]
  (let [[plain _] (reduce (partial valid-step card 0) [{} {}]
                          (filter #(<= (:t %) as-of-t) history))]
    (set (for [[[e a] vs] plain, v vs] [e a v]))))

;; ---------------------------------------------------------------- the end of valid time (h-validend)

(defn valid-to-the-end
  "The [e a v] triples whose valid-time interval is open-ended as known after
  the transactions of `history` with t <= `as-of-t`: those valid at the last
  instant before `end-ms`, the end of time (where every open interval ends; a
  valid-to at or after it is open)."
  [card history as-of-t end-ms]
  (valid-facts card history as-of-t (dec end-ms)))
