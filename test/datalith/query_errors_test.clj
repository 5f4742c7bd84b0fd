(ns datalith.query-errors-test
  "Query errors are ex-infos with a namespaced :error key and the offending
  form, raised before any clause runs; :timeout stops runaway queries."
  (:require [clojure.test :refer [are deftest is testing]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.query-fixtures :refer [failure graph! people! schema]]
            [datalith.test-util :refer [each-store]]))

(def calls "How many times `touch!` ran." (atom 0))

(defn touch! "A predicate that counts its calls." [_] (swap! calls inc) true)

(deftest parse-errors
  (are [query error form] (= {:error error :form form} (failure #(d/q query [])))
    '[:find :where [?e :a ?v]]                         :parser/find  []
    '[:find ?e ?v :keys a :where [?e :a ?v]]            :parser/find  '[a]
    '[:find ?e . :keys a :where [?e :a ?v]]             :parser/find  '[a]
    '[:find (no-such-agg ?v) :where [?e :a ?v]]         :parser/find  '(no-such-agg ?v)
    '[:find ?e :where ?e :a ?v]                         :parser/query '[:find ?e :where ?e :a ?v]
    '[:find ?e :in $ $ :where [?e :a ?v]]               :parser/in    '$
    '[:find ?e :where [?e :a nil]]                      :parser/where '[?e :a nil]
    '[:find ?e :where [?e :a ?v] (or)]                  :parser/where '(or)
    '[:find ?e :where [?e :a ?v] [(count ?v) 3]]        :parser/where '[(count ?v) 3]
    "[:find ?e :where [?e :a ?v]"                       :parser/query "[:find ?e :where [?e :a ?v]")
  (testing "every parse error names a :parser/ key"
    (are [query] (= "parser" (some-> (failure #(d/q query [])) :error namespace))
      '[:where [?e :a ?v]]
      '{:find [?e]}
      '[:find ?e :with :where [?e :a ?v]]
      '[:find ?e :in :where [?e :a ?v]]
      '[:find ?e :where [?e :a ?v] (not)]
      '[:find ?e :where [?e :a ?v] (not-join [] [?e :a 1])]
      '[:find ?e :where [?e :a ?v] (or-join [?e])]
      '[:find ?e :where [("f" :a) ?v]]
      42
      "not edn ]")))

(deftest validation-errors
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (are [query inputs error] (= error (:error (failure #(apply d/q query db inputs))))
        ;; unbound variables
        '[:find ?x :where [?e :person/name]]                                  [] :query/unbound-var
        '[:find ?e :where [?e :person/name ?n] [(< ?x 3)]]                     [] :query/unbound-var
        '[:find ?y :where [?e :person/name ?n] [(inc ?x) ?y]]                  [] :query/unbound-var
        '[:find ?e :where [?e :person/name] (not [?f :person/age 3])]          [] :query/insufficient-binding
        '[:find ?e :where [?e :person/name] (not-join [?x] [?x :person/age 3])] [] :query/insufficient-binding
        '[:find ?e :where [?e :person/name] (or-join [[?x] ?e] [?e :person/age ?x])] [] :query/insufficient-binding
        ;; rules without %, and unknown rules
        '[:find ?e :where (adult ?e)]                                          [] :query/missing-rules
        '[:find ?e :in $ % :where (adult ?e)]        ['[[(old ?e) [?e :person/age]]]] :query/missing-rules
        ;; the number of inputs
        '[:find ?e :in $ ?x :where [?e :person/name ?x]]                       [] :query/inputs
        '[:find ?e :where [?e :person/name]]                                  [1] :query/inputs
        ;; unknown functions
        '[:find ?e :where [?e :person/name ?n] [(no-such-fn ?n)]]              [] :query/unknown-fn
        '[:find ?e :where [?e :person/name ?n] [(no.such.ns/f ?n) ?x]]          [] :query/unknown-fn
        ;; an unknown source
        '[:find ?e :where [$2 ?e :person/name]]                                [] :query/unknown-source
        ;; inputs that do not fit their binding
        '[:find ?e :in $ [?n ...] :where [?e :person/name ?n]]                 ["Bob"] :query/binding
        '[:find ?e :in $ [?n ?a] :where [?e :person/name ?n]]                  [["Bob"]] :query/binding)
      (testing "a source that is neither a database nor a collection"
        (is (= :query/inputs (:error (failure #(d/q '[:find ?e :where [?e :person/name]] 42)))))))))

(deftest errors-before-any-work
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)]
      (reset! calls 0)
      (are [query inputs] (some? (:error (failure #(apply d/q query db inputs))))
        '[:find ?n :where [?e :person/name ?n] [(datalith.query-errors-test/touch! ?n)] [(no-such-fn ?n)]] []
        '[:find ?n :where [?e :person/name ?n] [(datalith.query-errors-test/touch! ?n)] (not [(no-such-fn ?n)])] []
        '[:find ?n :where [?e :person/name ?n] [(datalith.query-errors-test/touch! ?n)] [(< ?x 1)]] []
        '[:find ?n :in $ % :where [?e :person/name ?n] [(datalith.query-errors-test/touch! ?n)] (r ?e)]
        ['[[(r ?e) [?e :person/age ?a] [(no-such-fn ?a)]]]]
        '[:find (no.such/agg ?n) :where [?e :person/name ?n] [(datalith.query-errors-test/touch! ?n)]] []
        '[:find ?n :in $ ?x :where [?e :person/name ?n] [(datalith.query-errors-test/touch! ?n)]] [])
      (is (zero? @calls) "no clause ran")
      (testing "the unknown function is found even when no row reaches it"
        (is (= :query/unknown-fn
               (:error (failure #(d/q '[:find ?e :where [?e :person/name "Nobody"] [(no-such-fn ?e)]] db)))))))))

(deftest timeouts
  (each-store [conn {:schema schema}]
    (graph! conn 1500)
    (let [db (d/db conn)
          reach '[[(reach ?a ?b) [?a :node/next ?b]]
                  [(reach ?a ?b) [?a :node/next ?x] (reach ?x ?b)]]
          timed (fn [f]
                  (let [start (System/nanoTime)
                        error (:error (failure f))]
                    [error (< (/ (- (System/nanoTime) start) 1e6) 5000)]))]
      (testing "a cross product of two large sets"
        (is (= [:query/timeout true]
               (timed #(d/q '{:find [(count ?a)] :timeout 100
                              :where [[?a :node/id ?x] [?b :node/id ?y] [(< ?x ?y)] [?c :node/id ?z] [(< ?y ?z)]]}
                            db))))
        (is (= [:query/timeout true]
               (timed #(d/q {:query '[:find (count ?x) :in [?x ...] [?y ...] :where [(< ?x ?y)]]
                             :args [(range 5000) (range 5000)]
                             :timeout 100})))))
      (testing "a recursive rule over a long chain"
        (is (= [:query/timeout true]
               (timed (fn [] (d/q {:query '[:find (count ?b) . :in $ % :where (reach ?a ?b)]
                                   :args [db reach]
                                   :timeout 100}))))))
      (testing "a query that finishes in time is unaffected"
        (is (= 1500 (d/q {:query '[:find (count ?e) . :where [?e :node/id]] :args [db] :timeout 10000}))))
      (testing ":timeout must be a positive number"
        (is (= :query/invalid-option
               (:error (failure #(d/q {:query '[:find ?e :where [?e :node/id]] :args [db] :timeout -1})))))))))

(defn- nested [n wrap inner] (nth (iterate wrap inner) n))

(deftest malformed-and-deep-queries
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)
          deep-not [:find '?e :where '[?e :person/name] (nested 1000 #(list 'not %) '[?e :person/age 1])]]
      (testing "a query that is not a query form"
        (are [query] (= {:error :parser/query :form query} (failure #(d/q query db)))
          nil
          42
          :find
          {}))
      (testing "nesting deeper than the parser allows: an error, not a stack overflow"
        (are [query inputs error] (= error (:error (failure #(apply d/q query db inputs))))
          deep-not                                                                  [] :parser/query
          (pr-str deep-not)                                                         [] :parser/query
          [:find '?e :where '[?e :person/name] (nested 1000 #(list 'or % '[?e :person/age 2]) '[?e :person/age 1])] [] :parser/query
          [:find '?e :where '[?e :person/name] (nested 1000 #(list 'not-join '[?e] %) '[?e :person/age 1])] [] :parser/query
          [:find '?e :where ['?e :person/name (nested 1000 vector "x")]]          [] :parser/query
          [:find '?x :in '$ (nested 1000 #(vector % '...) '?x)]                  [[]] :parser/query
          [:find '?e :in '$ '% :where '(r ?e)]
          [[(list* '(r ?e) '[?e :person/name] [(nested 1000 #(list 'not %) '[?e :person/age 1])])]] :parser/rule)
        (is (= :parser/query (:error (failure #(d/explain deep-not db))))))
      (testing "so deep that even hashing the form would overflow the stack"
        (is (= :parser/query
               (:error (failure #(d/q [:find '?e :where ['?e :person/name (nested 200000 vector 1)]] db)))))
        (is (= :parser/rule
               (:error (failure (fn [] (d/q '[:find ?e :in $ % :where (r ?e)] db
                                            [[(list 'r '?e) ['?e :person/name (nested 200000 vector 1)]]])))))))
      (testing "nesting within the limit runs"
        (is (= #{} (d/q [:find '?e :where '[?e :person/name] (nested 31 #(list 'not %) '[?e :person/name])] db)))
        (is (= 4 (count (d/q [:find '?e :where '[?e :person/name] (nested 30 #(list 'not %) '[?e :person/name])] db))))))))

(def ^:private gen-atom
  (gen/elements [:find :in :where :with :keys :timeout :person/name :person/age
                 '?e '?x '?n '_ '$ '% '. '... 'pull 'not 'or 'and 'count 'max 'foo '< 'ground
                 nil 0 1 2.5 "Bob" [:person/name "Bob"]]))

(def ^:private gen-form
  (gen/recursive-gen (fn [inner] (gen/one-of [(gen/vector inner 0 5)
                                              (gen/fmap #(apply list %) (gen/vector inner 0 4))]))
                     gen-atom))

(def ^:private gen-query
  (gen/fmap (fn [[f in w]] (vec (concat [:find] f (when (seq in) (cons :in in)) [:where] w)))
            (gen/tuple (gen/vector gen-form 1 2) (gen/vector gen-form 0 2) (gen/vector gen-form 0 3))))

(deftest any-query-form-answers-or-fails-with-an-ex-info
  (each-store [conn {:schema schema}]
    (people! conn)
    (let [db (d/db conn)
          result (tc/quick-check 150
                   (prop/for-all [q gen-query
                                  inputs (gen/vector gen-form 0 2)]
                     (try (d/q {:query q :args (cons db inputs) :timeout 5000}) true
                          (catch clojure.lang.ExceptionInfo e (some? (:error (ex-data e))))
                          (catch Throwable _ false))))]
      (is (:pass? result) (pr-str (-> result :shrunk :smallest))))))
