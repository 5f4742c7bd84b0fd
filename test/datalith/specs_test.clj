(ns datalith.specs-test
  "datalith.specs: the query, rules, pull pattern and tx-data specs accept the
  forms the engine accepts (those the query tests use, those the query
  property test generates), their explain names the offending part of a bad
  form, and d/q, d/pull and d/transact! add that explain under :explain to
  a shape error's data."
  (:require [clojure.java.io :as io]
            [clojure.spec.alpha :as s]
            [clojure.test :refer [are deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.query-property-support :as qp]
            [datalith.specs :as ds]
            [datalith.test-util :as tu])
  (:import (java.io PushbackReader)))

(defn- names?
  "Whether some problem of `problems` has `x` as its :val, in its :path or as
  its :pred (a form, compared printed)."
  [problems x]
  (boolean (some #(or (= x (:val %)) (some #{x} (:path %)) (= (pr-str x) (:pred %))) problems)))

(defn- at?
  "Whether some problem of `problems` is at :in `in` or inside it."
  [problems in]
  (boolean (some #(= in (take (count in) (:in %))) problems)))

;; ---------------------------------------------------------------- valid forms conform

(deftest valid-queries-conform
  (are [q] (s/valid? ::ds/query q)
    '[:find ?e :where [?e :a]]
    '[:find ?e . :in $ ?x :where [?e :a ?x]]
    '[:find [?e ...] :where [?e :a _]]
    '[:find [?e ?v] :where [?e :a ?v]]
    '[:find ?e ?v :keys e v :where [?e :a ?v]]
    '[:find ?v :strs v :where [_ :a ?v]]
    '[:find ?v :syms v :where [_ :a ?v]]
    '[:find (count ?e) (count-distinct ?v) (min 3 ?v) (sum ?v) :with ?x :where [?e :a ?v] [?e :b ?x]]
    '[:find (pull ?e [:a {:b [*]} [:c :as "c" :limit 2] (limit :d 3)]) :where [?e :a]]
    '[:find (pull $h ?e pat) :in $ $h pat :where [?e :a]]
    '[:find ?e :in $ [?x ...] [[?a ?b]] [?p _] % :where (rule ?e ?x) [?a :b ?b]]
    '[:find ?e :where [$ ?e :a ?v ?tx true] [(> ?v 1)] [(str ?v "x") ?s] [(tuple ?v ?s) [?t ?u]]
      [(ground [1 2]) [?g ...]] [(ground [[1 2]]) [[?h ?i]]] [(get-else $ ?e :b 0) ?z]
      [(?f ?v) ?w] [(= ?w 'sym)]]
    '[:find ?e :where [?e :a] (not [?e :b 1]) (not-join [?e] [?e :c ?x] [?x :d])
      (or [?e :e] (and [?e :f] [(pos? ?e)])) (or-join [[?e] ?y] [?e :g ?y] [?y :h ?e])
      ($ rule ?e _ 3)]
    '{:find [?e] :in [$ ?x] :where [[?e :a ?x]]}
    '{:find [?e .] :where [[?e :a]] :timeout 100}
    '{:find [[?e ...]] :keys [e] :with [?x] :where [[?e :a ?x]]}))

(def ^:private query-test-files
  ["query_basic_test.clj" "query_not_test.clj" "query_or_test.clj" "query_rules_test.clj"
   "query_aggregates_test.clj" "query_predicates_test.clj" "query_limits_test.clj"
   "pull_test.clj" "time_travel_test.clj" "readme_test.clj" "valid_time_test.clj"])

(defn- quoted-queries
  "Every quoted vector starting with :find in the test file `f`."
  [f]
  (with-open [r (PushbackReader. (io/reader (io/file "test/datalith" f)))]
    (binding [*read-eval* false]
      (let [forms (take-while #(not= ::eof %) (repeatedly #(read {:eof ::eof :read-cond :allow} r)))]
        (->> (tree-seq coll? seq forms)
             (keep #(when (and (seq? %) (= 'quote (first %)) (vector? (second %))
                               (= :find (first (second %))))
                      (second %)))
             vec)))))

(defn- pull-patterns
  "The literal pull patterns of `q`'s :find (the engine reads them when it pulls)."
  [q]
  (for [x (take-while #(not (#{:keys :strs :syms :with :in :where} %)) q)
        :when (and (seq? x) (= 'pull (first x)) (vector? (last x)))]
    (last x)))

(defn- shape-error?
  "Whether `f` throws a shape error (:parser/* or :pull/pattern)."
  [f]
  (try (f)
       false
       (catch clojure.lang.ExceptionInfo e
         (let [k (:error (ex-data e))]
           (or (= "parser" (namespace k)) (= :pull/pattern k))))
       (catch Exception _ false)))

(defn- engine-accepts-shape?
  "Whether the engine parses `q` and its pull patterns without a shape error."
  [db q]
  (not (or (shape-error? #(d/q {:query q :args (repeat 8 db) :timeout 1000}))
           (some (fn [p] (shape-error? #(d/pull db p :x))) (pull-patterns q)))))

(deftest the-query-tests-queries-conform
  ;; what the query tests run and the engine parses, the spec accepts
  (tu/with-conn [conn :mem]
    (d/transact! conn [{:db/ident :x}])
    (let [db (d/db conn)
          qs (mapcat quoted-queries query-test-files)]
      (is (< 100 (count qs)))
      (doseq [q qs :when (engine-accepts-shape? db q)]
        (is (s/valid? ::ds/query q) (pr-str q (ds/explain ::ds/query q)))))))

(defspec generated-queries-conform 60
  ;; the query property test's queries (all ones Datomic accepts) conform
  (prop/for-all [schema qp/gen-schema
                 spec qp/gen-query-spec]
    (s/valid? ::ds/query (:query (qp/interpret-query schema spec)))))

(deftest rules-conform
  (is (s/valid? ::ds/rules qp/rules))
  (is (s/valid? ::ds/rules '[[(r ?a) [?a :x]] [(r [?a] ?b) (not [?a :y ?b])]]))
  (is (at? (ds/explain ::ds/rules '[[(r ?a) [?a :x]] [(s) [?b :x]]]) [1 0])))

(deftest valid-pull-patterns-conform
  (are [p] (s/valid? ::ds/pull-pattern p)
    [:a]
    '[*]
    ["*" :db/id]
    [:a/_b {:c [:d]} {:e '...} {:f 3} {[:g :as :h] [:i]}]
    [[:a :as "x" :limit nil :default 0] [:b :xform 'str] '(:c :limit 5) '(default :d 1)]))

(deftest valid-tx-data-conforms
  (are [tx] (s/valid? ::ds/tx-data tx)
    nil
    []
    [{:db/id "a" :a 1} [:db/add "a" :b 2] [:db/retract 1 :a 1] [:db/retract 1 :a]]
    [[:db/retractEntity 1] [:db.fn/retractEntity 1] [:db/cas 1 :a nil 2] [:db.fn/cas 1 :a 1 2]]
    [[:db.fn/retractAttribute 1 :a] [:db.fn/call (fn [_db] []) ] '(my.ns/tx-fn 1 2)]
    (java.util.ArrayList. [{:a 1}])))

;; ---------------------------------------------------------------- explain names what is wrong

(deftest bad-queries-are-explained
  (are [q x in] (let [p (ds/explain ::ds/query q)]
                  (and (names? p x) (at? p in)))
    '[:find ?e :where [?e :a] (not)] :not [:where 1]
    '[:find ?e :where (not-join ?e [?e :a])] :not-join [:where 0]
    '[:find ?e :where (or)] :or [:where 0]
    '[:find ?e :where []] :pattern [:where 0]
    '[:find ?e :where [?e :a ?v ?tx true ?x]] :pattern [:where 0]
    '[:find ?e :where [?e :a] "foo"] :invalid [:where 1]
    '[:find ?e :where [?e :a] :foo] '(every? sections (keys %)) []
    '[:find ?e :where (and [?e :a])] :and [:where 0]
    '[:find ?e :where [(f x) ?y]] 'x [:where 0]
    '[:find ?e :where [(f) ?y ?z]] :function [:where 0]
    '[:find ?e :where (rule)] :rule [:where 0]
    '[:find ?e :where [?e :a] (rule sym)] 'sym [:where 1]
    '[:find ?e foo :where [?e :a]] 'foo [:find 1]
    '[:find (pull ?e :a) :where [?e :a]] :a [:find 0]
    '[:find [?e ... ?x] :where [?e :a]] '[?e ... ?x] [:find 0]
    '[:find ?e :with :where [?e :a]] :with [:with]
    '[:find ?e :in $ "x" :where [?e :a]] "x" [:in 1]
    '{:find [?e] :where [[?e :a]] :sort-by 3} {:find '[?e] :where '[[?e :a]] :sort-by 3} []))

(deftest bad-pull-patterns-are-explained
  (are [p x in] (let [problems (ds/explain ::ds/pull-pattern p)]
                  (and (names? problems x) (at? problems in)))
    [] [] []
    '(:a) '(:a) []
    [:a 1] 1 [1]
    [:a {:b :c}] :c [1 :b 1]
    [:a {}] {} [1]
    [[:a :as]] :expr [0]
    [[:a :limit 0]] 0 [0 2]
    [[:a :bogus 1]] :bogus [0 1])
  (testing "pull_test's bad patterns"
    (are [p] (some? (ds/explain ::ds/pull-pattern p))
      [] [1] ["user/name"] [nil] [:user/name {}] [{:person/friends 0}] [{:person/friends -1}]
      [{:person/friends :deep}] [{1 [:user/name]}] [[:user/name :as]] [[:user/name :limit 0]]
      [[:user/name :limit "10"]] [[:user/name :colour :red]] [[:user/name :xform :not-a-fn]]
      '[(limit :user/aliases)] '[(default :user/name)] '[(limit "user/aliases" 2)]
      '[(frobnicate :user/name 1)] [[]] [[1 :as :x]]
      [:user/name {:person/friends [:user/name [:user/email :limit]]}]
      {:user/name 1} '(:user/name) :user/name)))

(deftest bad-tx-data-is-explained
  (are [tx x in] (let [problems (ds/explain ::ds/tx-data tx)]
                   (and (names? problems x) (at? problems in)))
    [[:db/add 1 :a]] :db/add [0]
    [{:a 1} [:db/retractEntity]] :db/retractEntity [1]
    [[:db/cas 1 :a 2]] :db/cas [0]
    [[:db.fn/retractAttribute 1 :a 2]] :db.fn/retractAttribute [0]
    [[:db.fn/call 'not-a-fn]] 'not-a-fn [0 1]
    [[:db/bogus 1]] :db/bogus [0]
    [[]] :invalid [0]
    [1] :invalid [0]
    {:a 1} {:a 1} []))

(deftest explain-skips-forms-too-large-to-look-at
  (is (nil? (ds/explain ::ds/query (into [:find '?e :where] (repeat 20000 '(not))))))
  (is (nil? (ds/explain ::ds/pull-pattern (nth (iterate vector :a) 500))))
  (is (nil? (ds/explain ::ds/tx-data (repeat [:db/add])))))

;; ---------------------------------------------------------------- errors carry the explain

(defn- error-data [f]
  (try (f) nil (catch clojure.lang.ExceptionInfo e (ex-data e))))

(deftest shape-errors-carry-the-explain
  (tu/each-store [conn {}]
    (d/transact! conn [{:db/ident :a}])
    (let [db (d/db conn)]
      (testing "d/q"
        (let [data (error-data #(d/q '[:find ?e :where [?e :a] (not)] db))]
          (is (= :parser/where (:error data)))
          (is (names? (:explain data) :not))
          (is (at? (:explain data) [:where 1])))
        (let [data (error-data #(d/q {:query '[:find ?e bad :where [?e :a]] :args [db]}))]
          (is (= "parser" (namespace (:error data))))
          (is (at? (:explain data) [:find 1])))
        (let [data (error-data #(d/q '[:find (pull ?e [:a {:b :c}]) :where [?e :a]] db))]
          (is (names? (:explain data) :c))))
      (testing "d/pull and d/pull-many"
        (let [data (error-data #(d/pull db [:a {:b :c}] 1))]
          (is (= :pull/pattern (:error data)))
          (is (at? (:explain data) [1 :b 1])))
        (is (at? (:explain (error-data #(d/pull-many db [:a 1] [1]))) [1])))
      (testing "d/transact! and d/with"
        (let [data (error-data #(d/transact! conn [{:a 1} [:db/add 1 :a]]))]
          (is (= :tx/invalid-op (:error data)))
          (is (at? (:explain data) [1])))
        (is (at? (:explain (error-data #(d/with db [[:db/retractEntity]]))) [0]))))))

(deftest other-errors-have-no-explain
  (tu/each-store [conn {}]
    (let [db (d/db conn)]
      ;; well-shaped forms refused for other reasons: nothing for the spec to say
      (is (not (contains? (error-data #(d/q '[:find ?x :where [(> ?x 1)]] db)) :explain)))
      (is (not (contains? (error-data #(d/pull db [:no/such-attr] 1)) :explain)))
      (is (not (contains? (error-data #(d/transact! conn [[:db/add 1 :no/such 1]])) :explain)))
      ;; a string query is read by the engine, not by the spec
      (is (not (contains? (error-data #(d/q "[:find ?e :where (not)]" db)) :explain))))))

;; ---------------------------------------------------------------- :valid-at (h-valid3, #19)

(deftest valid-at-sections-conform
  (are [q ok] (= ok (s/valid? ::ds/query q))
    '[:find ?c :in $ ?t :valid-at ?t :where [?e :c ?c]] true
    '[:find ?c :in $ $b ?t :valid-at $b ?t :where [$b ?e :c ?c]] true
    '[:find ?c :in $ $b ?t :valid-at $ ?t $b #inst "2030-01-01" :where [$b ?e :c ?c]] true
    '{:find [?c] :in [$ ?t] :valid-at ?t :where [[?e :c ?c]]} true
    '{:find [?c] :valid-at #inst "2030-01-01" :where [[?e :c ?c]]} true
    '{:find [?c] :in [$ ?t] :valid-at [$ ?t] :where [[?e :c ?c]]} true
    '[:find ?c :valid-at :any-valid-time :where [?e :c ?c ?from ?to]] true
    '[:find ?c :in $ $b :valid-at $b :any-valid-time :where [$b ?e :c ?c ?from]] true
    '{:find [?c] :valid-at :any-valid-time :where [[?e :c ?c]]} true
    '[:find ?c :valid-at "2030" :where [?e :c ?c]] false
    '[:find ?c :in $ ?t :valid-at ?t $ :where [?e :c ?c]] false
    '{:find [?c] :valid-at [] :where [[?e :c ?c]]} false))
