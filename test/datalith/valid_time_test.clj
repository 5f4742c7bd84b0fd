(ns datalith.valid-time-test
  "Valid time (#19): intervals in tx-data, valid-at views, both stores."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]]))

(def schema {:person/city {:db/cardinality :db.cardinality/one}
             :person/name {:db/unique :db.unique/identity}
             :person/tag {:db/cardinality :db.cardinality/many}})

(defn- city [db at]
  (let [e (:db/id (d/entity db [:person/name "ada"]))]
    (:person/city (d/entity (d/valid-at db at) e))))

(deftest smoke
  (each-store [conn {:schema schema}]
    (d/transact! conn [{:person/name "ada" :person/city "Oslo"}])
    (d/transact! conn [[:db/add [:person/name "ada"] :person/city "Bergen"
                        {:db/valid-from #inst "2020-01-01" :db/valid-to #inst "2021-01-01"}]])
    (let [db (d/db conn)]
      (is (= "Bergen" (:person/city (d/entity db [:person/name "ada"]))))
      (is (= "Bergen" (city db #inst "2020-06-01")))
      (is (= nil (city db #inst "2019-06-01")))
      (is (= nil (city db #inst "2021-06-01")))
      (is (= "Oslo" (city db (java.util.Date.)))))))
