(ns datalith.query-explain-test
  "d/explain: the plan as data, and the planner's choices it shows: selective
  clauses first, ranges pushed into AVET scans, lookup joins from small inputs."
  (:require [clojure.test :refer [are deftest is testing]]
            [datalith.core :as d]
            [datalith.naive-query :as naive]
            [datalith.naive-where :as nw]
            [datalith.test-util :refer [each-store]]))

(def schema
  {:item/id {:db/valueType :db.type/long :db/unique :db.unique/identity}
   :item/score {:db/valueType :db.type/long :db/index true}
   :item/group {:db/valueType :db.type/long}
   :item/name {:db/valueType :db.type/string}})

(def n 3000)

(defn- load! [conn]
  (d/transact! conn (for [i (range n)]
                      {:item/id i :item/score (mod (* i 7) 1000) :item/group (mod i 10)
                       :item/name (str "item-" i)})))

(defn- plan
  "[clause method] of each step of the explained query, in run order."
  [query & inputs]
  (mapv (juxt :clause :method) (:clauses (apply d/explain query inputs))))

(defn- method-of [query clause & inputs]
  (some (fn [[c m]] (when (= c clause) m)) (apply plan query inputs)))

(deftest explain-shape
  (each-store [conn {:schema schema}]
    (load! conn)
    (let [db (d/db conn)
          query '[:find ?name :in $ ?id :where [?e :item/id ?id] [?e :item/name ?name]]
          e (d/explain query db 42)]
      (is (= #{["item-42"]} (d/q query db 42)) "explain runs the same query q runs")
      (is (= 1 (:result-size e)))
      (is (string? (:query e)))
      (is (= '[[?e :item/id ?id] [?e :item/name ?name]] (mapv :clause (:clauses e))))
      (is (every? keyword? (map :method (:clauses e))))
      (is (every? #(and (integer? (:rows %)) (number? (:ms %))) (:clauses e)))
      (is (= [1 1] (mapv :rows (:clauses e))) "rows after each clause")
      (testing "filters, functions, not and or are named as such; the steps of not and or nest"
        (let [steps (:clauses (d/explain '[:find ?e :where [?e :item/id 5] [(pos? ?e)] [(inc ?e) ?f]
                                           (not [?e :item/group 9]) (or [?e :item/group 5] [?e :item/group 6])]
                                         db))]
          (is (= [:scan-avet :filter :function :anti-join :union] (mapv :method steps)))
          (is (= '[[[?e :item/group 9]] [[?e :item/group 5] [?e :item/group 6]]]
                 (mapv #(mapv :clause (:clauses %)) (drop 3 steps))))))
      (testing "a rule call is one step"
        (is (= [:scan-avet :rule]
               (mapv second (plan '[:find ?e :in $ % :where [?e :item/id 5] (g ?e)]
                                  db '[[(g ?x) [?x :item/group 5]]]))))))))

(deftest selective-clauses-first
  (each-store [conn {:schema schema}]
    (load! conn)
    (let [db (d/db conn)]
      (testing "a unique-attribute lookup runs first even when written last"
        (are [query first-clause] (= first-clause (ffirst (plan query db)))
          '[:find ?s :where [?e :item/score ?s] [?e :item/group ?g] [?e :item/id 42]]
          '[?e :item/id 42]

          '[:find ?s :where [?e :item/name ?x] [?e :item/score ?s] [?e :item/name "item-7"]]
          '[?e :item/name "item-7"]

          '[:find ?s ?g :where [?f :item/group ?g] [?e :item/score ?s] [?e :item/id 42] [?f :item/id 43]]
          '[?e :item/id 42]))
      (testing "the rest joins on what is bound, by entity id (one entity: in EAVT, both
                patterns from one position, a star join)"
        (is (= [['[?e :item/id 42] :scan-avet]
                ['[?e :item/score ?s] :star-join-eavt]
                ['[?e :item/group ?g] :star-join-eavt]]
               (plan '[:find ?s ?g :where [?e :item/score ?s] [?e :item/group ?g] [?e :item/id 42]] db))))
      (testing "a predicate runs as soon as its variables are bound"
        (let [clauses (mapv first (plan '[:find ?g :where [(even? ?s)] [?e :item/group ?g] [?e :item/name ?x]
                                          [?e :item/score ?s] [?e :item/id 42]]
                                        db))
              at #(.indexOf ^java.util.List clauses %)]
          (is (= 0 (at '[?e :item/id 42])))
          (is (= (inc (at '[?e :item/score ?s])) (at '[(even? ?s)])))))
      (testing "an or that binds its variables waits for the selective lookup"
        (is (= '[[?e :item/id 5] (or [?e :item/group 5] [?e :item/group 6])]
               (mapv first (plan '[:find ?e :where (or [?e :item/group 5] [?e :item/group 6]) [?e :item/id 5]] db))))))))

(deftest ranges-in-avet-scans
  (each-store [conn {:schema schema}]
    (load! conn)
    (let [db (d/db conn)]
      (are [query] (let [p (plan query db)]
                     (and (= :scan-avet (second (first p)))
                          (= '[?e :item/score ?s] (ffirst p))))
        '[:find ?e :where [?e :item/score ?s] [(< ?s 4)]]
        '[:find ?e :where [?e :item/score ?s] [(>= ?s 990)]]
        '[:find ?e :where [?e :item/score ?s] [(< 10 ?s)] [(< ?s 20)]]
        ;; written after an unselective pattern: the range makes it the cheaper one
        '[:find ?e :where [?e :item/group ?g] [?e :item/score ?s] [(< ?s 4)]])
      (testing "the scan returns only the range, with its bounds exact"
        (are [query result] (= result (set (d/q query db)))
          '[:find [?s ...] :where [?e :item/score ?s] [(< ?s 3)]]                   #{0 1 2}
          '[:find [?s ...] :where [?e :item/score ?s] [(<= ?s 2)]]                  #{0 1 2}
          '[:find [?s ...] :where [?e :item/score ?s] [(> ?s 997)]]                 #{998 999}
          '[:find [?s ...] :where [?e :item/score ?s] [(>= 997 ?s)] [(> ?s 995)]]   #{996 997}
          '[:find [?s ...] :where [?e :item/score ?s] [(< ?s 2.5)]]                 #{0 1 2}
          '[:find [?s ...] :where [?e :item/score ?s] [(> ?s 998.5)]]               #{999}
          '[:find [?s ...] :where [?e :item/score ?s] [(< ?s -1)]]                  #{})
        (is (= 3 (:rows (first (:clauses (d/explain '[:find ?e :where [?e :item/score ?s] [(< ?s 1)]] db)))))
            "three items score 0, and the scan read only them")))))

(deftest lookup-joins
  (each-store [conn {:schema schema}]
    (load! conn)
    (let [db (d/db conn)]
      (testing "a pattern joined to a small bound relation looks each binding up"
        (are [query inputs clause method] (= method (apply method-of query clause db inputs))
          '[:find ?s :in $ [?id ...] :where [?e :item/id ?id] [?e :item/score ?s]]
          [[1 2 3]] '[?e :item/id ?id] :lookup-join-avet

          '[:find ?s :in $ [?id ...] :where [?e :item/id ?id] [?e :item/score ?s]]
          [[1 2 3]] '[?e :item/score ?s] :lookup-join-eavt

          '[:find ?s :in $ [?id ...] :where [?e :item/id ?id] [?e :item/score ?s]]
          [(range 100)] '[?e :item/score ?s] :lookup-join-aevt

          ;; binding nothing new, it only checks that each binding has a match
          '[:find ?e :in $ [?e ...] :where [?e :item/group 3]]
          [[1 2 3]] '[?e :item/group 3] :semi-join-lookup-aevt

          '[:find ?e :in $ ?name :where [?e :item/name ?name]]
          ["item-9"] '[?e :item/name ?name] :lookup-join-avet))
      (testing "bound entities are looked up while few; once they are more than one in twenty of
                the attribute's datoms, one scan kept to them meets them all"
        (let [es (vec (sort (d/q '[:find [?e ...] :where [?e :item/id]] db)))
              q '[:find ?e ?s :in $ [?e ...] :where [?e :item/score ?s]]
              scores (fn [xs] (set (for [e xs] [e (:item/score (d/pull db [:item/score] e))])))]
          (are [k method] (let [xs (take-nth 7 (take (* 7 k) es))]
                            (= [method (scores xs)]
                               [(method-of q '[?e :item/score ?s] db xs) (d/q q db xs)]))
            100 :lookup-join-aevt
            200 :hash-join-aevt)))
      (testing "the lookups find the same rows a scan does"
        (let [ids (range 0 3000 7)]
          (is (= (frequencies (for [i ids] [(mod (* i 7) 1000)]))
                 (frequencies (d/q '[:find ?s :with ?e :in $ [?id ...] :where [?e :item/id ?id] [?e :item/score ?s]]
                                   db ids)))))))))

(deftest hash-joins-keep-to-bound-entities
  (each-store [conn {:schema schema}]
    (load! conn)
    (let [db (d/db conn)
          q '[:find ?e ?name :in $ [?e ...] :where [?e :item/name ?name]]
          ids (vec (sort (d/q '[:find [?e ...] :where [?e :item/id]] db)))
          named (fn [es] (set (for [e es] [e (:item/name (d/pull db [:item/name] e))])))
          bound (fn [xs] [(method-of q '[?e :item/name ?name] db xs) (d/q q db xs)])]
      (testing "ids close together (a bitmap), as ints or longs, with values that name no entity"
        (let [some-ids (take-nth 2 ids)]
          (is (= [:hash-join-aevt (named some-ids)]
                 (bound (concat some-ids [-4 "x" 2.5]))))
          (is (= [:hash-join-aevt (named some-ids)]
                 (bound (map int some-ids))))))
      (testing "long values (a prefix and a hash in the key), and a view that merges history"
        (let [some-ids (take-nth 2 ids)
              long-name #(apply str "item-" % (repeat 400 "x"))
              before (d/db conn)]
          (d/transact! conn (for [e (take-nth 3 ids)] [:db/add e :item/name (long-name e)]))
          (let [db (d/db conn)
                named (fn [db es] (set (for [e es] [e (:item/name (d/pull db [:item/name] e))])))]
            (is (= [:hash-join-aevt (named db some-ids)]
                   [(method-of q '[?e :item/name ?name] db some-ids) (d/q q db some-ids)]))
            (is (= (named before some-ids) (d/q q (d/as-of db (d/basis-t before)) some-ids))))))
      (testing "bound rows with more than the entity, several to an entity, met by rank in the bitmap"
        (let [q2 '[:find ?e ?tag ?name :in $ [[?e ?tag]] :where [?e :item/name ?name]]
              some-ids (take-nth 2 ids)
              rows (concat (for [e some-ids] [e :a])
                           (for [e (take-nth 3 some-ids)] [(int e) :b])
                           [[-4 :c] [(+ 10 (peek ids)) :d]])
              expect (set (for [[e tag] rows :let [e (long e)] :when (some #{e} ids)]
                            [e tag (:item/name (d/pull db [:item/name] e))]))]
          (is (= [:hash-join-aevt expect]
                 [(method-of q2 '[?e :item/name ?name] db rows) (d/q q2 db rows)]))
          (testing "and a value that is no id, joined by hashing"
            (is (= expect (d/q q2 db (conj (vec rows) ["x" :e])))))))
      (testing "ids far apart (a hash set)"
        (let [some-ids (take-nth 3 ids)]
          (is (= [:hash-join-aevt (named some-ids)]
                 (bound (concat some-ids [(bit-shift-left 1 50) Long/MAX_VALUE])))))))))

(deftest plans-follow-the-data
  (testing "a cached plan is made again once a source has grown fourfold"
    (each-store [conn {:schema {:t/a {:db/valueType :db.type/long}
                                :t/b {:db/valueType :db.type/long}}}]
      (let [query '[:find ?e :where [?e :t/a 1] [?e :t/b 1]]]
        (d/transact! conn (concat (for [i (range 2)] {:t/a 1 :t/b 1})
                                  (for [i (range 50)] {:t/a 2 :t/b 1})))
        (is (= '[?e :t/a 1] (ffirst (plan query (d/db conn)))) "two datoms before fifty")
        (d/transact! conn (for [i (range 20000)] {:t/a 1}))
        (is (= '[?e :t/b 1] (ffirst (plan query (d/db conn)))) "52 datoms before 20,002")
        (is (= 2 (count (d/q query (d/db conn)))))))))

(defn- methods-of [query & inputs]
  (mapv :method (:clauses (apply d/explain query inputs))))

(deftest existential-variables
  (each-store [conn {:schema schema}]
    (load! conn)
    (let [db (d/db conn)]
      (testing "a blank or a variable no later clause needs is projected away: a repeated
                pattern on blanks is a semi-join, which cannot multiply the rows"
        (let [query '[:find ?g :where [_ :item/group ?g] [_ :item/group ?g] [_ :item/group ?g]]
              e (d/explain query db)]
          (is (= (set (for [g (range 10)] [g])) (d/q query db)))
          (is (= :scan-aevt (:method (first (:clauses e)))))
          (is (every? #(re-find #"^semi-join" (name %)) (map :method (rest (:clauses e)))))
          (is (= [10 10 10] (mapv :rows (:clauses e))))))
      (testing "a variable only the pattern binds and nothing reads"
        (is (= [:scan-avet :semi-join-lookup-aevt]
               (methods-of '[:find ?e :where [?e :item/id 5] [?e :item/name ?unused]] db)))
        (is (= [:scan-avet :lookup-join-eavt]
               (methods-of '[:find ?e ?n :where [?e :item/id 5] [?e :item/name ?n]] db))))
      (testing "a pattern sharing nothing with the rest, nothing of it found: one match is enough"
        (let [query '[:find ?e :where [?e :item/id 5] [?x :item/group 3]]]
          (is (= [:scan-avet :exists-avet] (methods-of query db)))
          (is (= 1 (count (d/q query db)))))
        (is (= #{} (d/q '[:find ?e :where [?e :item/id 5] [?x :item/group 42]] db))
            "and none empties the result"))
      (testing "a group of clauses joined to the rest only by a not-join: its own variables are
                existential, so the not-join never meets a product of the two groups"
        (let [query '[:find (count-distinct ?i) . :in $ ?g ?s
                      :where [?i :item/group ?g] [?j :item/score ?s]
                      (not-join [?s ?g] [(identity ?s) ?x] [(< ?g 5)])]
              e (d/explain query db 7 14)]
          (is (= 300 (d/q query db 7 14)))
          (is (nil? (d/q query db 3 14)))
          (is (every? #(<= % 300) (map :rows (:clauses e))) (pr-str (:clauses e))))))))

(deftest semi-joins-answer-each-binding-once
  ;; an entity with several matching datoms matched once per datom; the answer, a set,
  ;; held the entity twice (found by the query property test)
  (each-store [conn {:schema {:p/tags {:db/cardinality :db.cardinality/many}}}]
    (let [ids (:tempids (d/transact! conn [{:db/id "x" :p/tags #{1 2 3}} {:db/id "y" :p/tags 4}]))
          [x y] (map ids ["x" "y"])
          db (d/db conn)]
      (are [query inputs answer]
           (let [r (apply d/q query db inputs)]
             (and (= answer r) (= (count answer) (count (seq r)))))
        '[:find ?e :in $ $2 [[?e ?n]] :where [$2 ?a ?b] [?e :p/tags ?t ?tx]]
        [[[0 0]] [[x 0]]]
        #{[x]}

        '[:find ?e :in $ [[?e ?n]] :where [?e :p/tags ?t]]
        [[[x 0] [y 1] [x 2]]]
        #{[x] [y]}

        '[:find ?e :in $ [?e ...] :where [?e :p/tags ?t]]
        [[x y x]]
        #{[x] [y]}

        '[:find ?e :in $ [?e ...] :where [?e :p/tags _]]
        [[x y]]
        #{[x] [y]}))))

(deftest functions-bind-before-patterns-join-on-them
  ;; the smaller pattern on ?c ran first; the name scan then multiplied with it, and the
  ;; function only filtered that product
  (each-store [conn {:schema {:t/name {:db/valueType :db.type/string}
                              :t/color {:db/valueType :db.type/ref}
                              :t/rgb {:db/valueType :db.type/long}}}]
    (let [colors (:tempids (d/transact! conn (for [i (range 5)] {:db/id (str "c" i) :t/rgb i})))
          _ (d/transact! conn (for [i (range 200)]
                                (cond-> {:t/name (str "n" i)}
                                  (even? i) (assoc :t/color (colors (str "c" (mod i 5)))))))
          db (d/db conn)]
      (are [query fn-clause pattern] (let [steps (mapv :clause (:clauses (d/explain query db)))
                                           at #(.indexOf ^java.util.List steps %)]
                                       (< (at fn-clause) (at pattern)))
        '[:find ?x :where [?e :t/name ?n] [(get-else $ ?e :t/color -1) ?c] [?c :t/rgb ?x]]
        '[(get-else $ ?e :t/color -1) ?c] '[?c :t/rgb ?x]

        '[:find ?x :where [?e :t/name ?n] [(get-some $ ?e :t/color) [_ ?c]] [?c :t/rgb ?x]]
        '[(get-some $ ?e :t/color) [_ ?c]] '[?c :t/rgb ?x])
      (is (= (set (for [i (range 5)] [i]))
             (d/q '[:find ?x :where [?e :t/name ?n] [(get-else $ ?e :t/color -1) ?c] [?c :t/rgb ?x]] db)))
      (is (every? #(<= % 200)
                  (map :rows (:clauses (d/explain '[:find ?x :where [?e :t/name ?n]
                                                    [(get-else $ ?e :t/color -1) ?c] [?c :t/rgb ?x]]
                                                  db))))))))

(deftest sparse-lookups-read-each-entity-once
  ;; a few bound entities among many datoms of the attribute are looked up in EAVT, where
  ;; all of an entity's datoms lie together; dense ones in AEVT. Both give the naive answer,
  ;; with a cardinality-many attribute, a constant value, and entities without the attribute.
  (each-store [conn {:schema (assoc schema
                                    :item/tags {:db/valueType :db.type/keyword
                                                :db/cardinality :db.cardinality/many}
                                    :item/owner {:db/valueType :db.type/ref})}]
    (load! conn)
    (let [owners (:tempids (d/transact! conn [{:db/id "few" :item/name "few"}
                                              {:db/id "many" :item/name "many"}]))
          ids (d/q '[:find [?e ...] :where [?e :item/id]] (d/db conn))]
      (d/transact! conn (for [[k e] (map-indexed vector ids)]
                          (cond-> {:db/id e :item/owner (owners (if (= 1 (mod k 500)) "few" "many"))}
                            (odd? k) (assoc :item/tags (if (zero? (mod k 3)) [:a :b] [:c]))))))
    (let [db (d/db conn)
          oracle (nw/db (d/datoms db :eavt))
          query '[:find ?i ?name ?tag
                  :in $ ?owner-name
                  :where [?o :item/name ?owner-name] [?i :item/owner ?o]
                         [?i :item/name ?name] [?i :item/tags ?tag]]
          valued '[:find ?i ?name
                   :in $ ?owner-name
                   :where [?o :item/name ?owner-name] [?i :item/owner ?o]
                          [?i :item/tags :c] [?i :item/name ?name]]]
      (are [q owner method] (and (= (naive/q q oracle owner) (d/q q db owner))
                                 (= method (method-of q '[?i :item/name ?name] db owner)))
        query "few" :star-join-eavt
        valued "few" :lookup-join-eavt
        query "many" :hash-join-aevt))))
