(ns datalith.bench.differential
  "Generated queries answered by datalith and by Datomic Local, compared: the
  differential check that found answers differing from Datomic's, run here
  rather than by the test suite because Datomic Local is a :bench dependency.
  It reuses query-property-test's generators (datalith.query-property-support's:
  schema, data, query specs, whose queries are made to be ones Datomic accepts),
  loads each trial's data into a datalith :mem database and a Datomic Local
  in-memory one, and runs the query on the current database, as of an earlier t
  and since it, on both.

  Answers are compared after naming what differs between the two systems:
  entity ids become [:e i] (entity i of the trial's data), transaction ids
  [:tx k] (the k-th of the trial's transactions), attribute ids their idents,
  and anything else of the systems' own (their bootstrap entities and
  transactions) [:system]; tuples that name the systems' own are dropped on
  both sides (Datomic installs far more schema than datalith does). Datomic's
  client API takes relations only (:find ?a ?b), so each query goes to it as
  one: a relation or a collection is compared as a set, a scalar or a tuple
  (any one answer) must be among Datomic's rows. An error on one side only is
  a difference; on both, an agreement. A query Datomic's parser refuses
  (a lookup ref written in a data pattern, which datalith takes as DataScript
  does) is counted apart, not compared.

    lein with-profile +bench run -m datalith.bench.differential [options]
    clojure -M:test:bench -m datalith.bench.differential [options]   (after build/compile:
                   the generators are the test namespaces')
      --trials N   trials (default 200)
      --seed S     the first trial's seed (default: the clock); trial i uses S + i
      --size N     test.check's size for the generators (default 30)
      --kind tx    instead, a fixed table of transactions (upserts, uniqueness, nesting,
                   lookup refs, cas, retractions, conflicts) on both: each outcome printed,
                   the datoms or the refusal, marked where they differ
      --kind pull  pull-property-test's graphs and pull patterns instead: every node
                   pulled on both (vectors compared as sets, the systems' orders of a
                   cardinality-many attribute's values may differ)
      --show all   print every difference whole, not only the kinds below

  Each difference is classified (see `classify`) with the naive evaluator
  (datalith.naive-query) as the third opinion: those it sides with Datomic on,
  and datalith's refusals and transactions the two systems took differently,
  are printed whole (seed, query, inputs, both answers), the others a line
  each; then the counts by kind. Exits 1 when any of the first kinds came.

  What it found in its first run (300 trials): Datomic refuses a transaction
  that retracts two values of a cardinality-one attribute of one entity
  (now datalith too); Datomic refuses lookup refs written in patterns, nested
  binding forms and clauses that scan everything, which datalith answers;
  Datomic answers as if a clause that shares no variable with the rest and
  matches nothing were not there, where datalith (and the naive evaluator)
  answer nothing."
  (:require [clojure.string :as str]
            [clojure.test.check.generators :as gen]
            [clojure.walk :as walk]
            [datalith.core :as d]
            [datalith.naive-pull :as np]
            [datalith.naive-query :as nq]
            [datalith.naive-where :as nw]
            [datalith.pull-property-test :as pp]
            [datalith.query-property-support :as qp]
            [datomic.client.api :as dc]))

(set! *warn-on-reflection* true)

(def ^:private load-data! @#'qp/load-data!)
(def ^:private concretize @#'qp/concretize)

(defn- datomic-schema
  "A datalith schema map as Datomic's attribute maps: the cardinality said (one by default in
  datalith, required by Datomic), no :db/index (every attribute is indexed in Datomic Local)."
  [engine-schema]
  (vec (for [[ident attr] engine-schema]
         (-> (merge {:db/cardinality :db.cardinality/one} attr)
             (dissoc :db/index)
             (assoc :db/ident ident)))))

(defn- datomic-conn [client n schema]
  (let [db-name (str "trial-" n)]
    (dc/delete-database client {:db-name db-name})
    (dc/create-database client {:db-name db-name})
    (let [conn (dc/connect client {:db-name db-name})]
      (dc/transact conn {:tx-data (datomic-schema (qp/engine-schema schema))})
      [conn db-name])))

(defn- datomic-load!
  "query-property-support's load-data!, on Datomic: {:eids :ts :txs :accepted}."
  [conn schema {:keys [entities txs]}]
  (let [n (count entities)
        tmp #(str "e" (mod % n))
        tx1 (vec (for [[i {:keys [num name tags next links]}] (map-indexed vector entities)]
                   (cond-> {:db/id (tmp i) :p/id i}
                     num (assoc :p/num (qp/value-of schema :p/num num))
                     name (assoc :p/name (qp/value-of schema :p/name name))
                     (seq tags) (assoc :p/tags (vec (set (map #(qp/value-of schema :p/tags %) tags))))
                     next (assoc :p/next (tmp next))
                     (seq links) (assoc :p/links (vec (set (map tmp links)))))))
        r (dc/transact conn {:tx-data tx1})
        eids (mapv #(get (:tempids r) (tmp %)) (range n))
        eid #(nth eids (mod % n))
        tx-of (fn [r] (some #(when (= (:e %) (:tx %)) (:tx %)) (:tx-data r)))]
    (reduce (fn [acc ops]
              (let [tx (vec (for [[op e a v] ops]
                              (let [v (if (#{:p/next :p/links} a) (eid v) (qp/value-of schema a v))]
                                (case op
                                  :add [:db/add (eid e) a v]
                                  :retract [:db/retract (eid e) a v]
                                  :retract-entity [:db/retractEntity (eid e)]))))]
                (try (let [r (dc/transact conn {:tx-data tx})]
                       (-> acc (update :ts conj (:t (:db-after r))) (update :txs conj (tx-of r))
                           (update :accepted conj true)))
                     (catch clojure.lang.ExceptionInfo e
                       (-> acc (update :accepted conj false) (update :refusals conj (ex-message e)))))))
            {:eids eids :ts [(:t (:db-after r))] :txs [(tx-of r)] :accepted [] :refusals []}
            txs)))

(defn- datalith-txs
  "The transaction ids of datalith's loaded data, in order, from its log-free view: one
  per basis t in `ts`."
  [db ts]
  (mapv #(d/t->tx %) ts))

(defn- namer
  "A function naming a value of one system's answer (see the namespace's doc)."
  [eids txs attr-ids system-eid?]
  (let [e-index (zipmap eids (map #(vector :e %) (range)))
        tx-index (zipmap txs (map #(vector :tx %) (range)))
        attrs (zipmap (vals attr-ids) (keys attr-ids))]
    (fn [x]
      (cond (not (integer? x)) x
            (e-index x) (e-index x)
            (tx-index x) (tx-index x)
            (attrs x) (attrs x)
            (system-eid? x) [:system]
            :else x))))

(defn- system-named?
  "Whether the named row `x` names a system's own: an id named [:system], or a value that is
  a keyword of the db namespaces (a pulled map's keys, such as :db/id, are not values)."
  [x]
  (cond (= [:system] x) true
        (map? x) (boolean (some system-named? (vals x)))
        (coll? x) (boolean (some system-named? x))
        :else (and (keyword? x) (some? (namespace x)) (str/starts-with? (namespace x) "db"))))

(defn- name-row
  "A row of an answer with its ids named by `name-of`: every scalar a find element holds (an
  aggregate's collection's too), and in a pulled map only the :db/id values; its other values
  are attributes' values, and a pulled long (a :p/num of 1) is no entity id. (Until stop 46
  every long was named, so that a row pulling a small long named a system entity and was
  dropped on both sides.)"
  [name-of x]
  (letfn [(pulled [v] (cond (map? v) (into {} (map (fn [[k w]] [k (if (= :db/id k) (name-of w) (pulled w))])) v)
                            (seq? v) (doall (map pulled v))
                            (coll? v) (into (empty v) (map pulled) v)
                            :else v))
          (top [v] (cond (map? v) (pulled v)
                         (seq? v) (doall (map top v))
                         (coll? v) (into (empty v) (map top) v)
                         :else (name-of v)))]
    (top x)))

(defn- find-shape
  "The kind of `q`'s find spec and its elements: [:rel elems], [:coll [elem]],
  [:scalar [elem]] or [:tuple elems]."
  [q]
  (let [find (take-while (complement keyword?) (rest q))]
    (cond (and (= 1 (count find)) (vector? (first find)) (= '... (last (first find))))
          [:coll [(ffirst find)]]
          (and (= 2 (count find)) (= '. (second find))) [:scalar [(first find)]]
          (and (= 1 (count find)) (vector? (first find))) [:tuple (first find)]
          :else [:rel (vec find)])))

(defn- as-relation
  "`q` with its find spec a relation of `elems`: Datomic's client API takes no other."
  [q elems]
  (into (into [:find] elems) (drop-while (complement keyword?) (rest q))))

(defn- rows
  "The rows of a relation's answer, named, those that name a system's own dropped."
  [answer name-of]
  (set (remove system-named? (map #(name-row name-of %) answer))))

(defn- datalith-answer
  "datalith's answer named, shaped for `compare-answers`."
  [shape answer name-of]
  (case shape
    (:rel :coll) (rows answer name-of)
    (:scalar :tuple) (name-row name-of answer)))

(defn- datomic-answer
  "Datomic's answer (always a relation) named, shaped as datalith's for `shape`."
  [shape answer name-of]
  (let [rs (rows answer name-of)]
    (case shape
      :rel rs
      (:coll :scalar) (set (map first rs))
      :tuple rs)))

(defn- agree?
  "Whether the two sides' answers agree: both failed, or equal sets, or datalith's one value
  (a scalar's, a tuple's: any of the rows) among Datomic's."
  [shape l dm]
  (cond (or (:error l) (:error dm)) (boolean (and (:error l) (:error dm)))
        (#{:rel :coll} shape) (= (:answer l) (:answer dm))
        (nil? (:answer l)) (empty? (:answer dm))
        (system-named? (:answer l)) true
        :else (contains? (:answer dm) (:answer l))))

(defn- run-side [f]
  (try {:answer (f)}
       (catch Throwable t {:error (str (.getSimpleName (class t)) ": " (ex-message t))})))

(defn- naive-agrees?
  "Whether datalith's answer `l` (a :answer or :error map) is one the naive evaluator allows
  for `query` over `model` (:unknown: it ran past its work limit or its 5 s)."
  [query model inputs l]
  (try (binding [nw/*max-work* 20000000 nw/*work-done* (atom 0)
                 nw/*deadline* (+ (System/nanoTime) 5000000000)]
         (let [expected (apply nq/answer query model inputs)]
           (and (contains? l :raw) (nq/agrees? expected (:raw l)))))
       (catch Throwable t
         (if (::nw/too-much-work (ex-data t)) :unknown (contains? l :error)))))

(defn- classify
  "The kind of a difference: :datomic-refused (Datomic refused a query datalith answered: a
  form outside its language, such as a lookup ref in a pattern, a nested binding, a clause
  that scans everything), :datalith-refused, :naive-agrees (datalith's answer is the naive
  evaluator's: Datomic's differs, as by ids' order or parity, or by its answers when a clause
  that shares no variable with the rest matches nothing), :naive-unknown (the naive evaluator
  ran out of time: until stop 46 counted as disagreeing) or :naive-disagrees (the one to look
  at first)."
  [l dm naive-ok]
  (cond (and (:error dm) (not (:error l))) :datomic-refused
        (and (:error l) (not (:error dm))) :datalith-refused
        (= :unknown naive-ok) :naive-unknown
        naive-ok :naive-agrees
        :else :naive-disagrees))

(defn- trial
  "One trial: nil when the systems agree, else a map describing the difference."
  [client n seed size]
  (let [[schema data spec] (gen/generate (gen/tuple qp/gen-schema qp/gen-data qp/gen-query-spec)
                                         size seed)
        qspec (qp/interpret-query schema spec)
        conn (d/connect :mem {:schema (qp/engine-schema schema) :sync false})
        [dconn db-name] (datomic-conn client n schema)]
    (try
      (let [{:keys [eids ts]} (load-data! conn schema data)
            dres (datomic-load! dconn schema data)
            ldb (d/db conn)
            ddb (dc/db dconn)]
        (if (not= (count ts) (count (:ts dres)))
          {:seed seed :kind :transactions-accepted
           :datalith-ts ts :datomic-accepted (:accepted dres) :datomic-refusals (:refusals dres)
           :txs (:txs data)}
          (let [l-txs (datalith-txs ldb ts)
                l-attrs (into {} (for [a qp/attrs] [a (d/entid ldb a)]))
                d-attrs (into {} (for [a qp/attrs] [a (:db/id (dc/pull ddb [:db/id] a))]))
                l-name (namer eids l-txs l-attrs (fn [x] (< x 1000)))
                d-name (namer (:eids dres) (:txs dres) d-attrs (constantly true))
                p-ids (vec (sort (d/q '[:find [?id ...] :where [_ :p/id ?id]] ldb)))
                i (mod (:as-of spec) (count ts))
                history (map (fn [x] [(:e x) (:a x) (:v x) (:tx x) (:added x)])
                             (d/datoms (d/history ldb) :eavt))
                views [[:current ldb ddb #(nw/db (d/datoms ldb :eavt))]
                       [[:as-of i] (d/as-of ldb (nth ts i)) (dc/as-of ddb (nth (:ts dres) i))
                        #(nw/db (nw/as-of-datoms history (d/t->tx (nth ts i))))]
                       [[:since i] (d/since ldb (nth ts i)) (dc/since ddb (nth (:ts dres) i))
                        #(nw/db (filter (fn [x] (> (:tx x) (d/t->tx (nth ts i))))
                                        (d/datoms ldb :eavt))
                                (d/datoms ldb :eavt))]]]
            (some (fn [[label lview dview model]]
                    (let [l-info {:eids eids :tx-ids l-txs :p-ids p-ids :attr-ids l-attrs}
                          d-info {:eids (:eids dres) :tx-ids (:txs dres) :p-ids p-ids :attr-ids d-attrs}
                          lq (concretize (:query qspec) l-info)
                          dq (concretize (:query qspec) d-info)
                          l-in (concretize (:inputs qspec) l-info)
                          d-in (concretize (:inputs qspec) d-info)
                          [shape elems] (find-shape lq)
                          l-args (cond-> (vec l-in) (:rules? qspec) (conj qp/rules))
                          l-raw (run-side #(apply d/q lq lview l-args))
                          l (if (:error l-raw)
                              l-raw
                              (assoc (run-side #(datalith-answer shape (:answer l-raw) l-name))
                                     :raw (:answer l-raw)))
                          dm (run-side #(datomic-answer
                                         shape
                                         (dc/q {:query (as-relation dq elems)
                                                :args (cond-> (into [dview] d-in) (:rules? qspec) (conj qp/rules))})
                                         d-name))]
                      (when-not (agree? shape l dm)
                        (let [naive-ok (naive-agrees? lq (model) l-args l)]
                          {:seed seed :view label
                           :kind (classify l dm naive-ok)
                           :query lq :inputs l-in
                           :datalith (dissoc l :raw) :datomic dm}))))
                  views))))
      (finally
        (d/close conn)
        (dc/delete-database client {:db-name db-name})))))

;; ---------------------------------------------------------------- pull

(def ^:private pull-tx-data @#'pp/tx-data)
(def ^:private pull-model-db @#'pp/model-db)
(def ^:private gen-pull-pattern @#'pp/gen-pattern)

(defn- pull-shape
  "A pull result with entity ids named by `name-of` and every vector a set: the two systems
  may list a cardinality-many attribute's values in different orders."
  [result name-of]
  (walk/postwalk (fn [x]
                   (cond (and (map? x) (contains? x :db/id)) (update x :db/id name-of)
                         (vector? x) (set x)
                         :else x))
                 result))

(defn- pull-trial
  "One pull trial (pull-property-test's graphs and patterns): every node pulled on datalith
  and on Datomic; nil when they agree, else the difference, with what the naive pull model
  gives."
  [client n seed size]
  (let [[graph pattern] (gen/generate (gen/tuple pp/gen-graph (gen-pull-pattern 2)) size seed)
        conn (d/connect :mem {:schema pp/schema :sync false})
        [dconn db-name] (let [db-name (str "pull-" n)]
                          (dc/delete-database client {:db-name db-name})
                          (dc/create-database client {:db-name db-name})
                          (let [c (dc/connect client {:db-name db-name})]
                            (dc/transact c {:tx-data (datomic-schema pp/schema)})
                            [c db-name]))]
    (try
      (let [tx (vec (pull-tx-data graph n))
            l-ids (:tempids (d/transact! conn tx))
            d-ids (:tempids (dc/transact dconn {:tx-data tx}))
            nodes (range (:n graph))
            l-name (let [m (into {} (for [i nodes] [(get l-ids (str i)) [:node i]]))] #(get m % %))
            d-name (let [m (into {} (for [i nodes] [(get d-ids (str i)) [:node i]]))] #(get m % %))
            ldb (d/db conn)
            ddb (dc/db dconn)]
        (some (fn [i]
                (let [l (run-side #(pull-shape (d/pull ldb pattern (get l-ids (str i))) l-name))
                      dm (run-side #(pull-shape (dc/pull ddb pattern (get d-ids (str i))) d-name))]
                  (when-not (if (or (:error l) (:error dm))
                              (and (:error l) (:error dm))
                              (= (:answer l) (:answer dm)))
                    (let [naive (run-side #(pull-shape (np/pull (pull-model-db graph n l-ids) pattern
                                                                (get l-ids (str i)))
                                                       l-name))]
                      {:seed seed :kind (cond (:error dm) :datomic-refused
                                              (:error l) :datalith-refused
                                              (= naive l) :naive-agrees
                                              :else :naive-disagrees)
                       :pattern pattern :node i :graph graph
                       :datalith l :datomic dm :naive naive}))))
              nodes))
      (finally
        (d/close conn)
        (dc/delete-database client {:db-name db-name})))))

;; ---------------------------------------------------------------- transaction cases

(def ^:private probe-schema
  [{:db/ident :p/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one
    :db/unique :db.unique/identity}
   {:db/ident :p/email :db/valueType :db.type/string :db/cardinality :db.cardinality/one
    :db/unique :db.unique/value}
   {:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   {:db/ident :p/tags :db/valueType :db.type/string :db/cardinality :db.cardinality/many}
   {:db/ident :p/next :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
   {:db/ident :p/links :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   {:db/ident :p/part :db/valueType :db.type/ref :db/cardinality :db.cardinality/one
    :db/isComponent true}])

(def ^:private probe-base
  [{:db/id "e" :p/id 1 :p/email "e@x" :p/name "E" :p/tags ["t1" "t2"] :p/next "f" :p/part "c"}
   {:db/id "f" :p/id 2 :p/email "f@x" :p/name "F"}
   {:db/id "c" :p/name "C"}])

(defn short-text?
  "An attribute predicate of the probes: a string of at most five characters."
  [s]
  (<= (count s) 5))

(defn named?
  "An entity predicate of the probes, given either system's database: e has a :p/name."
  [db e]
  (some? (:p/name (if (instance? datalith.db.Db db) (d/pull db [:p/name] e) (dc/pull db [:p/name] e)))))

(def ^:private probe-cases
  "Transactions over probe-base, each a function of its entities' ids {:e :f :c}: the corners
  of upserts, uniqueness, nesting, lookup refs, cas, retractions and conflicts."
  [["upsert by identity in a map" (fn [_] [{:p/id 1 :p/name "E2"}])]
   ["two tempids upsert one identity" (fn [_] [{:db/id "a" :p/id 1 :p/name "X"} {:db/id "b" :p/id 1 :p/tags ["t9"]}])]
   ["one tempid upserts two entities" (fn [_] [{:db/id "a" :p/id 1 :p/email "f@x"}])]
   ["a unique value another entity holds" (fn [{:keys [e]}] [[:db/add e :p/email "f@x"]])]
   ["identities swapped between two entities" (fn [{:keys [e f]}] [[:db/add e :p/id 2] [:db/add f :p/id 1]])]
   ["a tempid only as a value" (fn [{:keys [e]}] [[:db/add e :p/next "nobody"]])]
   ["a map of :db/id alone" (fn [_] [{:db/id "lonely"}])]
   ["a nested map, no identity, not a component" (fn [{:keys [e]}] [{:db/id e :p/next {:p/name "N"}}])]
   ["a nested map with an identity" (fn [{:keys [e]}] [{:db/id e :p/next {:p/id 9 :p/name "N"}}])]
   ["a nested component map" (fn [{:keys [e]}] [{:db/id e :p/part {:p/name "P2"}}])]
   ["a reverse attribute given a vector" (fn [{:keys [f]}] [{:db/id f :p/_links [[:p/id 1]]}])]
   ["lookup refs as cardinality-many values" (fn [{:keys [e]}] [{:db/id e :p/links [[:p/id 2] [:p/id 1]]}])]
   ["a lookup ref that names nothing" (fn [{:keys [e]}] [[:db/add e :p/next [:p/id 77]]])]
   ["a lookup ref on a non-unique attribute" (fn [{:keys [e]}] [[:db/add e :p/next [:p/name "F"]]])]
   ["cas from nil on a held value" (fn [{:keys [e]}] [[:db/cas e :p/name nil "Z"]])]
   ["cas on a cardinality-many attribute" (fn [{:keys [e]}] [[:db/cas e :p/tags "t1" "t3"]])]
   ["retractEntity with its component" (fn [{:keys [e]}] [[:db/retractEntity e]])]
   ["retract of an attribute, no value" (fn [{:keys [e]}] [[:db/retract e :p/tags]])]
   ["an assertion about the transaction" (fn [_] [[:db/add "datomic.tx" :p/name "meta"]])]
   ["a nil value" (fn [{:keys [e]}] [[:db/add e :p/name nil]])]
   ["a long for a string" (fn [{:keys [e]}] [[:db/add e :p/name 5]])]
   ["an id nothing allocated" (fn [_] [[:db/add 999999 :p/name "Z"]])]
   ["an ident as a ref value" (fn [{:keys [e]}] [[:db/add e :p/next :p/name]])]
   ["a set for a cardinality-one attribute" (fn [{:keys [e]}] [{:db/id e :p/name #{"A"}}])]
   ["a set in list form" (fn [{:keys [e]}] [[:db/add e :p/tags #{"x" "y"}]])]
   ["retractEntity of a lookup ref that names nothing" (fn [_] [[:db/retractEntity [:p/id 77]]])]
   ["one tempid, two identities" (fn [_] [{:db/id "a" :p/id 1} {:db/id "a" :p/id 2}])]
   ["a txInstant before the last" (fn [_] [{:db/id "datomic.tx" :db/txInstant #inst "2000-01-01"}])]
   ["two values of a cardinality-one attribute retracted" (fn [{:keys [e]}] [[:db/retract e :p/name "E"] [:db/retract e :p/name "W"]])]
   ["retractEntity and an absent value's retraction" (fn [{:keys [e]}] [[:db/retractEntity e] [:db/retract e :p/name "W"]])]
   ["a value asserted and retracted" (fn [{:keys [e]}] [[:db/add e :p/name "X"] [:db/retract e :p/name "X"]])]
   ["schema: cardinality one to many" (fn [_] [{:db/id :p/name :db/cardinality :db.cardinality/many}])]
   ["schema: cardinality many to one, one entity holding two" (fn [_] [{:db/id :p/tags :db/cardinality :db.cardinality/one}])]
   ["schema: unique identity on an attribute whose values repeat" (fn [{:keys [f]}] [[:db/add f :p/name "E"] {:db/id :p/name :db/unique :db.unique/identity}])]
   ["schema: unique identity on an attribute whose values do not" (fn [_] [{:db/id :p/name :db/unique :db.unique/identity}])]
   ["schema: uniqueness retracted" (fn [_] [[:db/retract :p/email :db/unique :db.unique/value]])]
   ["schema: value type changed" (fn [_] [{:db/id :p/name :db/valueType :db.type/long}])]
   ["schema: component added" (fn [_] [{:db/id :p/next :db/isComponent true}])]
   ["schema: component on a non-ref" (fn [_] [{:db/id :p/name :db/isComponent true}])]
   ["schema: noHistory added" (fn [_] [{:db/id :p/name :db/noHistory true}])]
   ["schema: ident renamed" (fn [_] [{:db/id :p/name :db/ident :p/title}])]
   ["schema: an attribute without cardinality" (fn [_] [{:db/ident :p/new :db/valueType :db.type/string}])]
   ["schema: an attribute without value type" (fn [_] [{:db/ident :p/new :db/cardinality :db.cardinality/one}])]
   ["schema: a new attribute used in the same transaction" (fn [{:keys [e]}] [{:db/ident :p/new :db/valueType :db.type/string :db/cardinality :db.cardinality/one} [:db/add e :p/new "x"]])]
   ["schema: unique on a cardinality-many attribute" (fn [_] [{:db/id :p/tags :db/unique :db.unique/value}])]
   ["schema: ident retracted" (fn [_] [[:db/retract :p/name :db/ident :p/name]])]
   ["an entity given an existing ident" (fn [{:keys [f]}] [[:db/add f :db/ident :p/name]])]
   ["an ident for a plain entity" (fn [{:keys [f]}] [[:db/add f :db/ident :thing/f]])]
   ["a keyword value for a ref attribute, an ident" (fn [{:keys [e f]}] [[:db/add f :db/ident :thing/f] [:db/add e :p/next :thing/f]])]
   ["an attribute predicate added" (fn [_] [{:db/id :p/name :db.attr/preds `short-text?}])]
   ["an attribute predicate added, and a value it refuses in the same transaction" (fn [{:keys [e]}] [{:db/id :p/name :db.attr/preds `short-text?} [:db/add e :p/name "a long name"]])]
   ["ensure: a spec made in the same transaction, its attribute missing" (fn [{:keys [f]}] [{:db/ident :p/spec :db.entity/attrs [:p/tags]} [:db/add f :db/ensure :p/spec]])]
   ["ensure: a spec whose attributes the entity has" (fn [{:keys [e]}] [{:db/ident :p/spec :db.entity/attrs [:p/name :p/tags]} {:db/id e :db/ensure :p/spec}])]
   ["ensure: an entity predicate of the database after" (fn [{:keys [e]}] [{:db/ident :p/spec :db.entity/preds `named?} [:db/retract e :p/name "E"] [:db/add e :db/ensure :p/spec]])]
   ["ensure: retracted" (fn [{:keys [e]}] [{:db/ident :p/spec :db.entity/attrs [:p/name]} [:db/retract e :db/ensure :p/spec]])]
   ["ensure: an entity that is not a spec" (fn [{:keys [e]}] [[:db/add e :db/ensure :p/name]])]])

(def ^:private probe-refs #{:p/next :p/links :p/part})

(def ^:private schema-refs
  "The schema attributes whose values are entities with idents."
  #{:db/cardinality :db/unique :db/valueType})

(defn- probe-datoms
  "A report's datoms named: entities as the base's tempids (:e :f :c), :tx, their ident (a
  schema attribute's, as the database after the transaction reads it) or :new; attributes as
  idents; the instant as :instant. Datomic's own record of an alteration (:db.alter/attribute,
  :db.install/attribute) is left out: datalith keeps none."
  [datoms tempids attr-ids tx ident-of]
  (let [ents (into {} (for [[k v] tempids :when (string? k)] [v (keyword k)]))
        attrs (zipmap (vals attr-ids) (keys attr-ids))
        ent (fn [x] (or (ents x) (when (= x tx) :tx) (ident-of x) :new))
        attr (fn [a] (if (keyword? a) a (or (attrs a) (ident-of a) a)))]
    (set (for [x datoms
               :let [a (attr (:a x))]
               :when (not (#{:db.alter/attribute :db.install/attribute} a))]
           [(ent (:e x)) a
            (cond (inst? (:v x)) :instant
                  (or (probe-refs a) (schema-refs a)) (if (keyword? (:v x)) (:v x) (ent (:v x)))
                  :else (:v x))
            (:added x)]))))

(defn- run-probes
  "Each case on datalith and on Datomic (fresh databases); prints both outcomes, marked where
  they differ; the number that differ."
  [client]
  (let [attrs (into [:db/txInstant] (map :db/ident probe-schema))
        outcome (fn [transact! tempids attr-ids tx-of ident-in mk]
                  (try (let [r (transact! (mk {:e (tempids "e") :f (tempids "f") :c (tempids "c")}))]
                         (probe-datoms (:tx-data r) tempids attr-ids (tx-of r)
                                       (partial ident-in (:db-before r) (:db-after r))))
                       (catch clojure.lang.ExceptionInfo x
                         [:refused (or (:error (ex-data x)) (:db/error (ex-data x))
                                       (:cognitect.anomalies/category (ex-data x)))])))
        differ (doall
                (for [[label mk] probe-cases]
                  (let [db-name (str "probe-" (hash label))
                        _ (dc/delete-database client {:db-name db-name})
                        _ (dc/create-database client {:db-name db-name})
                        dconn (dc/connect client {:db-name db-name})
                        _ (dc/transact dconn {:tx-data probe-schema})
                        dr (dc/transact dconn {:tx-data probe-base})
                        d-attrs (into {} (for [a attrs] [a (:db/id (dc/pull (:db-after dr) [:db/id] a))]))
                        tx-of (fn [r] (some #(when (= (:e %) (:tx %)) (:tx %)) (:tx-data r)))
                        d-ident (fn [before after x]
                                  (or (:db/ident (dc/pull after [:db/ident] x))
                                      (:db/ident (dc/pull before [:db/ident] x))))
                        dm (outcome #(dc/transact dconn {:tx-data %}) (:tempids dr) d-attrs tx-of
                                    d-ident mk)
                        lconn (d/connect :mem {:schema (into {} (map (juxt :db/ident #(dissoc % :db/ident))
                                                                     probe-schema))})
                        lr (d/transact! lconn probe-base)
                        l-attrs (into {} (for [a attrs] [a (d/entid (d/db lconn) a)]))
                        l-ident (fn [before after x]
                                  (or (:db/ident (d/pull after [:db/ident] x))
                                      (:db/ident (d/pull before [:db/ident] x))))
                        l (outcome #(d/transact! lconn %) (:tempids lr) l-attrs tx-of l-ident mk)
                        same? (if (vector? dm) (vector? l) (= dm l))]
                    (d/close lconn)
                    (dc/delete-database client {:db-name db-name})
                    (println (if same? "  same  " "  DIFFER") label "\n      datomic: " (pr-str dm)
                             "\n      datalith:" (pr-str l))
                    (when-not same? label))))]
    (count (remove nil? differ))))

(def ^:private shown
  "The kinds of difference printed whole; the others are counted, and printed one line each."
  #{:naive-disagrees :datalith-refused :transactions-accepted :harness-error})

(defn -main [& args]
  (let [opts (apply hash-map args)
        trials (parse-long (get opts "--trials" "200"))
        seed0 (parse-long (get opts "--seed" (str (System/currentTimeMillis))))
        size (parse-long (get opts "--size" "30"))
        run-trial (if (= "pull" (get opts "--kind")) pull-trial trial)
        show-all? (= "all" (get opts "--show"))
        _ (when (= "tx" (get opts "--kind"))
            (let [n (run-probes (dc/client {:server-type :datomic-local
                                            :system "datalith-differential-tx" :storage-dir :mem}))]
              (println (format "%d of %d transaction cases differ" n (count probe-cases)))
              (shutdown-agents)
              (System/exit 0)))
        client (dc/client {:server-type :datomic-local :system "datalith-differential"
                           :storage-dir :mem})
        diffs (into [] (keep (fn [n]
                               (let [seed (+ seed0 n)
                                     diff (try (run-trial client n seed size)
                                               (catch Throwable t
                                                 {:seed seed :kind :harness-error :error (str t)}))]
                                 (when diff
                                   (if (or show-all? (shown (:kind diff)))
                                     (prn diff)
                                     (println (:kind diff) "seed" seed
                                              (pr-str (or (:query diff) (:pattern diff))))))
                                 diff)))
                    (range trials))
        by-kind (frequencies (map :kind diffs))]
    (println (format "%d trials from seed %d: %d differed %s" trials seed0 (count diffs)
                     (pr-str (into (sorted-map) by-kind))))
    (shutdown-agents)
    (System/exit (if (some shown (keys by-kind)) 1 0))))
