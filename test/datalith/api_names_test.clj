(ns datalith.api-names-test
  "The names Datomic and DataScript users type (issue #16): the tx forms
  :db.fn/retractAttribute and :db.fn/call, entity-db, squuid, tempid,
  db-stats, sync, transact-async, listeners and report queues, rseek-datoms,
  index-pull, qseq, function and pattern inputs of queries, nested q, filter,
  strict mode; each through datalith.core on both stores."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu :refer [each-store]]))

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/age {:db/valueType :db.type/long :db/index true}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}})

(def people
  [{:db/id "a" :user/email "a@x" :user/name "Ada" :user/age 36 :user/tags #{:x :y}
    :user/friend ["b"]}
   {:db/id "b" :user/email "b@x" :user/name "Bob" :user/age 41 :user/friend ["a" "c"]}
   {:db/id "c" :user/email "c@x" :user/name "Cy" :user/age 29}])

(defn- error-of
  "The :error key of the ex-info `f` throws, or :no-error."
  [f]
  (try (f) :no-error
       (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))

(defn- facts
  "The [a v] pairs entity `e` has in `db` (refs as ids)."
  [db e]
  (set (map (juxt :a :v) (d/datoms db :eavt e))))

;; ---------------------------------------------------------------- tx forms

(deftest retract-attribute
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (let [a (d/entid (d/db conn) [:user/email "a@x"])
          r (d/transact! conn [[:db.fn/retractAttribute a :user/tags]
                               [:db.fn/retractAttribute [:user/email "a@x"] :user/name]])]
      (testing "every value of the attribute is retracted, the rest kept"
        (is (= #{[:user/email "a@x"] [:user/age 36] [:user/friend (d/entid (d/db conn) [:user/email "b@x"])]}
               (facts (d/db conn) a)))
        (is (= #{[:user/tags :x] [:user/tags :y] [:user/name "Ada"]}
               (set (for [[_ at v _ added] (:tx-data r) :when (and (not added) (not= at :db/txInstant))]
                      [at v])))))
      (testing "an attribute the entity lacks retracts nothing"
        (is (= #{:db/txInstant}
               (set (map :a (:tx-data (d/transact! conn [[:db.fn/retractAttribute a :user/tags]]))))))))
    (are [tx err] (= err (error-of #(d/transact! conn tx)))
      [[:db.fn/retractAttribute [:user/email "a@x"]]] :tx/invalid-op
      [[:db.fn/retractAttribute [:user/email "a@x"] :user/name "Ada"]] :tx/invalid-op
      [[:db.fn/retractAttribute [:user/email "a@x"] "name"]] :tx/invalid-attribute)))

(defn- rename [db email new-name]
  [[:db/add [:user/email email] :user/name (str new-name " (was " (:user/name (d/entity db [:user/email email])) ")")]])

(deftest fn-call
  (each-store [conn {:schema schema}]
    (d/transact! conn people)
    (testing "[:db.fn/call f & args] calls (f db-before & args) and transacts what it returns"
      (d/transact! conn [[:db.fn/call rename "a@x" "Ada L."]])
      (is (= "Ada L. (was Ada)" (:user/name (d/entity (d/db conn) [:user/email "a@x"])))))
    (testing "an anonymous function, returning another call, with tempids"
      (let [r (d/transact! conn [[:db.fn/call (fn [_db n] [[:db.fn/call (fn [_ m] [{:db/id "n" :user/name m}]) n]])
                                  "Dee"]])]
        (is (= "Dee" (:user/name (d/entity (d/db conn) (get-in r [:tempids "n"])))))))
    (testing "bad calls fail the transaction, writing nothing"
      (let [t (d/basis-t (d/db conn))]
        (are [tx err] (= err (error-of #(d/transact! conn tx)))
          [[:db.fn/call]] :tx/invalid-op
          [[:db.fn/call :user/name 1]] :tx/invalid-op
          [[:db.fn/call 'datalith.api-names-test/rename "a@x" "x"]] :tx/invalid-op
          [[:db.fn/call {:a 1}]] :tx/invalid-op
          [[:db.fn/call (fn [_] (throw (RuntimeException. "no")))]] :tx/fn-failed
          [[:db.fn/call (fn [_] 42)]] :tx/fn-result
          [[:db.fn/call (fn [_ _] [])]] :tx/fn-failed)
        (is (= t (d/basis-t (d/db conn))))))
    (testing "with runs it too"
      (is (= "W" (:user/name (d/entity (:db-after (d/with (d/db conn) [[:db.fn/call (fn [_] [[:db/add [:user/email "c@x"] :user/name "W"]])]]))
                                       [:user/email "c@x"])))))))
