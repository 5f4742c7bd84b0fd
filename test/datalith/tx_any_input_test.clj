(ns datalith.tx-any-input-test
  "Whatever tx-data holds (generated forms shaped like tx-data and not, of
  values a careless or hostile caller might put anywhere), on both stores:
  transact! and with either accept it or throw an ex-info with a namespaced
  :error, and a refused transaction writes nothing. DATALITH_TRIALS=n raises the
  trial count."
  (:require [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.naive :as naive]
            [datalith.test-util :as tu]
            [datalith.tx-model-check :refer [outcome]]
            [datalith.tx-property-support :refer [trials]]))

;; ---------------------------------------------------------------- any input
;; Whatever tx-data holds, transact! and with either accept it or throw an
;; ex-info with a namespaced :error (never :tx/internal, datalith's own
;; fault), and a refused transaction writes nothing.

(def ^:private odd-values
  "Values a careless or hostile caller might put anywhere in tx-data."
  [nil 0 1 -1 1000 2000 (dec naive/tx0) naive/tx0 (inc naive/tx0) Long/MAX_VALUE Long/MIN_VALUE
   (int 5) 1.5 ##NaN 2N 1.5M "" "t0" "datomic.tx" "x" :db/add :db/retract :db/retractEntity
   :db/cas :db/id :db/ident :db/valueType :db/cardinality :db/unique :db/isComponent
   :db/tupleAttrs :db/tupleTypes :db/tupleType :db/txInstant :db/doc :db/index
   :db.type/ref :db.type/string :db.type/long :db.type/tuple :db.cardinality/many
   :db.unique/identity :db/current-tx :k/id :k/ref :k/many :k/part :k/pair :k/id+ref :k/_ref
   :k/_part :free/x :no/such 'datalith.tx-any-input-test/no-fn 'no-ns-fn true
   #inst "2020-01-01" (java.util.UUID. 0 0)])

(def ^:private gen-odd
  (gen/recursive-gen
    (fn [inner] (gen/one-of [(gen/vector inner 0 4) (gen/list inner) (gen/set inner {:max-elements 3})
                             (gen/map inner inner {:max-elements 3})]))
    (gen/one-of [(gen/elements odd-values) gen/large-integer gen/string-ascii
                 (gen/fmap (fn [n] (object-array (range n))) (gen/choose 0 2))
                 (gen/return inc) (gen/fmap (fn [_] (Object.)) gen/nat)])))

(def ^:private gen-odd-form
  "Forms shaped like tx-data, and not."
  (let [pick (gen/elements odd-values)]
    (gen/one-of [(gen/tuple (gen/elements [:db/add :db/retract]) pick pick gen-odd)
                 (gen/tuple (gen/elements [:db/add :db/retract :db/cas :db/retractEntity])
                            gen-odd gen-odd)
                 (gen/tuple (gen/return :db/cas) pick pick gen-odd gen-odd)
                 (gen/map pick gen-odd {:max-elements 4})
                 (gen/fmap #(assoc % :db/ident (keyword "new" (str "a" (count %))))
                           (gen/map pick gen-odd {:max-elements 3}))
                 gen-odd])))

(def ^:private odd-schema
  [{:db/ident :k/id :db/valueType :db.type/long :db/unique :db.unique/identity}
   {:db/ident :k/ref :db/valueType :db.type/ref :db/unique :db.unique/identity}
   {:db/ident :k/many :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   {:db/ident :k/part :db/valueType :db.type/ref :db/cardinality :db.cardinality/many
    :db/isComponent true}
   {:db/ident :k/pair :db/valueType :db.type/tuple :db/tupleTypes [:db.type/long :db.type/string]}
   {:db/ident :k/id+ref :db/valueType :db.type/tuple :db/tupleAttrs [:k/id :k/ref]
    :db/unique :db.unique/identity}])

(defn- odd-outcome
  ":ok when `f` returns, :refused when it throws an ex-info with a namespaced
  :error other than :tx/internal, else what it threw."
  [f]
  (try (f) :ok
       (catch clojure.lang.ExceptionInfo ex
         (let [e (:error (ex-data ex))]
           (if (and (keyword? e) (namespace e) (not= :tx/internal e))
             :refused
             {:error e :message (ex-message ex) :cause (str (ex-cause ex))})))
       (catch Throwable t {:thrown (str t)})))

(defn- odd-tx-failure
  "nil when `with` and `transact!` both accept `tx`, or both refuse it
  cleanly and nothing is written; else what went wrong."
  [conn tx]
  (let [before (d/db conn)
        with (odd-outcome #(d/with before tx))
        real (odd-outcome #(d/transact! conn tx))]
    (when-not (and (#{:ok :refused} real) (= with real)
                   (or (= :ok real) (= (d/basis-t before) (d/basis-t (d/db conn)))))
      {:tx tx :with with :transact real})))

(defspec any-tx-data-is-accepted-or-refused-cleanly trials
  (prop/for-all [txs (gen/vector (gen/vector gen-odd-form 0 4) 1 4)]
    (outcome
      (for [store tu/stores
            :let [f (tu/with-conn [conn store {:schema odd-schema}]
                      (some #(odd-tx-failure conn %) txs))]
            :when f]
        (assoc f :store store)))))
