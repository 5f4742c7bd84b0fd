(ns datalith.naive-pull
  "A deliberately naive model of Datomic's pull, the oracle of
  datalith.pull-property-test. It shares no code with the engine: a set of
  [e a v] triples and a schema map, read by plain recursive functions (the
  data it is given is small).

  Model database: {:schema {attr {:ref bool :many bool :component bool}}
                   :triples #{[e a v]}}, entity ids as longs.

  Pattern language (the subset the generator emits): `*`, :db/id, an
  attribute or reverse attribute :ns/_attr, [attr :limit n], and maps
  {attr-or-[attr :limit n] (pattern | n | ...)}.

  Semantics, Datomic's (checked against Datomic Local 1.0.291, see
  datalith.pull-recursion-test):
  - values in index order (refs by entity id); cardinality-many values and
    non-component reverse refs as vectors of at most :limit (1000 by
    default) values; a component's reverse ref is its one owner;
  - a ref with a nested pattern is that pattern's map (left out when
    empty); a component ref without one is expanded with [*], unless the
    entity is already on the path from the root (the root counted), where it
    is {:db/id n}; any other ref is {:db/id n};
  - recursion {attr n} / {attr ...} repeats the pattern that holds it, each
    recursive attribute counting its own levels down; at 0 an entity is cut:
    it gives only {:db/id n}, and only when the pattern names :db/id or `*`;
    an entity recursion reaches while already on the path from the root (the
    root not counted) is pulled once more with every level at 0;
  - `*` gives :db/id and every attribute the pattern does not name (a
    reverse attribute names none);
  - an attribute with no values is left out; an entity with nothing is nil.")

(def default-limit 1000)

(defn- reverse-attr
  "The forward attribute of a reverse one (:ns/_a -> :ns/a), else nil."
  [k]
  (when (and (keyword? k) (.startsWith (name k) "_"))
    (keyword (namespace k) (subs (name k) 1))))

(defn- spec-of
  "{:key k :attr a :reverse bool :limit n-or-nil :sub pattern-or-nil :rec n-or-:inf-or-nil}
  of one attribute element."
  [el]
  (let [[k & opts] (if (vector? el) el [el])
        opts (apply hash-map opts)
        rev (reverse-attr k)]
    {:key k :attr (or rev k) :reverse (boolean rev)
     :limit (if (contains? opts :limit) (:limit opts) default-limit)}))

(defn parse
  "A pattern as {:wildcard bool :specs [spec]}."
  [pattern]
  {:wildcard (boolean (some #{'*} pattern))
   :specs (vec (for [el pattern
                     :when (not= '* el)
                     [k v] (if (map? el) el [[el nil]])]
                 (let [s (spec-of k)]
                   (cond
                     (nil? v) s
                     (= '... v) (assoc s :rec :inf)
                     (integer? v) (assoc s :rec v)
                     :else (assoc s :sub (parse v))))))})

(defn- values
  "The values of `attr` of `e` (forward) or the entities whose `attr` is `e`
  (reverse), sorted."
  [{:keys [triples]} e attr reverse?]
  (sort (for [[x a y] triples
              :when (= a attr)
              :when (if reverse? (= y e) (= x e))]
          (if reverse? x y))))

(defn- initial-depths [parsed]
  (into {} (for [s (:specs parsed) :when (:rec s)] [(:key s) (:rec s)])))

(declare pull-entity)

(defn- cut
  "Entity `e` past a recursion limit of `parsed`."
  [parsed e]
  (when (or (:wildcard parsed) (some #(= :db/id (:attr %)) (:specs parsed)))
    {:db/id e}))

(defn- ref-value
  "What ref `t` of spec `s` (nil for one the wildcard found) becomes."
  [db parsed depths path s t attr-schema]
  (let [seen? (some #{t} (rest path))]
    (cond
      (:sub s) (pull-entity db (:sub s) (initial-depths (:sub s)) (conj path t))
      (:rec s) (let [left (get depths (:key s))]
                 (cond
                   (= 0 left) (cut parsed t)
                   seen? (pull-entity db parsed (update-vals depths (constantly 0)) (conj path t))
                   :else (pull-entity db parsed
                                      (if (= :inf left) depths (update depths (:key s) dec))
                                      (conj path t))))
      (and (:component attr-schema) (not (:reverse s)) (not (some #{t} path)))
      (pull-entity db (parse '[*]) {} (conj path t))
      :else {:db/id t})))

(defn- attr-entry
  "[key value] of spec `s` for `e`, or nil when it has no value."
  [db parsed depths path e s]
  (if (= :db/id (:attr s))
    [(:key s) e]
    (when-let [as (get-in db [:schema (:attr s)])]
      (let [many (if (:reverse s) (not (:component as)) (:many as))
            vs (values db e (:attr s) (:reverse s))
            vs (if many (cond->> vs (:limit s) (take (:limit s))) (take 1 vs))
            vs (if (:ref as)
                 (keep #(ref-value db parsed depths path s % as) vs)
                 vs)]
        (when (seq vs)
          [(:key s) (if many (vec vs) (first vs))])))))

(defn pull-entity
  "The map of `e` under the parsed pattern, `depths` the levels each recursive
  attribute has left, `path` the entities from the root to `e`."
  [db parsed depths path]
  (let [e (peek path)
        named (set (map :attr (remove :reverse (:specs parsed))))
        wild (when (:wildcard parsed)
               (into {:db/id e}
                     (for [a (sort (distinct (for [[x a] (:triples db) :when (= x e)] a)))
                           :when (not (named a))
                           :let [entry (attr-entry db parsed depths path e
                                                   {:key a :attr a :limit nil})]
                           :when entry]
                       entry)))
        m (into (or wild {}) (keep #(attr-entry db parsed depths path e %) (:specs parsed)))]
    (not-empty m)))

(defn pull
  "(d/pull db pattern e) over the model."
  [db pattern e]
  (let [parsed (parse pattern)]
    (pull-entity db parsed (initial-depths parsed) [e])))
