(ns datalith.transact-ids-test
  "transact! and entity ids: explicit ids are never allocated to new entities or
  attributes, also after reopening; transaction ids as entities; \"datomic.tx\" in
  the tempids; tempids must name an entity; retractEntity of what names nothing."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :as tu :refer [each-store]]
            [datalith.transact-support :refer [error-of facts schema tx-facts]]))

;; ---------------------------------------------------------------- entity ids

(defn- next-id
  "An id just above every entity id `db` holds: the id the allocator would give next."
  [db]
  (inc (reduce max 0 (keep #(when (< (:e %) (d/t->tx 0)) (:e %)) (d/datoms db :eavt)))))

(defn- new-ids
  "The ids a report's transaction gave new entities and new attributes."
  [report]
  (into (set (vals (dissoc (:tempids report) :db/current-tx "datomic.tx")))
        (keep #(when (and (= :db/ident (:a %)) (:added %)) (:e %)) (:tx-data report))))

(deftest named-ids-are-never-allocated
  ;; An explicit id is an entity's, whether or not it has datoms yet: the
  ;; allocator never gives it to a new entity or to an attribute installed on
  ;; first use, in the transaction that names it or later.
  (each-store [conn {:schema schema}]
    (testing "the report's case: an attribute installed next to an explicit id"
      (let [n (next-id (d/db conn))
            r (d/transact! conn [[:db/add n :user/name "A"] [:db/add (inc n) :free/age 1]])
            db (:db-after r)]
        (is (= {:db/id (inc n) :free/age 1} (d/pull db '[*] (inc n))))
        (is (= {:db/id n :user/name "A"} (d/pull db '[*] n)))
        (is (not (contains? #{n (inc n)} (d/entid db :free/age))))))
    (are [named] (let [n (next-id (d/db conn))
                       r (d/transact! conn (into [{:db/id "t" :user/name "T"}
                                                  [:db/add "u" (keyword "auto" (str "a" n)) 1]]
                                                 (named n)))
                       later (d/transact! conn [{:db/id "v" :user/name "V"}
                                                [:db/add "v" (keyword "auto" (str "b" n)) 2]])]
                   (and (is (empty? (filter #{n (inc n)} (new-ids r))) (pr-str (named n)))
                        (is (empty? (filter #{n (inc n)} (new-ids later))) (pr-str (named n)))))
      #(vector [:db/add % :user/name "x"] [:db/add (inc %) :user/age 1])
      #(vector {:db/id (inc %) :user/age 1} {:db/id % :user/name "y"})
      #(vector {:user/email (str % "@x") :user/friends [% (inc %)]})
      #(vector [:db/add "w" :user/manager (inc %)] [:db/add "w" :user/friends %]
               [:db/add "w" :user/name "W"])
      #(vector [:db/retract % :user/name "x"] [:db/retract (inc %) :user/age 1])
      #(vector [:db/retractEntity (inc %)] [:db/retractEntity %])
      #(vector {:db/id (inc %)} {:db/id %})
      #(vector [:db/cas % :user/age nil 1] [:db/cas (inc %) :user/age nil 2]))))

(deftest named-ids-survive-reopening
  (let [dir (tu/temp-dir)]
    (try
      (let [n (with-open [conn (d/connect (.getPath dir) {:schema schema})]
                (let [n (next-id (d/db conn))
                      r (d/transact! conn [[:db/add "a" :re/first 1] [:db/add n :user/name "N"]
                                           [:db/retract (+ n 5) :user/name "never there"]])]
                  (is (not= n (d/entid (:db-after r) :re/first)))
                  n))]
        (with-open [conn (d/connect (.getPath dir) {:schema schema})]
          (let [ids (new-ids (d/transact! conn (for [i (range 8)]
                                                 [:db/add (str "t" i) (keyword "re" (str "a" i)) i])))]
            (is (= 16 (count ids)))
            (is (every? #(> % (+ n 5)) ids)))))
      (finally (tu/delete-tree dir)))))

(deftest transaction-ids-as-entities
  ;; Ids from (t->tx 0) up are transactions: an existing one (or this one)
  ;; takes metadata, any other is refused, as Datomic's invalid-entity-id.
  (each-store [conn {:schema schema}]
    (let [r1 (d/transact! conn [{:user/email "a@x"}])
          tx1 (get-in r1 [:tempids :db/current-tx])
          inst1 (:db/txInstant (d/entity (d/db conn) tx1))
          this-tx #(d/t->tx (inc (d/basis-t (d/db conn))))]
      (testing "an existing transaction takes metadata"
        (d/transact! conn [[:db/add tx1 :tx/source "backfill"]])
        (is (= "backfill" (:tx/source (d/entity (d/db conn) tx1)))))
      (testing "this transaction's own id names it, as \"datomic.tx\" does"
        (let [tx (this-tx)
              r (d/transact! conn [[:db/add tx :tx/source "self"] [:db/add "datomic.tx" :user/age 3]])]
          (is (= tx (get-in r [:tempids :db/current-tx])))
          (is (= #{[:tx/source "self"] [:user/age 3]}
                 (set (remove #(= :db/txInstant (first %)) (facts (d/db conn) tx)))))))
      (testing "a transaction that does not exist is not an entity"
        (are [tx] (= :tx/invalid-entity-id (error-of #(d/transact! conn (tx (this-tx)))))
          (constantly [[:db/add 285873023227265 :user/name "V"]])
          #(vector [:db/add (inc %) :user/name "V"])
          #(vector {:db/id (+ % 5) :user/name "V"})
          #(vector [:db/add [:user/email "a@x"] :user/manager (inc %)])
          #(vector [:db/retract (inc %) :user/name "V"])
          #(vector [:db/retractEntity (inc %)])
          (constantly [[:db/add "x" :user/friends Long/MAX_VALUE]])))
      (testing ":db/txInstant belongs to the transaction being made"
        (are [tx] (= :tx/tx-instant (error-of #(d/transact! conn tx)))
          [[:db/add tx1 :db/txInstant (java.util.Date.)]]
          [[:db/retract tx1 :db/txInstant inst1]]
          [[:db/retract tx1 :db/txInstant]]
          [[:db/add "x" :db/txInstant (java.util.Date.)]]
          [[:db/add [:user/email "a@x"] :db/txInstant (java.util.Date.)]]
          [[:db/retract "datomic.tx" :db/txInstant inst1]]))
      (testing "retracting a transaction entity retracts its metadata, not its instant"
        (d/transact! conn [[:db/retractEntity tx1]])
        (is (= #{[:db/txInstant inst1]} (facts (d/db conn) tx1)))))))

(deftest datomic-tx-in-tempids
  (each-store [conn {:schema schema}]
    (let [r (d/transact! conn [[:db/add "datomic.tx" :tx/source "import"] {:user/email "a@x"}])
          tx (get-in r [:tempids :db/current-tx])]
      (is (= tx (get-in r [:tempids "datomic.tx"])))
      (is (= "import" (:tx/source (d/entity (d/db conn) tx)))))
    (testing "also for a map, and a ref to the transaction; not when unused"
      (are [tx used] (let [r (d/transact! conn tx)]
                       (= (when used (get-in r [:tempids :db/current-tx]))
                          (get-in r [:tempids "datomic.tx"])))
        [{:db/id "datomic.tx" :tx/source "m"}] true
        [{:db/id "e" :user/manager "datomic.tx"}] true
        [{:user/email "b@x"}] false))))

(deftest tempids-must-name-an-entity
  ;; Datomic: "tempid used only as value in transaction". A tempid stands for
  ;; an entity the transaction asserts something about.
  (each-store [conn {:schema schema}]
    (are [tx] (= :tx/tempid-only-value (error-of #(d/transact! conn tx)))
      [{:db/id "a"} [:db/add "b" :user/name "B"] [:db/add "b" :user/manager "a"]]
      [[:db/add "b" :user/name "B"] [:db/add "b" :user/manager "a"]]
      [{:db/id "b" :user/name "B" :user/friends ["a" "c"]} {:db/id "c" :user/name "C"}]
      [{:db/id "a" :user/_manager "b"} {:db/id "b" :user/name "B"}]
      [{:user/_manager "b"} {:db/id "b" :user/name "B"}]
      [[:db/retract "a" :user/name "x"]]
      [[:db/retractEntity "a"]])
    (is (= [1 []] [(d/basis-t (d/db conn)) (vec (d/datoms (d/db conn) :aevt :user/name))])
        "nothing was written (t 1 installed the schema)")
    (testing "a tempid asserted anywhere in the transaction may be a ref target"
      (let [r (d/transact! conn [[:db/add "b" :user/manager "a"] {:db/id "b" :user/name "B"}
                                 {:db/id "a" :user/name "A"}])]
        (is (= "A" (-> (d/entity (d/db conn) (get-in r [:tempids "b"])) :user/manager :user/name)))))
    (testing "a map with nothing but a tempid names nothing: no id, no error"
      (let [r (d/transact! conn [{:db/id "nothing"} {:db/id "c" :user/name "C"} {}])]
        (is (= #{"c" :db/current-tx} (set (keys (:tempids r)))))))))

(deftest retract-entity-of-nothing
  ;; Datomic's retractEntity retracts what the entity has: nothing when a
  ;; lookup ref or ident names no entity. The other operations need one.
  (each-store [conn {:schema schema}]
    (d/transact! conn [{:user/email "a@x" :user/name "A"}])
    (are [tx result] (= result (let [r (try (d/transact! conn tx)
                                            (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex))))]
                                 (if (map? r) (set (map rest (tx-facts r))) r)))
      [[:db/retractEntity [:user/email "nobody@x"]]] #{}
      [[:db.fn/retractEntity [:user/email "nobody@x"]]] #{}
      [[:db/retractEntity :no/such-ident]] #{}
      [[:db/retractEntity [:user/email "nobody@x"]] {:user/email "b@x"}] #{[:user/email "b@x" true]}
      [[:db/retract [:user/email "nobody@x"] :user/name "A"]] :tx/lookup-ref-not-found
      [[:db/retract [:user/email "nobody@x"] :user/name]] :tx/lookup-ref-not-found
      [[:db/add [:user/email "nobody@x"] :user/name "A"]] :tx/lookup-ref-not-found
      [[:db/cas [:user/email "nobody@x"] :user/age nil 1]] :tx/lookup-ref-not-found
      [[:db/retract :no/such-ident :user/name "A"]] :tx/unknown-ident
      [[:db/retractEntity [:user/name "A"]]] :tx/invalid-lookup-ref
      [[:db/retractEntity [:no/attr "x"]]] :tx/invalid-lookup-ref)
    (is (= "A" (:user/name (d/entity (d/db conn) [:user/email "a@x"]))))))
