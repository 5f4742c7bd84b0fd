(ns datalith.readme-test
  "The README's REPL tour and Java example, as tests, so that the README stays true."
  (:require [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]])
  (:import (datalith.api Datalith Database)
           (java.util List Map Set)))

(def schema {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
             :issue/assignee {:db/valueType :db.type/ref}
             :issue/labels {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}})

(deftest repl-tour-as-written
  (each-store [conn {:schema schema}]
    (d/transact! conn [{:user/email "ada@example.com" :user/name "Ada"}])
    (d/transact! conn [{:issue/title "Crash on start" :issue/state :state/open
                        :issue/labels #{:bug :p1}
                        :issue/assignee [:user/email "ada@example.com"]}])
    (let [db (d/db conn)]
      (is (= #{["Crash on start" :state/open]}
             (d/q '[:find ?title ?state
                    :in $ ?email
                    :where [?u :user/email ?email]
                           [?i :issue/assignee ?u]
                           [?i :issue/title ?title]
                           [?i :issue/state ?state]]
                  db "ada@example.com")))
      (is (= {:user/name "Ada" :issue/_assignee [{:issue/title "Crash on start"
                                                  :issue/labels [:bug :p1]}]}
             (update-in (d/pull db '[:user/name {:issue/_assignee [:issue/title :issue/labels]}]
                                [:user/email "ada@example.com"])
                        [:issue/_assignee 0 :issue/labels] (comp vec sort))))
      (is (= "Ada" (:user/name (d/entity db [:user/email "ada@example.com"]))))
      (d/transact! conn [{:user/email "ada@example.com" :user/name "Ada L."}])
      (is (= "Ada" (:user/name (d/entity (d/as-of (d/db conn) (d/basis-t db))
                                         [:user/email "ada@example.com"]))))
      (is (= #{["Ada" true] ["Ada" false] ["Ada L." true]}
             (d/q '[:find ?n ?added :where [_ :user/name ?n _ ?added]] (d/history (d/db conn)))))
      (let [after (:db-after (d/with db [[:db/retractEntity [:user/email "ada@example.com"]]]))]
        (is (nil? (d/entity after [:user/email "ada@example.com"])))
        (is (some? (d/entity (d/db conn) [:user/email "ada@example.com"]))))
      (is (seq (:clauses (d/explain '[:find ?i :where [?i :issue/state :state/open]
                                      [?i :issue/labels :bug]] db)))))))

(deftest java-api
  (doseq [open [#(Datalith/open (.toPath (datalith.test-util/temp-dir))
                               {"schema" "[{:db/ident :user/email :db/valueType :db.type/string
                                            :db/unique :db.unique/identity}]"})
                #(doto (Datalith/openInMemory)
                   (.transact "[{:db/ident :user/email :db/valueType :db.type/string
                                 :db/unique :db.unique/identity}]"))]]
    (with-open [conn ^datalith.api.Connection (open)]
      (let [tx (.transact conn "[{:db/id \"a\" :user/email \"ada@example.com\" :user/name \"Ada\"}]")
            ^Database db (.db conn)]
        (is (instance? Long (.tempid tx "a")))
        (is (= "Ada" (.q db "[:find ?n . :in $ ?e :where [?p :user/email ?e] [?p :user/name ?n]]"
                         (object-array ["ada@example.com"]))))
        (is (instance? Set (.q db "[:find ?e ?n :where [?e :user/name ?n]]" (object-array 0))))
        (is (instance? List (first (.q db "[:find ?e ?n :where [?e :user/name ?n]]" (object-array 0)))))
        (let [^Map ada (.pull db "[*]" (List/of (Datalith/kw "user/email") "ada@example.com"))]
          (is (= "Ada" (.get ada (Datalith/kw "user/name")))))
        (is (nil? (.pull (.asOf db 0) "[:user/name]" (.tempid tx "a"))))
        (is (= 1 (count (.datoms db "avet" (object-array [(Datalith/kw "user/email")])))))
        (testing "errors are ex-info with a namespaced :error"
          (is (= :api/edn (:error (ex-data (try (.transact conn "[{:a") (catch Exception e e))))))
          (is (= :tx/nil-value (:error (ex-data (try (.transact conn "[{:user/name nil}]")
                                                     (catch Exception e e)))))))))))
