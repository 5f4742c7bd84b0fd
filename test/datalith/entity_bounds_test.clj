(ns datalith.entity-bounds-test
  "As-of views pass later entities' keys (h-validend, datalith.db.EntityBounds): a scan of
  a view at point t passes, at the first key of a user entity above every entity of the
  log's records up to t (or of a transaction entity after t), the rest of that run of keys
  at once. Every read of as-of, history, since and valid-at views at every point must be
  what the slow twin (-Ddatalith.entity-bounds=false: every key tested) reads, on random
  histories of new entities, explicit ids, transaction metadata sharing values with
  entities, retractions, long strings and intervals; and the pass must happen."
  (:require [clojure.test :refer [deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.test-util :as tu :refer [each-store]])
  (:import (datalith.conn Conn)
           (datalith.db Db IndexScan)
           (datalith.index Index KeyBuilder)))

(def trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 30))

(def schema
  {:b/one {:db/valueType :db.type/long}
   :b/many {:db/valueType :db.type/long :db/cardinality :db.cardinality/many}
   :b/ref {:db/valueType :db.type/ref}
   :b/s {:db/valueType :db.type/string}
   :b/name {:db/valueType :db.type/string :db/unique :db.unique/identity}})

(def day (* 24 3600 1000))
(def base (.getTime #inst "2030-01-01"))
(defn- inst [days] (java.util.Date. (long (+ base (* days day)))))

(defmacro ^:private with-bounds
  "Runs body with the entity-bounds property `on?` (read when a connection opens)."
  [on? & body]
  `(let [old# (System/getProperty Conn/ENTITY_BOUNDS_PROPERTY)]
     (System/setProperty Conn/ENTITY_BOUNDS_PROPERTY (str ~on?))
     (try ~@body
          (finally (if old# (System/setProperty Conn/ENTITY_BOUNDS_PROPERTY old#)
                       (System/clearProperty Conn/ENTITY_BOUNDS_PROPERTY))))))

(defn- long-string [v] (str (apply str (repeat 60 "shared-")) v))

;; An op: [:new v] a new entity with :b/one v and :b/s v; [:add k attr v] and
;; [:retract k attr v] on the k-th entity so far (mod their count); [:explicit n v]
;; :b/one v on the explicit id 100000 + n; [:meta v] :b/one v on the transaction;
;; [:vadd k v from] :b/one v on the k-th entity over [from, from + 30 days).
(def gen-op
  (gen/one-of
    [(gen/tuple (gen/return :new) (gen/choose 0 3))
     (gen/tuple (gen/return :new) (gen/choose 0 3))
     (gen/tuple (gen/elements [:add :retract]) (gen/choose 0 50)
                (gen/elements [:b/one :b/many :b/ref :b/s]) (gen/choose 0 3))
     (gen/tuple (gen/return :explicit) (gen/choose 0 3) (gen/choose 0 3))
     (gen/tuple (gen/return :meta) (gen/choose 0 3))
     (gen/tuple (gen/return :vadd) (gen/choose 0 50) (gen/choose 0 3) (gen/choose -60 60))]))

(def gen-history (gen/vector (gen/vector gen-op 1 4) 1 10))

(defn- tx-data
  "The tx-data of transaction `i` (its ops), given the entities so far."
  [ents i ops]
  (let [pick #(when (seq ents) (nth ents (mod % (count ents))))
        value (fn [attr v] (case attr
                             :b/ref (or (pick v) v)
                             :b/s (long-string v)
                             v))]
    (conj (vec (keep-indexed (fn [j [kind x y z]]
                       (case kind
                         :new {:db/id (str "n" i "-" j) :b/one x :b/s (long-string x)}
                         (:add :retract) (when-let [e (pick x)]
                                           [(if (= kind :add) :db/add :db/retract) e y (value y z)])
                         :explicit [:db/add (+ 100000 x) :b/one y]
                         :meta [:db/add "datomic.tx" :b/one x]
                         :vadd (when-let [e (pick x)]
                                 [:db/add e :b/one y {:db/valid-from (inst z) :db/valid-to (inst (+ z 30))}])))
                     ops))
          {:db/id "datomic.tx" :db/txInstant (inst i)})))

(defn- transact-history!
  "Transacts `history` on `conn`, each transaction tried alone (a refused one is
  skipped: both twins refuse alike); returns the last value."
  [conn history]
  (reduce (fn [ents [i ops]]
            (let [r (try (d/transact! conn (tx-data ents i ops))
                         (catch clojure.lang.ExceptionInfo _ nil))]
              (into ents (sort (vals (dissoc (:tempids r) "datomic.tx" :db/current-tx))))))
          [] (map-indexed vector history))
  (d/db conn))

(defn- reads
  "Every read of the as-of view at each t the twins must agree on."
  [db]
  (let [datoms (fn [v] (vec (for [index [:eavt :aevt :avet :vaet]
                                  dt (d/datoms v index)]
                              ;; the schema's transaction is dated by the clock
                              [(:e dt) (:a dt) (when-not (= :db/txInstant (:a dt)) (:v dt))
                               (:tx dt) (:added dt)])))
        q3 '[:find ?v (count ?e) :where [?e :b/one ?v]]]
    (vec (for [t (range 1 (inc (d/basis-t db)))
               :let [as-of (d/as-of db t)]]
           [(datoms as-of)
            (datoms (d/history as-of))
            (datoms (d/since as-of (quot t 2)))
            (d/q q3 as-of)
            (vec (for [days [-30 0 5 40]
                       :let [v (d/valid-at as-of (inst days))]]
                   [(datoms v) (d/q q3 v)]))]))))

(defn- twins-agree? [store history]
  (let [[with without] (for [on? [true false]]
                         (with-bounds on?
                           (tu/with-conn [conn store {:schema schema}]
                             (reads (transact-history! conn history)))))]
    (= with without)))

(defspec as-of-reads-match-the-slow-twin trials
  (prop/for-all [history gen-history]
    (every? #(twins-agree? % history) tu/checked-stores)))

;; ---------------------------------------------------------------- the pass happens

(defn- stepped-within?
  "Whether a scan of the AVET run of :b/one 1 in `db` ends within `n` index entries."
  [^Db db n]
  (let [aid (:db/id (d/entity db :b/one))]
    (with-open [s (.snapshot db)]
      (let [^IndexScan scan (.scan db s Index/AVET (.view (.putLong (KeyBuilder.) aid)))]
        (try
          (.limitEntries scan n)
          (while (.next scan))
          (not (.overBudget scan))
          (finally (.close scan)))))))

(deftest an-early-view-passes-later-entities
  (doseq [on? [true false]]
    (with-bounds on?
      (each-store [conn {:schema schema}]
        (d/transact! conn [{:b/name "early" :b/one 1} {:db/id "datomic.tx" :db/txInstant (inst 0)}])
        (let [t0 (d/basis-t (d/db conn))]
          (d/transact! conn (conj (vec (for [i (range 300)] {:b/name (str "late" i) :b/one 1}))
                                  {:db/id "datomic.tx" :db/txInstant (inst 1)}))
          ;; a later entity valid from before t0's instant, through an interval
          (d/transact! conn [[:db/add [:b/name "late7"] :b/one 2 {:db/valid-from (inst -10)}]
                             {:db/id "datomic.tx" :db/txInstant (inst 2)}])
          (let [db (d/db conn)
                early (d/as-of db t0)]
            (testing (str "entity bounds " on?)
              (is (= #{[1 1]} (set (d/q '[:find ?v (count ?e) :where [?e :b/one ?v]] early))))
              (is (= (boolean on?) (stepped-within? early 20))
                  "with bounds, the run of 300 later entities is passed at once")
              (is (stepped-within? db 400) "a current view reads them all")
              (is (= #{[1 1] [2 1]}
                     (set (d/q '[:find ?v (count ?e) :where [?e :b/one ?v]]
                               (d/valid-at db (inst 0)))))
                  "a valid-at view at t0's instant keeps its lines' keys of later entities")
              (is (= (boolean on?) (stepped-within? (d/valid-at db (inst 0)) 20))))))))))

(deftest explicit-ids-and-transaction-entities-bound-the-pass
  ;; new entities get ids above every id used, explicit ones too: the x's are above 100000
  (with-bounds true
   (each-store [conn {:schema schema}]
    (d/transact! conn [[:db/add 100000 :b/one 1] {:db/id "datomic.tx" :db/txInstant (inst 0) :b/one 1}])
    (let [t0 (d/basis-t (d/db conn))]
      (d/transact! conn (conj (vec (for [i (range 50)] {:b/name (str "x" i) :b/one 1}))
                              {:db/id "datomic.tx" :db/txInstant (inst 1) :b/one 1}))
      (d/transact! conn [[:db/add 500000 :b/one 1] {:db/id "datomic.tx" :db/txInstant (inst 2)}])
      (let [db (d/db conn)
            ones (fn [v] (set (map :e (d/datoms v :avet :b/one 1))))
            tx0 (d/t->tx t0)]
        (is (= #{100000 tx0} (ones (d/as-of db t0)))
            "the explicit id and the transaction entity at t0, not the later ones")
        (is (stepped-within? (d/as-of db t0) 10)
            "the later entities (500000 too) and the later transaction entity passed at once")
        (is (= 53 (count (ones (d/as-of db (inc t0)))))
            "at t0 + 1 the bound is above the x's, which show, and 500000 does not")
        (is (= (+ 2 51 1) (count (ones db)))))))))

(deftest a-long-log-is-read-as-scans-go
  ;; 3,000 datoms of log before t0: more than a scan's first allowance, so the bound is
  ;; read over several asks (each scan's in proportion to the later keys it met)
  (with-bounds true
    (each-store [conn {:schema schema}]
      (doseq [i (range 10)]
        (d/transact! conn (conj (vec (for [j (range 100)] {:b/name (str "a" i "-" j) :b/one 2 :b/many j}))
                                {:db/id "datomic.tx" :db/txInstant (inst i)})))
      (let [t0 (d/basis-t (d/db conn))]
        (d/transact! conn (conj (vec (for [i (range 300)] {:b/name (str "late" i) :b/one 1}))
                                {:db/id "datomic.tx" :db/txInstant (inst 20)}))
        (let [db (d/db conn)
              early (d/as-of db t0)
              q3 '[:find ?v (count ?e) :where [?e :b/one ?v]]]
          (is (= (repeat 6 #{[2 1000]}) (repeatedly 6 #(set (d/q q3 (d/as-of db t0))))))
          (is (stepped-within? early 1020)
              "read by now: the 300 later keys passed at once, the 1,000 early ones read")
          (is (= #{[2 1000] [1 300]} (set (d/q q3 db)))))))))
