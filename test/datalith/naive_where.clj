(ns datalith.naive-where
  "The databases and :where clauses of the deliberately naive Datalog evaluator
  (datalith.naive-query answers whole queries with them), the oracle the query
  property tests (datalith.query-property-test) hold the engine to. It shares no
  code with the engine: a vector of datom tuples, binding maps, nested loops.

  - A database is the vector of its datoms `[e a v tx added]`, `a` being the
    attribute's entity id (a query binds an attribute variable to that id, as
    Datomic does), plus the ident -> id map read off its `:db/ident` datoms.
  - A relation is a set of binding maps {?var value}. Each clause maps the
    relation to a new one by looping over its rows (and, for a data pattern,
    over every datom of the source). No index, no planner: clauses run in
    written order, except that a clause whose inputs are not bound yet (a
    predicate, a function, not, or-join's required variables, a rule's
    required arguments) waits until they are.
  - `not` and `or` re-run their body once per row, seeded with that row's
    join variables.
  - Rules are computed bottom-up: every rule relation starts empty and every
    body is re-run against the current relations until nothing changes.
    Bodies must bind their head variables themselves (the subset the
    generator emits), except in a non-recursive rule, whose head variables a
    body does not bind are inputs: the call waits for them and runs the
    bodies per row, seeded with them.
  - Comparisons order values as Datomic does (`datomic-compare`).
  - `where-rows` binds a query's :in to its inputs and runs its :where; past
    *max-work* or *deadline* it gives up with an ex-info of ::too-much-work."
  (:require [clojure.string :as str]))

;; ---------------------------------------------------------------- databases

(defn db
  "The evaluator's database of `datoms`, each `[e a v tx added]` (or a datom
  that destructures so) with `a` an attribute ident. Idents and ref attributes
  are read from `schema-datoms` (default: `datoms` themselves): a view that
  leaves the schema's datoms out (since) still names its attributes."
  ([datoms] (db datoms datoms))
  ([datoms schema-datoms]
   (let [row (fn [d] [(nth d 0) (nth d 1) (nth d 2) (nth d 3) (nth d 4)])
         ds (mapv row datoms)
         ss (if (identical? datoms schema-datoms) ds (mapv row schema-datoms))
         idents (into {} (for [[e a v] ss :when (= a :db/ident)] [v e]))
         ref-type (idents :db.type/ref)]
     {::datoms (mapv (fn [[e a v tx added]] [e (idents a) v tx added]) ds)
      ::idents idents
      ::refs (set (for [[e a v] ss :when (and (= a :db/valueType) (= v ref-type))] e))})))

(defn as-of-datoms
  "The datoms valid at transaction `tx`, from every assertion and retraction
  (`history`, each [e a v tx added]): for each [e a v], the last event at or
  before `tx`, kept when it is an assertion."
  [history tx]
  (for [[_ events] (group-by (fn [d] [(nth d 0) (nth d 1) (nth d 2)]) history)
        :let [last-event (last (sort-by #(nth % 3) (filter #(<= (nth % 3) tx) events)))]
        :when (and last-event (nth last-event 4))]
    last-event))

(defn- db? [x] (and (map? x) (contains? x ::datoms)))

(defn- entid
  "The entity a constant names (an id, an ident or a lookup ref), or ::none."
  [db x]
  (cond (integer? x) (long x)
        (keyword? x) (get (::idents db) x ::none)
        (and (vector? x) (= 2 (count x)))
        (let [a (get (::idents db) (first x))]
          (or (first (for [[e a' v] (::datoms db) :when (and (= a a') (= v (second x)))] e))
              ::none))
        :else ::none))

;; ---------------------------------------------------------------- syntax

(defn variable? [x] (and (symbol? x) (str/starts-with? (name x) "?")))
(defn- blank? [x] (= '_ x))
(defn- src-var? [x] (and (symbol? x) (str/starts-with? (name x) "$")))

(defn- vars-in
  "The variables anywhere in a form, in order, without repeats."
  [form]
  (distinct (filter variable? (tree-seq coll? seq form))))

(defn- body-clauses
  "The clauses of an or branch: one clause, or the clauses of an (and ...)."
  [branch]
  (if (and (seq? branch) (= 'and (first branch))) (vec (rest branch)) [branch]))

(defn- strip-src
  "[src form-without-src] of a clause written with an optional leading source."
  [clause]
  (if (src-var? (first clause)) [(first clause) (vec (rest clause))] ['$ (vec clause)]))

(defn- clause-kind [clause]
  (let [[_ c] (strip-src clause)
        head (first c)]
    (cond
      (seq? clause) (if (#{'not 'not-join 'or 'or-join 'and} head) (keyword (name head)) :rule)
      (seq? head) (if (= 1 (count c)) :predicate :function)
      :else :pattern)))

(defn- rule-head
  "{:name :vars :required} of a rule head `(name ?a ?b)` or, with required
  variables first, `(name [?a] ?b)`."
  [[name & args]]
  (let [required (if (vector? (first args)) (first args) [])
        vars (vec (concat required (if (vector? (first args)) (rest args) args)))]
    {:name name :vars vars :required required}))

(defn- parse-rules [rules]
  (reduce (fn [m [head & body]]
            (let [h (rule-head head)]
              (update m (:name h) (fnil conj []) (assoc h :body (vec body)))))
          {} rules))

;; ---------------------------------------------------------------- functions

(defn- kind
  "The rank of a value's kind in Datomic's order of query values."
  [x]
  (cond (nil? x) 0
        (number? x) 1
        (or (sequential? x) (instance? java.util.List x)) 2
        (instance? java.util.Map x) 3
        (instance? java.util.Set x) 4
        (bytes? x) 5
        :else 6))

(defn datomic-compare
  "Datomic's order of query values, as its documented and observed behaviour
  states it: nil, numbers (by value), lists and vectors (element by element),
  maps and sets (by size, then hash), byte arrays (unsigned), then any other
  value by its class's name, values of one class by their own order."
  [a b]
  (let [ka (kind a) kb (kind b)]
    (cond
      (not= ka kb) (compare ka kb)
      (= 0 ka) 0
      (= 1 ka) (let [nan? #(and (float? %) (Double/isNaN (double %)))]
                 (cond (and (nan? a) (nan? b)) 0 (nan? a) 1 (nan? b) -1 :else (compare a b)))
      (= 2 ka) (or (first (remove zero? (map datomic-compare a b)))
                   (compare (count a) (count b)))
      (#{3 4} ka) (compare [(count a) (hash a)] [(count b) (hash b)])
      (= 5 ka) (or (first (remove zero? (map #(compare (bit-and % 0xff) (bit-and %2 0xff)) a b)))
                   (compare (count a) (count b)))
      :else (let [ca (.getName (class a)) cb (.getName (class b))]
              (if (= ca cb) (compare a b) (compare ca cb))))))

(defn- comparison [ok?]
  (fn [& xs] (every? (fn [[a b]] (ok? (datomic-compare a b))) (partition 2 1 xs))))

(def ^:private builtins
  {'< (comparison neg?) '> (comparison pos?) '<= (comparison (complement pos?))
   '>= (comparison (complement neg?)) '= = '== == 'not= not= '!= not= 'ground identity})

(defn values-of
  "The values of attribute `a` (an ident) of entity `e` in `db`."
  [db e a]
  (let [aid (entid db a)]
    (for [[e' a' v] (::datoms db) :when (and (= e e') (= aid a'))] v)))

(def ^:private db-functions
  {'missing? (fn [db e a] (empty? (values-of db e a)))
   'get-else (fn [db e a default] (if-let [[v] (seq (values-of db e a))] v default))})

(defn- resolve-fn [sym]
  (or (builtins sym)
      (db-functions sym)
      (if (namespace sym)
        (deref (requiring-resolve sym))
        (deref (ns-resolve 'clojure.core sym)))))

;; ---------------------------------------------------------------- bindings

(defn- unify
  "Row `b` with `term` matched against `value`, or nil when they disagree."
  [b term value]
  (cond (blank? term) b
        (variable? term) (if (contains? b term)
                           (when (= (b term) value) b)
                           (assoc b term value))
        :else (when (= term value) b)))

(defn- bind-form
  "The rows (binding maps) a binding form (scalar, tuple, collection or
  relation, nested at will) makes of `value`; a form without variables takes
  any value and makes one empty row."
  [form value]
  (cond
    (empty? (vars-in form)) [{}]
    (variable? form) [{form value}]
    (and (vector? form) (= '... (last form)))
    (mapcat #(bind-form (first form) %) value)
    (and (vector? form) (= 1 (count form)) (vector? (first form)))
    (mapcat #(bind-form (first form) %) value)
    (vector? form)
    (do (when (< (count value) (count form))
          (throw (ex-info "too few elements to bind" {:form form :value value})))
        (reduce (fn [rows [f x]]
                  (for [r rows, r2 (bind-form f x)] (merge r r2)))
                [{}] (map vector form value)))))

(defn- merge-row
  "Row `b` extended with the bindings of `m`, or nil when they disagree."
  [b m]
  (reduce-kv (fn [b k v] (or (unify b k v) (reduced nil))) b m))

;; ---------------------------------------------------------------- clauses

(declare eval-clauses)

(defn source [ctx src]
  (or (get (:sources ctx) src)
      (throw (ex-info "unknown source" {:source src}))))

(declare join-vars)

(defn- binds
  "The variables a clause binds when it runs (statically)."
  [ctx clause]
  (let [[_ c] (strip-src clause)]
    (case (clause-kind clause)
      :pattern (vars-in c)
      :predicate []
      :function (vars-in (second c))
      :rule (vars-in (rest c))
      (:not :not-join) []
      (:or :or-join) (let [or-join? (= :or-join (clause-kind clause))
                           required (when (and or-join? (vector? (first (second c))))
                                      (set (first (second c))))
                           branches (if or-join? (drop 2 c) (rest c))]
                       (filter (fn [v] (every? #(some #{v} (mapcat (partial binds ctx) (body-clauses %)))
                                               branches))
                               (remove (set required) (join-vars clause nil))))
      :and (mapcat #(binds ctx %) (rest c)))))

(defn- binds-all [ctx clauses] (distinct (mapcat #(binds ctx %) clauses)))

(defn- join-vars
  "The variables a not or or clause joins the enclosing scope on, given the
  variables the scope can bind (needed for a plain not only)."
  [clause scope-vars]
  (let [[_ c] (strip-src clause)]
    (case (clause-kind clause)
      :not (filter (set scope-vars) (vars-in (rest c)))
      :not-join (second c)
      :or (vars-in (rest c))
      :or-join (flatten (second c)))))

(declare rule-inputs)

(defn- needs
  "The variables that must be bound before `clause` runs."
  [ctx clause scope-vars]
  (let [[_ c] (strip-src clause)]
    (case (clause-kind clause)
      :pattern []
      :predicate (vars-in (first c))
      :function (vars-in (first c))
      :rule (let [inputs (rule-inputs ctx (first c))]
              (filter variable? (keep-indexed (fn [i a] (when (inputs i) a)) (rest c))))
      (:not :not-join) (join-vars clause scope-vars)
      (:or :or-join) (let [jv (join-vars clause scope-vars)
                           required (when (and (= :or-join (clause-kind clause))
                                               (vector? (first (second c))))
                                      (first (second c)))]
                       (distinct (concat required (remove (set (binds ctx clause)) jv)))))))

(def ^:dynamic *max-work*
  "When a number: the most (binding, datom) pairs one pattern may try before the
  evaluator gives up with an ex-info whose data has ::too-much-work (a generated
  query whose cross products the naive evaluator cannot finish); nil: no limit.
  The patterns of one evaluation may try twice as many in all (a `not` tries its
  body once a row, each time under the limit)."
  nil)

(def ^:dynamic *work-done*
  "With *max-work*: an atom counting the pairs every pattern of one evaluation
  tried, or nil (no count)."
  nil)

(def ^:dynamic *deadline*
  "When a number: the System/nanoTime past which the evaluator gives up as *max-work* makes
  it (::too-much-work): what it counts leaves out the cost of each unification, which a
  generated query under the count made last 44 s a view; nil: no deadline."
  nil)

(defn- past-deadline? []
  (and *deadline* (pos? (- (System/nanoTime) (long *deadline*)))))

(defn- eval-pattern [ctx clause rows]
  (let [[src terms] (strip-src clause)
        data (source ctx src)]
    (when (and *max-work* (db? data))
      (let [work (* (count rows) (count (::datoms data)))]
        (when (or (> work *max-work*)
                  (and *work-done* (> (long (swap! *work-done* + work)) (* 2 *max-work*)))
                  (past-deadline?))
          (throw (ex-info "the naive evaluator's work limit"
                          {::too-much-work true :clause clause})))))
    (if (db? data)
      (let [const (fn [pos t] (cond (or (variable? t) (blank? t)) t
                                    (#{0} pos) (entid data t)
                                    (#{1} pos) (entid data t)
                                    :else t))
            terms (vec (map-indexed const terms))
            a (get terms 1)
            terms (if (and (> (count terms) 2) (contains? (::refs data) a)
                           (not (variable? (terms 2))) (not (blank? (terms 2))))
                    (assoc terms 2 (entid data (terms 2)))
                    terms)]
        (set (for [b rows
                   d (::datoms data)
                   :let [b' (reduce (fn [b i] (or (unify b (terms i) (d i)) (reduced nil)))
                                    b (range (count terms)))]
                   :when b']
               b')))
      (set (for [b rows
                 tuple data
                 :when (>= (count tuple) (count terms))
                 :let [b' (reduce (fn [b i] (or (unify b (terms i) (nth tuple i)) (reduced nil)))
                                  b (range (count terms)))]
                 :when b']
             b')))))

(defn- arg-value [ctx b arg]
  (cond (variable? arg) (b arg)
        (src-var? arg) (source ctx arg)
        (and (seq? arg) (= 'quote (first arg))) (second arg)
        :else arg))

(defn- eval-predicate [ctx [[f & args]] rows]
  (let [fun (resolve-fn f)]
    (set (filter (fn [b] (apply fun (map #(arg-value ctx b %) args))) rows))))

(defn- eval-function [ctx [[f & args] form] rows]
  (let [fun (resolve-fn f)]
    (set (for [b rows
               :let [result (apply fun (map #(arg-value ctx b %) args))]
               :when (some? result)
               m (bind-form form result)
               :let [b' (merge-row b m)]
               :when b']
           b'))))

(defn- with-source
  "ctx whose default source is `src`."
  [ctx src]
  (assoc-in ctx [:sources '$] (source ctx src)))

(defn- eval-not [ctx clause rows scope-vars]
  (let [[src c] (strip-src clause)
        jv (join-vars clause scope-vars)
        body (if (= :not-join (clause-kind clause)) (drop 2 c) (rest c))
        ctx (with-source ctx src)]
    (set (remove (fn [b]
                   (seq (second (eval-clauses ctx (set jv) #{(select-keys b jv)} body))))
                 rows))))

(defn- eval-or [ctx clause rows scope-vars bound]
  (let [[src c] (strip-src clause)
        jv (join-vars clause scope-vars)
        branches (if (= :or-join (clause-kind clause)) (drop 2 c) (rest c))
        ctx (with-source ctx src)
        seed (filter bound jv)]
    (set (for [b rows
               branch branches
               r (second (eval-clauses ctx (set seed) #{(select-keys b seed)}
                                       (body-clauses branch)))
               :let [b' (merge-row b (select-keys r jv))]
               :when b']
           b'))))

(defn- reachable-rules
  "The names of rule `name` and of every rule its bodies invoke, transitively."
  [rules name]
  (loop [todo [name] seen #{}]
    (if-let [[n & more] (seq todo)]
      (if (or (seen n) (not (contains? rules n)))
        (recur more seen)
        (recur (into (vec more) (for [{:keys [body]} (rules n)
                                      form (tree-seq coll? seq body)
                                      :when (and (seq? form) (contains? rules (first form)))]
                                  (first form)))
               (conj seen n)))
      seen)))

(defn- rule-relations
  "{rule-name #{tuple}} of rule `name` and the rules it invokes, over default
  source `src`, to a fixpoint."
  [ctx src name]
  (let [ctx (assoc-in ctx [:sources '$] src)
        names (reachable-rules (:rules ctx) name)]
    (loop [rels (zipmap names (repeat #{}))]
      (let [ctx (assoc ctx :rule-rels rels)
            next (into {} (for [n names]
                            [n (set (for [{:keys [vars body]} (get (:rules ctx) n)
                                          r (second (eval-clauses ctx #{} #{{}} body))]
                                      (mapv (fn [v]
                                              (if (contains? r v)
                                                (r v)
                                                (throw (ex-info "rule body leaves a head variable unbound"
                                                                {:rule n :var v}))))
                                            vars)))]))]
        (if (= next rels) rels (recur next))))))

(declare top-down-rule? eval-rule-top-down)

(defn- eval-rule [ctx clause rows]
  (let [[src [name & args]] (strip-src clause)
        data (source ctx src)
        rels (or (when (top-down-rule? ctx name) ::top-down)
                 (get (:rule-rels ctx) name)
                 (get @(:rule-cache ctx) [data name])
                 (when (contains? (:rules ctx) name)
                   (let [rels (get (rule-relations ctx data name) name)]
                     (swap! (:rule-cache ctx) assoc [data name] rels)
                     rels))
                 (throw (ex-info "unknown rule" {:rule name})))]
    (if (= ::top-down rels)
      (eval-rule-top-down (assoc-in ctx [:sources '$] data) name args rows)
      (set (for [b rows
                 tuple rels
                 :let [b' (reduce (fn [b [t x]] (or (unify b t x) (reduced nil)))
                                  b (map vector args tuple))]
                 :when b']
             b')))))

(defn- count-rows!
  "With *max-work* and *work-done*: counts the rows a clause took and gave towards the
  evaluation's limit (a pattern's pairs alone left joins, `not` bodies run once a row and rule
  fixpoints uncounted: one generated query ran 44 s under the limit)."
  [clause rows out]
  (when (and *max-work* *work-done*)
    (when (or (> (long (swap! *work-done* + (count rows) (count out))) (* 2 *max-work*))
              (past-deadline?))
      (throw (ex-info "the naive evaluator's work limit"
                      {::too-much-work true :clause clause}))))
  out)

(defn- eval-clause [ctx clause rows scope-vars bound]
  (let [[_ c] (strip-src clause)]
    (count-rows!
     clause rows
     (case (clause-kind clause)
       :pattern (eval-pattern ctx clause rows)
       :predicate (eval-predicate ctx c rows)
       :function (eval-function ctx c rows)
       (:not :not-join) (eval-not ctx clause rows scope-vars)
       (:or :or-join) (eval-or ctx clause rows scope-vars bound)
       :and (second (eval-clauses ctx bound rows (rest c)))
       :rule (eval-rule ctx clause rows)))))

(defn- eval-clauses
  "[bound rows] after running `clauses` on `rows`, whose bound variables are
  `bound`: in written order, a clause waiting while it needs unbound variables."
  [ctx bound rows clauses]
  (let [scope-vars (into (set bound) (binds-all ctx clauses))]
    (loop [pending (vec clauses) bound (set bound) rows rows]
      (if (empty? pending)
        [bound rows]
        (let [i (first (keep-indexed (fn [i c] (when (every? bound (needs ctx c scope-vars)) i))
                                     pending))
              _ (when-not i
                  (throw (ex-info "no clause can run: unbound variables"
                                  {:clauses pending :bound bound})))
              c (pending i)]
          (recur (into (subvec pending 0 i) (subvec pending (inc i)))
                 (into bound (binds ctx c))
                 (eval-clause ctx c rows scope-vars bound)))))))

;; ---------------------------------------------------------------- rules that need their inputs

(defn- rule-inputs
  "The argument positions a call of rule `name` must pass bound: its required
  ones, and those of head variables some body never binds itself (it only
  filters or computes from them), which the caller must bind first."
  [ctx name]
  (let [bodies (get (:rules ctx) name)
        {:keys [vars required]} (first bodies)]
    (into (set (range (count required)))
          (for [{:keys [vars body]} bodies
                :let [bound (set (binds-all ctx body))]
                [i v] (map-indexed vector vars)
                :when (not (bound v))]
            i))))

(defn- top-down-rule?
  "Whether rule `name` needs inputs beyond its required ones: it cannot be
  computed bottom-up and is run per calling row instead (not recursively)."
  [ctx name]
  (and (contains? (:rules ctx) name)
       (let [{:keys [required]} (first (get (:rules ctx) name))]
         (> (count (rule-inputs ctx name)) (count required)))))

(defn- eval-rule-top-down
  "Each row of `rows` joined with the tuples of rule `name` whose bodies run
  seeded with the row's values of the input arguments."
  [ctx name args rows]
  (let [inputs (rule-inputs ctx name)]
    (set (for [b rows
               {:keys [vars body]} (get (:rules ctx) name)
               :let [seed (into {} (for [i inputs
                                         :let [a (nth args i)]]
                                     [(vars i) (if (variable? a) (b a) a)]))]
               r (second (eval-clauses ctx (set (keys seed)) #{seed} body))
               :let [b' (reduce (fn [b [a v]] (or (unify b a (r v)) (reduced nil)))
                                b (map vector args vars))]
               :when b']
           b'))))

;; ---------------------------------------------------------------- a query's :where

(defn where-rows
  "The context (sources, rules) that the inputs bound by `in` make, and the rows of
  bindings that satisfy the `where` clauses from them."
  [in inputs where]
  (let [ctx (reduce (fn [ctx [b x]]
                      (cond (src-var? b) (assoc-in ctx [:sources b] x)
                            (= '% b) (assoc ctx :rules (parse-rules x))
                            :else ctx))
                    {:sources {} :rules {} :rule-cache (atom {})} (map vector in inputs))
        seeds (reduce (fn [rows [b x]]
                        (if (or (src-var? b) (= '% b))
                          rows
                          (set (for [r rows, r2 (bind-form b x)
                                     :let [r' (merge-row r r2)] :when r']
                                 r'))))
                      #{{}} (map vector in inputs))
        bound (set (mapcat #(when-not (or (src-var? %) (= '% %)) (vars-in %)) in))
        [_ rows] (eval-clauses ctx bound seeds where)]
    [ctx rows]))
