(ns datalith.query-property-support
  "Random schemas, data and well-formed queries, and the check that runs one on the engine and on
  the naive evaluator (datalith.naive-query) over the same datoms: on the current database, as
  of an earlier t, since it and filtered. What datalith.query-property-test and
  query-order-property-test run (specs-test and the bench's differential check use the
  generators too). DATALITH_TRIALS=n raises the trial count.

  The query generator emits abstract choices (vectors of small numbers) that
  `interpret-query` turns into a valid query, tracking which variables are
  bound and what sort of value each holds, so that every generated query is
  one Datomic accepts: predicates and functions only on bound variables,
  not/not-join sharing a variable with their scope, or branches over the same
  variables, rules whose bodies bind their heads. Constants that name
  entities, transactions or attributes are symbolic ([::eid n], [::lookup n],
  [::tx n], [::attr ident]) until `concretize` resolves them against one
  database."
  (:require [clojure.test.check.generators :as gen]
            [clojure.test.check.results :as results]
            [clojure.walk :as walk]
            [datalith.core :as d]
            [datalith.naive-query :as nq]
            [datalith.naive-where :as nw]))

(def trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 80))

;; ---------------------------------------------------------------- functions queries call

(defn half
  "x/2 for an even x, nil (no binding) for an odd one."
  [x]
  (when (even? x) (quot x 2)))

(defn pairs
  "A relation: [[x y] [y x]]."
  [x y]
  [[x y] [y x]])

(defn nest
  "Nested data for nested bindings: [[x [y x]] [y []]]."
  [x y]
  [[x [y x]] [y []]])

;; ---------------------------------------------------------------- schema and data

(def gen-schema
  "The attribute roles are fixed; the types of two of them vary (:p/tags's doubles and
  instants since stop 46, URIs since stop 47)."
  (gen/hash-map :name-type (gen/elements [:string :keyword :symbol])
                :tag-type (gen/elements [:long :string :long :string :double :instant :uri])
                :num-indexed gen/boolean))

(defn attr-sorts
  "attr -> the sort of its values (:long :string :keyword :symbol :double :instant :uri :ref)."
  [schema]
  {:p/id :long :p/num :long :p/name (:name-type schema) :p/tags (:tag-type schema)
   :p/next :ref :p/links :ref})

(def attrs [:p/num :p/name :p/tags :p/next :p/links :p/id])

(defn engine-schema [schema]
  (let [one :db.cardinality/one many :db.cardinality/many
        type #(keyword "db.type" (name %))]
    {:p/id {:db/valueType :db.type/long :db/cardinality one :db/unique :db.unique/identity}
     :p/num (cond-> {:db/valueType :db.type/long :db/cardinality one}
              (:num-indexed schema) (assoc :db/index true))
     :p/name {:db/valueType (type (:name-type schema)) :db/cardinality one}
     :p/tags {:db/valueType (type (:tag-type schema)) :db/cardinality many}
     :p/next {:db/valueType :db.type/ref :db/cardinality one}
     :p/links {:db/valueType :db.type/ref :db/cardinality many}}))

(defn- double-of
  "The n-th of a few doubles: none of them a whole number, so that none equals a long."
  [n]
  (nth [0.5 1.5 -2.25 1e300] (mod n 4)))

(defn- instant-of
  "The n-th of a few instants, one before the epoch."
  [n]
  (java.util.Date. (long (nth [0 86400000 -86400000 1767225600000] (mod n 4)))))

(defn- uri-of
  "The n-th of a few URIs: opaque and hierarchical, a scheme in capitals (whose text sorts
  before the others', while URI.compareTo ignores its case)."
  [n]
  (nth [(java.net.URI. "http://a.example/0") (java.net.URI. "urn:x:1")
        (java.net.URI. "HTTP://b.example/2") (java.net.URI. "mailto:c@d.example")] (mod n 4)))

(defn value-of
  "The n-th value of attribute `a` (a small domain, so that values repeat)."
  [schema a n]
  (case a
    (:p/id :p/num) (mod n 5)
    :p/name (case (:name-type schema)
              :string (str "a" (mod n 4))
              :keyword (keyword "n" (str "a" (mod n 4)))
              :symbol (symbol (str "a" (mod n 4))))
    :p/tags (case (:tag-type schema)
              :long (mod n 4)
              :string (str "t" (mod n 4))
              :double (double-of n)
              :instant (instant-of n)
              :uri (uri-of n))))

(defn- sometimes-nil [g] (gen/frequency [[1 (gen/return nil)] [4 g]]))

(def gen-entity
  (gen/hash-map :num (sometimes-nil (gen/choose 0 4))
                :name (sometimes-nil (gen/choose 0 3))
                :tags (gen/vector (gen/choose 0 3) 0 3)
                :next (sometimes-nil gen/nat)
                :links (gen/vector gen/nat 0 3)))

(def gen-change
  "[op entity attr value]; numbers pick among what exists."
  (gen/tuple (gen/frequency [[5 (gen/return :add)] [3 (gen/return :retract)]
                             [1 (gen/return :retract-entity)]])
             gen/nat (gen/elements (butlast attrs)) gen/nat))

(def gen-data
  (gen/hash-map :entities (gen/frequency [[5 (gen/vector gen-entity 2 10)]
                                          [1 (gen/vector gen-entity 20 40)]])
                :txs (gen/vector (gen/vector gen-change 1 4) 0 3)))

(defn- load-data!
  "Transacts `data`: one transaction creating the entities (entity i gets
  :p/id i), then the changes, each transaction on its own (one the engine
  rejects is skipped: transactions are not under test here). Returns
  {:eids [eid of entity i] :ts [basis t after each transaction]}."
  [conn schema {:keys [entities txs]}]
  (let [n (count entities)
        tmp #(str "e" (mod % n))
        tx1 (vec (for [[i {:keys [num name tags next links]}] (map-indexed vector entities)]
                   (cond-> {:db/id (tmp i) :p/id i}
                     num (assoc :p/num (value-of schema :p/num num))
                     name (assoc :p/name (value-of schema :p/name name))
                     (seq tags) (assoc :p/tags (set (map #(value-of schema :p/tags %) tags)))
                     next (assoc :p/next (tmp next))
                     (seq links) (assoc :p/links (set (map tmp links))))))
        tempids (:tempids (d/transact! conn tx1))
        eids (mapv #(get tempids (tmp %)) (range n))
        eid #(nth eids (mod % n))
        ts (reduce (fn [ts ops]
                     (let [tx (vec (for [[op e a v] ops]
                                     (let [v (if (#{:p/next :p/links} a) (eid v) (value-of schema a v))]
                                       (case op
                                         :add [:db/add (eid e) a v]
                                         :retract [:db/retract (eid e) a v]
                                         :retract-entity [:db/retractEntity (eid e)]))))]
                       (try (d/transact! conn tx)
                            (conj ts (d/basis-t (d/db conn)))
                            (catch clojure.lang.ExceptionInfo _ ts))))
                   [(d/basis-t (d/db conn))] txs)]
    {:eids eids :ts ts}))

;; ---------------------------------------------------------------- rules

(def rules
  "The rules a query may invoke: transitive closures right- and left-
  recursive, mutual recursion, a rule with a required argument, one with a
  predicate, one made of other rules, a right-recursive one whose step filters."
  '[[(reach ?a ?b) [?a :p/next ?b]]
    [(reach ?a ?b) [?a :p/next ?c] (reach ?c ?b)]
    [(linked ?a ?b) [?a :p/links ?b]]
    [(linked ?a ?b) (linked ?a ?c) [?c :p/links ?b]]
    [(odd-hop ?a ?b) [?a :p/links ?b]]
    [(odd-hop ?a ?b) [?a :p/links ?c] (even-hop ?c ?b)]
    [(even-hop ?a ?b) [?a :p/links ?c] (odd-hop ?c ?b)]
    [(near [?a] ?b) [?a :p/next ?b]]
    [(near [?a] ?b) [?b :p/next ?a]]
    [(small ?e ?n) [?e :p/num ?n] [(< ?n 3)]]
    [(either ?a ?b) (reach ?a ?b)]
    [(either ?a ?b) (linked ?a ?b)]
    [(climb ?a ?n) [?a :p/num ?n]]
    [(climb ?a ?n) [?a :p/links ?c] [(!= ?a ?c)] (climb ?c ?n)]
    ;; defined recursive body first, the base starting with not; and the same with the
    ;; definitions and the clauses of each the other way round: reach through nodes not numbered
    ;; 0, and (one argument, so tabled rather than solved as right-linear) whether a :p/next
    ;; chain leads to a named node not numbered 0
    [(nreach ?a ?b) [?a :p/next ?c] (nreach ?c ?b)]
    [(nreach ?a ?b) (not [?a :p/num 0]) [?a :p/next ?b]]
    [(nreach2 ?a ?b) [?a :p/next ?b] (not [?a :p/num 0])]
    [(nreach2 ?a ?b) (nreach2 ?c ?b) [?a :p/next ?c]]
    [(nup ?a) [?a :p/next ?c] (nup ?c)]
    [(nup ?a) (not [?a :p/num 0]) [?a :p/name _]]
    [(nup2 ?a) [?a :p/name _] (not [?a :p/num 0])]
    [(nup2 ?a) (nup2 ?c) [?a :p/next ?c]]
    ;; ?x is not declared required, but the body cannot bind it: a call must bind it first
    [(num-above ?x ?e) [?e :p/num ?n] [(< ?x ?n)]]])

(def rule-sigs
  "rule name -> [sorts of its arguments, number of required arguments]."
  '{reach [[:ref :ref] 0] linked [[:ref :ref] 0] odd-hop [[:ref :ref] 0]
    even-hop [[:ref :ref] 0] near [[:ref :ref] 1] small [[:ref :long] 0]
    either [[:ref :ref] 0] climb [[:ref :long] 0] nreach [[:ref :ref] 0]
    nreach2 [[:ref :ref] 0] nup [[:ref] 0] nup2 [[:ref] 0]
    ;; its first argument is an input though the head does not say so: bound or constant
    num-above [[:long :ref] 1]})

;; ---------------------------------------------------------------- query choices

(def gen-nums (gen/vector gen/nat 6))

(defn- gen-choice*
  "[kind nums sub-choices]: sub-choices (nested `depth` deep) make the bodies
  of not and or."
  [depth]
  (gen/tuple (gen/frequency (cond-> [[7 (gen/return :pattern)] [3 (gen/return :pred)]
                                     [2 (gen/return :fn)] [2 (gen/return :rule)]]
                              (pos? depth) (into [[2 (gen/return :not)] [2 (gen/return :or)]])))
             gen-nums
             (if (pos? depth)
               (gen/vector (gen/vector (gen-choice* (dec depth)) 0 2) 1 3)
               (gen/return [[]]))))

(def gen-choice (gen-choice* 2))

(def gen-query-spec
  (gen/hash-map :inputs (gen/vector (gen/tuple (gen/elements [:scalar :tuple :coll :rel :src :nested]) gen-nums) 0 2)
                :clauses (gen/vector gen-choice 1 5)
                :find (gen/tuple (gen/elements [:rel :rel :scalar :coll :tuple :agg :agg :agg :keys
                                                :rel-with :coll-with :keys-with :pull-agg :pull-with])
                                 gen-nums)
                :as-of gen/nat
                :hoist gen/boolean
                :implied (gen/frequency [[2 (gen/return nil)] [1 gen/nat]])))

;; ---------------------------------------------------------------- interpretation
;; State: {:schema, :vars [[?var sort] ...] (bound, visible), :n (fresh-name
;; counter), :rules? (a rule is invoked)}. Sorts: :long :string :keyword :ref
;; (entity ids), :attr (attribute ids), :tx (transaction ids), :any.

(defn pick [xs n] (when (seq xs) (nth xs (mod n (count xs)))))

(defn- fresh [st] [(symbol (str "?v" (:n st))) (update st :n inc)])

(defn- bind [st v sort]
  (if (some #(= v (first %)) (:vars st)) st (update st :vars conj [v sort])))

(defn- vars-of [st pred] (vec (for [[v s] (:vars st) :when (pred s)] v)))

(defn- sort-of [st v] (some (fn [[v' s]] (when (= v v') s)) (:vars st)))

(def numeric? #{:long :ref :attr :tx})

(defn- constant
  "A constant of `sort`, symbolic for entities and attributes."
  [sort n]
  (case sort
    :long (pick [0 1 2 3 4 2 1 -1] n)
    :string (pick ["a0" "a1" "t0" "a2" "t1" "a3" "zz" "10"] n)
    :keyword (pick [:n/a0 :n/a1 :n/a2 :n/a3 :n/zz] n)
    :symbol (pick ['a0 'a1 'a2 'a3 'zz 'n/a1] n)
    :double (if (= 4 (mod n 6)) 2.0 (double-of n)) ; 2.0: a double that equals no stored one
    :instant (instant-of n)
    :uri (if (= 4 (mod n 6)) (java.net.URI. "http://none.example/") (uri-of n)) ; a URI no datom holds
    :ref [::eid n]
    :attr [::attr (pick attrs n)]
    :tx [::tx n]
    :any (pick [0 2 "a0" :n/a1 [::eid n] true 'a1 2.5 "zz"] n)))

(defn- fn-arg
  "A constant as a function's argument: a symbol quoted, as Datomic takes it."
  [c]
  (if (and (symbol? c) (not= \? (first (name c)))) (list 'quote c) c))

(defn- attrs-of-sort [st sort]
  (vec (for [a attrs :when (= sort ((attr-sorts (:schema st)) a))] a)))

(defn- pattern
  "A data pattern: [attr-n e-n v-n x-n e-pick v-pick]."
  [st [an en vn xn ep vp]]
  (cond
    (= 8 (mod an 9))
    ;; the schema: an attribute variable's (or an attribute's) ident or cardinality
    (let [a (or (pick (vars-of st #{:attr}) ep) (pick attrs ep))
          [schema-attr s] (pick [[:db/ident :keyword] [:db/cardinality :ref] [:db/valueType :ref]] vn)
          [v st] (fresh st)]
      [[a schema-attr v] (bind st v s)])

    (= 7 (mod an 9))
    ;; attribute variable: [?e ?a ?v], ?v of any sort
    (let [[e st] (if-let [e (pick (vars-of st #{:ref}) ep)] [e st] (fresh st))
          [a st] (if-let [a (and (even? en) (pick (vars-of st #{:attr}) xn))] [a st] (fresh st))
          [v st] (fresh st)]
      [[e a v] (-> st (bind e :ref) (bind a :attr) (bind v :any))])

    :else
    (let [attr (pick attrs an)
          s ((attr-sorts (:schema st)) attr)
          [e st e-sort] (case (int (if (empty? (:vars st)) 1 (mod en 9)))
                          (0 2 7 8) (if-let [e (pick (vars-of st #{:ref}) ep)] [e st :ref] (conj (fresh st) :ref))
                          1 (conj (fresh st) :ref)
                          3 [(constant :ref ep) st nil]
                          4 [[::lookup ep] st nil]
                          5 (if-let [e (pick (vars-of st #{:long}) ep)] [e st :long] (conj (fresh st) :ref))
                          6 ['_ st nil])
          [v st v-sort] (case (int (mod vn 9))
                          (0 7) (conj (fresh st) s)
                          (1 6 8) (if-let [v (pick (vars-of st #{s}) vp)] [v st s] (conj (fresh st) s))
                          2 [(if (and (= s :ref) (odd? vp)) [::lookup vp] (constant s vp)) st nil]
                          3 ['_ st nil]
                          4 (if-let [v (pick (mapv first (:vars st)) vp)] [v st nil] (conj (fresh st) s))
                          5 (if (and (= s :ref) (symbol? e) (not= '_ e)) [e st nil]
                                (if-let [v (pick (vars-of st #{s}) vp)] [v st s] (conj (fresh st) s))))
          [tx st] (case (int (mod xn 12))
                    (0 6) (fresh st)
                    1 [(or (pick (vars-of st #{:tx}) ep) (constant :tx ep)) st]
                    [nil st])
          st (cond-> st
               e-sort (bind e e-sort)
               (and v-sort (symbol? v) (not= '_ v)) (bind v v-sort)
               (and tx (symbol? tx)) (bind tx :tx))]
      [(cond-> [e attr v] tx (conj tx)) st])))

(defn- predicate
  "[(op ?x arg)] on a bound variable, or nil when none is bound."
  [st [xn on an cn]]
  (when-let [x (pick (mapv first (:vars st)) xn)]
    (let [s (sort-of st x)
          ops (cond (numeric? s) '[< > <= >= = not= even? odd?]
                    (= s :string) '[< > = not= clojure.string/starts-with?]
                    (#{:keyword :symbol} s) '[< > <= = not=]
                    :else '[= not= < > <= >=])
          op (pick ops on)
          other (pick (or (seq (remove #{x} (vars-of st #{s}))) [x]) cn)
          arg (cond (= 'clojure.string/starts-with? op) (pick ["a" "t" "a1" ""] an)
                    (and other (even? an)) other
                    ;; a double bound on a long: compared numerically
                    (and (= :long s) (= 1 (mod cn 5))) (pick [2.5 -0.5 3.0] an)
                    ;; a bound of another type: values order by type first, as Datomic's
                    (= 2 (mod cn 5)) (fn-arg (constant :any an))
                    :else (fn-arg (constant s cn)))]
      (cond
        (and (= :ref s) (= 9 (mod on 10)))
        [(list 'missing? '$ x (pick attrs an))]

        (#{'even? 'odd?} op)
        [(list op x)]

        :else
        (if (odd? (quot an 2)) [(list op arg x)] [(list op x arg)])))))

(defn- function
  "A function binding on bound variables, or nil when none is bound."
  [st [xn fk bn zn]]
  (when-let [x (pick (mapv first (:vars st)) xn)]
    (let [s (sort-of st x)
          z (or (pick (vars-of st #{s}) zn) x)
          [y st] (fresh st)
          [w st] (fresh st)
          shapes (concat
                   [[(list 'ground (fn-arg (constant s zn))) y s]]
                   (case s
                     :long [[(list '+ x (mod zn 3)) y :long] [(list '* x 2) y :long]
                            [(list '- x z) y :long] [(list 'inc x) y :long] [(list 'str x) y :string]
                            [(list `half x) y :long] [(list 'max x z) y :long]]
                     :string [[(list 'str x "x") y :string] [(list 'count x) y :long]
                              [(list 'clojure.string/upper-case x) y :string]]
                     :keyword [[(list 'name x) y :string]]
                     :ref (cons [(list 'identity x) y s]
                                (for [a [:p/num :p/name :p/next :p/id]
                                :let [as ((attr-sorts (:schema st)) a)]]
                                  [(list 'get-else '$ x a (fn-arg (constant as zn))) y as]))
                     [[(list 'identity x) y s]])
                   [[(list 'vector x z) [y w] s]
                    [(list 'vector x z) [y '_] s]
                    [(list 'list x z) [y '...] s]
                    [(list `pairs x z) [[y w]] s]
                    ;; nested bindings, and a binding without variables taking any value
                    [(list `nest x z) [[y [w '...]] '...] s]
                    [(list `nest x z) [[y [w '...]]] s]
                    [(list 'vector x z) [y ['_ '...]] s]])
          [call form out] (pick shapes fk)
          st (-> (bind st y out) (cond-> (some #{w} (flatten form)) (bind w out)))]
      [[call form] st])))

(defn- rule-call
  "A rule invocation, with arguments bound, fresh, constant, repeated or _."
  [st [rn an bn cn]]
  (let [name (pick (sort (keys rule-sigs)) rn)
        [sorts required] (rule-sigs name)
        [args st] (reduce
                    (fn [[args st] [i s]]
                      (let [k (if (and (zero? required) (zero? (mod cn 4)))
                                1 ; every argument fresh: the rule's table with nothing bound
                                (mod (quot an (long (Math/pow 5 i))) 5))
                            bound (pick (vars-of st #{s}) (+ bn i))
                            [arg st s'] (cond
                                          (and (= k 0) bound) [bound st nil]
                                          (and (= k 1) (< i required)) [(constant s cn) st nil]
                                          (= k 1) (conj (fresh st) s)
                                          (= k 2) [(constant s (+ cn i)) st nil]
                                          (and (= k 3) (seq args) (symbol? (peek args))
                                               (not= '_ (peek args)) (= s :ref))
                                          [(peek args) st nil]
                                          (and (= k 4) (>= i required)) ['_ st nil]
                                          (< i required) (if bound [bound st nil] [(constant s cn) st nil])
                                          :else (conj (fresh st) s))]
                        [(conj args arg) (cond-> st s' (bind arg s'))]))
                    [[] st] (map-indexed vector sorts))]
    [(apply list name args) (assoc st :rules? true)]))

(defn- simple-clause
  "One pattern, predicate, function or rule clause; a pattern when the chosen
  kind has nothing to work on."
  [st [kind nums]]
  (or (case kind
        :pred (when-let [c (predicate st nums)] [c st])
        :fn (function st nums)
        :rule (rule-call st nums)
        nil)
      (pattern st nums)))

(defn- anchored
  "A first body clause that uses variable `x`: a pattern through one of x's
  attributes (no other variable unless `locals?`), else a predicate."
  [st x [an vn cn] locals?]
  (let [s (sort-of st x)
        as (attrs-of-sort st s)]
    (cond
      (and (= s :ref) (even? vn))
      (let [attr (pick attrs an)
            vs ((attr-sorts (:schema st)) attr)
            [v st] (cond (and locals? (zero? (mod cn 3))) (fresh st)
                         (and (not locals?) (= 1 (mod cn 3))) ['_ st]
                         :else [(constant vs cn) st])]
        ;; a :symbol constant is a symbol too, but no variable
        [[x attr v] (cond-> st (and (symbol? v) (= \? (first (name v)))) (bind v vs))])

      (seq as)
      (let [[e st] (cond (and locals? (odd? cn)) (fresh st)
                         (even? (quot cn 2)) ['_ st]
                         :else [(constant :ref cn) st])]
        [[e (pick as an) x] (cond-> st (and (symbol? e) (not= '_ e)) (bind e :ref))])

      :else
      [[(list 'not= x (fn-arg (constant s cn)))] st])))

(declare clause)

(defn- clauses-of
  "Interprets `choices` in state `st`: [clauses st]."
  [st choices interpret]
  (reduce (fn [[cs st] ch] (let [[c st] (interpret st ch)] [(conj cs c) st]))
          [[] st] choices))

(defn- form-vars [form]
  (distinct (filter #(and (symbol? %) (= \? (first (name %)))) (tree-seq coll? seq form))))

(defn- negation
  "not-join on one bound variable x (its other outer variables are then local
  to the body), or a not over outer variables; a not whose body has local
  variables is written as the not-join on the outer variables it uses, since
  Datomic unifies every variable of a plain not with the enclosing query."
  [st [xn kn an vn cn] subs]
  (when-let [x (pick (mapv first (:vars st)) xn)]
    (let [join? (zero? (mod kn 3))
          st' (if join? (assoc st :vars [[x (sort-of st x)]]) st)
          [first-clause st'] (anchored st' x [an vn cn] true)
          [more st'] (clauses-of st' (first subs) clause)
          body (into [first-clause] more)
          outer (set (map first (:vars st)))
          shared (filter outer (form-vars body))
          st (assoc st :n (:n st') :rules? (or (:rules? st) (:rules? st')))]
      [(cond join? (apply list 'not-join [x] body)
             (every? outer (form-vars body)) (apply list 'not body)
             :else (apply list 'not-join (vec shared) body))
       st])))

(defn- disjunction
  "or / or-join: join variables an outer variable x and/or a fresh one f that
  every branch binds; plain or branches use exactly the join variables."
  [st [xn kn an vn cn fk] subs]
  (let [x (pick (mapv first (:vars st)) xn)
        plain? (even? kn)
        shape (mod (quot kn 2) 3)
        ;; shape 0: [x]   1: [x f]   2: [f]
        shape (cond (nil? x) 2
                    (and (= 1 shape) (not= :ref (sort-of st x))
                         (empty? (attrs-of-sort st (sort-of st x)))) 0
                    :else shape)
        [f st] (if (pos? shape) (fresh st) [nil st])
        jx (when (< shape 2) x)
        xs (when x (sort-of st x))
        f-sort (cond (= shape 2) :ref
                     (= xs :ref) (pick [:ref :long ((attr-sorts (:schema st)) :p/name)] fk)
                     :else :ref)
        branch (fn [st i sub]
                 (let [bst (assoc st :vars (if jx [[jx xs]] []))
                       [c bst] (case (int shape)
                                 0 (anchored bst x [(+ an i) (+ vn i) (+ cn i)] (not plain?))
                                 1 (let [[attr e v] (if (= xs :ref)
                                                      [(pick (attrs-of-sort bst f-sort) (+ an i)) x f]
                                                      [(pick (attrs-of-sort bst xs) (+ an i)) f x])]
                                     [[e attr v] bst])
                                 2 (let [attr (pick attrs (+ an i))
                                         v (if (even? (+ vn i))
                                             (constant ((attr-sorts (:schema bst)) attr) (+ cn i))
                                             '_)]
                                     [[f attr v] bst]))
                       bst (cond-> bst f (bind f f-sort))
                       [more bst] (if plain?
                                    [[] bst]
                                    (clauses-of bst sub clause))]
                   [(if (seq more) (apply list 'and c more) c)
                    (assoc st :n (:n bst) :rules? (or (:rules? st) (:rules? bst)))]))
        [branches st] (reduce (fn [[bs st] [i sub]] (let [[b st] (branch st i sub)] [(conj bs b) st]))
                              [[] st] (map-indexed vector (take (max 2 (count subs)) (cycle subs))))
        head (cond plain? 'or
                   (and jx (odd? cn)) (into [[jx]] (remove nil? [f]))
                   :else (vec (remove nil? [jx f])))]
    [(if (symbol? head)
       (apply list 'or branches)
       (apply list 'or-join head branches))
     (cond-> st f (bind f f-sort))]))

(defn- clause
  "Any clause; not and or take their bodies from `subs`."
  [st [kind nums subs]]
  (or (case kind
        :not (negation st nums subs)
        :or (disjunction st nums subs)
        nil)
      (simple-clause st [kind nums])))

(defn- input
  "An :in binding, its value and the clause reading it when it is a source:
  [binding value st clause]."
  [st [kind [sn an bn cn dn]]]
  (let [sorts [:long :ref ((attr-sorts (:schema st)) :p/name)]
        s1 (pick sorts sn)
        s2 (pick sorts an)
        [x st] (fresh st)
        [y st] (fresh st)
        size #(if (= 4 (mod % 9)) 0 (inc (mod % 3)))
        vals (fn [s k] (vec (for [i (range (size k))] (constant s (+ cn i)))))]
    (case kind
      :scalar [x (constant s1 cn) (bind st x s1)]
      :tuple (if (even? bn)
               [[x y] [(constant s1 cn) (constant s2 dn)] (-> st (bind x s1) (bind y s2))]
               [[x '_] [(constant s1 cn) (constant s2 dn)] (bind st x s1)])
      ;; a collection given with each value twice binds each once
      :coll [[x '...] (cond-> (vals s1 bn) (odd? dn) (as-> v (into v v))) (bind st x s1)]
      :rel [[[x y]] (vec (for [i (range (size bn))] [(constant s1 (+ cn i)) (constant s2 (+ dn i))]))
            (-> st (bind x s1) (bind y s2))]
      :src (let [src (symbol (str "$" (:n st)))]
             [src (vec (for [i (range (size bn))] [(constant s1 (+ cn i)) (constant s2 (+ dn i))]))
              (-> st (bind x s1) (bind y s2))
              [src x y]])
      ;; nested bindings: a tuple holding a collection, a map's entries, a relation of
      ;; tuples holding collections, a position without variables taking any value
      :nested (case (int (mod bn 4))
                0 [[x [y '...]] [(constant s1 cn) (vals s2 dn)] (-> st (bind x s1) (bind y s2))]
                1 [[[x y] '...] (into {} (for [i (range (size dn))] [(constant s1 (+ cn i)) (constant s2 (+ dn i))]))
                   (-> st (bind x s1) (bind y s2))]
                2 [[[x [y '...]]] (vec (for [i (range (size dn))] [(constant s1 (+ cn i)) (vals s2 (+ dn i))]))
                   (-> st (bind x s1) (bind y s2))]
                3 [[x ['_ '...]] [(constant s1 cn) (constant s2 dn)] (bind st x s1)]))))

(def ^:private aggregates-by-sort
  "Aggregates that suit a variable's sort; min and max order any values (numbers
  before keywords before strings ...), median needs numbers."
  {:numeric '[count count-distinct sum avg min max distinct median]
   :ordered '[count count-distinct min max distinct]
   :any '[count count-distinct distinct min max]})

(defn- aggregate-of
  "(f ?x), or for min and max sometimes their n form (f n ?x)."
  [f x k]
  (if (and ('#{min max} f) (zero? (mod k 3)))
    (list f (inc (mod k 2)) x)
    (list f x)))

(def ^:private pull-patterns
  "Patterns of attributes of cardinality one, which the naive evaluator pulls."
  [[:p/num :p/name] [:db/id :p/id] [:p/id :p/num :p/name]])

(defn- find-spec
  "[find-part with-vars keys] over the bound variables."
  [st [kind [an bn cn dn en]]]
  (let [vs (mapv first (:vars st))
        some-vars (fn [k n] (vec (distinct (for [i (range (inc (mod k n)))] (pick vs (+ an (* i (inc bn))))))))]
    (case kind
      :rel [(some-vars cn 3) nil nil]
      :keys (let [fv (some-vars cn 3)] [fv nil (vec (map-indexed (fn [i _] (symbol (str "k" i))) fv))])
      :scalar [[(pick vs an) '.] nil nil]
      :coll [[[(pick vs an) '...]] nil nil]
      :tuple [[(some-vars cn 2)] nil nil]
      ;; :with without aggregates: a bag
      :rel-with (let [fv (some-vars cn 3)
                      with (pick (remove (set fv) vs) en)]
                  [fv (when with [with]) nil])
      :coll-with (let [x (pick vs an)
                       with (pick (remove #{x} vs) en)]
                   [[[x '...]] (when with [with]) nil])
      :keys-with (let [fv (some-vars cn 3)
                       with (pick (remove (set fv) vs) en)]
                   [fv (when with [with]) (vec (map-indexed (fn [i _] (symbol (str "k" i))) fv))])
      ;; pulls: beside aggregates they group as their entity does; with :with, a bag
      (:pull-agg :pull-with)
      (if-let [e (pick (vars-of st #{:ref}) an)]
        (let [pulled (list 'pull e (pick pull-patterns bn))
              x (pick vs cn)
              s (sort-of st x)
              fns (aggregates-by-sort (cond (numeric? s) :numeric (= :any s) :any :else :ordered))
              agg (aggregate-of (pick fns dn) x en)
              with (pick (remove (set [e x]) vs) en)]
          (if (= kind :pull-agg)
            [(if (even? dn) [pulled agg] [agg pulled]) (when (and with (odd? en)) [with]) nil]
            [[pulled] (when with [with]) nil]))
        (find-spec st [:agg [an bn cn dn en]]))
      :agg (let [x (pick vs an)
                 s (sort-of st x)
                 fns (aggregates-by-sort (cond (numeric? s) :numeric (= :any s) :any :else :ordered))
                 aggs (vec (distinct [(aggregate-of (pick fns bn) x cn) (aggregate-of (pick fns (+ bn dn)) x en)]))
                 aggs (if (even? dn) (subvec aggs 0 1) aggs)
                 group (when (and (odd? cn) (> (count vs) 1)) (pick (remove #{x} vs) cn))
                 with (when (and (pos? (mod en 3)) (> (count vs) 1))
                        (pick (remove #{x group} vs) en))]
             [(cond
                (and (nil? group) (zero? (mod cn 4))) [(first aggs) '.]
                group (into [group] aggs)
                :else aggs)
              (when with [with])
              nil]))))

;; Rewrites of a generated :where that keep its answers, for the planner: blanks repeated,
;; clauses written before the ones binding what they need.

(defn- implied-blanks
  "`where` with two copies of one of its data patterns [e a v ...] (the n-th,
  cycling) appended as [_ a v]: implied by it, they change no answer, but
  their blanks must not multiply the rows."
  [n where]
  (let [patterns (filterv #(and (vector? %) (keyword? (second %)) (<= 3 (count %))
                                (not (seq? (first %))))
                          where)]
    (if-let [[_ a v] (pick patterns n)]
      (into where [['_ a v] ['_ a v]])
      where)))

(defn- hoist-rule-calls
  "`where` with its rule calls first: a call needing an argument waits for the
  clause that binds it, wherever that is written."
  [where]
  (let [call? #(and (seq? %) (contains? rule-sigs (first %)))]
    (into (filterv call? where) (remove call? where))))

(defn interpret-query
  "A query spec -> {:query q :inputs [binding value] :rules? bool}."
  [schema {:keys [inputs clauses find hoist implied]}]
  (let [st {:schema schema :vars [] :n 0 :rules? false}
        [ins st] (reduce (fn [[ins st] ch] (let [[b v st c] (input st ch)] [(conj ins [b v c]) st]))
                         [[] st] inputs)
        ;; the first clause binds something unless an input did; inputs alone may do
        ;; without :where clauses
        clauses (cond (empty? ins) (into [[:pattern (second (first clauses)) []]] (rest clauses))
                      (zero? (mod (first (second (first clauses))) 5)) []
                      :else clauses)
        [where st] (clauses-of st clauses clause)
        where (into (vec (keep #(nth % 2) ins)) where)
        where (cond->> where
                implied (implied-blanks implied)
                hoist hoist-rule-calls)
        [find with keys] (find-spec st find)
        in (cond-> (into ['$] (map first ins)) (:rules? st) (conj '%))
        q (cond-> [:find] true (into find)
            keys (into (cons :keys keys))
            with (into (cons :with with))
            true (into (cons :in in))
            true (into (cons :where where)))]
    {:query q :inputs (mapv second ins) :rules? (:rules? st)}))

(defn- concretize
  "`form` with symbolic constants resolved on one database: entity n -> the id
  of entity n, lookup n -> [:p/id k] of an entity present in `facts`, tx n ->
  a transaction id, attr -> its id."
  [form {:keys [eids tx-ids p-ids attr-ids]}]
  (walk/postwalk
    (fn [x]
      (if (and (vector? x) (= 2 (count x)) (keyword? (first x)) (= (namespace ::x) (namespace (first x))))
        (let [[k n] x]
          (case (name k)
            "eid" (pick eids n)
            "lookup" (if (seq p-ids) [:p/id (pick p-ids n)] (pick eids n))
            "tx" (pick tx-ids n)
            "attr" (attr-ids n)))
        x))
    form))

;; ---------------------------------------------------------------- the check

(defn- view-info
  "What `concretize` needs of one database view whose naive model is `model`."
  [db model eids]
  {:eids eids
   ;; a since view may hold no transaction: then the first one's, which it cannot hold
   :tx-ids (or (not-empty (vec (sort (nq/q '[:find [?tx ...] :where [?tx :db/txInstant]] model))))
               [(d/t->tx 0)])
   :p-ids (vec (sort (nq/q '[:find [?id ...] :where [_ :p/id ?id]] model)))
   :attr-ids (into {} (for [a attrs] [a (d/entid db a)]))})

(defn both-answers
  "`spec` made concrete for `db` and run by the engine and, through `oracle`, by
  the naive evaluator over `model`: {:query :inputs :expected :actual}, an error
  of either side as a map in its place."
  [oracle db model eids spec]
  (let [info (view-info db model eids)
        query (concretize (:query spec) info)
        inputs (concretize (:inputs spec) info)
        args (cond-> (into [db] inputs) (:rules? spec) (conj rules))
        nargs (cond-> (into [model] inputs) (:rules? spec) (conj rules))]
    {:query query
     :inputs inputs
     ;; a case past the naive evaluator's work limit or its 2 s is skipped (:too-much-work)
     :expected (try (binding [nw/*max-work* 20000000 nw/*work-done* (atom 0)
                              nw/*deadline* (+ (System/nanoTime) 2000000000)]
                      (apply oracle query nargs))
                    (catch Throwable t
                      (if (::nw/too-much-work (ex-data t))
                        :too-much-work
                        {:oracle-error (str t) :data (ex-data t)})))
     :actual (try (apply d/q query args)
                  (catch Throwable t {:engine-error (str t) :data (ex-data t)}))}))

(defn- filter-pred
  "The predicate of the filtered view checked: hides the data (:p/*) of every third entity
  (the refs to them stay, as datoms of others, while their own datoms go)."
  [_db datom]
  (or (not= "p" (namespace (:a datom))) (pos? (mod (:e datom) 3))))

(defn check-views
  "Loads `data` through `conn`, then checks query spec `qspec` (made from `spec`)
  with `check` (query-property-test's check-view or query-order-property-test's
  check-sliced-view) on the current database, as of an earlier t, since it (the datoms added
  after t: the schema's are not among them, but still name the attributes) and filtered. nil
  when all agree."
  [check conn schema data spec qspec]
  (let [{:keys [eids ts]} (load-data! conn schema data)
        db (d/db conn)
        t (pick ts (:as-of spec))
        history (map (fn [dm] [(:e dm) (:a dm) (:v dm) (:tx dm) (:added dm)])
                     (d/datoms (d/history db) :eavt))]
    (or (check :current db (nw/db (d/datoms db :eavt)) eids qspec)
        (check [:as-of t] (d/as-of db t) (nw/db (nw/as-of-datoms history (d/t->tx t))) eids qspec)
        (check [:since t] (d/since db t)
               (nw/db (filter #(> (:tx %) (d/t->tx t)) (d/datoms db :eavt)) (d/datoms db :eavt))
               eids qspec)
        (check :filtered (d/filter db filter-pred)
               (nw/db (filter #(filter-pred db %) (d/datoms db :eavt))) eids qspec))))

(defn outcome [failure]
  (reify results/Result
    (pass? [_] (nil? failure))
    (result-data [_] failure)))
