(ns datalith.errors-test
  "Every bad input is an ex-info with a namespaced :error key and the
  offending form or value in its data, and leaves the database unchanged."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]]))

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/handle {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/ssn {:db/valueType :db.type/string :db/unique :db.unique/value}
   :user/name {:db/valueType :db.type/string}
   :user/age {:db/valueType :db.type/long}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/manager {:db/valueType :db.type/ref}})

(defn throwing-fn [_db] (throw (IllegalStateException. "boom")))
(defn not-tx-data-fn [_db] 42)
(defn endless-fn [_db] [(list `endless-fn)])

(def not-edn (Object.))

(defn- state [conn]
  (let [db (d/db conn)]
    [(d/basis-t db) (vec (d/datoms db :eavt)) (d/schema db)]))

(defn- ex-data-of
  "The ex-data of what (f) throws (nil when it throws nothing, the exception
  itself when it is not an ex-info)."
  [f]
  (try (f) nil
       (catch clojure.lang.ExceptionInfo ex (ex-data ex))
       (catch Throwable t t)))

(defn- failed-tx
  "The ex-data of transacting `tx`, when the database is unchanged after it."
  [conn tx]
  (let [before (state conn)
        data (ex-data-of #(d/transact! conn tx))]
    (when (= before (state conn))
      data)))

(defn- namespaced? [k] (and (keyword? k) (some? (namespace k))))

(deftest transaction-errors
  (each-store [conn {:schema schema}]
    (let [r (d/transact! conn [{:db/id "ada" :user/email "ada@x" :user/name "Ada" :user/age 36
                                :user/ssn "1"}
                               {:db/id "bob" :user/email "bob@x" :user/handle "bob"}])
          {:strs [ada bob]} (:tempids r)]
      (are [tx error k v]
           (let [data (failed-tx conn tx)]
             (and (is (map? data) (pr-str tx))
                  (is (namespaced? (:error data)))
                  (is (= error (:error data)) (pr-str tx))
                  (is (= v (get data k)) (pr-str [tx k]))))
        ;; not tx-data at all
        :not-a-collection :tx/invalid-data :tx-data :not-a-collection
        "[:db/add 1 :a 1]" :tx/invalid-data :tx-data "[:db/add 1 :a 1]"
        42 :tx/invalid-data :tx-data 42
        {:user/name "a map, not a vector of maps"} :tx/invalid-data
        :tx-data {:user/name "a map, not a vector of maps"}
        [42] :tx/invalid-op :form 42
        [[]] :tx/invalid-op :form []
        ;; unknown and malformed operations
        [[:db/foo ada :user/name "x"]] :tx/invalid-op :op :db/foo
        [[:db/add ada :user/name]] :tx/invalid-op :form [:db/add ada :user/name]
        [[:db/add ada]] :tx/invalid-op :form [:db/add ada]
        [[:db/add ada :user/name "x" "y"]] :tx/invalid-op :form [:db/add ada :user/name "x" "y"]
        [[:db/retractEntity]] :tx/invalid-op :form [:db/retractEntity]
        [[:db/cas ada :user/age 36]] :tx/invalid-op :form [:db/cas ada :user/age 36]
        [[:db/add ada "user/name" "x"]] :tx/invalid-attribute :attribute "user/name"
        [{:db/id ada "name" "x"}] :tx/invalid-attribute :attribute "name"
        [{:db/id 1.5 :user/name "x"}] :tx/invalid-entity :entity 1.5
        [[:db/add ada :user/_manager bob]] :tx/invalid-attribute :attribute :user/_manager
        [[:db/add "datomic.tx" :db/txInstant #inst "2000-01-01"]] :tx/past-instant
        :value #inst "2000-01-01"
        ;; values
        [[:db/add ada :user/name nil]] :tx/nil-value :form [:db/add ada :user/name nil]
        [{:db/id ada :user/name nil}] :tx/nil-value :attribute :user/name
        [[:db/add ada :user/age "old"]] :tx/value-type :value "old"
        [{:db/id ada :user/age 1.5}] :tx/value-type :value 1.5
        [[:db/retract ada :user/age "old"]] :tx/value-type :value "old"
        ;; entity references
        [[:db/add :no/such :user/name "x"]] :tx/unknown-ident :ident :no/such
        [[:db/add ada :user/manager :no/such]] :tx/unknown-ident :ident :no/such
        [[:db/add [:user/email "nobody@x"] :user/name "x"]] :tx/lookup-ref-not-found
        :lookup-ref [:user/email "nobody@x"]
        [[:db/add ada :user/manager [:user/email "nobody@x"]]] :tx/lookup-ref-not-found
        :lookup-ref [:user/email "nobody@x"]
        ;; (retractEntity of a lookup ref that names nothing is a no-op, as in Datomic)
        [[:db/retract [:user/email "nobody@x"] :user/name "x"]] :tx/lookup-ref-not-found
        :lookup-ref [:user/email "nobody@x"]
        [[:db/add [:user/name "Ada"] :user/age 1]] :tx/invalid-lookup-ref :lookup-ref [:user/name "Ada"]
        [[:db/add ada :user/manager "ghost"]] :tx/tempid-only-value :tempid "ghost"
        ;; uniqueness
        [[:db/add bob :user/ssn "1"]] :tx/unique :value "1"
        [[:db/add bob :user/email "ada@x"]] :tx/unique :value "ada@x"
        [{:user/ssn "2"} {:user/ssn "2"}] :tx/unique :value "2"
        [{:user/email "ada@x" :user/handle "bob"}] :tx/upsert-conflict
        :form {:user/email "ada@x" :user/handle "bob"}
        ;; cardinality one, and asserting what is retracted
        [[:db/add ada :user/name "a"] [:db/add ada :user/name "b"]] :tx/conflict :value "b"
        [{:db/id "x" :user/name "a"} [:db/add "x" :user/name "b"]] :tx/conflict :attribute :user/name
        [[:db/add ada :user/age 37] [:db/retract ada :user/age 37]] :tx/conflict :value 37
        ;; cas
        [[:db/cas ada :user/age 1 2]] :tx/cas-failed :actual 36
        [[:db/cas ada :user/handle "ada" "x"]] :tx/cas-failed :expected "ada"
        [[:db/cas ada :user/tags :a :b]] :tx/invalid-op :attribute :user/tags
        ;; transaction functions
        '[(no.such.ns/f 1)] :tx/unknown-fn :fn 'no.such.ns/f
        '[(datalith.errors-test/no-such-fn)] :tx/unknown-fn :fn 'datalith.errors-test/no-such-fn
        '[(throwing-fn)] :tx/unknown-fn :fn 'throwing-fn
        [(list `throwing-fn)] :tx/fn-failed :fn `throwing-fn
        [(list `not-tx-data-fn)] :tx/fn-result :result 42
        [(list `endless-fn)] :tx/fn-depth :form (list `endless-fn)
        [[:db/add ada :free/x not-edn]] :tx/value-type :value not-edn
        ;; schema
        [{:db/id :user/name :db/valueType :db.type/long}] :schema/alter :attribute :user/name
        [{:db/ident :x/y :db/cardinality :db.type/string}] :schema/invalid :attribute :x/y
        [{:db/ident :x/y :db/valueType :db.type/nope}] :tx/unknown-ident :ident :db.type/nope
        [[:db/add :db/doc :db/cardinality :db.cardinality/many]] :schema/system :ident :db/doc)
      (testing "the connection still works"
        (let [r (d/transact! conn [[:db/add ada :user/name "Ada L"] {:user/email "cy@x"}])]
          (is (= "Ada L" (:user/name (d/entity (:db-after r) ada))))
          (is (= (inc (d/basis-t (:db-before r))) (d/basis-t (:db-after r))))
          (is (some? (d/entid (d/db conn) [:user/email "cy@x"]))))))))

(deftest conflicting-upserts-name-the-form
  (each-store [conn {:schema schema}]
    (d/transact! conn [{:user/email "ada@x"} {:user/handle "bob"}])
    (let [tx [{:db/id "t" :user/email "ada@x"} {:db/id "t" :user/handle "bob"}]
          data (failed-tx conn tx)]
      (is (= :tx/upsert-conflict (:error data)))
      (is (some #{(:form data)} tx)))))

(deftest read-errors
  (each-store [conn {:schema schema}]
    (let [ada (get-in (d/transact! conn [{:db/id "a" :user/email "ada@x" :user/age 3}]) [:tempids "a"])
          db (d/db conn)]
      (are [f error k v]
           (let [data (ex-data-of f)]
             (and (is (map? data))
                  (is (= error (:error data)))
                  (is (= v (get data k)))))
        #(d/datoms db :foo) :db/invalid-index :index :foo
        #(d/datoms db "eavt") :db/invalid-index :index "eavt"
        #(d/seek-datoms db :xyz ada) :db/invalid-index :index :xyz
        #(doall (d/datoms db :eavt ada :user/age 3 (d/t->tx 2) :extra))
        :db/invalid-components :components [ada :user/age 3 (d/t->tx 2) :extra]
        #(d/datoms db :aevt "user/age") :db/invalid-attribute :attribute "user/age"
        #(d/datoms db :eavt ada :user/age 3 "tx") :db/invalid-components :tx "tx"
        #(d/index-range db :user/age "a" nil) :db/value-type :value "a"
        #(d/index-range db "user/age" nil nil) :db/invalid-attribute :attribute "user/age"
        #(d/datoms db :eavt "ada") :db/invalid-entity :entity "ada"
        #(d/tx-range conn "a" nil) :db/invalid-point :point "a"
        #(d/with db :foo) :tx/invalid-data :tx-data :foo
        #(d/as-of db "yesterday") :db/invalid-point :point "yesterday"
        #(d/since db :t) :db/invalid-point :point :t
        #(d/entity db "ada") :db/invalid-entity :entity "ada"
        #(d/entity db -5) :db/invalid-entity :entity -5
        #(d/entity db [:user/age 3]) :db/invalid-lookup-ref :lookup-ref [:user/age 3]
        #(d/entity db [:user/email]) :db/invalid-lookup-ref :lookup-ref [:user/email]
        #(d/connect :mem {:schema 42}) :db/invalid-schema :schema 42
        #(d/connect 42) :db/invalid-target :target 42))))

(deftest closed-connection
  (doseq [store [:mem :lmdb]]
    (let [[conn cleanup] (datalith.test-util/open-conn store {})]
      (try
        (d/close conn)
        (is (= :db/closed (:error (ex-data-of #(d/db conn)))))
        (is (= :db/closed (:error (ex-data-of #(d/transact! conn [{:x/y 1}])))))
        (finally (cleanup))))))
