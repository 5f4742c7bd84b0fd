(ns datalith.tx-model-check
  "The harness of the generative transaction tests (datalith.tx-property-test
  and tx-writers-property-test): tx-data run on the engine (transact!, with on
  the db before, with on the previous with) and on the naive model
  (datalith.naive), and after every transaction the engine compared with the
  model on acceptance, tempids, tx-data, the current datoms, every as-of and
  since view, history, the log, d/verify, and on every index holding the same
  datoms; `run-case` runs a sequence of transactions so on a fresh database,
  `outcome` makes test.check's result of the failures."
  (:require [clojure.set :as set]
            [clojure.walk :as walk]
            [clojure.test.check.results :as results]
            [datalith.core :as d]
            [datalith.naive :as naive]
            [datalith.test-util :as tu]
            [datalith.tx-property-support :refer [domain engine-new-eid engine-schema free-attrs]])
  (:import (datalith.index Datom)
           (java.io File)))

;; ---------------------------------------------------------------- comparing

(defn current-tuples [attrs ds]
  (into #{} (comp (filter #(contains? attrs (:a %)))
                  (map (fn [x] [(:e x) (:a x) (:v x) (d/tx->t (:tx x))])))
        ds))

(defn history-tuples [attrs ds]
  (into #{} (comp (filter #(contains? attrs (:a %)))
                  (map (fn [x] [(:e x) (:a x) (:v x) (d/tx->t (:tx x)) (:added x)])))
        ds))

(defn diff [check expected actual]
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

(defn attempt
  "{:report r}, {:error kind :message m} for an ex-info, or {:crash text}."
  [f]
  (try {:report (f)}
       (catch clojure.lang.ExceptionInfo ex
         {:error (:error (ex-data ex)) :message (ex-message ex)})
       (catch Throwable ex {:crash (str ex)})))

(defn tx-out
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

(defn check-verified
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

(defn run-tx
  "Runs `tx-data` on the engine (transact!, with on the db before, with on
  the previous with) and on the model, and compares everything; returns the
  next {:conn :model :dbs :wdb} or {:failure {...}}."
  [{:keys [conn model dbs wdb] :as state} tx-data]
  (let [before (d/db (get state :before-conn conn)) ; see tx-writers-property-test's run-twin-case
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

(defn outcome [failures]
  (reify results/Result
    (pass? [_] (empty? failures))
    (result-data [_] (brief (first failures)))))
