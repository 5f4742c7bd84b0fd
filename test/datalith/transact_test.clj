(ns datalith.transact-test
  "transact!: map and list forms, tempids, lookup refs, upserts, uniqueness,
  cardinality, retractEntity, cas, transaction functions, tx metadata, with,
  slots of many values. Entity ids are transact-ids-test's, values and nesting
  transact-values-test's; the schema and helpers they share are
  datalith.transact-support's."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]]
            [datalith.transact-support :refer [error-of facts lookup schema tx-facts]]))

(deftest map-form
  (each-store [conn {:schema schema}]
    (let [r (d/transact! conn [{:db/id "ada" :user/email "ada@x" :user/name "Ada" :user/age 36}])
          ada (get-in r [:tempids "ada"])]
      (is (= #{[:user/email "ada@x"] [:user/name "Ada"] [:user/age 36]} (facts (:db-after r) ada)))
      (is (= #{[ada :user/email "ada@x" true] [ada :user/name "Ada" true] [ada :user/age 36 true]}
             (tx-facts r)))
      (testing "a map with an existing id adds to that entity; {:tx-data ..} is tx-data too"
        (d/transact! conn {:tx-data [{:db/id ada :user/tags #{:admin}}]})
        (is (= #{[:user/email "ada@x"] [:user/name "Ada"] [:user/age 36] [:user/tags :admin]}
               (facts (d/db conn) ada)))))))

(deftest nested-maps
  (each-store [conn {:schema schema}]
    (testing "a nested map under a ref attribute is a new entity, or upserts"
      (let [r (d/transact! conn [{:db/id "i" :issue/title "Crash"
                                  :issue/assignee {:user/email "bob@x" :user/name "Bob"}}])
            i (get-in r [:tempids "i"])
            bob (lookup conn :user/email "bob@x")]
        (is (some? bob))
        (is (= #{[:issue/title "Crash"] [:issue/assignee bob]} (facts (d/db conn) i)))
        (let [r2 (d/transact! conn [{:db/id "j" :issue/title "Hang"
                                     :issue/assignee {:user/email "bob@x" :user/age 40}}])
              j (get-in r2 [:tempids "j"])]
          (is (= #{[:issue/title "Hang"] [:issue/assignee bob]} (facts (d/db conn) j)))
          (is (= #{[:user/email "bob@x"] [:user/name "Bob"] [:user/age 40]}
                 (facts (d/db conn) bob))))))
    (testing "nested maps in a cardinality-many ref, with and without tempids"
      (let [r (d/transact! conn [{:db/id "u" :user/email "u@x"
                                  :user/friends [{:user/email "f1@x"} {:db/id "f2" :user/email "f2@x"}]}])
            {:strs [u f2]} (:tempids r)
            f1 (lookup conn :user/email "f1@x")]
        (is (= f2 (lookup conn :user/email "f2@x")))
        (is (= #{f1 f2} (set (map :v (d/datoms (d/db conn) :eavt u :user/friends)))))))))

(deftest component-maps
  (each-store [conn {:schema schema}]
    (let [r (d/transact! conn [{:db/id "i" :issue/title "T"
                                :issue/body {:comment/text "body"}
                                :issue/comments [{:comment/text "a"}
                                                 {:comment/text "b"
                                                  :comment/replies [{:comment/text "b1"}]}]}])
          i (get-in r [:tempids "i"])
          db (d/db conn)
          texts (fn [es] (set (map #(:comment/text (d/entity db %)) es)))
          comments (map :v (d/datoms db :eavt i :issue/comments))]
      (is (= #{"a" "b"} (texts comments)))
      (is (= #{"body"} (texts (map :v (d/datoms db :eavt i :issue/body)))))
      (is (= #{"b1"} (texts (for [c comments, reply (d/datoms db :eavt c :comment/replies)]
                              (:v reply))))))))

(deftest reverse-refs
  (each-store [conn {:schema schema}]
    (let [{{:strs [i1 i2 i3]} :tempids}
          (d/transact! conn [{:db/id "i1" :issue/title "1"} {:db/id "i2" :issue/title "2"}
                             {:db/id "i3" :issue/title "3"}])
          assigned (fn [email]
                     (set (map :e (d/datoms (d/db conn) :vaet (lookup conn :user/email email)
                                            :issue/assignee))))]
      (are [tx email issues] (= issues (do (d/transact! conn tx) (assigned email)))
        ;; one entity
        [{:user/email "a@x" :issue/_assignee i1}] "a@x" #{i1}
        ;; a collection of entities
        [{:user/email "b@x" :issue/_assignee [i2 i3]}] "b@x" #{i2 i3})
      (testing "a lookup ref is one entity, not a collection"
        (d/transact! conn [{:user/email "u1@x"} {:user/email "u2@x"}])
        (d/transact! conn [{:db/id [:user/email "u1@x"] :user/_manager [:user/email "u2@x"]}])
        (is (= [(lookup conn :user/email "u1@x")]
               (map :v (d/datoms (d/db conn) :eavt [:user/email "u2@x"] :user/manager)))))
      (testing "a tempid, a nested map, a collection of lookup refs"
        (let [r (d/transact! conn [{:db/id "c" :user/email "c@x" :issue/_assignee "n"}
                                   {:db/id "n" :issue/title "new"}
                                   {:db/id "d" :user/email "d@x"
                                    :issue/_assignee {:db/id "m" :issue/title "nested"}}
                                   {:db/id [:user/email "a@x"]
                                    :user/_manager [[:user/email "b@x"] [:user/email "u1@x"]]}])
              {:strs [c n d m]} (:tempids r)
              db (d/db conn)
              a (lookup conn :user/email "a@x")]
          (is (= #{[:issue/title "new"] [:issue/assignee c]} (facts db n)))
          (is (= #{[:issue/title "nested"] [:issue/assignee d]} (facts db m)))
          (is (= #{(lookup conn :user/email "b@x") (lookup conn :user/email "u1@x")}
                 (set (map :e (d/datoms db :vaet a :user/manager))))))))))

(deftest list-forms
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [[:db/add "e" :user/name "A"] [:db/add "e" :user/age 1]
                                       [:db/add "e" :user/tags :a] [:db/add "e" :user/tags :b]])
                    [:tempids "e"])]
      (are [tx expected] (= expected (do (d/transact! conn tx) (facts (d/db conn) e)))
        [[:db/retract e :user/tags :a]] #{[:user/name "A"] [:user/age 1] [:user/tags :b]}
        [[:db/add e :user/tags :c]] #{[:user/name "A"] [:user/age 1] [:user/tags :b] [:user/tags :c]}
        [[:db/retract e :user/tags]] #{[:user/name "A"] [:user/age 1]}
        [[:db/retract e :user/age 1]] #{[:user/name "A"]}
        ;; retracting a value the entity does not have changes nothing
        [[:db/retract e :user/name "B"]] #{[:user/name "A"]}
        [[:db/retract e :user/age]] #{[:user/name "A"]}
        [[:db/add e :user/name "B"]] #{[:user/name "B"]}
        ;; attributes given by entity id
        [[:db/add e (d/entid (d/db conn) :user/age) 7]] #{[:user/name "B"] [:user/age 7]}))))

(deftest retract-entity
  (each-store [conn {:schema schema}]
    (let [r (d/transact! conn [{:db/id "u" :user/email "u@x" :user/name "U"}
                               {:db/id "v" :user/email "v@x" :user/friends ["u"] :user/manager "u"}
                               {:db/id "i" :issue/title "I" :issue/assignee "u"
                                :issue/body {:db/id "b" :comment/text "body"}
                                :issue/comments [{:db/id "c1" :comment/text "a"
                                                  :comment/replies [{:db/id "r" :comment/text "r"}]}
                                                 {:db/id "c2" :comment/text "b"}]}])
          {:strs [u v i b c1 c2 r]} (:tempids r)]
      (testing "components are retracted recursively, referenced entities are not"
        (let [rep (d/transact! conn [[:db/retractEntity i]])
              db (d/db conn)]
          (is (every? #(empty? (d/datoms db :eavt %)) [i b c1 c2 r]))
          (is (= #{[:user/email "u@x"] [:user/name "U"]} (facts db u)))
          (is (= 10 (count (tx-facts rep))))
          (is (every? (fn [[_ _ _ added]] (false? added)) (tx-facts rep)))))
      (testing "refs pointing at the entity are retracted too"
        (d/transact! conn [[:db.fn/retractEntity [:user/email "u@x"]]])
        (let [db (d/db conn)]
          (is (empty? (d/datoms db :eavt u)))
          (is (empty? (d/datoms db :vaet u)))
          (is (= #{[:user/email "v@x"]} (facts db v)))))
      (testing "retracting an entity with no datoms changes nothing"
        (is (= #{} (tx-facts (d/transact! conn [[:db/retractEntity u]]))))))))

;; Datomic refuses (:db.error/datoms-conflict) a transaction that retracts two values of a
;; cardinality-one attribute of one entity, whether either is held, and whether by :db/retract or by
;; the retraction of the entity; one value retracted twice, values of a cardinality-many attribute,
;; and a retraction beside the assertion of a new value are fine. Each case as Datomic Local 1.0.291
;; answered it (datalith.bench.differential found the difference).
(deftest retracting-two-values-of-a-cardinality-one-attribute-conflicts
  (each-store [conn {:schema schema}]
    (let [{:strs [u m]} (:tempids (d/transact! conn [{:db/id "u" :user/email "u@x" :user/name "U"
                                                        :user/tags [:a :b] :user/manager "m"}
                                                       {:db/id "m" :user/email "m@x"}]))
          refused (fn [tx-data]
                    (let [before (d/basis-t (d/db conn))
                          e (try (d/transact! conn tx-data) nil (catch clojure.lang.ExceptionInfo e e))]
                      (is (= before (d/basis-t (d/db conn))) (pr-str tx-data))
                      (ex-data e)))
          accepted (fn [tx-data] (:tx-data (d/with (d/db conn) tx-data)))]
      (testing "refused: two values, held or not"
        (doseq [tx [[[:db/retract u :user/name "U"] [:db/retract u :user/name "V"]]
                    [[:db/retract u :user/name "V"] [:db/retract u :user/name "W"]]
                    [[:db/retractEntity u] [:db/retract u :user/name "V"]]
                    [[:db/retract u :user/name "V"] [:db/retractEntity u]]
                    [[:db/retract u :user/name] [:db/retract u :user/name "V"]]
                    [[:db/retract u :user/manager u] [:db/retract u :user/manager m]]]]
          (let [data (refused tx)]
            (is (= :tx/conflict (:error data)) (pr-str tx))
            (is (= u (:entity data)) (pr-str tx))
            (is (#{:user/name :user/manager} (:attribute data)) (pr-str tx)))))
      (testing "accepted"
        (are [tx] (some? (accepted tx))
          [[:db/retract u :user/name "U"] [:db/retract u :user/name "U"]]
          [[:db/retract u :user/name "V"] [:db/retract u :user/name "V"]]
          [[:db/retract u :user/tags :a] [:db/retract u :user/tags :c]]
          [[:db/add u :user/name "V"] [:db/retract u :user/name "U"]]
          [[:db/add u :user/name "V"] [:db/retract u :user/name "W"]]
          [[:db/retractEntity m] [:db/retract u :user/manager m]]
          [[:db/retractEntity u] [:db/retractEntity u]]
          [[:db/cas u :user/name "U" "V"] [:db/retract u :user/name "W"]])))))

(deftest a-map-of-db-id-alone-asserts-nothing
  ;; Datomic Local 1.0.291 takes each of the first group as a transaction of its instant
  ;; alone (datalith.bench.tx-differential found the lookup ref)
  (each-store [conn {:schema schema}]
    (let [u (get-in (d/transact! conn [{:db/id "u" :user/email "u@x"}]) [:tempids "u"])
          user-datoms #(count (remove (fn [x] (= :db/txInstant (:a x))) (:tx-data %)))]
      (testing "taken, and nothing written but the transaction's instant"
        (doseq [tx [[{:db/id [:user/email "nobody@x"]}]
                    [{:db/id :no/such-ident}]
                    [{:db/id [:user/email "u@x"]}]
                    [{:db/id u}]
                    [{:db/id "t"}]
                    [{:db/id [:user/email "nobody@x"]} {:db/id "v" :user/name "V"}]]]
          (let [before (set (d/datoms (d/db conn) :eavt))
                r (d/transact! conn tx)]
            (is (= (if (= 2 (count tx)) 1 0) (user-datoms r)) (pr-str tx))
            (is (every? before (remove #(= "V" (:v %))
                                       (remove #(= :db/txInstant (:a %)) (d/datoms (d/db conn) :eavt))))
                (pr-str tx)))))
      (testing "an id that is no entity reference is refused, and so is a lookup ref that names
               nothing where it is a value"
        (is (= :tx/invalid-entity (error-of #(d/transact! conn [{:db/id 1.5}]))))
        (is (= :tx/invalid-lookup-ref (error-of #(d/transact! conn [{:db/id [:user/name "x"]}]))))
        (is (= :tx/lookup-ref-not-found
               (error-of #(d/transact! conn [{:db/id "w" :user/name "W"
                                              :user/manager {:db/id [:user/email "nobody@x"]}}]))))))))

(deftest cas
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [{:db/id "e" :user/age 1}]) [:tempids "e"])
          age #(:user/age (d/entity (d/db conn) e))
          named #(:user/name (d/entity (d/db conn) e))]
      (are [tx result value] (and (= result (error-of #(d/transact! conn tx))) (= value (age)))
        [[:db/cas e :user/age 1 2]] :no-error 2
        [[:db/cas e :user/age 1 3]] :tx/cas-failed 2
        [[:db.fn/cas e :user/age 2 3]] :no-error 3
        [[:db/cas e :user/age nil 4]] :tx/cas-failed 3
        [[:db/cas e :user/age 3 3]] :no-error 3)
      (testing "a nil old value means the attribute is absent"
        (is (= :no-error (error-of #(d/transact! conn [[:db/cas e :user/name nil "A"]]))))
        (is (= "A" (named)))
        (is (= :tx/cas-failed (error-of #(d/transact! conn [[:db/cas e :user/name nil "B"]]))))
        (is (= "A" (named))))
      (testing "cas on a ref attribute, the values as lookup refs"
        (d/transact! conn [{:user/email "m1@x"} {:user/email "m2@x"}])
        (d/transact! conn [[:db/cas e :user/manager nil [:user/email "m1@x"]]])
        (d/transact! conn [[:db/cas e :user/manager [:user/email "m1@x"] [:user/email "m2@x"]]])
        (is (= "m2@x" (:user/email (:user/manager (d/entity (d/db conn) e)))))))))

;; transaction functions: (f db & args) -> tx-data

(defn add-years [db e n]
  [[:db/add e :user/age (+ n (:user/age (d/entity db e)))]])

(defn make-user [_db email user-name]
  [{:db/id email :user/email email :user/name user-name}])

(defn make-users [_db & specs]
  (for [[email user-name] specs] (list `make-user email user-name)))

(defn record-basis [db e]
  [[:db/add e :user/age (d/basis-t db)]])

(deftest transaction-functions
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [{:db/id "e" :user/age 30}]) [:tempids "e"])]
      (testing "a fully qualified symbol is called with the db and the arguments"
        (d/transact! conn [(list `add-years e 5)])
        (is (= 35 (:user/age (d/entity (d/db conn) e))))
        (d/transact! conn `[(add-years ~e 1) [:db/add ~e :user/name "E"]])
        (is (= 36 (:user/age (d/entity (d/db conn) e))))
        (is (= "E" (:user/name (d/entity (d/db conn) e)))))
      (testing "the db passed in is the one before the transaction"
        (let [t (d/basis-t (d/db conn))]
          (d/transact! conn [(list `record-basis e)])
          (is (= t (:user/age (d/entity (d/db conn) e))))))
      (testing "functions may return calls of more functions; their tempids are reported"
        (let [r (d/transact! conn [(list `make-users ["a@x" "A"] ["b@x" "B"])])]
          (is (= (lookup conn :user/email "a@x") (get-in r [:tempids "a@x"])))
          (is (= "B" (:user/name (d/entity (d/db conn) [:user/email "b@x"]))))))
      (testing "the datoms of functions join those of the rest of the transaction"
        (let [r (d/transact! conn [(list `make-user "c" "C") [:db/add "c" :user/age 3]])
              c (get-in r [:tempids "c"])]
          (is (= #{[:user/email "c"] [:user/name "C"] [:user/age 3]} (facts (d/db conn) c))))))))

(deftest tempids
  (each-store [conn {:schema schema}]
    (let [r (d/transact! conn [[:db/add "a" :user/name "A"]
                               [:db/add -1 :user/name "B"]
                               [:db/add "a" :user/friends -1]
                               {:db/id -1 :user/friends "a"}
                               {:db/id "c" :user/name "C"}
                               [:db/add "datomic.tx" :tx/source "test"]])
          {:strs [a c] b -1 tx :db/current-tx} (:tempids r)
          db (:db-after r)]
      (is (every? (:tempids r) ["a" -1 "c" :db/current-tx]))
      (is (= 3 (count (set [a b c]))))
      (is (every? #(and (nat-int? %) (< % (d/t->tx 0))) [a b c]))
      (is (= #{[:user/name "A"] [:user/friends b]} (facts db a)))
      (is (= #{[:user/name "B"] [:user/friends a]} (facts db b)))
      (is (= (d/t->tx (d/basis-t db)) tx))
      (is (= "test" (:tx/source (d/entity db tx))))
      (testing "each transaction gives new ids"
        (let [a2 (get-in (d/transact! conn [{:db/id "a" :user/name "A2"}]) [:tempids "a"])]
          (is (not (contains? #{a b c} a2))))))))

(deftest lookup-refs
  (each-store [conn {:schema schema}]
    (d/transact! conn [{:user/email "ada@x"} {:user/email "bob@x"}])
    (let [ada (lookup conn :user/email "ada@x")
          bob (lookup conn :user/email "bob@x")]
      (are [tx e expected] (= expected (do (d/transact! conn tx) (facts (d/db conn) e)))
        [[:db/add [:user/email "ada@x"] :user/name "Ada"]]
        ada #{[:user/email "ada@x"] [:user/name "Ada"]}

        [{:db/id [:user/email "ada@x"] :user/age 37}]
        ada #{[:user/email "ada@x"] [:user/name "Ada"] [:user/age 37]}

        [[:db/add [:user/email "bob@x"] :user/manager [:user/email "ada@x"]]]
        bob #{[:user/email "bob@x"] [:user/manager ada]}

        [{:db/id [:user/email "bob@x"] :user/friends [[:user/email "ada@x"]]}]
        bob #{[:user/email "bob@x"] [:user/manager ada] [:user/friends ada]}

        [[:db/retract [:user/email "bob@x"] :user/friends [:user/email "ada@x"]]]
        bob #{[:user/email "bob@x"] [:user/manager ada]}

        ;; a single lookup ref as the value of a cardinality-many ref
        [{:db/id [:user/email "bob@x"] :user/friends [:user/email "ada@x"]}]
        bob #{[:user/email "bob@x"] [:user/manager ada] [:user/friends ada]}))))

(deftest upserts
  (each-store [conn {:schema schema}]
    (d/transact! conn [{:user/email "ada@x" :user/name "Ada" :user/handle "ada"}
                       {:user/email "bob@x" :user/handle "bob"}])
    (let [ada (lookup conn :user/email "ada@x")
          bob (lookup conn :user/email "bob@x")
          entities #(count (d/datoms (d/db conn) :aevt :user/email))]
      (testing "a map without :db/id upserts through its identity"
        (let [r (d/transact! conn [{:user/email "ada@x" :user/name "Ada L"}])]
          (is (= 2 (entities)))
          (is (= #{[ada :user/name "Ada" false] [ada :user/name "Ada L" true]} (tx-facts r)))))
      (testing "a tempid upserts and is reported"
        (let [r (d/transact! conn [{:db/id "t" :user/handle "bob" :user/age 50}])]
          (is (= bob (get-in r [:tempids "t"])))
          (is (= 50 (:user/age (d/entity (d/db conn) bob))))))
      (testing "a tempid used in list forms upserts"
        (let [r (d/transact! conn [[:db/add "t" :user/email "bob@x"] [:db/add "t" :user/age 51]])]
          (is (= bob (get-in r [:tempids "t"])))
          (is (= 2 (entities)))))
      (testing "two tempids with one new identity value become one entity"
        (let [r (d/transact! conn [{:db/id "x" :user/email "new@x"}
                                   {:db/id "y" :user/email "new@x" :user/name "New"}])
              {:strs [x y]} (:tempids r)]
          (is (= x y))
          (is (= 3 (entities)))
          (is (= #{[:user/email "new@x"] [:user/name "New"]} (facts (d/db conn) x)))))
      (testing "two identities naming different entities conflict"
        (is (= :tx/upsert-conflict
               (error-of #(d/transact! conn [{:user/email "ada@x" :user/handle "bob"}]))))
        (is (= :tx/upsert-conflict
               (error-of #(d/transact! conn [{:db/id "t" :user/email "ada@x"}
                                             {:db/id "t" :user/handle "bob"}])))))
      (testing "a unique identity on an entity id that already has another value is a unique conflict"
        (is (= :tx/unique (error-of #(d/transact! conn [[:db/add bob :user/email "ada@x"]]))))))))

(deftest unique-value
  (each-store [conn {:schema schema}]
    (d/transact! conn [{:db/id "a" :user/email "a@x" :user/ssn "1"}
                       {:db/id "b" :user/email "b@x" :user/ssn "2"}])
    (let [a (lookup conn :user/email "a@x")
          b (lookup conn :user/email "b@x")
          ssn #(:user/ssn (d/entity (d/db conn) %))]
      (are [tx result] (= result (error-of #(d/transact! conn tx)))
        [[:db/add b :user/ssn "1"]] :tx/unique
        ;; no upsert through :db.unique/value
        [{:user/ssn "1" :user/name "X"}] :tx/unique
        [{:db/id "n" :user/ssn "2"}] :tx/unique
        ;; two new entities with one value
        [{:user/ssn "3"} {:user/ssn "3"}] :tx/unique
        ;; the value moves when the old holder gives it up in the same transaction
        [[:db/retract a :user/ssn "1"] [:db/add b :user/ssn "1"]] :no-error)
      (is (= [nil "1"] [(ssn a) (ssn b)])))))

(deftest order-of-tx-data-does-not-matter
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [{:db/id "e" :user/name "A" :user/age 1 :user/tags #{:a}}])
                    [:tempids "e"])
          db (d/db conn)
          outcome (fn [tx]
                    (try (facts (:db-after (d/with db tx)) e)
                         (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))
          unchanged (facts db e)]
      (are [tx expected] (= expected (outcome tx) (outcome (reverse tx)))
        ;; one triple asserted and retracted, whether it exists or not
        [[:db/add e :user/name "A"] [:db/retract e :user/name "A"]] :tx/conflict
        [[:db/add e :user/name "B"] [:db/retract e :user/name "B"]] :tx/conflict
        [[:db/add e :user/tags :a] [:db/retract e :user/tags :a]] :tx/conflict
        ;; two values of a cardinality-one attribute, one of them the current one
        [[:db/add e :user/name "A"] [:db/add e :user/name "B"]] :tx/conflict
        [[:db/add e :user/name "B"] [:db/add e :user/name "C"]] :tx/conflict
        ;; a new value survives retracting every value of the attribute, or the entity
        [[:db/add e :user/name "B"] [:db/retract e :user/name]]
        #{[:user/name "B"] [:user/age 1] [:user/tags :a]}
        [[:db/add e :user/tags :b] [:db/retract e :user/tags]]
        #{[:user/name "A"] [:user/age 1] [:user/tags :b]}
        [[:db/add e :user/age 2] [:db/retractEntity e]] #{[:user/age 2]}
        ;; but a current value cannot be both kept and retracted
        [[:db/add e :user/name "A"] [:db/retract e :user/name]] :tx/conflict
        [[:db/add e :user/age 1] [:db/retractEntity e]] :tx/conflict
        ;; retracting the value a cardinality-one assertion replaces
        [[:db/add e :user/name "B"] [:db/retract e :user/name "A"]]
        #{[:user/name "B"] [:user/age 1] [:user/tags :a]}
        ;; cas compares with the value before the transaction
        [[:db/cas e :user/age 1 2] [:db/add e :user/name "B"]]
        #{[:user/name "B"] [:user/age 2] [:user/tags :a]}
        [[:db/cas e :user/age 1 2] [:db/add e :user/age 3]] :tx/conflict
        [[:db/cas e :user/age 1 2] [:db/retract e :user/age 1]]
        #{[:user/name "A"] [:user/age 2] [:user/tags :a]}
        ;; redundant assertions
        [[:db/add e :user/name "A"] [:db/add e :user/tags :a]] unchanged))))

(deftest cardinality-many
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [{:db/id "e" :user/tags #{:a :b}}]) [:tempids "e"])
          tags #(:user/tags (d/entity (d/db conn) e))]
      (is (= #{:a :b} (tags)))
      (are [tx expected] (= expected (do (d/transact! conn tx) (tags)))
        [{:db/id e :user/tags [:b :c]}] #{:a :b :c}
        [{:db/id e :user/tags :d}] #{:a :b :c :d}
        [[:db/retract e :user/tags :b]] #{:a :c :d}
        [[:db/add e :user/tags :a]] #{:a :c :d}))))

(deftest redundant-assertions
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [{:db/id "e" :user/name "A" :user/tags #{:a}}]) [:tempids "e"])
          t (d/basis-t (d/db conn))
          r (d/transact! conn [{:db/id e :user/name "A" :user/tags [:a]} [:db/add e :user/name "A"]])]
      (is (= #{} (tx-facts r)))
      (is (= [:db/txInstant] (map :a (:tx-data r))))
      (is (= (inc t) (d/basis-t (d/db conn)))))))

(deftest cardinality-one-replacement
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [{:db/id "e" :user/name "A" :user/age 1}]) [:tempids "e"])
          r (d/transact! conn [[:db/add e :user/name "B"]])]
      (is (= #{[e :user/name "A" false] [e :user/name "B" true]} (tx-facts r)))
      (is (= #{[:user/name "B"] [:user/age 1]} (facts (d/db conn) e)))
      (testing "on a schemaless attribute, across value types"
        (d/transact! conn [[:db/add e :free/x "s"]])
        (let [r (d/transact! conn [[:db/add e :free/x 42]])]
          (is (= #{[e :free/x "s" false] [e :free/x 42 true]} (tx-facts r))))))))

(deftest tx-metadata
  (each-store [conn {:schema schema}]
    (let [before (System/currentTimeMillis)
          r (d/transact! conn [{:user/email "a@x"} {:db/id "datomic.tx" :tx/source "import"}])
          tx (get-in r [:tempids :db/current-tx])
          tx-entity (d/entity (:db-after r) tx)
          inst (:db/txInstant tx-entity)]
      (is (= tx (d/t->tx (d/basis-t (:db-after r)))))
      (is (= (d/basis-t (:db-after r)) (d/tx->t tx)))
      (is (= "import" (:tx/source tx-entity)))
      (is (instance? java.util.Date inst))
      (is (<= before (.getTime ^java.util.Date inst) (System/currentTimeMillis)))
      (is (every? #(= tx (:tx %)) (:tx-data r)))
      (is (contains? (set (map (juxt :e :a) (:tx-data r))) [tx :db/txInstant]))
      (testing "every transaction gets a :db/txInstant"
        (let [tx2 (get-in (d/transact! conn []) [:tempids :db/current-tx])]
          (is (= [:db/txInstant] (map :a (d/datoms (d/db conn) :eavt tx2))))))
      (testing "a given :db/txInstant is used, and instants never go back in time"
        (let [later (java.util.Date. (+ (System/currentTimeMillis) 60000))
              instant-of #(:db/txInstant (d/entity (d/db conn) (get-in % [:tempids :db/current-tx])))]
          (is (= later (instant-of (d/transact! conn [{:db/id "datomic.tx" :db/txInstant later}]))))
          (is (= :tx/past-instant
                 (error-of #(d/transact! conn [[:db/add "datomic.tx" :db/txInstant
                                                #inst "2000-01-01"]]))))
          (is (= later (instant-of (d/transact! conn [])))))))))

(deftest with-speculative
  (each-store [conn {:schema schema}]
    (d/transact! conn [{:user/email "a@x" :user/name "A" :user/age 1}])
    (let [db0 (d/db conn)
          a (d/entid db0 [:user/email "a@x"])
          r (d/with db0 [{:db/id "w" :user/email "w@x"} [:db/retract a :user/name "A"]])
          wdb (:db-after r)
          w (get-in r [:tempids "w"])]
      (testing "the real db is unchanged"
        (is (= (d/basis-t db0) (d/basis-t (d/db conn))))
        (is (nil? (d/entid (d/db conn) [:user/email "w@x"])))
        (is (= "A" (:user/name (d/entity (d/db conn) a)))))
      (testing "the with-db sees the speculative transaction"
        (is (= (inc (d/basis-t db0)) (d/basis-t wdb)))
        (is (= w (:db/id (d/entity wdb [:user/email "w@x"]))))
        (is (= [w] (map :e (d/datoms wdb :avet :user/email "w@x"))))
        (is (nil? (:user/name (d/entity wdb a))))
        (is (empty? (d/datoms wdb :eavt a :user/name)))
        (is (= #{[w :user/email "w@x" true] [a :user/name "A" false]} (tx-facts r))))
      (testing "with on a with-db"
        (let [r2 (d/with wdb [[:db/add [:user/email "w@x"] :user/name "W"]])
              wdb2 (:db-after r2)]
          (is (= "W" (:user/name (d/entity wdb2 w))))
          (is (nil? (:user/name (d/entity wdb w))))
          (is (= (+ 2 (d/basis-t db0)) (d/basis-t wdb2)))
          (is (= #{[:user/email "w@x"] [:user/name "W"]} (facts wdb2 w)))))
      (testing "as-of a with-db"
        (let [old (d/as-of wdb (d/basis-t db0))]
          (is (= "A" (:user/name (d/entity old a))))
          (is (nil? (d/entid old [:user/email "w@x"])))
          (is (= [["A" true] ["A" false]]
                 (map (juxt :v :added) (d/datoms (d/history wdb) :eavt a :user/name))))))
      (testing "schema in a with-db"
        (let [sdb (:db-after (d/with wdb [{:db/ident :user/code :db/valueType :db.type/string
                                          :db/unique :db.unique/identity}]))
              cdb (:db-after (d/with sdb [{:user/code "c1" :user/name "C"}]))]
          (is (contains? (d/schema sdb) :user/code))
          (is (not (contains? (d/schema (d/db conn)) :user/code)))
          (is (= "C" (:user/name (d/entity cdb [:user/code "c1"]))))))
      (testing "later real transactions do not show through a with-db"
        (d/transact! conn [{:user/email "later@x"} [:db/add a :user/name "A2"]
                           [:db/retract a :user/age 1]])
        (is (nil? (d/entid wdb [:user/email "later@x"])))
        (is (= 1 (:user/age (d/entity wdb a))))
        (is (= [1] (map :v (d/datoms wdb :eavt a :user/age))))
        (is (empty? (d/datoms wdb :eavt a :user/name)))
        (is (= "A2" (:user/name (d/entity (d/db conn) a))))
        (is (nil? (d/entid (d/db conn) [:user/email "w@x"])))))))

;; h-txcpu: a slot (entity, attribute) holding more values than its linear scan handles
;; (Slots indexes them past 8): adds, redundant adds, retractions and conflicts still agree.
(deftest slots-with-many-values
  (each-store [conn {:schema schema}]
    (let [tags (fn [from to] (set (map #(keyword (str "t" %)) (range from to))))
          r (d/transact! conn [{:db/id "e" :user/tags (tags 0 20)}])
          e (get-in r [:tempids "e"])
          tags-of #(set (map :v (d/datoms (d/db conn) :eavt e :user/tags)))]
      (is (= (tags 0 20) (tags-of)))
      (is (= 20 (count (tx-facts r))))
      (testing "retract ten, assert ten new, re-assert a held one and one twice: only changes"
        (let [r (d/transact! conn (concat (for [t (tags 0 10)] [:db/retract e :user/tags t])
                                          (for [t (tags 20 30)] [:db/add e :user/tags t])
                                          [[:db/add e :user/tags :t15] [:db/add e :user/tags :t21]]))]
          (is (= (into (set (for [t (tags 0 10)] [e :user/tags t false]))
                       (for [t (tags 20 30)] [e :user/tags t true]))
                 (tx-facts r)))
          (is (= (tags 10 30) (tags-of)))))
      (testing "asserting and retracting one value among many is a conflict, and writes nothing"
        (are [tx-data] (= :tx/conflict (error-of #(d/transact! conn tx-data)))
          (concat (for [t (tags 30 45)] [:db/add e :user/tags t]) [[:db/retract e :user/tags :t40]])
          (concat [[:db/retract e :user/tags :t12]] (for [t (tags 5 20)] [:db/add e :user/tags t]))
          (concat (for [t (tags 10 25)] [:db/retract e :user/tags t]) [[:db/add e :user/tags :t24]]))
        (is (= (tags 10 30) (tags-of))))
      (testing "retracting the attribute among many new values keeps only the new ones"
        (let [r (d/transact! conn (cons [:db/retract e :user/tags]
                                        (for [t (tags 40 52)] [:db/add e :user/tags t])))]
          (is (= (into (set (for [t (tags 10 30)] [e :user/tags t false]))
                       (for [t (tags 40 52)] [e :user/tags t true]))
                 (tx-facts r)))
          (is (= (tags 40 52) (tags-of))))))))
