(ns datalith.pull-recursion-test
  "Recursion in pull patterns ({:attr n}, {:attr ...}), reverse and mixed, on
  chains, cycles, diamonds and component trees, through d/pull, d/pull-many
  and pull in :find, on both stores.

  Every expected value here is what Datomic Local 1.0.291 returned for the
  same schema, data and pattern (run through its client API, ids replaced by
  names). Its rules, as these results show them:
  - {:attr n} pulls n levels of entities through :attr; an entity past the
    limit is cut: it gives only what the pattern asks of :db/id, so it is left
    out when the pattern does not name :db/id;
  - each recursive attribute counts its own levels;
  - an entity recursion reaches while it is already on the path from the
    root (the root itself not counted) is pulled once more with every limit
    at 0: a cycle ends one entity after its first repetition;
  - the path is the path: an entity reached twice through different branches
    (a diamond) is pulled in full both times;
  - a limit on a component attribute stops component expansion too."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]]))

(def schema
  {:name {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :f1 {:db/valueType :db.type/ref}
   :e1 {:db/valueType :db.type/ref}
   :part {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many :db/isComponent true}
   :one {:db/valueType :db.type/ref :db/isComponent true}})

(def data
  "P4 -> P5 -> P6 -> P7, a chain; R4 -> .. -> R8 -> R4, a ring; S -> S; T1 <-> T2;
  D1 -> D2, D3 -> D4 -> D5, a diamond; C1..C4 joined by two refs of cardinality one;
  A, a tree of :part components; X -> X1 -> X2 through the component :one."
  [{:db/id "P4" :name "P4" :friend ["P5"]} {:db/id "P5" :name "P5" :friend ["P6"]}
   {:db/id "P6" :name "P6" :friend ["P7"]} {:db/id "P7" :name "P7"}
   {:db/id "R4" :name "R4" :friend ["R5"]} {:db/id "R5" :name "R5" :friend ["R6"]}
   {:db/id "R6" :name "R6" :friend ["R7"]} {:db/id "R7" :name "R7" :friend ["R8"]}
   {:db/id "R8" :name "R8" :friend ["R4"]}
   {:db/id "S" :name "S" :friend ["S"]}
   {:db/id "T1" :name "T1" :friend ["T2"]} {:db/id "T2" :name "T2" :friend ["T1"]}
   {:db/id "D1" :name "D1" :friend ["D2" "D3"]} {:db/id "D2" :name "D2" :friend ["D4"]}
   {:db/id "D3" :name "D3" :friend ["D4"]} {:db/id "D4" :name "D4" :friend ["D5"]}
   {:db/id "D5" :name "D5"}
   {:db/id "C1" :name "C1" :f1 "C2" :e1 "C3"} {:db/id "C2" :name "C2" :f1 "C3" :e1 "C4"}
   {:db/id "C3" :name "C3" :f1 "C4" :e1 "C1"} {:db/id "C4" :name "C4" :f1 "C1" :e1 "C2"}
   {:db/id "A" :name "A" :part ["A.A" "A.B"]}
   {:db/id "A.A" :name "A.A" :part ["A.A.A"]} {:db/id "A.A.A" :name "A.A.A" :part ["A.A.A.A"]}
   {:db/id "A.A.A.A" :name "A.A.A.A"}
   {:db/id "A.B" :name "A.B" :part ["A.B.A"]} {:db/id "A.B.A" :name "A.B.A"}
   {:db/id "X" :name "X" :one "X1"} {:db/id "X1" :name "X1" :one "X2"} {:db/id "X2" :name "X2"}])

(defn- load-data
  "Transacts `data`; returns a function from a name to its entity id."
  [conn]
  (let [ids (:tempids (d/transact! conn data))]
    (fn [n] (or (get ids n) (throw (ex-info "no such name" {:name n}))))))

(defn- expectations
  "[pattern entity-name expected] rows, with `id` naming entity ids."
  [id]
  [;; depth limits: the last level has no :friend (P7 would be cut, and the pattern has no :db/id)
   '[:name {:friend 1}] "P4" {:name "P4" :friend [{:name "P5"}]}
   '[:name {:friend 2}] "P4" {:name "P4" :friend [{:name "P5" :friend [{:name "P6"}]}]}
   '[:name {:friend 3}] "P4" {:name "P4" :friend [{:name "P5" :friend [{:name "P6" :friend [{:name "P7"}]}]}]}
   '[:name {:friend ...}] "P4" {:name "P4" :friend [{:name "P5" :friend [{:name "P6" :friend [{:name "P7"}]}]}]}
   '[:name {:friend 1000000000000}] "P4" {:name "P4" :friend [{:name "P5" :friend [{:name "P6" :friend [{:name "P7"}]}]}]}
   '[{:friend 1}] "P4" nil
   '[{:friend 1}] "P7" nil
   '[:name {:friend 1} :db/id] "P7" {:db/id (id "P7") :name "P7"}
   ;; a cut entity gives what the pattern asks of :db/id
   '[:db/id :name {:friend 1}] "P4"
   {:db/id (id "P4") :name "P4" :friend [{:db/id (id "P5") :name "P5" :friend [{:db/id (id "P6")}]}]}
   '[:db/id {:friend 1}] "P4"
   {:db/id (id "P4") :friend [{:db/id (id "P5") :friend [{:db/id (id "P6")}]}]}
   ;; options on the recursive attribute
   '[:name {[:friend :as :fr] 2}] "P4" {:name "P4" :fr [{:name "P5" :fr [{:name "P6"}]}]}
   '[:name {[:friend :default :none] 2}] "P4"
   {:name "P4" :friend [{:name "P5" :friend [{:name "P6" :friend :none}]}]}
   '[:name {(:friend :default :none) 1}] "P6" {:name "P6" :friend [{:name "P7" :friend :none}]}
   '[:name {[:friend :limit 1] ...}] "D1"
   {:name "D1" :friend [{:name "D2" :friend [{:name "D4" :friend [{:name "D5"}]}]}]}
   ;; reverse
   '[:name {:_friend 2}] "P7" {:name "P7" :_friend [{:name "P6" :_friend [{:name "P5"}]}]}
   '[:name {:_friend ...}] "P7" {:name "P7" :_friend [{:name "P6" :_friend [{:name "P5" :_friend [{:name "P4"}]}]}]}
   ;; a ring of 5: the root once more, then R5 with its recursion cut
   '[:name {:friend ...}] "R4"
   {:name "R4" :friend [{:name "R5" :friend [{:name "R6" :friend [{:name "R7" :friend [{:name "R8" :friend [{:name "R4" :friend [{:name "R5"}]}]}]}]}]}]}
   '[:name {:friend 4}] "R4"
   {:name "R4" :friend [{:name "R5" :friend [{:name "R6" :friend [{:name "R7" :friend [{:name "R8"}]}]}]}]}
   '[:name {:friend 5}] "R4"
   {:name "R4" :friend [{:name "R5" :friend [{:name "R6" :friend [{:name "R7" :friend [{:name "R8" :friend [{:name "R4"}]}]}]}]}]}
   '[:name {:friend 6}] "R4"
   {:name "R4" :friend [{:name "R5" :friend [{:name "R6" :friend [{:name "R7" :friend [{:name "R8" :friend [{:name "R4" :friend [{:name "R5"}]}]}]}]}]}]}
   '[:name {:friend 7}] "R4"
   {:name "R4" :friend [{:name "R5" :friend [{:name "R6" :friend [{:name "R7" :friend [{:name "R8" :friend [{:name "R4" :friend [{:name "R5"}]}]}]}]}]}]}
   '[:name {:friend ...}] "R6"
   {:name "R6" :friend [{:name "R7" :friend [{:name "R8" :friend [{:name "R4" :friend [{:name "R5" :friend [{:name "R6" :friend [{:name "R7"}]}]}]}]}]}]}
   '[:db/id :name {:friend ...}] "R4"
   {:db/id (id "R4") :name "R4"
    :friend [{:db/id (id "R5") :name "R5"
              :friend [{:db/id (id "R6") :name "R6"
                        :friend [{:db/id (id "R7") :name "R7"
                                  :friend [{:db/id (id "R8") :name "R8"
                                            :friend [{:db/id (id "R4") :name "R4"
                                                      :friend [{:db/id (id "R5") :name "R5"
                                                                :friend [{:db/id (id "R6")}]}]}]}]}]}]}]}
   '[* {:friend ...}] "R4"
   {:db/id (id "R4") :name "R4"
    :friend [{:db/id (id "R5") :name "R5"
              :friend [{:db/id (id "R6") :name "R6"
                        :friend [{:db/id (id "R7") :name "R7"
                                  :friend [{:db/id (id "R8") :name "R8"
                                            :friend [{:db/id (id "R4") :name "R4"
                                                      :friend [{:db/id (id "R5") :name "R5"
                                                                :friend [{:db/id (id "R6")}]}]}]}]}]}]}]}
   ;; recursion inside a nested pattern: the entity the nested pattern reached counts as seen
   '[:name {:friend [:name {:friend ...}]}] "R4"
   {:name "R4" :friend [{:name "R5" :friend [{:name "R6" :friend [{:name "R7" :friend [{:name "R8" :friend [{:name "R4" :friend [{:name "R5"}]}]}]}]}]}]}
   '[:name {:friend [:name {:friend 1}]}] "P4" {:name "P4" :friend [{:name "P5" :friend [{:name "P6"}]}]}
   ;; cycles of length 1 and 2
   '[:name {:friend ...}] "S" {:name "S" :friend [{:name "S" :friend [{:name "S"}]}]}
   '[:name {:friend 3}] "S" {:name "S" :friend [{:name "S" :friend [{:name "S"}]}]}
   '[:name {:friend ...}] "T1" {:name "T1" :friend [{:name "T2" :friend [{:name "T1" :friend [{:name "T2"}]}]}]}
   '[:name {:_friend ...}] "T1" {:name "T1" :_friend [{:name "T2" :_friend [{:name "T1" :_friend [{:name "T2"}]}]}]}
   '[:name {:friend 1}] "T1" {:name "T1" :friend [{:name "T2"}]}
   '[:name {:friend 2}] "T1" {:name "T1" :friend [{:name "T2" :friend [{:name "T1"}]}]}
   '[:name {:friend 3}] "T1" {:name "T1" :friend [{:name "T2" :friend [{:name "T1" :friend [{:name "T2"}]}]}]}
   '[:db/id :name {:friend 2}] "T1"
   {:db/id (id "T1") :name "T1" :friend [{:db/id (id "T2") :name "T2" :friend [{:db/id (id "T1") :name "T1" :friend [{:db/id (id "T2")}]}]}]}
   ;; a diamond: D4 in full on both paths
   '[:name {:friend ...}] "D1"
   {:name "D1" :friend [{:name "D2" :friend [{:name "D4" :friend [{:name "D5"}]}]}
                        {:name "D3" :friend [{:name "D4" :friend [{:name "D5"}]}]}]}
   ;; two recursive attributes, each counting its own levels
   '[:name {:f1 1 :e1 1}] "C1" {:name "C1" :f1 {:name "C2" :e1 {:name "C4"}} :e1 {:name "C3" :f1 {:name "C4"}}}
   '[:db/id :name {:f1 1 :e1 1}] "C1"
   {:db/id (id "C1") :name "C1"
    :f1 {:db/id (id "C2") :name "C2" :f1 {:db/id (id "C3")}
         :e1 {:db/id (id "C4") :name "C4" :f1 {:db/id (id "C1")} :e1 {:db/id (id "C2")}}}
    :e1 {:db/id (id "C3") :name "C3"
         :f1 {:db/id (id "C4") :name "C4" :f1 {:db/id (id "C1")} :e1 {:db/id (id "C2")}}
         :e1 {:db/id (id "C1")}}}
   '[:name {:f1 2 :e1 2}] "C1"
   {:name "C1" :f1 {:name "C2" :f1 {:name "C3" :e1 {:name "C1" :e1 {:name "C3"}}} :e1 {:name "C4" :f1 {:name "C1" :e1 {:name "C3"}} :e1 {:name "C2"}}} :e1 {:name "C3" :f1 {:name "C4" :f1 {:name "C1" :e1 {:name "C3"}} :e1 {:name "C2" :f1 {:name "C3"}}} :e1 {:name "C1" :f1 {:name "C2" :f1 {:name "C3"}}}}}
   '[:name {:f1 ... :e1 ...}] "C1"
   {:name "C1" :f1 {:name "C2" :f1 {:name "C3" :f1 {:name "C4" :f1 {:name "C1" :f1 {:name "C2"} :e1 {:name "C3"}} :e1 {:name "C2"}} :e1 {:name "C1" :f1 {:name "C2"} :e1 {:name "C3"}}} :e1 {:name "C4" :f1 {:name "C1" :f1 {:name "C2"} :e1 {:name "C3" :f1 {:name "C4"} :e1 {:name "C1"}}} :e1 {:name "C2"}}} :e1 {:name "C3" :f1 {:name "C4" :f1 {:name "C1" :f1 {:name "C2" :f1 {:name "C3"} :e1 {:name "C4"}} :e1 {:name "C3"}} :e1 {:name "C2" :f1 {:name "C3"} :e1 {:name "C4"}}} :e1 {:name "C1" :f1 {:name "C2" :f1 {:name "C3"} :e1 {:name "C4" :f1 {:name "C1"} :e1 {:name "C2"}}} :e1 {:name "C3"}}}}
   '[:name {:f1 ... :e1 1}] "C1"
   {:name "C1" :f1 {:name "C2" :f1 {:name "C3" :f1 {:name "C4" :f1 {:name "C1" :f1 {:name "C2"} :e1 {:name "C3"}} :e1 {:name "C2"}} :e1 {:name "C1" :f1 {:name "C2"}}} :e1 {:name "C4" :f1 {:name "C1" :f1 {:name "C2"}}}} :e1 {:name "C3" :f1 {:name "C4" :f1 {:name "C1" :f1 {:name "C2" :f1 {:name "C3"}}}}}}
   '[:name {:friend 1} {:f1 [:name]}] "C1" {:name "C1" :f1 {:name "C2"}}
   ;; forward and reverse recursion at once
   '[:name {:friend 2 :_friend 1}] "P5"
   {:name "P5" :friend [{:name "P6" :friend [{:name "P7" :_friend [{:name "P6"}]}] :_friend [{:name "P5" :friend [{:name "P6"}]}]}] :_friend [{:name "P4" :friend [{:name "P5" :friend [{:name "P6"}]}]}]}
   '[:name {:friend ... :_friend ...}] "P5"
   {:name "P5" :friend [{:name "P6" :friend [{:name "P7" :_friend [{:name "P6"}]}] :_friend [{:name "P5" :friend [{:name "P6"}] :_friend [{:name "P4" :friend [{:name "P5"}]}]}]}] :_friend [{:name "P4" :friend [{:name "P5" :friend [{:name "P6" :friend [{:name "P7" :_friend [{:name "P6"}]}] :_friend [{:name "P5"}]}] :_friend [{:name "P4"}]}]}]}
   ;; with the wildcard
   '[* {:friend ...}] "P4"
   {:db/id (id "P4") :name "P4" :friend [{:db/id (id "P5") :name "P5" :friend [{:db/id (id "P6") :name "P6" :friend [{:db/id (id "P7") :name "P7"}]}]}]}
   ;; components: a limit stops expansion, without a limit they expand with [*]
   '[:name {:part 1}] "A" {:name "A" :part [{:name "A.A"} {:name "A.B"}]}
   '[:name {:part 2}] "A" {:name "A" :part [{:name "A.A" :part [{:name "A.A.A"}]} {:name "A.B" :part [{:name "A.B.A"}]}]}
   '[:name {:part ...}] "A" {:name "A" :part [{:name "A.A" :part [{:name "A.A.A" :part [{:name "A.A.A.A"}]}]} {:name "A.B" :part [{:name "A.B.A"}]}]}
   '[:db/id :name {:part 1}] "A"
   {:db/id (id "A") :name "A" :part [{:db/id (id "A.A") :name "A.A" :part [{:db/id (id "A.A.A")}]}
                                     {:db/id (id "A.B") :name "A.B" :part [{:db/id (id "A.B.A")}]}]}
   '[:name :part] "A"
   {:name "A" :part [{:db/id (id "A.A") :name "A.A" :part [{:db/id (id "A.A.A") :name "A.A.A" :part [{:db/id (id "A.A.A.A") :name "A.A.A.A"}]}]}
                     {:db/id (id "A.B") :name "A.B" :part [{:db/id (id "A.B.A") :name "A.B.A"}]}]}
   '[:name {:friend 2} :part] "A"
   {:name "A" :part [{:db/id (id "A.A") :name "A.A" :part [{:db/id (id "A.A.A") :name "A.A.A" :part [{:db/id (id "A.A.A.A") :name "A.A.A.A"}]}]}
                     {:db/id (id "A.B") :name "A.B" :part [{:db/id (id "A.B.A") :name "A.B.A"}]}]}
   '[*] "A"
   {:db/id (id "A") :name "A"
    :part [{:db/id (id "A.A") :name "A.A" :part [{:db/id (id "A.A.A") :name "A.A.A" :part [{:db/id (id "A.A.A.A") :name "A.A.A.A"}]}]}
           {:db/id (id "A.B") :name "A.B" :part [{:db/id (id "A.B.A") :name "A.B.A"}]}]}
   '[:name {:_part ...}] "A.A.A.A" {:name "A.A.A.A" :_part {:name "A.A.A" :_part {:name "A.A" :_part {:name "A"}}}}
   '[:name {:_part 1}] "A.A.A.A" {:name "A.A.A.A" :_part {:name "A.A.A"}}
   '[:name {:one 1}] "X" {:name "X" :one {:name "X1"}}
   '[:db/id :name {:one 1}] "X" {:db/id (id "X") :name "X" :one {:db/id (id "X1") :name "X1" :one {:db/id (id "X2")}}}
   '[:name :one] "X" {:name "X" :one {:db/id (id "X1") :name "X1" :one {:db/id (id "X2") :name "X2"}}}])

(deftest recursion-as-datomic
  (each-store [conn {:schema schema}]
    (let [id (load-data conn)
          db (d/db conn)
          rows (partition 3 (expectations id))]
      (testing "d/pull"
        (doseq [[pattern ent expected] rows]
          (is (= expected (d/pull db pattern [:name ent])) (str (pr-str pattern) " " ent))))
      (testing "d/pull-many, every row's entity at once for each pattern"
        (doseq [[pattern rows] (group-by first rows)]
          (is (= (mapv #(nth % 2) rows)
                 (d/pull-many db pattern (map #(vector :name (second %)) rows)))
              (pr-str pattern))))
      (testing "pull in :find, the pattern as an :in input"
        (doseq [[pattern ent expected] rows]
          (is (= expected (d/q '[:find (pull ?e pattern) . :in $ pattern ?n :where [?e :name ?n]]
                               db pattern ent))
              (str (pr-str pattern) " " ent)))))))

(deftest recursion-limits-are-whole-positive-numbers
  (each-store [conn {:schema schema}]
    (load-data conn)
    (let [db (d/db conn)]
      (are [limit] (= :pull/pattern
                      (try (d/pull db [:name {:friend limit}] [:name "P4"]) :no-error
                           (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))
        0 -1 2.5 1.0 (bigdec 2) "2" :deep nil))))

(defn- depth
  "How many maps deep `m` goes following `step` (no recursion: the maps may be
  deeper than the stack)."
  [m step]
  (loop [m m n 0]
    (if (map? m) (recur (step m) (inc n)) n)))

(defn- nested-pattern
  "A pattern `levels` deep: [:n/i {:n/next [:n/i {:n/next [...]}]}]."
  [levels]
  (reduce (fn [inner _] [:n/i {:n/next inner}]) [:n/i] (range (dec levels))))

(defn- nested-pattern-text
  "`(nested-pattern levels)` as EDN text, written without printing it (the
  printer recurses once a level)."
  [levels]
  (str (apply str (repeat (dec levels) "[:n/i {:n/next ")) "[:n/i]"
       (apply str (repeat (dec levels) "}]"))))

(defn- error-of [f]
  (try (f) :no-error
       (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))

(deftest deep-data-and-patterns
  (each-store [conn {:schema {:n/i {:db/valueType :db.type/long :db/unique :db.unique/identity}
                              :n/next {:db/valueType :db.type/ref}
                              :n/part {:db/valueType :db.type/ref :db/isComponent true}
                              :n/parts {:db/valueType :db.type/ref :db/isComponent true
                                        :db/cardinality :db.cardinality/many}}}]
    (let [n 10000
          top [:n/i (dec n)]]
      (d/transact! conn (for [i (range n)] {:n/i i}))
      (d/transact! conn (for [i (range 1 n)] [:db/add [:n/i i] :n/next [:n/i (dec i)]]))
      (d/transact! conn (for [i (range n (* 2 n))] {:n/i i}))
      (d/transact! conn (for [i (range (inc n) (* 2 n))]
                          [:db/add [:n/i i] (if (even? i) :n/part :n/parts) [:n/i (dec i)]]))
      (let [db (d/db conn)
            part-step #(or (:n/part %) (first (:n/parts %)))]
        (testing "a chain of 10,000 refs, unbounded, forward and reverse"
          (is (= n (depth (d/pull db '[:n/i {:n/next ...}] top) :n/next)))
          (is (= n (depth (d/pull db '[:n/i {:n/_next ...}] [:n/i 0]) (comp first :n/_next))))
          (is (= [n n] (map #(depth % :n/next) (d/pull-many db '[:n/i {:n/next ...}] [top top])))))
        (testing "in :find, where the results are hashed into a set"
          (is (= n (depth (ffirst (d/q '[:find (pull ?e [:n/i {:n/next ...}]) :in $ ?i :where [?e :n/i ?i]]
                                       db (dec n)))
                          :n/next)))
          (is (= #{n} (set (map #(depth (first %) :n/next)
                                (d/q '[:find (pull ?e [:n/i {:n/next 20000}]) :where [?e :n/i 9999]] db))))))
        (testing "a chain of 10,000 components, one and many, under [*] and a plain attribute"
          (is (= n (depth (d/pull db '[*] [:n/i (dec (* 2 n))]) part-step)))
          (is (= n (depth (d/pull db '[:n/i :n/part :n/parts] [:n/i (dec (* 2 n))]) part-step)))
          (is (= n (depth (d/q '[:find (pull ?e [*]) . :where [?e :n/i 19999]] db) part-step))))
        (testing "a pattern nested as deep as the limit pulls; deeper ones are :pull/too-deep"
          (is (= 200 (depth (d/pull db (nested-pattern 200) top) :n/next)))
          (is (= 200 (depth (d/pull db (nested-pattern-text 200) top) :n/next)))
          (are [pattern] (= :pull/too-deep (error-of #(d/pull db pattern top)))
            (nested-pattern 201)
            (nested-pattern 3000)
            (nested-pattern 100000)
            (nested-pattern-text 3000)
            (apply str (repeat 100000 "[")))
          (is (= :pull/too-deep (error-of #(d/pull-many db (nested-pattern 3000) [top]))))
          (testing "a deep value where an attribute option belongs is named, not printed whole"
            (is (= :pull/pattern (error-of #(d/pull db [[:n/i :limit 1 (nth (iterate vector 1) 20000) 2]] top)))))
          (is (= :pull/too-deep
                 (error-of #(d/q '[:find (pull ?e p) :in $ p :where [?e :n/i 0]] db (nested-pattern 3000))))))))))
