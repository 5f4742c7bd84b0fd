(ns datalith.entity-test
  "d/entity and d/touch: lookups, navigation across refs and reverse refs,
  cardinality-many values, printing."
  (:require [clojure.pprint :as pprint]
            [clojure.string :as str]
            [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]]))

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/friends {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :user/manager {:db/valueType :db.type/ref}
   :user/status {:db/valueType :db.type/ref}
   :issue/title {:db/valueType :db.type/string}
   :issue/assignee {:db/valueType :db.type/ref}
   :issue/body {:db/valueType :db.type/ref :db/isComponent true}
   :issue/comments {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many
                    :db/isComponent true}
   :comment/text {:db/valueType :db.type/string}})

(defn- load-data
  "Transacts the test data; returns the tempids."
  [conn]
  (d/transact! conn [{:db/ident :status/active}])
  (:tempids
   (d/transact! conn [{:db/id "ada" :user/email "ada@x" :user/name "Ada" :user/tags #{:math :code}
                       :user/status :status/active}
                      {:db/id "bob" :user/email "bob@x" :user/name "Bob" :user/manager "ada"
                       :user/friends ["ada" "cy"]}
                      {:db/id "cy" :user/email "cy@x" :user/name "Cy" :user/manager "ada"}
                      {:db/id "i" :issue/title "Crash" :issue/assignee "bob"
                       :issue/body {:db/id "body" :comment/text "body"}
                       :issue/comments [{:db/id "c1" :comment/text "a"}
                                        {:db/id "c2" :comment/text "b"}]}])))

(deftest lookups
  (each-store [conn {:schema schema}]
    (let [{:strs [ada]} (load-data conn)
          db (d/db conn)]
      (are [eid] (= [ada "Ada"] ((juxt :db/id :user/name) (d/entity db eid)))
        ada
        (int ada)
        [:user/email "ada@x"])
      (testing "by ident: attributes are entities"
        (let [attr (d/entity db :user/email)]
          (is (= (d/entid db :user/email) (:db/id attr)))
          (is (= :user/email (:db/ident attr)))
          (is (= :db.type/string (:db/valueType attr)))
          (is (= :db.unique/identity (:db/unique attr)))))
      (testing "nil for what names no entity"
        (are [eid] (nil? (d/entity db eid))
          [:user/email "nobody@x"]
          :no/such-ident))
      (testing "an attribute the entity lacks"
        (let [e (d/entity db ada)]
          (is (nil? (:user/manager e)))
          (is (nil? (:no/such-attr e)))
          (is (= :none (get e :user/manager :none)))
          (is (= "Ada" (e :user/name)))
          (is (= "Ada" (get e :user/name)))
          (is (= ada (get e :db/id))))))))

(deftest navigation
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob cy i body c1 c2]} (load-data conn)
          db (d/db conn)
          e #(d/entity db %)
          names #(set (map :user/name %))]
      (testing "refs are entities"
        (is (= "Ada" (:user/name (:user/manager (e bob)))))
        (is (= "Ada" (-> (e i) :issue/assignee :user/manager :user/name)))
        (is (= ada (:db/id (:user/manager (e cy))))))
      (testing "a ref to an entity with an ident is that keyword"
        (is (= :status/active (:user/status (e ada)))))
      (testing "cardinality many gives sets"
        (is (= #{:math :code} (:user/tags (e ada))))
        (is (set? (:user/tags (e ada))))
        (is (set? (:user/friends (e bob))))
        (is (= #{"Ada" "Cy"} (names (:user/friends (e bob)))))
        (is (= #{"a" "b"} (set (map :comment/text (:issue/comments (e i)))))))
      (testing "reverse refs are sets of entities"
        (is (= #{"Bob" "Cy"} (names (:user/_manager (e ada)))))
        (is (set? (:user/_manager (e ada))))
        (is (= #{"Bob"} (names (:user/_friends (e cy)))))
        (is (= #{"Crash"} (set (map :issue/title (:issue/_assignee (e bob))))))
        (is (nil? (:user/_manager (e bob))))
        (is (nil? (:issue/_assignee (e ada)))))
      (testing "the reverse of a component attribute is one entity"
        (is (= i (:db/id (:issue/_comments (e c1)))))
        (is (= i (:db/id (:issue/_comments (e c2)))))
        (is (= i (:db/id (:issue/_body (e body)))))))))

(deftest touch
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob]} (load-data conn)
          db (d/db conn)
          a (d/touch (d/entity db ada))
          b (d/touch (d/entity db bob))]
      (is (= {:user/email "ada@x" :user/name "Ada" :user/tags #{:math :code}
              :user/status :status/active}
             (into {} a)))
      (is (= 4 (count a)))
      (is (= #{:user/email :user/name :user/manager :user/friends} (set (keys b))))
      (is (= ada (:db/id (:user/manager b))))
      (is (= #{"Ada" "Cy"} (set (map :user/name (:user/friends b))))))))

(deftest printing
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob]} (load-data conn)
          db (d/db conn)
          s (pr-str (d/entity db ada))
          bs (binding [*print-namespace-maps* false] (pr-str (d/entity db bob)))]
      (is (str/starts-with? s "#datalith/entity {"))
      (are [part] (str/includes? s part)
        (str ":db/id " ada) ":user/name \"Ada\"" ":user/email \"ada@x\"" ":user/tags #{"
        ":user/status :status/active")
      (is (str/includes? bs (str ":user/manager {:db/id " ada "}")))
      (is (str/includes? (with-out-str (pprint/pprint (d/entity db ada))) ":user/name \"Ada\""))
      (is (= "nil" (pr-str (d/entity db [:user/email "nobody@x"]))))
      (is (str/includes? (pr-str db) ":basis-t")))))

(deftest entities-are-values
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob]} (load-data conn)
          db (d/db conn)
          before (d/entity db bob)]
      (d/transact! conn [[:db/retractEntity ada] [:db/add bob :user/name "Robert"]])
      (testing "an entity reads the db value it came from"
        (is (= "Bob" (:user/name before)))
        (is (= "Ada" (:user/name (:user/manager before))))
        (is (= "Ada" (:user/name (d/entity db ada)))))
      (testing "the new value"
        (let [now (d/entity (d/db conn) bob)]
          (is (= "Robert" (:user/name now)))
          (is (nil? (:user/manager now)))
          (is (= #{"Cy"} (set (map :user/name (:user/friends now)))))
          (is (nil? (d/entity (d/db conn) [:user/email "ada@x"])))))
      (testing "entities of as-of values"
        (let [old (d/entity (d/as-of (d/db conn) (d/basis-t db)) bob)]
          (is (= "Bob" (:user/name old)))
          (is (= "Ada" (:user/name (:user/manager old))))))
      (testing "equality"
        (is (= (d/entity db bob) (d/entity db bob)))
        (is (not= (d/entity db bob) (d/entity db ada)))))))
