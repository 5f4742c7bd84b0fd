(ns datalith.tx-property-test
  "Random schemas and transaction sequences (schema alterations among their
  data), run on both stores and on the naive model (datalith.naive); after
  every transaction the engine must agree
  with the model on acceptance, tempids, tx-data, the current datoms, every
  as-of and since view, history, and on every index holding the same datoms:
  generated transactions, transactions bigger than one chunk of `d/datoms`,
  hand-picked sequences, and slots of many values. The generators are
  datalith.tx-property-support's, the harness datalith.tx-model-check's; two
  connections on one store and group commit are tx-writers-property-test's,
  any input tx-any-input-test's. DATALITH_TRIALS=n raises the trial count."
  (:require [clojure.test :refer [deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.naive :as naive]
            [datalith.test-util :as tu]
            [datalith.tx-model-check :refer [outcome run-case]]
            [datalith.tx-property-support :refer [domain gen-schema gen-txs interpret-tx new-id pick
                                                  trials]]))

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

;; h-txcpu: slots of many values. The domains (tx-property-support's) hold at most 8 values an
;; attribute, so no slot (entity, attribute) outgrows the transactor's linear scan; here two
;; entities take up to 41 tags each, added, retracted (conflicting or not) and retracted
;; wholesale in one transaction.
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
