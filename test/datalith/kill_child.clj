(ns datalith.kill-child
  "The child JVM of the kill -9 harness (datalith.kill-harness): streams transactions
  against an LMDB directory until it is killed.

    java ... clojure.main -m datalith.kill-child DIR SEED SYNC OUT [THREADS]

  Writes to file OUT (each line with one write call, so that a kill never loses a line
  written: a pipe's last lines may not reach the parent when the child dies) `ready T` once
  the database is open (T its basis t), then, after each transact! returns, `ack T DATOMS`:
  T the transaction's t and DATOMS its :tx-data as an EDN vector of [e a v tx added]. A
  transaction the database refuses writes `err MESSAGE`. The stream,
  seeded by SEED, mixes new entities (some with long values and refs), updates of
  cardinality-one attributes, card-many adds and retracts, retractEntity, upserts through a
  unique identity, and schema changes (new attributes of various types, then used). SYNC is
  true (durable commits, as `d/connect` makes them: with write-behind, written back every
  1,024 commits or 50 ms), through (durable, without write-behind: each commit LMDB's),
  behind (durable, with write-behind written back every 20 commits or 5 ms) or false
  ({:sync false}). THREADS (default 1) threads stream at
  once, each its own seeded stream, so that transactions commit in groups (issue #17); each
  acknowledges its own."
  (:require [clojure.string :as str]
            [datalith.child-jvm :as child]
            [datalith.core :as d])
  (:import (java.io FileOutputStream)
           (java.util Date Random UUID)))

(def schema
  {:k/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :k/name {:db/valueType :db.type/string}
   :k/bio {:db/valueType :db.type/string}
   :k/score {:db/valueType :db.type/long}
   :k/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :k/friend {:db/valueType :db.type/ref}
   :k/likes {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}})

(def ^:private extra-types
  [:db.type/string :db.type/long :db.type/double :db.type/keyword :db.type/boolean
   :db.type/instant :db.type/uuid])

(defn- pick [^Random rnd xs] (nth xs (.nextInt rnd (count xs))))

(defn- value-of [^Random rnd type]
  (case type
    :db.type/string (str "v" (.nextInt rnd 1000))
    :db.type/long (long (- (.nextInt rnd 2000) 1000))
    :db.type/double (/ (.nextInt rnd 1000) 8.0)
    :db.type/keyword (keyword "kw" (str "k" (.nextInt rnd 20)))
    :db.type/boolean (.nextBoolean rnd)
    :db.type/instant (Date. (long (.nextInt rnd 100000000)))
    :db.type/uuid (UUID. (.nextLong rnd) (.nextLong rnd))))

(defn- new-user [^Random rnd emails id]
  (cond-> {:db/id id :k/email (str id "@x") :k/name (str "N" (.nextInt rnd 100))
           :k/tags (set (for [_ (range (inc (.nextInt rnd 3)))] (keyword (str "t" (.nextInt rnd 8)))))
           :k/score (long (.nextInt rnd 100))}
    (zero? (.nextInt rnd 5)) (assoc :k/bio (apply str "bio " id " " (repeat 50 "0123456789")))
    (seq emails) (assoc :k/friend [:k/email (pick rnd emails)])))

(defn- op
  "One operation: {:tx-data [...] :new [emails] :gone email :attr [ident type]}."
  [^Random rnd emails attrs tag]
  (let [kind (if (empty? emails)
               :new
               (pick rnd [:new :new :new :update :update :update :tags :tags :likes :likes
                          :retract-entity :upsert :upsert :extra :extra :schema]))
        e (when (seq emails) (pick rnd emails))
        ref [:k/email e]]
    (case kind
      :new (let [ids (for [i (range (inc (.nextInt rnd 3)))] (str tag "-" i))]
             {:tx-data (mapv #(new-user rnd emails %) ids) :new (mapv #(str % "@x") ids)})
      :update {:tx-data [[:db/add ref :k/name (str "U" (.nextInt rnd 100))]
                         [:db/add ref :k/score (long (.nextInt rnd 100))]]}
      :tags {:tx-data [[:db/add ref :k/tags (keyword (str "t" (.nextInt rnd 8)))]
                       [:db/retract ref :k/tags (keyword (str "t" (.nextInt rnd 8)))]]}
      :likes {:tx-data [[(if (.nextBoolean rnd) :db/add :db/retract) ref :k/likes
                         [:k/email (pick rnd emails)]]]}
      :retract-entity {:tx-data [[:db/retractEntity ref]] :gone e}
      :upsert {:tx-data [{:k/email e :k/name (str "P" (.nextInt rnd 100))
                          :k/score (long (.nextInt rnd 100))}]}
      :extra (if (empty? attrs)
               {:tx-data [[:db/add ref :k/score 0]]}
               (let [[a type] (pick rnd attrs)]
                 {:tx-data [[:db/add ref a (value-of rnd type)]]}))
      :schema (let [a (keyword "x" (str "a" tag))
                    type (pick rnd extra-types)]
                {:tx-data [{:db/ident a :db/valueType type}] :attr [a type]}))))

(defn- datoms [report]
  (mapv (fn [x] [(:e x) (:a x) (:v x) (:tx x) (:added x)]) (:tx-data report)))

(defn- stream!
  "Streams transactions from one thread until the process dies."
  [conn emit emails attrs seed thread]
  (let [rnd (Random. (+ seed (* 7919 thread)))]
    (loop [n 0]
      ;; one or two operations a transaction
      (let [ops (for [i (range (inc (.nextInt rnd 2)))]
                  (op rnd @emails @attrs (str "s" seed "h" thread "n" n "o" i)))
            ops (if (and (second ops) (some :gone ops)) [(first ops)] ops)]
        (try
          (let [r (d/transact! conn (vec (mapcat :tx-data ops)))]
            (emit "ack" (d/basis-t (:db-after r)) (pr-str (datoms r)))
            (doseq [{:keys [new gone attr]} ops]
              (swap! emails into new)
              (when gone (swap! emails (fn [es] (vec (remove #{gone} es)))))
              (when attr (swap! attrs conj attr))))
          (catch clojure.lang.ExceptionInfo e
            (emit "err" (pr-str (ex-message e))))))
      (recur (inc n)))))

(defn -main [dir seed sync out & [threads]]
  (child/exit-with-parent!)
  (let [out (FileOutputStream. ^String out true)
        emit (fn [& xs]
               (let [line (.getBytes (str (str/join " " xs) "\n") "UTF-8")]
                 (locking out (.write out line))))
        seed (parse-long seed)
        threads (parse-long (or threads "1"))
        conn (d/connect dir (case sync
                              "behind" {:write-behind true :write-back-commits 20
                                        :write-back-ms 5 :schema schema}
                              "through" {:write-behind false :schema schema}
                              {:sync (= "true" sync) :schema schema}))
        db (d/db conn)
        emails (atom (vec (d/q '[:find [?m ...] :where [_ :k/email ?m]] db)))
        attrs (atom (vec (for [[a {:keys [db/valueType]}] (d/schema db)
                               :when (= "x" (namespace a))]
                           [a valueType])))]
    (emit "ready" (d/basis-t db))
    (if (= 1 threads)
      (stream! conn emit emails attrs seed 0)
      (let [workers (mapv #(future (stream! conn emit emails attrs seed %)) (range threads))]
        (run! deref workers)))))
