(ns datalith.specs
  "clojure.spec descriptions of the forms datalith reads: a query (`::query`,
  vector or map form, and `::rules`), a pull pattern (`::pull-pattern`) and
  transaction data (`::tx-data`). They describe shape only (what the parsers
  accept before they look at a database): a form the engine accepts conforms;
  one refused for its shape mostly does not, and `explain` names the part.

  `datalith.core` adds `(explain form-spec form)` under `:explain` in the data
  of a shape error (`:parser/*`, `:pull/pattern`, `:tx/invalid-op`,
  `:tx/invalid-data`); valid forms never reach this namespace."
  (:require [clojure.spec.alpha :as s]
            [clojure.string :as str]))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------- symbols

(defn- unqualified-starting-with? [x ^String prefix]
  (and (symbol? x) (nil? (namespace x)) (str/starts-with? (name x) prefix)))

(defn variable? "?x" [x] (unqualified-starting-with? x "?"))
(defn src-var? "$ or $name" [x] (unqualified-starting-with? x "$"))
(defn rules-var? "%" [x] (= '% x))
(defn placeholder? "_" [x] (= '_ x))

(defn plain-symbol?
  "A symbol that is not a variable, a source, `%...` or `_`: a function, rule
  or pattern name."
  [x]
  (and (symbol? x) (not (variable? x)) (not (src-var? x)) (not (placeholder? x))
       (not (unqualified-starting-with? x "%"))))

(defn rule-name? "An unqualified plain symbol." [x] (and (plain-symbol? x) (nil? (namespace x))))

(defn- quoted? [x] (and (seq? x) (= 'quote (first x)) (= 2 (count x))))

;; ---------------------------------------------------------------- pull patterns

(s/def ::attr-name keyword?)

(s/def ::limit (s/nilable pos-int?))

(s/def ::attr-option
  (s/alt :as (s/cat :key #{:as} :as any?)
         :limit (s/cat :key #{:limit} :limit ::limit)
         :default (s/cat :key #{:default} :default any?)
         :xform (s/cat :key #{:xform} :xform #(and (ifn? %) (not (keyword? %))))))

(s/def ::attr-expr
  (s/and (some-fn vector? seq?)
         (s/alt :options (s/cat :attr ::attr-name :options (s/+ ::attr-option))
                :legacy-limit (s/cat :op #{'limit} :attr ::attr-name :limit ::limit)
                :legacy-default (s/cat :op #{'default} :attr ::attr-name :default any?))))

(s/def ::pull-map-key (s/or :attr ::attr-name :expr ::attr-expr))

(s/def ::pull-map-value
  (s/or :pattern ::pull-pattern :recursion #{'... "..."} :depth pos-int?))

(s/def ::pull-map (s/map-of ::pull-map-key ::pull-map-value :min-count 1 :conform-keys true))

(defn pull-element-kind
  "The kind of a pull pattern element: :wildcard, :attr, :map, :expr or :invalid."
  [x]
  (cond (contains? #{'* "*"} x) :wildcard
        (keyword? x) :attr
        (map? x) :map
        (or (vector? x) (seq? x)) :expr
        :else :invalid))

(defmulti pull-element-spec "The spec of a pull pattern element of a kind." pull-element-kind)
(defmethod pull-element-spec :wildcard [_] #{'* "*"})
(defmethod pull-element-spec :attr [_] ::attr-name)
(defmethod pull-element-spec :map [_] ::pull-map)
(defmethod pull-element-spec :expr [_] ::attr-expr)

(s/def ::pull-element (s/multi-spec pull-element-spec (fn [form _] form)))

(s/def ::pull-pattern (s/coll-of ::pull-element :kind vector? :min-count 1))

;; ---------------------------------------------------------------- queries: :find, :with, :in

(s/def ::pull-expr
  (s/and seq? (s/cat :op #{'pull} :src (s/? src-var?) :entity variable?
                     :pattern (s/alt :pattern ::pull-pattern :input plain-symbol? :var variable?))))

(s/def ::aggregate
  (s/and seq? (s/cat :fn (s/and plain-symbol? #(not= 'pull %))
                     :args (s/* (s/or :src src-var? :var variable? :quoted quoted?
                                      :constant (complement symbol?)))
                     :var variable?)))

(def window-fns '#{sum count min max avg rank dense-rank row-number lag lead})

(s/def ::window-order-key (s/or :var variable? :dir (s/tuple variable? #{:asc :desc})))

(s/def ::window-spec
  (s/and map? #(every? #{:partition-by :order-by} (keys %))
         (s/keys :opt-un [:datalith.specs.window/partition-by :datalith.specs.window/order-by])))

(s/def :datalith.specs.window/partition-by
  (s/coll-of variable? :kind vector? :min-count 1 :distinct true))

(s/def :datalith.specs.window/order-by
  (s/or :key (s/tuple variable? #{:asc :desc})
        :keys (s/coll-of ::window-order-key :kind vector? :min-count 1)))

(s/def ::window
  (s/and seq? (s/cat :fn window-fns :arg (s/? variable?) :offset (s/? pos-int?)
                     :over #{:over} :window ::window-spec)))

(s/def ::find-element
  (s/or :var variable? :pull ::pull-expr :window ::window :aggregate ::aggregate))

(s/def ::find
  (s/alt :scalar (s/cat :element ::find-element :dot #{'.})
         :coll (s/and vector? (s/cat :element ::find-element :dots #{'...}))
         :tuple (s/and vector? (s/+ ::find-element))
         :rel (s/+ ::find-element)))

(s/def ::return-names (s/coll-of plain-symbol? :kind sequential? :min-count 1 :distinct true))
(s/def ::keys ::return-names)
(s/def ::strs ::return-names)
(s/def ::syms ::return-names)

(s/def ::with (s/coll-of variable? :kind sequential? :min-count 1 :distinct true))

(s/def ::binding
  (s/or :scalar variable?
        :ignore placeholder?
        :coll (s/and vector? (s/cat :binding ::binding :dots #{'...}))
        :tuple (s/and vector? (s/+ ::binding))))

(s/def ::in-element
  (s/or :src src-var? :rules rules-var? :pattern-name plain-symbol? :binding ::binding))

(s/def ::in (s/coll-of ::in-element :kind sequential? :min-count 1))

(s/def ::timeout pos-int?)

;; :limit and :offset of a query, apart from a pull pattern's ::limit
(s/def :datalith.specs.query/limit nat-int?)
(s/def :datalith.specs.query/offset nat-int?)

(defn- order-ref? [x] (or (variable? x) (seq? x)))

;; :valid-at (#19): an instant (a #inst, an :in variable or :any-valid-time) for
;; $, or pairs of a source and its instant
(defn- valid-instant? [x] (or (inst? x) (variable? x) (= :any-valid-time x)))

(s/def ::valid-at
  (s/or :one valid-instant?
        :items (s/and sequential?
                      (s/or :one (s/tuple valid-instant?)
                            :pairs (s/+ (s/cat :src src-var? :instant valid-instant?))))))

(s/def ::order-key (s/or :ref order-ref? :dir (s/tuple order-ref? #{:asc :desc})))

(s/def ::order-by
  (s/or :key (s/tuple order-ref? #{:asc :desc})
        :keys (s/coll-of ::order-key :kind sequential? :min-count 1)))

;; ---------------------------------------------------------------- queries: :where

(defn clause-kind
  "The kind of a :where clause, read the way the parser reads it: a list first
  is a call, a plain symbol head (after an optional source) names not, or,
  and, or a rule; anything else sequential is a data pattern."
  [form]
  (cond
    (not (sequential? form)) :invalid
    (empty? form) :pattern
    (seq? (first form)) (if (= 1 (count form)) :predicate :function)
    :else (let [head (if (src-var? (first form)) (second form) (first form))]
            (if (plain-symbol? head)
              (get '{not :not not-join :not-join or :or or-join :or-join and :and} head :rule)
              :pattern))))

(defmulti clause-spec "The spec of a :where clause of a kind (see `clause-kind`)." clause-kind)

(s/def ::clause (s/multi-spec clause-spec (fn [form _] form)))

(s/def ::where (s/coll-of ::clause :kind sequential?))

(defn pattern-term?
  "A data pattern term: a variable, _, or a constant (a symbol other than a
  source is a symbol constant); nil never matches."
  [x]
  (and (some? x) (not (src-var? x))))

(s/def ::data-pattern
  (s/cat :src (s/? src-var?)
         :terms (s/& (s/+ pattern-term?) #(<= (count %) 5))))

(defn fn-arg?
  "A function argument: a variable, a source, a quoted symbol or a non-symbol constant."
  [x]
  (or (variable? x) (src-var? x) (quoted? x) (not (symbol? x))))

(s/def ::call
  (s/and seq? (s/cat :fn (s/or :symbol plain-symbol? :var variable?) :args (s/* fn-arg?))))

(defn rule-arg?
  "A rule invocation argument: a variable, _ or a non-nil, non-symbol constant."
  [x]
  (or (variable? x) (placeholder? x) (and (some? x) (not (symbol? x)))))

(s/def ::rule-vars
  (s/& (s/cat :required (s/? (s/and vector? (s/+ variable?))) :free (s/* variable?))
       #(or (:required %) (seq (:free %)))))

(s/def ::and-branch (s/and seq? (s/cat :op #{'and} :clauses (s/+ ::clause))))

(s/def ::or-branch (s/or :and ::and-branch :clause ::clause))

(defmethod clause-spec :pattern [_] ::data-pattern)
(defmethod clause-spec :predicate [_] (s/cat :call ::call))
(defmethod clause-spec :function [_] (s/cat :call ::call :binding ::binding))
(defmethod clause-spec :not [_]
  (s/cat :src (s/? src-var?) :op #{'not} :clauses (s/+ ::clause)))
(defmethod clause-spec :not-join [_]
  (s/cat :src (s/? src-var?) :op #{'not-join} :vars (s/coll-of variable? :kind vector? :min-count 1)
         :clauses (s/+ ::clause)))
(defmethod clause-spec :or [_]
  (s/cat :src (s/? src-var?) :op #{'or} :branches (s/+ ::or-branch)))
(defmethod clause-spec :or-join [_]
  (s/cat :src (s/? src-var?) :op #{'or-join} :vars (s/and vector? ::rule-vars)
         :branches (s/+ ::or-branch)))
(defmethod clause-spec :rule [_]
  (s/cat :src (s/? src-var?) :rule rule-name? :args (s/+ rule-arg?)))
;; (and ...) only as a branch of or / or-join; :and and :invalid have no spec, so
;; their explain says "no method" at [... :and] or [... :invalid]

;; ---------------------------------------------------------------- rules

(s/def ::rule-head (s/and sequential? (s/cat :name rule-name? :vars ::rule-vars)))

(s/def ::rule (s/and sequential? (s/cat :head ::rule-head :body (s/+ ::clause))))

(s/def ::rules (s/coll-of ::rule :kind sequential?))

;; ---------------------------------------------------------------- queries

(def sections #{:find :keys :strs :syms :with :in :where :timeout :order-by :limit :offset
                :valid-at})

(defn- one-return-names? [q] (<= (count (filter #(contains? q %) [:keys :strs :syms])) 1))

(s/def ::query-map
  (s/and map?
         #(every? sections (keys %))
         one-return-names?
         (s/keys :req-un [::find] :opt-un [::keys ::strs ::syms ::with ::in ::where ::timeout
                                          ::order-by :datalith.specs.query/limit
                                          :datalith.specs.query/offset ::valid-at])))

(defn query-vector->map
  "A vector query [:find ... :where ...] as its map {:find [...] :where [...]},
  or ::s/invalid when it does not start with a keyword or repeats a section."
  [q]
  (if (and (sequential? q) (keyword? (first q)))
    (reduce (fn [[m k] x]
              (cond (or (not (keyword? x)) (and (= k :valid-at) (= x :any-valid-time)))
                    [(update m k conj x) k]
                    (contains? m x) (reduced ::s/invalid)
                    :else [(assoc m x []) x]))
            [{} nil] q)
    ::s/invalid))

(defn- vector-sections
  "The sections of a vector query as the map form writes them: :limit and
  :offset one value each (a vector when not one), :order-by [[?v :desc] ?w]
  whether written so or as its keys."
  [m]
  (cond-> m
    (= 1 (count (:limit m))) (update :limit first)
    (= 1 (count (:offset m))) (update :offset first)
    (and (= 1 (count (:order-by m))) (vector? (first (:order-by m)))
         (not (s/valid? (s/tuple order-ref? #{:asc :desc}) (first (:order-by m)))))
    (update :order-by first)))

(s/def ::query-vector
  (s/and vector?
         (s/conformer #(let [r (query-vector->map %)]
                         (if (= ::s/invalid r) r (vector-sections (first r)))))
         ::query-map))

(defmulti query-spec "The spec of a query of a form: vector or map." #(if (map? %) :map :vector))
(defmethod query-spec :map [_] ::query-map)
(defmethod query-spec :vector [_] ::query-vector)

(s/def ::query (s/multi-spec query-spec (fn [form _] form)))

;; ---------------------------------------------------------------- tx-data

(defn tx-op-kind
  "The kind of a tx-data element: :map, the list's head keyword, :tx-fn for a
  symbol head, :invalid otherwise."
  [form]
  (cond
    (map? form) :map
    (not (sequential? form)) :invalid
    (symbol? (first form)) :tx-fn
    (keyword? (first form)) (first form)
    :else :invalid))

(defmulti tx-op-spec "The spec of a tx-data element of a kind (see `tx-op-kind`)." tx-op-kind)

(s/def ::entity-map map?)
(s/def ::entity some?)
(s/def ::attribute some?)

(defmethod tx-op-spec :map [_] ::entity-map)
;; the optional fifth element is a valid-time interval (datalith.valid)
(defmethod tx-op-spec :db/add [_]
  (s/cat :op #{:db/add} :e ::entity :a ::attribute :v any? :valid-time (s/? map?)))
(defmethod tx-op-spec :db/retract [_]
  (s/cat :op #{:db/retract} :e ::entity :a ::attribute :v (s/? any?) :valid-time (s/? map?)))
(defmethod tx-op-spec :db.fn/retractAttribute [_]
  (s/cat :op #{:db.fn/retractAttribute} :e ::entity :a ::attribute))
(defmethod tx-op-spec :db/retractEntity [_] (s/cat :op #{:db/retractEntity} :e ::entity))
(defmethod tx-op-spec :db.fn/retractEntity [_] (s/cat :op #{:db.fn/retractEntity} :e ::entity))
(defmethod tx-op-spec :db/cas [_]
  (s/cat :op #{:db/cas} :e ::entity :a ::attribute :old any? :new any?))
(defmethod tx-op-spec :db.fn/cas [_]
  (s/cat :op #{:db.fn/cas} :e ::entity :a ::attribute :old any? :new any?))
(defmethod tx-op-spec :db.fn/call [_] (s/cat :op #{:db.fn/call} :fn fn? :args (s/* any?)))
(defmethod tx-op-spec :tx-fn [_] (s/cat :fn symbol? :args (s/* any?)))

(s/def ::tx-op (s/multi-spec tx-op-spec (fn [form _] form)))

(s/def ::tx-data
  (s/and (s/conformer #(if (nil? %) [] %))
         (s/coll-of ::tx-op :kind #(or (sequential? %) (instance? java.util.List %)))))

;; ---------------------------------------------------------------- explaining errors

(def max-nodes "The largest form `explain` looks at." 10000)
(def max-depth "The deepest form `explain` looks at." 100)
(def max-problems "The most problems `explain` reports." 10)

(defn- small?
  "Whether `x` has at most `max-nodes` nodes nested at most `max-depth` deep
  (stops counting at the limit: infinite seqs are not small)."
  [x]
  (loop [stack (list [x 0]) n 0]
    (cond
      (empty? stack) true
      (> n max-nodes) false
      :else (let [[y d] (peek stack)
                  stack (pop stack)]
              (if (> d max-depth)
                false
                (recur (if (and (coll? y) (not (string? y)))
                         (into stack (map (fn [c] [c (inc d)])) (take (inc max-nodes) y))
                         stack)
                       (inc n)))))))

(defn explain
  "The problems `spec` finds in `form`, each {:path :pred (a string) :val :in},
  at most `max-problems`; nil when it conforms, or when `form` is too large or
  deep to explain cheaply."
  [spec form]
  (when (small? form)
    (when-let [problems (::s/problems (s/explain-data spec form))]
      (vec (for [p (take max-problems problems)]
             {:path (:path p) :pred (pr-str (s/abbrev (:pred p))) :val (:val p) :in (:in p)})))))
