(ns datalith.composite-test
  "Composite tuples: attributes with :db/tupleAttrs are kept by the transactor."
  (:require [clojure.test :refer [deftest is testing]]
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
