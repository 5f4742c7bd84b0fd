(ns datalith.datoms-test
  "Index access (datoms, seek-datoms, index-range), datoms as values, and
  time: basis-t, as-of, since, history, tx-range, old db values."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]])
  (:import (java.util Date)))

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/age {:db/valueType :db.type/long}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/friends {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :n/i {:db/valueType :db.type/long}})

(defn- load-data
  "Two users; returns {:ada :bob :tx}."
  [conn]
  (let [r (d/transact! conn [{:db/id "ada" :user/email "ada@x" :user/name "Ada" :user/age 36
                              :user/tags #{:a :b}}
                             {:db/id "bob" :user/email "bob@x" :user/name "Bob" :user/age 40
                              :user/friends ["ada"]}])]
    {:ada (get-in r [:tempids "ada"]) :bob (get-in r [:tempids "bob"])
     :tx (get-in r [:tempids :db/current-tx])}))

(defn- evs [ds] (map (juxt :e :a :v) ds))

(deftest datoms-by-components
  (each-store [conn {:schema schema}]
    (let [{:keys [ada bob tx]} (load-data conn)
          db (d/db conn)
          aid #(d/entid db %)]
      (testing "eavt"
        (are [components expected] (= expected (evs (apply d/datoms db :eavt components)))
          [ada :user/tags] [[ada :user/tags :a] [ada :user/tags :b]]
          [ada :user/tags :b] [[ada :user/tags :b]]
          [ada :user/tags :b tx] [[ada :user/tags :b]]
          [ada :user/tags :b (inc tx)] []
          [ada :user/tags :c] []
          [[:user/email "bob@x"] :user/friends] [[bob :user/friends ada]]
          [[:user/email "nobody@x"]] []
          [ada :no/such-attr] [])
        (let [ds (d/datoms db :eavt ada)]
          (is (= #{[:user/email "ada@x"] [:user/name "Ada"] [:user/age 36] [:user/tags :a]
                   [:user/tags :b]}
                 (set (map (juxt :a :v) ds))))
          (is (= (map (comp aid :a) ds) (sort (map (comp aid :a) ds))))))
      (testing "aevt"
        (are [components expected] (= expected (evs (apply d/datoms db :aevt components)))
          [:user/name] [[ada :user/name "Ada"] [bob :user/name "Bob"]]
          [:user/name bob] [[bob :user/name "Bob"]]
          [:user/name bob "Bob"] [[bob :user/name "Bob"]]
          [:user/name bob "Bob" tx] [[bob :user/name "Bob"]]
          [:user/name bob "Ada"] []
          [:user/friends] [[bob :user/friends ada]]))
      (testing "avet"
        (are [components expected] (= expected (evs (apply d/datoms db :avet components)))
          [:user/age] [[ada :user/age 36] [bob :user/age 40]]
          [:user/age 40] [[bob :user/age 40]]
          [:user/age 40 bob] [[bob :user/age 40]]
          [:user/age 40 bob tx] [[bob :user/age 40]]
          [:user/age 40 ada] []
          [:user/age "forty"] []
          [:user/email "ada@x"] [[ada :user/email "ada@x"]]
          [:user/friends [:user/email "ada@x"]] [[bob :user/friends ada]]))
      (testing "vaet"
        (are [components expected] (= expected (evs (apply d/datoms db :vaet components)))
          [ada] [[bob :user/friends ada]]
          [ada :user/friends] [[bob :user/friends ada]]
          [[:user/email "ada@x"] :user/friends bob] [[bob :user/friends ada]]
          [ada :user/friends bob tx] [[bob :user/friends ada]]
          [bob] []))
      (testing "no components: the whole index, in its order"
        (let [all (d/datoms db :eavt)
              key-of (juxt :e (comp aid :a))]
          (is (= (count all) (count (d/datoms db :aevt)) (count (d/datoms db :avet))))
          (is (= (map key-of all) (sort (map key-of all))))
          (is (every? (set (evs all)) (evs (d/datoms db :eavt ada))))
          (is (seq (d/datoms db :vaet)))
          (is (every? #(integer? (:v %)) (d/datoms db :vaet))))))))

(deftest datoms-as-values
  (each-store [conn {:schema schema}]
    (let [{:keys [ada tx]} (load-data conn)
          d (first (d/datoms (d/db conn) :eavt ada :user/name))
          [e a v t added] d]
      (is (= [ada :user/name "Ada" tx true] [e a v t added]))
      (is (= [ada :user/name "Ada" tx true] [(:e d) (:a d) (:v d) (:tx d) (:added d)]))
      (is (keyword? (:a d)))
      (is (= [ada :user/name "Ada" tx true] (seq d)))
      (is (= 5 (count d)))
      (is (= (str "#datalith/datom [" ada " :user/name \"Ada\" " tx " true]") (pr-str d)))
      (is (= d (first (d/datoms (d/db conn) :aevt :user/name ada))))
      (is (= #{d} (set (d/datoms (d/db conn) :avet :user/name "Ada")))))))

(deftest seek-datoms
  (each-store [conn {:schema schema}]
    (let [{:keys [ada bob]} (load-data conn)
          db (d/db conn)]
      (is (= (evs (d/datoms db :eavt bob))
             (take-while #(= bob (first %)) (evs (d/seek-datoms db :eavt bob)))))
      (is (= bob (:e (first (d/seek-datoms db :eavt bob)))))
      (is (some #(= (d/t->tx (d/basis-t db)) (:e %)) (d/seek-datoms db :eavt bob))
          "on to the end of the index")
      (is (= [[bob :user/age 40]] (take 1 (evs (d/seek-datoms db :avet :user/age 37)))))
      (is (= [[ada :user/age 36] [bob :user/age 40]]
             (take 2 (evs (d/seek-datoms db :avet :user/age)))))
      (is (= [[ada :user/tags :b]] (take 1 (evs (d/seek-datoms db :eavt ada :user/tags :aa)))))
      (is (not= :user/age (:a (nth (d/seek-datoms db :avet :user/age 37) 1 nil)))))))

(deftest index-range
  (each-store [conn {:schema schema}]
    (d/transact! conn (for [i (range 20)] {:n/i (* 2 i)}))
    (let [db (d/db conn)
          values #(map :v (d/index-range db :n/i %1 %2))]
      (are [start end expected] (= expected (values start end))
        nil nil (range 0 40 2)
        10 nil (range 10 40 2)
        11 nil (range 12 40 2)
        nil 10 (range 0 10 2)
        nil 11 (range 0 12 2)
        10 20 (range 10 20 2)
        10 11 [10]
        10 10 []
        20 10 []
        -5 3 [0 2]
        100 nil [])
      (is (empty? (d/index-range db :no/such-attr nil nil)))
      (is (every? #(= :n/i (:a %)) (d/index-range db :n/i nil nil))))))

(deftest large-results
  (each-store [conn {:schema schema}]
    (d/transact! conn (for [i (range 5000)] {:n/i (- 4999 i)}))
    (let [db (d/db conn)
          by-value (d/datoms db :avet :n/i)
          by-entity (d/datoms db :aevt :n/i)]
      (is (instance? clojure.lang.LazySeq by-value))
      (is (= (range 5000) (map :v by-value)))
      (is (= 5000 (count by-entity)))
      (is (apply < (map :e by-entity)))
      (is (= (range 4999 -1 -1) (map :v by-entity)))
      (testing "a lazy sequence keeps reading its db value across later transactions"
        (let [s (d/datoms db :avet :n/i)
              head (doall (take 600 s))]
          (d/transact! conn (for [d (take 3000 (d/datoms db :aevt :n/i))] [:db/retractEntity (:e d)]))
          (is (= 2000 (count (d/datoms (d/db conn) :avet :n/i))))
          (is (= (range 600) (map :v head)))
          (is (= (range 5000) (map :v s)))))
      (is (= (range 100 200) (map :v (take 100 (d/seek-datoms db :avet :n/i 100))))))))

(defn- tx-instant [db t]
  (:v (first (d/datoms db :eavt (d/t->tx t) :db/txInstant))))

(deftest time-travel
  (each-store [conn {:schema schema}]
    (let [{:keys [ada bob]} (load-data conn)
          t1 (d/basis-t (d/db conn))
          _ (Thread/sleep 3)
          db2 (:db-after (d/transact! conn [[:db/add ada :user/name "Ada L"]]))
          t2 (d/basis-t db2)
          _ (Thread/sleep 3)
          t3 (d/basis-t (:db-after (d/transact! conn [[:db/retract bob :user/age 40]
                                                      [:db/add bob :user/tags :new]])))
          db (d/db conn)
          name-at #(:user/name (d/entity % ada))]
      (is (= [t2 t3] [(+ t1 1) (+ t1 2)]))
      (testing "as-of by t, tx id and Date"
        (are [point] (let [old (d/as-of db point)]
                       (and (= "Ada" (name-at old))
                            (= 40 (:user/age (d/entity old bob)))
                            (= [[bob :user/age 40]] (evs (d/datoms old :eavt bob :user/age)))
                            (= t1 (d/as-of-t old))))
          t1 (d/t->tx t1) (tx-instant db t1))
        (is (= "Ada L" (name-at (d/as-of db t2))))
        (is (= "Ada L" (name-at (d/as-of db (tx-instant db t2)))))
        (is (= "Ada L" (name-at (d/as-of db (Date.)))))
        (is (nil? (:user/age (d/entity (d/as-of db t3) bob))))
        (is (empty? (d/datoms (d/as-of db 0) :aevt :user/name)))
        (is (= [[ada :user/age 36] [bob :user/age 40]] (evs (d/index-range (d/as-of db t2) :user/age nil nil))))
        (is (= (d/basis-t db) (d/basis-t (d/as-of db t1)))))
      (testing "since"
        (let [s (d/since db t1)]
          (is (= [[ada :user/name "Ada L"]] (evs (d/datoms s :aevt :user/name))))
          (is (= [[bob :user/tags :new]] (evs (d/datoms s :eavt bob))))
          (is (empty? (d/datoms s :avet :user/age)))
          (is (= t1 (d/since-t s)))
          (is (= [[bob :user/tags :new]] (evs (d/datoms (d/since db (tx-instant db t2)) :eavt bob))))
          (is (empty? (d/datoms (d/since db t3) :aevt :user/name)))))
      (testing "history: assertions and retractions, each with its tx"
        (let [h (d/history db)]
          (is (d/history? h))
          (is (= [["Ada" (d/t->tx t1) true] ["Ada" (d/t->tx t2) false] ["Ada L" (d/t->tx t2) true]]
                 (map (juxt :v :tx :added) (d/datoms h :eavt ada :user/name))))
          (is (= [[40 (d/t->tx t1) true] [40 (d/t->tx t3) false]]
                 (map (juxt :v :tx :added) (d/datoms h :avet :user/age 40))))
          (is (= [[36 true] [40 true] [40 false]]
                 (map (juxt :v :added) (d/datoms h :aevt :user/age))))
          (is (= [["Ada" true]] (map (juxt :v :added) (d/datoms (d/history (d/as-of db t1)) :eavt ada :user/name))))
          (is (= [["Ada" false] ["Ada L" true]]
                 (map (juxt :v :added) (d/datoms (d/history (d/since db t1)) :eavt ada :user/name))))))
      (testing "tx-range"
        (let [txs (d/tx-range conn nil nil)]
          (is (= (range 0 (inc t3)) (map :t txs)))
          (is (= (map d/t->tx (range 0 (inc t3))) (map :tx txs))))
        (let [facts (fn [tx] (set (for [[e a v _ added] (:data tx) :when (not= :db/txInstant a)]
                                    [e a v added])))
              [at-t2 at-t3 :as txs] (d/tx-range conn t2 nil)]
          (is (= 2 (count txs)))
          (is (= #{[ada :user/name "Ada" false] [ada :user/name "Ada L" true]} (facts at-t2)))
          (is (= #{[bob :user/age 40 false] [bob :user/tags :new true]} (facts at-t3))))
        (is (= [t2] (map :t (d/tx-range conn t2 t3))))
        (is (= [t2 t3] (map :t (d/tx-range conn (tx-instant db t2) nil))) "from a Date, inclusive")
        (is (= [t2] (map :t (d/tx-range conn (tx-instant db t2) (tx-instant db t3))))
            "to a Date, exclusive")
        (is (= [t2] (map :t (d/tx-range (d/db conn) (d/t->tx t2) (d/t->tx t3)))))
        (is (= [t1 t2] (map :t (d/tx-range db2 t1 nil))) "up to the basis of the db")))))

(deftest history-of-reasserted-values
  (each-store [conn {:schema schema}]
    (let [e (get-in (d/transact! conn [{:db/id "e" :user/tags #{:x}}]) [:tempids "e"])
          t1 (d/basis-t (d/db conn))]
      (d/transact! conn [[:db/retract e :user/tags :x] [:db/add e :user/tags :y]])
      (d/transact! conn [[:db/add e :user/tags :x]])
      (d/transact! conn [[:db/retract e :user/tags :x]])
      (d/transact! conn [[:db/add e :user/tags :x]])
      (let [db (d/db conn)
            txs (fn [ds] (map (juxt :v #(- (d/tx->t (:tx %)) t1) :added) ds))]
        (is (= [[:x 0 true] [:x 1 false] [:x 2 true] [:x 3 false] [:x 4 true] [:y 1 true]]
               (txs (d/datoms (d/history db) :eavt e :user/tags))))
        (is (= [[:x 2 true] [:x 3 false] [:x 4 true]]
               (txs (d/datoms (d/history (d/since db (inc t1))) :eavt e :user/tags))))
        (is (= [[:x 0 true] [:x 1 false] [:x 2 true] [:y 1 true]]
               (txs (d/datoms (d/history (d/as-of db (+ t1 2))) :avet :user/tags))))
        (are [t tags] (= tags (set (map :v (d/datoms (d/as-of db (+ t1 t)) :eavt e :user/tags))))
          0 #{:x} 1 #{:y} 2 #{:x :y} 3 #{:y} 4 #{:x :y})))))

(deftest basis-t
  (each-store [conn {}]
    (let [t0 (d/basis-t (d/db conn))]
      (is (= 0 t0))
      (is (= (range 1 11)
             (for [i (range 10)] (d/basis-t (:db-after (d/transact! conn [{:n/x i}]))))))
      (is (= 10 (d/basis-t (d/db conn))))
      (is (= 11 (d/basis-t (:db-after (d/transact! conn []))))))))

(deftest old-db-values
  (each-store [conn {:schema schema}]
    (let [{:keys [ada bob]} (load-data conn)
          db (d/db conn)
          snapshot (fn [db] {:eavt (vec (d/datoms db :eavt))
                             :avet (vec (d/datoms db :avet :user/age))
                             :vaet (vec (d/datoms db :vaet ada))
                             :range (vec (d/index-range db :user/age 30 50))
                             :name (:user/name (d/entity db ada))
                             :friends (set (map :db/id (:user/friends (d/entity db bob))))
                             :lookup (d/entid db [:user/email "ada@x"])})
          before (snapshot db)]
      (d/transact! conn [[:db/add ada :user/name "Ada L"] [:db/retract bob :user/age 40]])
      (d/transact! conn [[:db/retractEntity ada] {:user/email "cy@x" :user/age 45}])
      (d/transact! conn [[:db/retractEntity [:user/email "cy@x"]]])
      (is (= before (snapshot db)))
      (is (= (:eavt before) (vec (d/datoms db :eavt))))
      (let [now (snapshot (d/db conn))]
        (is (nil? (:name now)))
        (is (= #{} (:friends now)))
        (is (empty? (:avet now)))
        (is (nil? (:lookup now)))))))

(deftest no-history-keeps-snapshots
  (each-store [conn {:schema {:k/id {:db/unique :db.unique/identity}
                              :k/n {:db/valueType :db.type/long :db/noHistory true}}}]
    (d/transact! conn [{:k/id 1 :k/n 5}])
    (let [old (d/db conn)]
      (d/transact! conn [{:k/id 1 :k/n 6}])
      (testing "an older value still sees what it saw"
        (is (= [5] (map :v (d/datoms old :aevt :k/n))))
        (is (= [5] (map :v (d/datoms (d/as-of (d/db conn) (d/basis-t old)) :aevt :k/n)))))
      (testing "the history view leaves retracted :db/noHistory values out"
        (is (= #{[6 true]}
               (set (map (juxt :v :added) (d/datoms (d/history (d/db conn)) :aevt :k/n)))))))))

(deftest long-values-sharing-a-key-prefix-stay-in-value-order
  ;; a value longer than a key keeps a prefix and a hash there: runs of such keys are
  ;; sorted by value when read, and index-range compares values at its bounds
  (each-store [conn {:schema {:k/id {:db/unique :db.unique/identity}
                              :k/name {:db/valueType :db.type/string}}}]
    (let [ls (apply str (repeat 600 "x"))
          v #(str ls %)
          sfx (fn [ds] (apply str (map #(last (:v %)) ds)))]
      (d/transact! conn (vec (for [c "hgadbecf"] {:k/id (int c) :k/name (v c)})))
      (let [db (d/db conn)]
        (is (= "abcdefgh" (sfx (d/datoms db :avet :k/name))))
        (are [lo hi expected] (= expected (sfx (d/index-range db :k/name lo hi)))
          (v "c") (v "f") "cde"
          (v "c") nil     "cdefgh"
          nil     (v "c") "ab"
          (v "cc") (v "e") "d")
        (testing "chunked reads resume after a whole run"
          (d/transact! conn (vec (for [i (range 600)] {:k/id (+ 1000 i) :k/name (str ls "~" i)})))
          (let [all (d/datoms (d/db conn) :avet :k/name)]
            (is (= 608 (count all)))
            (is (= (sort (map :v all)) (map :v all)))))))))
