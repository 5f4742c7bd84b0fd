(ns datalith.composite-test
  "Composite tuples: attributes with :db/tupleAttrs are kept by the transactor."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]]))

(def schema
  [{:db/ident :reg/course :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   {:db/ident :reg/student :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   {:db/ident :reg/course+student :db/valueType :db.type/tuple
    :db/tupleAttrs [:reg/course :reg/student]
    :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}])

(defn- composite [conn e]
  (:reg/course+student (d/pull (d/db conn) [:reg/course+student] e)))

(defn- composite-of [conn e]
  (:ref+name (d/pull (d/db conn) [:ref+name] e)))

(deftest composite-follows-its-attributes
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [{:db/id "r" :reg/course "math"}]) [:tempids "r"])]
      (testing "a missing attribute is nil in the tuple"
        (is (= ["math" nil] (composite conn e))))
      (d/transact! conn [[:db/add e :reg/student "ada"]])
      (is (= ["math" "ada"] (composite conn e)))
      (testing "changing a part replaces the tuple, with history"
        (d/transact! conn [[:db/add e :reg/student "bob"]])
        (is (= ["math" "bob"] (composite conn e)))
        (is (= #{[["math" "ada"] true] [["math" "ada"] false] [["math" "bob"] true]}
               (set (d/q '[:find ?v ?added :in $ ?e
                           :where [?e :reg/course+student ?v ?tx ?added]
                                  [(not= ?v ["math" nil])]]
                         (d/history (d/db conn)) e)))))
      (testing "the tuple is found by value"
        (is (= e (d/q '[:find ?e . :where [?e :reg/course+student ["math" "bob"]]] (d/db conn)))))
      (testing "uniqueness holds on the tuple"
        (is (= :tx/unique
               (:error (ex-data (try (d/transact! conn [{:reg/course "math" :reg/student "bob"}])
                                     (catch clojure.lang.ExceptionInfo x x)))))))
      (testing "retracting every part retracts the tuple"
        (d/transact! conn [[:db/retract e :reg/student "bob"] [:db/retract e :reg/course "math"]])
        (is (nil? (composite conn e)))))))

(def ref-schema
  [{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}
   {:db/ident :value :db/valueType :db.type/long}
   {:db/ident :ref :db/valueType :db.type/ref}
   {:db/ident :ref+name :db/valueType :db.type/tuple :db/tupleAttrs [:ref :name]
    :db/unique :db.unique/identity}])

(defn- error-of [f]
  (try (f) :no-error
       (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))

(deftest composites-are-derived-not-written
  ;; Datomic: "Composite attributes are entirely managed by Datomic - you never
  ;; assert or retract them yourself." tx-data may name one only with the value
  ;; it derives to, as an upsert through a unique composite does.
  (each-store [conn {:schema ref-schema}]
    (let [r (d/transact! conn [{:db/id "a" :name "A"} {:db/id "p" :name "Petr" :ref "a"}])
          {:strs [a p]} (:tempids r)
          state #(vec (d/datoms (d/db conn) :eavt))
          before (state)]
      (is (= [a "Petr"] (composite-of conn p)))
      (are [tx error] (= error (error-of #(d/transact! conn tx)))
        [{:db/id [:name "Petr"] :ref+name [12345 "Zed"]}] :tx/composite-tuple
        [[:db/add p :ref+name [a "Zed"]]] :tx/composite-tuple
        [{:name "New" :ref+name [a "Other"]}] :tx/composite-tuple
        [{:name "New" :ref a :ref+name [a "Other"]}] :tx/composite-tuple
        [{:db/id "n" :value 1 :ref+name [a "Nobody"]}] :tx/composite-tuple
        [[:db/add p :name "Pete"] [:db/add p :ref+name [a "Petr"]]] :tx/composite-tuple
        [[:db/retract p :ref+name [a "Petr"]]] :tx/composite-tuple
        [[:db/retract p :ref+name]] :tx/composite-tuple
        [[:db/cas p :ref+name [a "Petr"] [a "X"]]] :tx/composite-tuple
        ;; ill-typed for the attributes it is made of
        [{:ref+name ["not-an-id" 42]}] :tx/value-type
        [{:ref+name [a 42]}] :tx/value-type
        [{:ref+name [a "Petr" 3]}] :tx/value-type
        [{:ref+name [-1 "Petr"]}] :tx/value-type)
      (is (= before (state)) "nothing was written")
      (testing "the value it derives to: an upsert through the composite"
        (let [r2 (d/transact! conn [{:ref+name [a "Petr"] :ref a :name "Petr" :value 5}])]
          (is (= #{[p :value 5 true]}
                 (set (for [d (:tx-data r2) :when (not= :db/txInstant (:a d))]
                        [(:e d) (:a d) (:v d) (:added d)])))))
        (d/transact! conn [{:ref+name [a "Petr"] :value 6}])
        (is (= 6 (:value (d/entity (d/db conn) p))))
        (d/transact! conn [[:db/add p :name "Pete"] [:db/add p :ref+name [a "Pete"]]])
        (is (= [a "Pete"] (composite-of conn p)))))))

(deftest a-transactions-own-entity-keeps-its-composites
  ;; Datomic keeps a composite on the transaction's entity as on any other (checked against
  ;; Datomic Local 1.0.291); datalith left transaction entities out until stop 45, which the
  ;; transaction property test's composites found at once
  (each-store [conn {:schema schema}]
    (let [r (d/transact! conn [[:db/add "datomic.tx" :reg/course "math"]])
          tx (get-in r [:tempids "datomic.tx"])]
      (is (= ["math" nil] (composite conn tx)) "asserted through \"datomic.tx\"")
      (is (contains? (set (map (juxt :e :a :v :added) (:tx-data r)))
                     [tx :reg/course+student ["math" nil] true])
          "the composite is in the transaction's datoms")
      (d/transact! conn [[:db/add tx :reg/student "ada"]])
      (is (= ["math" "ada"] (composite conn tx)) "asserted later, through the transaction's id")
      (d/transact! conn [[:db/retract tx :reg/course "math"] [:db/retract tx :reg/student "ada"]])
      (is (nil? (composite conn tx)) "every part retracted"))))
