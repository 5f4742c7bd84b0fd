(ns datalith.valid-property-test
  "Random histories of plain facts and facts with valid-time intervals (#19), on
  every checked store: for every as-of point and a grid of valid instants, the
  datoms of `(valid-at (as-of db t) at)` (EAVT and AVET) must be what the naive
  model (datalith.naive/valid-facts, valid time point by point) says, and the
  plain value what its plain state says. DATALITH_TRIALS=n raises the trial count."
  (:require [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.naive :as naive]
            [datalith.test-util :as tu]))

(def trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 40))

(def card {:v/one :one :v/many :many})
(def attrs [:v/one :v/many])
(def schema {:v/one {:db/valueType :db.type/long}
             :v/many {:db/valueType :db.type/long :db/cardinality :db.cardinality/many}
             :v/name {:db/valueType :db.type/string :db/unique :db.unique/identity}})

(def n-entities 3)
(def day (* 24 3600 1000))
(def base (.getTime #inst "2030-01-01"))
(defn- ms [days] (+ base (* days day)))

;; A valid-to is a day, or at or after the end of time (h-validend): the end
;; itself, a day past it, or the instant of Long/MAX_VALUE ms, each open-ended.
(def ^:private eot-ms (.getTime ^java.util.Date d/end-of-time))
(defn- to-ms [to]
  (case to
    :end eot-ms
    :past-end (+ eot-ms day)
    :max Long/MAX_VALUE
    (ms to)))

;; An op is [kind entity attribute value from to], entity and attribute as
;; indexes; from/to in days (nil: open). Ops of one transaction are on distinct
;; (entity, attribute) pairs.
(def gen-op
  (gen/let [kind (gen/frequency [[3 (gen/return :add)] [2 (gen/return :retract)]
                                 [4 (gen/return :vadd)] [2 (gen/return :vretract)]])
            e (gen/choose 0 (dec n-entities))
            a (gen/choose 0 1)
            v (gen/choose 0 3)
            from (gen/one-of [(gen/return nil) (gen/choose 0 90)])
            len (gen/one-of [(gen/return nil) (gen/choose 1 40)
                             (gen/elements [:end :past-end :max])])]
    [kind e a v (when (#{:vadd :vretract} kind) from)
     (when (#{:vadd :vretract} kind)
       (cond (keyword? len) len
             len (+ (or from 100) len)))]))

(def gen-tx
  (gen/let [ops (gen/vector gen-op 1 4)
            step (gen/elements [0 5 10])]
    {:ops (vals (into {} (map (juxt (fn [[_ e a]] [e a]) identity) ops)))
     :step step}))

(def gen-history (gen/vector gen-tx 1 7))

(defn- tx-data [eids {:keys [ops]} instant]
  (conj (vec (for [[kind e a v from to] ops
                   :let [ent (eids e) attr (attrs a)
                         iv (cond-> {} from (assoc :db/valid-from (java.util.Date. (long (ms from))))
                                to (assoc :db/valid-to (java.util.Date. (long (to-ms to)))))]]
               (case kind
                 :add [:db/add ent attr v]
                 :retract [:db/retract ent attr v]
                 :vadd [:db/add ent attr v iv]
                 :vretract [:db/retract ent attr v iv])))
        {:db/id "datomic.tx" :db/txInstant (java.util.Date. (long instant))}))

(defn- model-op [eids [kind e a v from to]]
  [kind (eids e) (attrs a) v (some-> from ms) (some-> to to-ms)])

(defn- engine-facts [db index]
  (set (for [a attrs, dt (d/datoms db index a)] [(:e dt) (:a dt) (:v dt)])))

(defn- engine-eavt [db eids]
  (set (for [e eids, a attrs, dt (d/datoms db :eavt e a)] [(:e dt) (:a dt) (:v dt)])))

(defn- transact-history!
  "Transacts `n-entities` named entities at instant (ms 0), then `history` a
  transaction at a time on `conn`: {:t0 the entities' t, :eids their ids,
  :model the naive model's transactions, :values each transaction's db-after,
  :db the last value}."
  [conn history]
  (let [r0 (d/transact! conn (conj (mapv (fn [i] {:v/name (str "e" i)}) (range n-entities))
                                   {:db/id "datomic.tx" :db/txInstant (java.util.Date. (long (ms 0)))}))
        eids (mapv #(:db/id (d/entity (:db-after r0) [:v/name (str "e" %)])) (range n-entities))
        [model values] (reduce (fn [[model values instant] tx]
                                 (let [instant (+ instant (* day (:step tx)))
                                       after (:db-after (d/transact! conn (tx-data eids tx instant)))]
                                   [(conj model {:t (d/basis-t after) :instant instant
                                                 :ops (mapv (partial model-op eids) (:ops tx))})
                                    (conj values after)
                                    instant]))
                               [[] [] (ms 0)] history)]
    {:t0 (d/basis-t (:db-after r0)) :eids eids :model model :values values :db (d/db conn)}))

(defn- check [store history]
  (tu/with-conn [conn store {:schema schema}]
    (let [{:keys [t0 eids model db]} (transact-history! conn history)
          ;; and the last instant before the end of time (h-validend)
          points (conj (vec (map ms (range -5 150 7))) (dec eot-ms))]
      (every? true?
              (for [t (range t0 (inc (d/basis-t db)))
                    :let [as-of (d/as-of db t)]]
                (and (= (naive/plain-facts card model t) (engine-facts as-of :aevt))
                     (every? (fn [at]
                               (let [v (d/valid-at as-of (java.util.Date. (long at)))
                                     expected (naive/valid-facts card model t at)]
                                 (and (= expected (engine-eavt v eids))
                                      (= expected (engine-facts v :avet))
                                      (= expected (engine-facts v :aevt)))))
                             points)))))))

(defspec valid-at-matches-the-naive-model trials
  (prop/for-all [history gen-history]
    (every? #(check % history) tu/checked-stores)))

;; Valid-at views of values that share their lines (#19, h-valid2): the value a
;; transaction made (basis t) and the as-of view of the latest value at that t
;; replay the same lines once per connection and point, and must agree with the
;; model; a query on the view (its own scans of each attribute) and a backward
;; read of its AEVT index must too.

(defn- check-shared [store history]
  (tu/with-conn [conn store {:schema schema}]
    (let [{:keys [eids model values db]} (transact-history! conn history)
          points (map ms (range -5 150 11))]
      (every? true?
              (for [value values
                    :let [t (d/basis-t value)]
                    at points
                    :let [inst (java.util.Date. (long at))
                          expected (naive/valid-facts card model t at)
                          q (fn [v] (set (map (fn [[e a x]] [e a x])
                                              (d/q '[:find ?e ?a ?v :in $ [?a ...]
                                                     :where [?e ?a ?v]]
                                                   v attrs))))]]
                (and (= expected (engine-eavt (d/valid-at value inst) eids))
                     (= expected (engine-facts (d/valid-at (d/as-of db t) inst) :aevt))
                     (= expected (engine-facts (d/valid-at (d/as-of db t) inst) :avet))
                     (= expected (q (d/valid-at value inst)))
                     ;; backwards: the chunks' bounds come from the view's cursors moving back
                     (= expected (set (for [dt (d/rseek-datoms (d/valid-at value inst) :aevt)
                                            :when ((set attrs) (:a dt))]
                                        [(:e dt) (:a dt) (:v dt)])))))))))

(defspec valid-at-views-of-one-point-agree trials
  (prop/for-all [history gen-history]
    (every? #(check-shared % history) tu/checked-stores)))

;; The query-level form (#19, h-valid3): a query with a :valid-at section, on
;; the as-of value at each t and with the instant as an input or a literal, must
;; answer as the same query on the valid-at view and as the naive model; one
;; source of two at an instant leaves the other plain.

(defn- check-query-form [store history]
  (tu/with-conn [conn store {:schema schema}]
    (let [{:keys [t0 eids model db]} (transact-history! conn history)
          points (map ms (range -5 150 13))
          facts (fn [rows] (set (map (fn [[e a x]] [e a x]) rows)))]
      (every? true?
              (for [t (range t0 (inc (d/basis-t db)))
                    :let [as-of (d/as-of db t)]
                    at points
                    :let [inst (java.util.Date. (long at))
                          expected (naive/valid-facts card model t at)
                          by-input (facts (d/q '[:find ?e ?a ?v :in $ [?a ...] ?when :valid-at ?when
                                                 :where [?e ?a ?v]]
                                               as-of attrs inst))
                          literal (facts (d/q {:find '[?e ?a ?v] :in '[$ [?a ...]] :valid-at inst
                                               :where '[[?e ?a ?v]]}
                                              as-of attrs))
                          two (d/q '[:find ?e ?a ?v ?w :in $ $p [?a ...] ?when :valid-at $ ?when
                                     :where [?e ?a ?v] [$p ?e ?a ?w]]
                                   as-of as-of attrs inst)]]
                (and (= expected by-input literal
                        (facts (d/q '[:find ?e ?a ?v :in $ [?a ...] :where [?e ?a ?v]]
                                    (d/valid-at as-of inst) attrs)))
                     ;; $p stays transaction time: the join of the valid and the plain facts
                     (= (set (for [[e a v] expected
                                   [e2 a2 w] (naive/plain-facts card model t)
                                   :when (and (= e e2) (= a a2))]
                               [e a v w]))
                        two)))))))

(defspec query-level-valid-at-matches-the-view trials
  (prop/for-all [history gen-history]
    (every? #(check-query-form % history) tu/checked-stores)))

;; Any valid time (#19, h-valid3): the versions a query binds with their
;; intervals, [e a v from to], on the as-of value at each t, must hold at each
;; instant exactly the facts the naive model says are valid there; a query
;; that keeps the versions holding at an instant by comparing ?from and ?to
;; must agree, and so must the same query on (d/any-valid-time db).

(defn- check-any-valid-time [store history]
  (tu/with-conn [conn store {:schema schema}]
    (let [{:keys [t0 eids model db]} (transact-history! conn history)
          points (map ms (range -5 150 7))
          holding '[:find ?e ?a ?v :in $ [?a ...] ?at :valid-at :any-valid-time
                    :where [?e ?a ?v ?from ?to] [(<= ?from ?at)] [(< ?at ?to)]]
          on-source '[:find ?e ?a ?v :in $ [?a ...] ?at
                      :where [?e ?a ?v ?from ?to] [(<= ?from ?at)] [(< ?at ?to)]]]
      (every? true?
              (for [t (range t0 (inc (d/basis-t db)))
                    :let [as-of (d/as-of db t)
                          versions (d/q '[:find ?e ?a ?v ?from ?to :in $ [?a ...]
                                          :valid-at :any-valid-time :where [?e ?a ?v ?from ?to]]
                                        as-of attrs)]
                    at points
                    :let [inst (java.util.Date. (long at))
                          expected (naive/valid-facts card model t at)]]
                (and (= expected
                        (set (for [[e a v ^java.util.Date from ^java.util.Date to] versions
                                   :when (and (<= (.getTime from) at) (< at (.getTime to)))]
                               [e a v])))
                     ;; h-validend: open versions end at the end of time, none later, and
                     ;; every version prints and reads back
                     (= (naive/valid-to-the-end card model t eot-ms)
                        (set (for [[e a v _ to] versions :when (= d/end-of-time to)] [e a v])))
                     (every? (fn [[_ _ _ ^java.util.Date from ^java.util.Date to]]
                               (< (.getTime from) (.getTime to) (inc eot-ms)))
                             versions)
                     (= versions (read-string (pr-str versions)))
                     (= expected (d/q holding as-of attrs inst))
                     (= expected (d/q on-source (d/any-valid-time as-of) attrs inst))))))))

(defspec any-valid-time-matches-the-naive-model trials
  (prop/for-all [history gen-history]
    (every? #(check-any-valid-time % history) tu/checked-stores)))

;; Values whose index keys tie on their first words (h-valid4): a valid-at
;; view's cursor compares its lines' keys with the store's by their first three
;; 8-byte words, then the rest, and passes keys whose intervals miss its instant
;; by their first from and last to; its scans test a tracked pair's stored datom
;; for hiding only where the view's as-of point shows it. Strings sharing long
;; prefixes (inline, and past the inline limit: keys of a prefix and a hash) on
;; both cardinalities, read by EAVT, AEVT, AVET and a count per value (Q3's form,
;; the scan in value order), against the naive model.

(def s-card {:s/one :one :s/many :many})
(def s-attrs [:s/one :s/many])
(def s-schema {:s/one {:db/valueType :db.type/string}
               :s/many {:db/valueType :db.type/string :db/cardinality :db.cardinality/many}
               :v/name {:db/valueType :db.type/string :db/unique :db.unique/identity}})

(defn- s-value [v]
  (case (long v)
    0 "a"
    1 (str (apply str (repeat 20 "shared-")) "1")
    2 (str (apply str (repeat 70 "shared-")) "2")
    3 (str (apply str (repeat 70 "shared-")) "3")))

(defn- s-op [[kind e a v from to]] [kind e a (s-value v) from to])

(defn- s-facts [db index]
  (set (for [a s-attrs, dt (d/datoms db index a)] [(:e dt) (:a dt) (:v dt)])))

(defn- check-tied-keys [store history]
  (tu/with-conn [conn store {:schema s-schema}]
    (let [r0 (d/transact! conn (conj (mapv (fn [i] {:v/name (str "e" i)}) (range n-entities))
                                     {:db/id "datomic.tx" :db/txInstant (java.util.Date. (long (ms 0)))}))
          eids (mapv #(:db/id (d/entity (:db-after r0) [:v/name (str "e" %)])) (range n-entities))
          [model] (reduce (fn [[model instant] tx]
                            (let [instant (+ instant (* day (:step tx)))
                                  ops (map s-op (:ops tx))
                                  r (with-redefs [attrs s-attrs]
                                      (d/transact! conn (tx-data eids {:ops ops} instant)))]
                              [(conj model {:t (d/basis-t (:db-after r)) :instant instant
                                            :ops (with-redefs [attrs s-attrs]
                                                   (mapv (partial model-op eids) ops))})
                               instant]))
                          [[] (ms 0)] history)
          db (d/db conn)
          counts '[:find ?a ?v (count ?e) :in $ [?a ...] :where [?e ?a ?v]]]
      (every? true?
              (for [t (range (d/basis-t (:db-after r0)) (inc (d/basis-t db)))
                    :let [as-of (d/as-of db t)]
                    at (map ms (range -5 150 7))
                    :let [v (d/valid-at as-of (java.util.Date. (long at)))
                          expected (naive/valid-facts s-card model t at)]]
                (and (= expected (s-facts v :aevt) (s-facts v :avet)
                        (set (for [e eids, a s-attrs, dt (d/datoms v :eavt e a)]
                               [(:e dt) (:a dt) (:v dt)])))
                     (= (set (for [[[a x] n] (frequencies (map (fn [[_ a x]] [a x]) expected))]
                               [a x n]))
                        (set (d/q counts v s-attrs)))))))))

(defspec valid-at-keys-that-tie-on-their-first-words trials
  (prop/for-all [history gen-history]
    (every? #(check-tied-keys % history) tu/checked-stores)))

;; Lines from an earlier point's (h-valid4): the first valid-at view at a point
;; starts from the connection's lines of the latest earlier point it holds and
;; replays only the pairs the transactions between them touched (an event, or a
;; plain datom of a tracked pair). Points visited in a random order (forward by
;; one, forward over several transactions, backward: a full replay), each view
;; against the naive model, then each again after every other was made.

(defn- check-point-orders [store history order]
  (tu/with-conn [conn store {:schema schema}]
    (let [r0 (d/transact! conn (conj (mapv (fn [i] {:v/name (str "e" i)}) (range n-entities))
                                     {:db/id "datomic.tx" :db/txInstant (java.util.Date. (long (ms 0)))}))
          eids (mapv #(:db/id (d/entity (:db-after r0) [:v/name (str "e" %)])) (range n-entities))
          [model] (reduce (fn [[model instant] tx]
                            (let [instant (+ instant (* day (:step tx)))
                                  r (d/transact! conn (tx-data eids tx instant))]
                              [(conj model {:t (d/basis-t (:db-after r)) :instant instant
                                            :ops (mapv (partial model-op eids) (:ops tx))})
                               instant]))
                          [[] (ms 0)] history)
          db (d/db conn)
          t0 (d/basis-t (:db-after r0))
          ts (vec (range t0 (inc (d/basis-t db))))
          agrees? (fn [t]
                    (every? (fn [at]
                              (let [v (d/valid-at (d/as-of db t) (java.util.Date. (long at)))
                                    expected (naive/valid-facts card model t at)]
                                (and (= expected (engine-eavt v eids))
                                     (= expected (engine-facts v :avet))
                                     (= expected (engine-facts v :aevt)))))
                            (map ms (range -5 150 7))))]
      (and (every? agrees? (map #(ts (mod % (count ts))) order))
           (every? agrees? ts)))))

(defspec valid-at-lines-from-an-earlier-point trials
  (prop/for-all [history gen-history
                 order (gen/vector (gen/choose 0 100) 1 8)]
    (every? #(check-point-orders % history order) tu/checked-stores)))
