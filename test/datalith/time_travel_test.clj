(ns datalith.time-travel-test
  "Queries, pull, entities and datoms through as-of, since and history views,
  several database sources in one query, speculative `with` databases,
  tx-range, and old database values, on both stores.

  Datomic's meanings: `as-of t` sees what was true at t (inclusive; t, tx id
  or Date, a Date naming the last transaction at or before it); `since t`
  sees only datoms asserted after t and still current at the basis;
  `history` sees every assertion and retraction, with `?added` in the fifth
  position of a pattern. History views cannot be pulled, made entities of or
  extended with `with` (Datomic's `history`: \"can be used for datoms and
  index-range calls and queries, but not for entity or with calls\")."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]])
  (:import (java.util Date)))

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/manager {:db/valueType :db.type/ref}
   :issue/title {:db/valueType :db.type/string}
   :issue/assignee {:db/valueType :db.type/ref}
   :issue/body {:db/valueType :db.type/ref :db/isComponent true}
   :comment/text {:db/valueType :db.type/string}})

(defn- tick
  "Waits until the clock has moved, so that each transaction has its own instant."
  []
  (let [now (System/currentTimeMillis)]
    (while (<= (System/currentTimeMillis) (inc now)) (Thread/sleep 1))))

(defn- load-history
  "Four transactions:
    t1 ada (Ada, tags a b) and bob (Bob, manager ada)
    t2 ada renamed Ada L, tag a retracted, tag c added; issue i assigned to bob
    t3 i reassigned to ada; bob's email changed to robert@x
    t4 bob retracted entirely
  Returns {:ids {..} :t [t1 t2 t3 t4] :db db-after-t4}."
  [conn]
  (let [r1 (d/transact! conn [{:db/id "ada" :user/email "ada@x" :user/name "Ada" :user/tags #{:a :b}}
                              {:db/id "bob" :user/email "bob@x" :user/name "Bob" :user/manager "ada"}])
        {:strs [ada bob]} (:tempids r1)
        _ (tick)
        r2 (d/transact! conn [[:db/add ada :user/name "Ada L"] [:db/retract ada :user/tags :a]
                              [:db/add ada :user/tags :c]
                              {:db/id "i" :issue/title "Crash" :issue/assignee bob
                               :issue/body {:comment/text "It crashes"}}])
        i (get-in r2 [:tempids "i"])
        _ (tick)
        r3 (d/transact! conn [[:db/add i :issue/assignee ada] [:db/add bob :user/email "robert@x"]])
        _ (tick)
        r4 (d/transact! conn [[:db/retractEntity bob]])]
    {:ids {:ada ada :bob bob :i i :body (:db/id (:issue/body (d/pull (:db-after r2) '[*] i)))}
     :t (mapv (comp d/basis-t :db-after) [r1 r2 r3 r4])
     :db (:db-after r4)}))

(defn- tx-instant [db t]
  (d/q '[:find ?inst . :in $ ?tx :where [?tx :db/txInstant ?inst]] db (d/t->tx t)))

(defn- names [db]
  (d/q '[:find ?e ?n :where [?e :user/name ?n]] db))

(deftest as-of-views
  (each-store [conn {:schema schema}]
    (let [{{:keys [ada bob i body]} :ids [t1 t2 t3 t4] :t db :db} (load-history conn)]
      (testing "a t, a tx id and a Date name the same point"
        (are [point] (= #{[ada "Ada L"] [bob "Bob"]} (names (d/as-of db point)))
          t2
          (d/t->tx t2)
          (tx-instant db t2)
          (Date. (dec (.getTime ^Date (tx-instant db t3))))))
      (testing "q at each t"
        (are [t expected] (= expected (names (d/as-of db t)))
          0 #{}
          t1 #{[ada "Ada"] [bob "Bob"]}
          t2 #{[ada "Ada L"] [bob "Bob"]}
          t3 #{[ada "Ada L"] [bob "Bob"]}
          t4 #{[ada "Ada L"]}
          (+ t4 100) #{[ada "Ada L"]})
        (is (= #{[:a] [:b]} (d/q '[:find ?t :in $ ?e :where [?e :user/tags ?t]] (d/as-of db t1) ada)))
        (is (= #{["Crash" "Bob"]}
               (d/q '[:find ?title ?n :where [?i :issue/title ?title] [?i :issue/assignee ?u] [?u :user/name ?n]]
                    (d/as-of db t2))))
        (is (= 2 (d/q '[:find (count ?e) . :where [?e :user/email]] (d/as-of db t3)))))
      (testing "a Date before any user transaction sees none of them"
        (is (= #{} (names (d/as-of db (Date. (dec (.getTime ^Date (tx-instant db t1)))))))))
      (testing "pull"
        (are [t expected] (= expected (d/pull (d/as-of db t) '[* {:user/_manager [:user/name]}] ada))
          t1 {:db/id ada :user/email "ada@x" :user/name "Ada" :user/tags [:a :b]
              :user/_manager [{:user/name "Bob"}]}
          t2 {:db/id ada :user/email "ada@x" :user/name "Ada L" :user/tags [:b :c]
              :user/_manager [{:user/name "Bob"}]}
          t4 {:db/id ada :user/email "ada@x" :user/name "Ada L" :user/tags [:b :c]})
        (is (= {:issue/title "Crash" :issue/assignee {:user/name "Bob"}
                :issue/body {:db/id body :comment/text "It crashes"}}
               (d/pull (d/as-of db t2) '[:issue/title {:issue/assignee [:user/name]} :issue/body] i)))
        (is (nil? (d/pull (d/as-of db t1) '[:issue/title] i)))
        (is (nil? (d/pull (d/as-of db t4) '[:user/name] bob)))
        (testing "lookup refs resolve as of the view"
          (is (= {:user/name "Bob"} (d/pull (d/as-of db t2) [:user/name] [:user/email "bob@x"])))
          (is (nil? (d/pull (d/as-of db t3) [:user/name] [:user/email "bob@x"])))
          (is (= {:user/name "Bob"} (d/pull (d/as-of db t3) [:user/name] [:user/email "robert@x"])))
          (is (nil? (d/pull db [:user/name] [:user/email "robert@x"]))))
        (is (= [{:user/name "Ada"} {:user/name "Bob"}]
               (d/pull-many (d/as-of db t1) [:user/name] [ada bob])))
        (is (= #{[{:user/name "Bob"}]}
               (d/q '[:find (pull ?u [:user/name]) :where [_ :issue/assignee ?u]] (d/as-of db t2)))))
      (testing "entity"
        (let [e (d/entity (d/as-of db t2) i)]
          (is (= "Crash" (:issue/title e)))
          (is (= "Bob" (-> e :issue/assignee :user/name)))
          (is (= "Ada L" (-> e :issue/assignee :user/manager :user/name)))
          (is (= #{:b :c} (:user/tags (d/entity (d/as-of db t2) ada))))
          (is (= #{:a :b} (:user/tags (d/entity (d/as-of db t1) ada))))
          (is (= #{bob} (set (map :db/id (:user/_manager (d/entity (d/as-of db t3) ada))))))
          (is (nil? (:user/_manager (d/entity (d/as-of db t4) ada))))
          (is (= "Bob" (:user/name (d/entity (d/as-of db t1) [:user/email "bob@x"]))))
          (is (nil? (d/entity (d/as-of db t3) [:user/email "bob@x"])))))
      (testing "datoms"
        (is (= [[:user/email "ada@x"] [:user/name "Ada"] [:user/tags :a] [:user/tags :b]]
               (sort-by str (map (juxt :a :v) (d/datoms (d/as-of db t1) :eavt ada)))))
        (is (= [bob] (map :e (d/datoms (d/as-of db t3) :avet :user/email "robert@x"))))
        (is (= [i] (map :e (d/datoms (d/as-of db t2) :vaet bob :issue/assignee))))
        (is (empty? (d/datoms (d/as-of db t4) :vaet bob)))))))

(deftest since-views
  (each-store [conn {:schema schema}]
    (let [{{:keys [ada bob i]} :ids [t1 t2 t3 t4] :t db :db} (load-history conn)]
      (testing "q sees only what was asserted after t and is still current"
        ;; ?a binds attribute ids; their idents, asserted long ago, are read from $
        (are [point expected] (= expected (d/q '[:find ?e ?ident ?v :in $ $since
                                                 :where [$since ?e ?a ?v] [$ ?a :db/ident ?ident]
                                                 [(contains? #{:user/name :user/tags :user/email :issue/assignee} ?ident)]]
                                               db (d/since db point)))
          t1 #{[ada :user/name "Ada L"] [ada :user/tags :c] [i :issue/assignee ada]}
          (d/t->tx t2) #{[i :issue/assignee ada]}
          (tx-instant db t2) #{[i :issue/assignee ada]}
          t3 #{}
          0 #{[ada :user/email "ada@x"] [ada :user/name "Ada L"] [ada :user/tags :b]
              [ada :user/tags :c] [i :issue/assignee ada]}))
      (testing "since on an as-of view: between the two points"
        (is (= #{[ada "Ada L"]} (names (d/since (d/as-of db t2) t1))))
        (is (= #{[bob "robert@x"]}
               (d/q '[:find ?e ?m :where [?e :user/email ?m]] (d/since (d/as-of db t3) t2)))))
      (testing "pull and entity see only the new datoms"
        (is (= {:db/id ada :user/name "Ada L" :user/tags [:c]} (d/pull (d/since db t1) '[*] ada)))
        (is (= {:user/name "Ada L"} (d/pull (d/since db t1) [:user/name :user/email] ada)))
        (is (nil? (d/pull (d/since db t3) [:user/name] ada)))
        (is (= #{:c} (:user/tags (d/entity (d/since db t1) ada))))
        (is (nil? (:user/email (d/entity (d/since db t1) ada)))))
      (testing "datoms"
        (is (= [[:user/name "Ada L"] [:user/tags :c]]
               (map (juxt :a :v) (d/datoms (d/since db t1) :eavt ada))))
        (is (empty? (d/datoms (d/since db t4) :eavt ada))))
      (is (= t1 (d/since-t (d/since db t1))))
      (is (= t2 (d/as-of-t (d/as-of db t2)))))))

(deftest history-views
  (each-store [conn {:schema schema}]
    (let [{{:keys [ada bob i]} :ids [t1 t2 t3 t4] :t db :db} (load-history conn)
          h (d/history db)
          [tx1 tx2 tx3 tx4] (map d/t->tx [t1 t2 t3 t4])]
      (is (d/history? h))
      (testing "?tx and ?added are bindable"
        (is (= #{["Ada" tx1 true] ["Ada" tx2 false] ["Ada L" tx2 true]}
               (d/q '[:find ?n ?tx ?added :in $ ?e :where [?e :user/name ?n ?tx ?added]] h ada)))
        (is (= #{[:a tx1 true] [:b tx1 true] [:a tx2 false] [:c tx2 true]}
               (d/q '[:find ?v ?tx ?added :in $ ?e :where [?e :user/tags ?v ?tx ?added]] h ada)))
        (is (= #{[bob tx2 true] [bob tx3 false] [ada tx3 true]}
               (d/q '[:find ?u ?tx ?added :in $ ?i :where [?i :issue/assignee ?u ?tx ?added]] h i))))
      (testing "constants in the fifth position"
        (is (= #{["Ada"] ["Bob"]}
               (d/q '[:find ?n :where [_ :user/name ?n _ false]] h)))
        (is (= #{["Ada"] ["Ada L"] ["Bob"]}
               (d/q '[:find ?n :where [_ :user/name ?n _ true]] h)))
        (is (= #{["bob@x"] ["robert@x"]}
               (d/q '[:find ?m :where [?e :user/email ?m _ false]] h)))
        (is (= #{["bob@x"]} (d/q '[:find ?m :in $ ?tx :where [?e :user/email ?m ?tx false]] h tx3))))
      (testing "joins across history"
        (is (= #{["Bob" tx4]}
               (d/q '[:find ?n ?tx :where [?e :user/name ?n ?tx false] [?e :user/manager _ ?tx false]] h)))
        (is (= #{[t2 "Ada"] [t2 "Ada L"] [t1 "Ada"]}
               (d/q '[:find ?t ?n :in $ ?e
                      :where [?e :user/name ?n ?tx] [(datalith.core/tx->t ?tx) ?t]] h ada))))
      (testing "with as-of and since bounds"
        (is (= #{["Ada" true]}
               (d/q '[:find ?n ?added :in $ ?e :where [?e :user/name ?n _ ?added]] (d/history (d/as-of db t1)) ada)))
        (is (= #{["Ada" false] ["Ada L" true]}
               (d/q '[:find ?n ?added :in $ ?e :where [?e :user/name ?n _ ?added]] (d/history (d/since db t1)) ada)))
        (is (= #{["Ada" false] ["Ada L" true]}
               (d/q '[:find ?n ?added :in $ ?e :where [?e :user/name ?n _ ?added]]
                    (d/since (d/as-of h t2) t1) ada))))
      (testing "a history view in one source, the current db in another"
        (is (= #{["Bob"]}
               (d/q '[:find ?n :in $ $h :where [$h ?e :user/name ?n _ false] (not [$ ?e :user/name])] db h))))
      (testing "datoms"
        (is (= #{["Ada" tx1 true] ["Ada" tx2 false] ["Ada L" tx2 true]}
               (set (map (juxt :v :tx :added) (d/datoms h :eavt ada :user/name)))))
        (is (= #{[bob tx1 true] [bob tx4 false]}
               (set (map (juxt :e :tx :added) (d/datoms h :avet :user/name "Bob"))))))
      (testing "pull, entity and with are not for history views"
        (are [error f] (= error (try (f) :no-error
                                     (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))
          :pull/history #(d/pull h '[*] ada)
          :pull/history #(d/pull-many h [:user/name] [ada])
          :pull/history #(d/q '[:find (pull ?e [:user/name]) :where [?e :user/name]] h)
          :db/history #(d/entity h ada)
          :db/history #(d/with h [[:db/add ada :user/name "X"]]))))))

(deftest several-sources
  (each-store [conn {:schema schema}]
    (let [{{:keys [ada bob i]} :ids [t1 t2 t3] :t db :db} (load-history conn)]
      (testing "now and before in one query"
        (is (= #{[ada "Ada" "Ada L"]}
               (d/q '[:find ?e ?old ?new :in $ $before
                      :where [$before ?e :user/name ?old] [$ ?e :user/name ?new] [(not= ?old ?new)]]
                    db (d/as-of db t1))))
        (is (= #{[bob]}
               (d/q '[:find ?e :in $ $before :where [$before ?e :user/name] (not [$ ?e :user/name])]
                    db (d/as-of db t3)))))
      (testing "who the issue was assigned to before and after t3"
        (is (= #{["Bob" "Ada L"]}
               (d/q '[:find ?was ?now :in $t2 $t3 ?i
                      :where [$t2 ?i :issue/assignee ?u1] [$t2 ?u1 :user/name ?was]
                      [$t3 ?i :issue/assignee ?u2] [$t3 ?u2 :user/name ?now]]
                    (d/as-of db t2) (d/as-of db t3) i))))
      (testing "an as-of source, a since source and a collection"
        (is (= #{["Ada L" :c]}
               (d/q '[:find ?n ?tag :in $ $new [?tag ...]
                      :where [$new ?e :user/tags ?tag] [$ ?e :user/name ?n]]
                    (d/as-of db t2) (d/since db t1) [:a :b :c]))))
      (testing "pull from each source"
        (is (= [{:user/name "Ada"} {:user/name "Ada L"}]
               (d/q '[:find [(pull $before ?e [:user/name]) (pull $ ?e [:user/name])]
                      :in $ $before ?e :where [$before ?e :user/email]]
                    db (d/as-of db t1) ada)))))))

(deftest speculative-with
  (each-store [conn {:schema schema}]
    (let [{{:keys [ada]} :ids db :db} (load-history conn)
          {w1 :db-after tempids :tempids tx-data :tx-data}
          (d/with db [{:db/id "zed" :user/email "zed@x" :user/name "Zed" :user/manager ada}
                      [:db/add ada :user/tags :d]])
          zed (get tempids "zed")]
      (testing "the speculative db is queried and pulled like any"
        (is (some #(= [zed :user/name "Zed" true] ((juxt :e :a :v :added) %)) tx-data))
        (is (= #{[ada "Ada L"] [zed "Zed"]} (names w1)))
        (is (= {:db/id zed :user/email "zed@x" :user/name "Zed" :user/manager {:db/id ada}}
               (d/pull w1 '[*] zed)))
        (is (= {:user/name "Ada L" :user/tags [:b :c :d] :user/_manager [{:user/name "Zed"}]}
               (d/pull w1 '[:user/name :user/tags {:user/_manager [:user/name]}] ada)))
        (is (= "Zed" (:user/name (d/entity w1 [:user/email "zed@x"]))))
        (is (= #{[{:user/name "Zed"}]}
               (d/q '[:find (pull ?e [:user/name]) :where [?e :user/manager ?m] [?m :user/name "Ada L"]] w1)))
        (is (= [zed] (map :e (d/datoms w1 :avet :user/email "zed@x")))))
      (testing "with on a with"
        (let [{w2 :db-after} (d/with w1 [[:db/retract zed :user/manager ada] [:db/add zed :user/name "Zed 2"]])]
          (is (= {:user/name "Zed 2"} (d/pull w2 [:user/name :user/manager] zed)))
          (is (= #{[ada "Ada L"] [zed "Zed 2"]} (names w2)))
          (is (> (d/basis-t w2) (d/basis-t w1) (d/basis-t db)))
          (testing "its history and as-of views include the speculative transactions"
            (is (= #{["Zed" true] ["Zed" false] ["Zed 2" true]}
                   (d/q '[:find ?n ?added :in $ ?e :where [?e :user/name ?n _ ?added]] (d/history w2) zed)))
            (is (= {:user/name "Zed" :user/manager {:db/id ada}}
                   (d/pull (d/as-of w2 (d/basis-t w1)) [:user/name :user/manager] zed))))
          (testing "the dbs it came from are unchanged"
            (is (= {:user/name "Zed" :user/manager {:db/id ada}} (d/pull w1 [:user/name :user/manager] zed))))))
      (testing "nothing was written"
        (is (nil? (d/pull (d/db conn) [:user/name] zed)))
        (is (nil? (d/pull db [:user/name] [:user/email "zed@x"])))
        (is (= #{[ada "Ada L"]} (names (d/db conn))))
        (is (= (d/basis-t db) (d/basis-t (d/db conn)))))
      (testing "a real transaction after with"
        (d/transact! conn [{:user/email "yan@x" :user/name "Yan"}])
        (is (= #{[ada "Ada L"] [zed "Zed"]} (names w1)))
        (is (= #{"Ada L" "Yan"} (set (map second (names (d/db conn))))))))))

(deftest tx-range
  (each-store [conn {:schema schema}]
    (let [{{:keys [ada bob i]} :ids [t1 t2 t3 t4] :t db :db} (load-history conn)
          eav (fn [{:keys [data]}] (set (for [dd data :when (not= :db/txInstant (:a dd))]
                                          [(:e dd) (:a dd) (:v dd) (:added dd)])))]
      (testing "each transaction's datoms, with its t and tx id"
        (let [txs (d/tx-range (d/log conn) t1 nil)]
          (is (= [t1 t2 t3 t4] (map :t txs)))
          (is (= (map d/t->tx [t1 t2 t3 t4]) (map :tx txs)))
          (is (every? (fn [{:keys [tx data]}] (every? #(= tx (:tx %)) data)) txs))
          (is (every? (fn [{:keys [tx data]}] (some #(and (= tx (:e %)) (= :db/txInstant (:a %))) data)) txs))
          (is (= #{[ada :user/name "Ada" false] [ada :user/name "Ada L" true]
                   [ada :user/tags :a false] [ada :user/tags :c true]}
                 (set (filter #(= ada (first %)) (eav (second txs))))))
          (is (= #{[i :issue/assignee bob false] [i :issue/assignee ada true]
                   [bob :user/email "bob@x" false] [bob :user/email "robert@x" true]}
                 (eav (nth txs 2))))
          (is (= #{[bob :user/email "robert@x" false] [bob :user/name "Bob" false]
                   [bob :user/manager ada false]}
                 (eav (nth txs 3))))))
      (testing "start inclusive, end exclusive; t, tx id, Date or nil"
        (are [start end ts] (= ts (map :t (d/tx-range conn start end)))
          t2 t4 [t2 t3]
          t2 (inc t2) [t2]
          t2 t2 []
          (d/t->tx t2) (d/t->tx t4) [t2 t3]
          (tx-instant db t2) (tx-instant db t4) [t2 t3]
          t3 nil [t3 t4]
          (inc t4) nil []))
      (testing "from nil: the bootstrap and schema transactions too"
        (is (= (range 0 (inc t4)) (map :t (d/tx-range conn nil nil))))))))

(deftest the-log-in-queries
  ;; Datomic's tx-ids and tx-data functions, ?log bound to (d/log conn)
  (each-store [conn {:schema schema}]
    (let [{{:keys [ada bob]} :ids [t1 t2 t3 t4] :t db :db} (load-history conn)
          log (d/log conn)
          email (d/entid db :user/email)]
      (testing "tx-ids: start inclusive, end exclusive, as tx-range"
        (is (= (set (map (comp vector d/t->tx) [t2 t3]))
               (d/q '[:find ?tx :in ?log ?a ?b :where [(tx-ids ?log ?a ?b) [?tx ...]]] log t2 t4)))
        (is (= (set (map (comp vector d/t->tx) [t3 t4]))
               (d/q '[:find ?tx :in ?log ?a :where [(tx-ids ?log ?a nil) [?tx ...]]]
                    log (tx-instant db t3)))))
      (testing "tx-data: a transaction's datoms as [e a v tx added], attributes by id"
        (is (= #{[bob "bob@x" false] [bob "robert@x" true]}
               (d/q '[:find ?e ?v ?added :in $ ?log ?t ?t+1 :where
                      [(tx-ids ?log ?t ?t+1) [?tx ...]] [(tx-data ?log ?tx) [[?e ?a ?v _ ?added]]]
                      [?a :db/ident :user/email]]
                    db log t3 (inc t3))))
        (is (= #{[t3 email]}
               (d/q '[:find ?t ?a :in $ ?log ?e :where [(tx-ids ?log nil nil) [?tx ...]]
                      [(tx-data ?log ?tx) [[?e ?a ?v _ ?added]]] [(= ?v "robert@x")] [(true? ?added)]
                      [(datalith.core/tx->t ?tx) ?t]]
                    db log bob))))
      (testing "bad arguments"
        (are [query inputs] (= :query/invalid-call
                               (try (apply d/q query inputs) nil
                                    (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))
          '[:find ?tx :in ?log :where [(tx-ids ?log 0 10) [?tx ...]]] ["not a log"]
          '[:find ?e :in ?log :where [(tx-data ?log "t") [[?e]]]] [log])))))

(deftest old-values-unaffected
  (each-store [conn {:schema schema}]
    (let [{{:keys [ada]} :ids [_ t2] :t db :db} (load-history conn)
          observe (fn [v] [(names v)
                           (d/pull v '[*] ada)
                           (into {} (d/entity v ada))
                           (mapv (juxt :e :a :v :tx) (d/datoms v :eavt ada))
                           (d/q '[:find ?n ?added :in $ ?e :where [?e :user/name ?n _ ?added]] (d/history v) ada)
                           (d/basis-t v)])
          before (observe db)
          before-as-of (observe (d/as-of db t2))
          before-log (d/tx-range db nil nil)]
      (d/transact! conn [[:db/add ada :user/name "Ada M"] [:db/retract ada :user/tags :b]
                         {:user/email "new@x" :user/name "New"}])
      (d/transact! conn [[:db/retractEntity ada]])
      (is (= before (observe db)))
      (is (= before-as-of (observe (d/as-of db t2))))
      (testing "a db value's tx-range stops at its basis"
        (is (= before-log (d/tx-range db nil nil)))
        (is (= (+ 2 (count before-log)) (count (d/tx-range conn nil nil)))))
      (testing "while the new db sees the change"
        (is (nil? (d/pull (d/db conn) [:user/name] ada)))
        (is (= "Ada M" (:user/name (d/pull (d/as-of (d/db conn) (dec (d/basis-t (d/db conn)))) [:user/name] ada))))))))
