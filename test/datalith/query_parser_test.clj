(ns datalith.query-parser-test
  "Query parser: grammar shapes, form equivalence, validation errors, rules."
  (:require [clojure.test :refer [are deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop])
  (:import [clojure.lang ExceptionInfo]
           [datalith.query.parser Aggregate And BindColl BindIgnore Binding BindRel BindScalar
            BindTuple Clause Constant FindColl FindRel FindScalar FindTuple FindVar FnBinding Not Or Pattern PatternName
            Predicate Pull Query QueryParser ReturnMap Rule RuleCall RulesVar SrcVar Variable]))

(set! *warn-on-reflection* true)

(defn- parse ^Query [q] (QueryParser/parse q))

(defn- rules [r] (QueryParser/parseRules r))

(defn- failure
  "{:error .. :form ..} of the ex-info thrown by (f), or :no-error."
  [f]
  (try (f) :no-error
       (catch ExceptionInfo e (select-keys (ex-data e) [:error :form]))))

(defn- return-keys [^Query q] (vec (.keys ^ReturnMap (.get (.returnMap q)))))

(defn- syms [vars] (set (map #(symbol (str %)) vars)))

(defn- last-clause
  "The clause c parsed in a scope where ?e ?v (a pattern) and ?x ?y (:in) are bound."
  ^Clause [c]
  (last (.where (parse [:find '?e :in '$ '$h '% '?x '?y :where '[?e :a ?v] c]))))

(deftest find-specs
  (are [find cls shown] (let [f (.find (parse (into [:find] (concat find '[:in $ ?n :where [?e :a ?x]]))))]
                          (and (instance? cls f) (= shown (str f))))
    '[?e ?x]                              FindRel    "[?e ?x]"
    '[?x .]                               FindScalar "[?x .]"
    '[[?x ...]]                           FindColl   "[[?x ...]]"
    '[[?e ?x]]                            FindTuple  "[[?e ?x]]"
    '[(count ?x)]                         FindRel    "[(count ?x)]"
    '[(count-distinct ?x) .]              FindScalar "[(count-distinct ?x) .]"
    '[[(sum ?x) ...]]                     FindColl   "[[(sum ?x) ...]]"
    '[(avg ?x) (median ?x) (variance ?x)] FindRel    "[(avg ?x) (median ?x) (variance ?x)]"
    '[(stddev ?x) (distinct ?x)]          FindRel    "[(stddev ?x) (distinct ?x)]"
    '[(min ?x) (max ?x) (min 3 ?x)]       FindRel    "[(min ?x) (max ?x) (min 3 ?x)]"
    '[(max 3 ?x) (rand ?x) (rand 5 ?x)]   FindRel    "[(max 3 ?x) (rand ?x) (rand 5 ?x)]"
    '[(sample 5 ?x) (sample ?n ?x)]       FindRel    "[(sample 5 ?x) (sample ?n ?x)]"
    '[(my.ns/agg ?x) (my.ns/agg 1 $ ?x)]  FindRel    "[(my.ns/agg ?x) (my.ns/agg 1 $ ?x)]"
    '[?e (pull ?e [*])]                   FindRel    "[?e (pull ?e [*])]"
    '[[(pull ?e [:a {:b [*]}])]]          FindTuple  "[[(pull ?e [:a {:b [*]}])]]"))

(deftest find-elements
  (let [q (parse '[:find (max 3 ?x) (my.ns/agg 0.5 ?x) (pull $h ?e [:a]) (pull ?e pat) ?x
                   :in $ $h pat :where [?e :a ?x]])
        [^Aggregate mx ^Aggregate custom ^Pull pulled ^Pull named v] (.findElements q)]
    (is (= ['max [3] '?x true] [(.fn mx) (map #(.value ^Constant %) (.args mx)) (symbol (str (.var mx))) (.isBuiltin mx)]))
    (is (= ['my.ns/agg false] [(.fn custom) (.isBuiltin custom)]))
    (is (= ["$h" '?e [:a] nil] [(.name (.src pulled)) (.symbol (.var pulled)) (.pattern pulled) (.patternName pulled)]))
    (is (= ["$" nil (PatternName. 'pat)] [(.name (.src named)) (.pattern named) (.patternName named)]))
    (is (= '[?x ?x ?e ?e ?x] (map #(.symbol ^Variable %) (.findVars q))))
    (is (identical? (Variable/of "?x") (.var ^FindVar v)))))

(deftest return-maps
  (are [section ks] (= ks (return-keys (parse (into '[:find ?a ?b] (concat section '[:in ?a ?b])))))
    '[:keys a b]     [:a :b]
    '[:keys ns/a b]  [:ns/a :b]
    '[:strs a b]     ["a" "b"]
    '[:syms a b]     '[a b])
  (is (= [:a :b] (return-keys (parse '[:find [?a ?b] :keys a b :in ?a ?b])))))

(deftest in-bindings
  (are [input cls vars] (let [b (first (.in (parse [:find '?e :in input '$ :where '[?e :a]])))]
                          (and (instance? cls b)
                               (= vars (if (instance? Binding b)
                                         (map #(.symbol ^Variable %) (.vars ^Binding b))
                                         (str b)))))
    '?x          BindScalar  '[?x]
    '[?a ?b]     BindTuple   '[?a ?b]
    '[?a _ ?b]   BindTuple   '[?a ?b]
    '[?x ...]    BindColl    '[?x]
    '[[?a ?b]]   BindRel     '[?a ?b]
    '[[_ ?b]]    BindRel     '[?b]
    '_           BindIgnore  []
    ;; bindings nest: a tuple's positions and a collection's elements are bindings
    '[?a [?b ?c]]          BindTuple '[?a ?b ?c]
    '[?a [?b ...]]         BindTuple '[?a ?b]
    '[[?k ?v] ...]         BindColl  '[?k ?v]
    '[[?a [?b ...]] ...]   BindColl  '[?a ?b]
    '[[?a [[?b _]]]]       BindRel   '[?a ?b]
    '[[?x _ ?z] ...]       BindColl  '[?x ?z]
    '[_ ...]               BindColl  []
    '[?a [_ ...]]          BindTuple '[?a]
    '$src        SrcVar      "$src"
    '%           RulesVar    "%"
    'pattern     PatternName "pattern")
  (is (= [SrcVar/DEFAULT] (vec (.in (parse '[:find ?e :where [?e :a]])))) "default :in is [$]"))

(deftest where-clauses
  (are [c cls shown vars binds needs]
       (let [parsed (last-clause c)]
         (and (instance? cls parsed) (= shown (str parsed))
              (= vars (syms (.vars parsed))) (= binds (syms (.binds parsed)))
              (= needs (syms (.needs parsed)))))
    '[?e :b ?w]                   Pattern   "[?e :b ?w]"                 '#{?e ?w} '#{?e ?w} #{}
    '[?e :b]                      Pattern   "[?e :b]"                    '#{?e} '#{?e} #{}
    '[$h ?e :b ?w ?tx true]       Pattern   "[$h ?e :b ?w ?tx true]"     '#{?e ?w ?tx} '#{?e ?w ?tx} #{}
    '[_ :b "s"]                   Pattern   "[_ :b \"s\"]"               #{} #{} #{}
    '[[:id 1] :b ?w]              Pattern   "[[:id 1] :b ?w]"            '#{?w} '#{?w} #{}
    '[(< ?v 10)]                  Predicate "[(< ?v 10)]"                '#{?v} #{} '#{?v}
    ;; a symbol other than ?var, $src and _ is a constant in a data pattern, and quoted in a call
    '[?e :b foo]                  Pattern   "[?e :b foo]"                '#{?e} '#{?e} #{}
    '[?e :b ns/foo ?tx]           Pattern   "[?e :b ns/foo ?tx]"         '#{?e ?tx} '#{?e ?tx} #{}
    '[?e :b %x]                   Pattern   "[?e :b %x]"                 '#{?e} '#{?e} #{}
    '[(= ?v 'foo)]                Predicate "[(= ?v (quote foo))]"       '#{?v} #{} '#{?v}
    '[(str ?v 'foo) ?s]           FnBinding "[(str ?v (quote foo)) ?s]"  '#{?v ?s} '#{?s} '#{?v}
    '[(f ?x) [?a [?b ...]]]       FnBinding "[(f ?x) [?a [?b ...]]]"     '#{?x ?a ?b} '#{?a ?b} '#{?x}
    '[(f ?x) [[?a _ ?b] ...]]     FnBinding "[(f ?x) [[?a _ ?b] ...]]"   '#{?x ?a ?b} '#{?a ?b} '#{?x}
    '[(missing? $ ?e :b)]         Predicate "[(missing? $ ?e :b)]"       '#{?e} #{} '#{?e}
    '[(str ?v "x") ?s]            FnBinding "[(str ?v \"x\") ?s]"        '#{?v ?s} '#{?s} '#{?v}
    '[(get-else $ ?e :b 0) ?w]    FnBinding "[(get-else $ ?e :b 0) ?w]"  '#{?e ?w} '#{?w} '#{?e}
    '[(untuple ?x) [?a _ ?b]]     FnBinding "[(untuple ?x) [?a _ ?b]]"   '#{?x ?a ?b} '#{?a ?b} '#{?x}
    '[(f ?x) [?m ...]]            FnBinding "[(f ?x) [?m ...]]"          '#{?x ?m} '#{?m} '#{?x}
    '[(f ?x) [[?a ?b]]]           FnBinding "[(f ?x) [[?a ?b]]]"         '#{?x ?a ?b} '#{?a ?b} '#{?x}
    '[(ground 1) _]               FnBinding "[(ground 1) _]"             #{} #{} #{}
    '(anc ?e ?w)                  RuleCall  "(anc ?e ?w)"                '#{?e ?w} '#{?e ?w} #{}
    '($h anc ?e _ 1)              RuleCall  "($h anc ?e _ 1)"            '#{?e} '#{?e} #{}
    '(not [?e :b ?w])             Not       "(not [?e :b ?w])"           '#{?e ?w} #{} '#{?e}
    '(not-join [?e] [?e :b ?w])   Not       "(not-join [?e] [?e :b ?w])" '#{?e} #{} '#{?e}
    '($h not [?e :b 1])           Not       "($h not [$h ?e :b 1])"      '#{?e} #{} '#{?e}
    '(or [?e :b ?w] [?e :c ?w])   Or        "(or [?e :b ?w] [?e :c ?w])" '#{?e ?w} '#{?e ?w} #{}
    '(or-join [?e] [?e :b 1] (and [?e :c ?w] [(pos? ?w)]) [?e :d ?w])
    Or "(or-join [?e] [?e :b 1] (and [?e :c ?w] [(pos? ?w)]) [?e :d ?w])" '#{?e} '#{?e} #{}
    '(or [?e :b ?w] (and [?e :c ?w] [(pos? ?w)]))
    Or "(or [?e :b ?w] (and [?e :c ?w] [(pos? ?w)]))"                    '#{?e ?w} '#{?e ?w} #{}
    '(or [(pos? ?x)] [(neg? ?x)])
    Or "(or [(pos? ?x)] [(neg? ?x)])"                                    '#{?x} #{} '#{?x}
    '(or-join [?e ?w] [?e :b ?w] (and [?e :c ?z] [(inc ?z) ?w]))
    Or "(or-join [?e ?w] [?e :b ?w] (and [?e :c ?z] [(inc ?z) ?w]))"     '#{?e ?w} '#{?e ?w} #{}
    '(or-join [[?x] ?w] [?w :b ?x] [?w :c ?x])
    Or "(or-join [[?x] ?w] [?w :b ?x] [?w :c ?x])"                       '#{?x ?w} '#{?w} '#{?x}
    '(or-join [?e ?x] [?e :b ?x] [(pos? ?x)] )
    Or "(or-join [?e ?x] [?e :b ?x] [(pos? ?x)])"                        '#{?e ?x} #{} '#{?e ?x}))

(deftest clause-details
  (testing "a pattern's short form reads _ in the positions not written"
    (let [^Pattern p (last-clause '[?e :b])]
      (is (= ["?e" ":b" "_" "_" "_"] (map str [(.e p) (.a p) (.v p) (.tx p) (.added p)])))))
  (testing "function symbol and arguments are kept exactly"
    (let [^FnBinding f (last-clause '[(clojure.string/split ?v #"," 2) [?a ...]])]
      (is (= 'clojure.string/split (.fn f)))
      (is (= ["?v" "#\",\"" "2"] (map str (.args f))))))
  (testing "a plain not joins on the variables its scope binds; the rest are local"
    (is (= '[?e] (map #(.symbol ^Variable %) (.joinVars ^Not (last-clause '(not [?e :b ?w]))))))
    (is (= '[?e ?x] (map #(.symbol ^Variable %) (.joinVars ^Not (last-clause '(not [?e :b ?x] [?w :c ?e])))))))
  (testing "clauses inside ($src not ...) and ($src or ...) read that source"
    (let [^Or o (last-clause '($h or-join [?e] [?e :b 1] (and [?e :c ?w] (not [?w :d 2]))))
          [_ ^And branch] (.branches o)
          [^Pattern p ^Not n] (.clauses branch)]
      (is (= ["$h" "$h" "$h"] [(.name (.src o)) (.name (.src p)) (.name (.src n))]))))
  (testing "rule invocation with required args"
    (is (= '#{?x} (syms (.needs ^RuleCall (last-clause '(anc ?x ?w))
                                (first (rules '[[(anc [?a] ?b) [?a :p ?b]]])))))))
  (testing "interned variables"
    (is (identical? (Variable/of "?e") (.e ^Pattern (last-clause '[?e :b]))))))

(def equivalent-forms
  [['[:find ?e (count ?v) :keys e n :with ?w :in $ ?n :where [?e :a ?v] [?e :w ?w] [(> ?v ?n)]]
    '{:find [?e (count ?v)] :keys [e n] :with [?w] :in [$ ?n] :where [[?e :a ?v] [?e :w ?w] [(> ?v ?n)]]}
    "[:find ?e (count ?v) :keys e n :with ?w :in $ ?n :where [?e :a ?v] [?e :w ?w] [(> ?v ?n)]]"]
   ['[:find [?x ...] :where [?e :a ?x] (not [?e :b 1]) (or [?e :c 1] [?e :d 1])]
    '{:find [[?x ...]] :where [[?e :a ?x] (not [?e :b 1]) (or [?e :c 1] [?e :d 1])]}
    "[:find [?x ...] :in $ :where [?e :a ?x] (not [?e :b 1]) (or [?e :c 1] [?e :d 1])]"]
   ['[:find ?e . :in $ % :where (anc ?e 1) (or-join [[?e] ?x] [?e :p ?x] [?x :q ?e])]
    '{:find [?e .] :in [$ %] :where [(anc ?e 1) (or-join [[?e] ?x] [?e :p ?x] [?x :q ?e])]}
    "{:find [?e .] :in [$ %] :where [(anc ?e 1) (or-join [[?e] ?x] [?e :p ?x] [?x :q ?e])]}"]])

(deftest forms-are-equivalent
  (doseq [[v m s] equivalent-forms]
    (is (= (parse v) (parse m) (parse s)) (str v)))
  (testing "toString prints a query that parses back to an equal query"
    (doseq [[v] equivalent-forms]
      (is (= (parse v) (parse (str (parse v)))))))
  (is (= (parse '[:find ?e :where [?e :a]]) (parse '[:where [?e :a] :find ?e])) "sections in any order")
  (is (= 1500 (.getAsLong (.timeout (parse '{:find [?e] :where [[?e :a]] :timeout 1500})))))
  (is (.isEmpty (.timeout (parse '[:find ?e :where [?e :a]]))))
  (is (= "[?e :a]" (str (.formOf (parse "[:find ?e :where [?e :a]]") (first (.where (parse "[:find ?e :where [?e :a]]"))))))))

(deftest validation-errors
  (are [q error form] (= {:error error :form form} (failure #(parse q)))
    ;; :parser/query
    42                                        :parser/query '42
    '(:find ?e :where [?e :a] :foo 1)         :parser/query '(:find ?e :where [?e :a] :foo 1)
    '[:where [?e :a]]                         :parser/query '[:where [?e :a]]
    '[?e :find ?e]                            :parser/query '[?e :find ?e]
    '[:find ?e :find ?e]                      :parser/query '[:find ?e :find ?e]
    '[:find ?e :timeout 10 :where [?e :a]]    :parser/query '[:find ?e :timeout 10 :where [?e :a]]
    '{:find [?e] :where [[?e :a]] :timeout 0} :parser/query '{:find [?e] :where [[?e :a]] :timeout 0}
    '{:find ?e :where [[?e :a]]}              :parser/query '{:find ?e :where [[?e :a]]}
    "[:find ?e :where [?e :a]] [:extra]"      :parser/query "[:find ?e :where [?e :a]] [:extra]"
    "[:find ?e :where [?e :a"                 :parser/query "[:find ?e :where [?e :a"
    '[:find ?x :in $ ?y]                      :parser/query '[:find ?x :in $ ?y]
    '[:find ?x]                               :parser/query '[:find ?x]
    ;; :parser/find
    '[:find :where [?e :a]]                   :parser/find  '[]
    '[:find ?e ?v . :where [?e :a ?v]]        :parser/find  '[?e ?v .]
    '[:find [?e ...] ?v :where [?e :a ?v]]    :parser/find  '[[?e ...] ?v]
    '[:find "e" :where [?e :a ?v]]            :parser/find  "e"
    '[:find (foo ?v) :where [?e :a ?v]]       :parser/find  '(foo ?v)
    '[:find (count) :where [?e :a ?v]]        :parser/find  '(count)
    '[:find (count ?e ?v) :where [?e :a ?v]]  :parser/find  '(count ?e ?v)
    '[:find (min 0 ?v) :where [?e :a ?v]]     :parser/find  '(min 0 ?v)
    '[:find (sample ?v) :where [?e :a ?v]]    :parser/find  '(sample ?v)
    '[:find (sum 2) :where [?e :a ?v]]        :parser/find  '(sum 2)
    '[:find (pull ?e) :where [?e :a ?v]]      :parser/find  '(pull ?e)
    '[:find (pull ?e :a) :where [?e :a ?v]]   :parser/find  '(pull ?e :a)
    '[:find (pull ?e pat) :where [?e :a ?v]]  :parser/find  '(pull ?e pat)
    '[:find ?e ?v :keys e :where [?e :a ?v]]  :parser/find  '[e]
    '[:find ?e :keys ?e :where [?e :a ?v]]    :parser/find  '[?e]
    '[:find ?e ?v :keys e e :where [?e :a ?v]] :parser/find '[e e]
    '[:find ?e . :keys e :where [?e :a ?v]]   :parser/find  '[e]
    '[:find ?e :keys e :strs e :where [?e :a]] :parser/find '[e]
    ;; :parser/with
    '[:find ?e :with :where [?e :a ?v]]       :parser/with  '[]
    '[:find ?e :with ?v ?v :where [?e :a ?v]] :parser/with  '?v
    '[:find ?e :with 1 :where [?e :a ?v]]     :parser/with  1
    ;; :with names variables :find does not
    '[:find ?e :with ?e :where [?e :a ?v]]    :parser/with  '?e
    '[:find ?e (count ?v) :with ?v :where [?e :a ?v]] :parser/with '?v
    '[:find (pull ?e [*]) :with ?v ?e :where [?e :a ?v]] :parser/with '?e
    ;; :parser/in
    '[:find ?e :in :where [?e :a ?v]]         :parser/in    '[]
    '[:find ?e :in $ ?x ?x :where [?e :a ?x]] :parser/in    '?x
    '[:find ?e :in $ ?x [?x ...] :where [?e :a ?x]] :parser/in '[?x ...]
    '[:find ?e :in $ $ :where [?e :a ?v]]     :parser/in    '$
    '[:find ?e :in $ % % :where [?e :a ?v]]   :parser/in    '%
    '[:find ?e :in $ [?a ?a] :where [?e :a ?a]] :parser/in  '[?a ?a]
    '[:find ?e :in $ [] :where [?e :a ?v]]    :parser/in    '[]
    '[:find ?e :in $ [[]] :where [?e :a ?v]]  :parser/in    '[[]]
    '[:find ?e :in $ [?x ... ?y] :where [?e :a ?x]] :parser/in '[?x ... ?y]
    '[:find ?e :in $ [?a [?a ...]] :where [?e :a ?a]] :parser/in '[?a [?a ...]]
    '[:find ?e :in $ [[?a ...]] :where [?e :a ?a]] :parser/in '[[?a ...]]
    '[:find ?e :in $ [?a [] ?b] :where [?e :a ?a]] :parser/in '[?a [] ?b]
    '[:find ?e :in $ [?a [:k]] :where [?e :a ?a]] :parser/in '[?a [:k]]
    '[:find ?e :in $ %x :where [?e :a ?v]]   :parser/in    '%x
    '[:find ?e :in $ [:a] :where [?e :a ?v]]  :parser/in    '[:a]
    '[:find ?e :in $ 1 :where [?e :a ?v]]     :parser/in    '1
    ;; :parser/where
    '[:find ?e :where ?e]                     :parser/where '?e
    '[:find ?e :where [?e :a] []]             :parser/where '[]
    '[:find ?e :where [?e :a ?v ?t ?x ?y]]    :parser/where '[?e :a ?v ?t ?x ?y]
    '[:find ?e :in $ % :where [?e :a ?v] (anc ?e foo)] :parser/where '(anc ?e foo)
    '[:find ?e :where [?e :a ?v] [(f ?v) [?a [?a]]]] :parser/where '[(f ?v) [?a [?a]]]
    '[:find ?e :where [?e :a nil]]            :parser/where '[?e :a nil]
    '[:find ?e :where [?e :a [?v 1]]]         :parser/where '[?e :a [?v 1]]
    '[:find ?e :where [?e :a ?v $]]           :parser/where '[?e :a ?v $]
    '[:find ?e :where [?e :a ?v ?t :yes]]     :parser/where '[?e :a ?v ?t :yes]
    '[:find ?e :where [$]]                    :parser/where '[$]
    '[:find ?e :where [?e :a ?v] [(> ?v 1) ?x ?y]] :parser/where '[(> ?v 1) ?x ?y]
    '[:find ?e :where [?e :a ?v] [("f" ?v)]] :parser/where '[("f" ?v)]
    '[:find ?e :where [?e :a ?v] [()]]        :parser/where '[()]
    '[:find ?e :where [?e :a ?v] [(> ?v _)]]  :parser/where '[(> ?v _)]
    '[:find ?e :where [?e :a ?v] [(> ?v x)]]  :parser/where '[(> ?v x)]
    '[:find ?e :where [?e :a ?v] [$ (> ?v 1)]] :parser/where '[$ (> ?v 1)]
    '[:find ?e :where [?e :a ?v] [(f ?v) :k]] :parser/where '[(f ?v) :k]
    '[:find ?e :where [?e :a ?v] [(f ?v) [?a ?a]]] :parser/where '[(f ?v) [?a ?a]]
    '[:find ?e :where [?e :a ?v] (and [?e :b])] :parser/where '(and [?e :b])
    '[:find ?e :where [?e :a ?v] (not)]       :parser/where '(not)
    '[:find ?e :where [?e :a ?v] (not-join ?e [?e :b])] :parser/where '(not-join ?e [?e :b])
    '[:find ?e :where [?e :a ?v] (not-join [] [?e :b])] :parser/where '(not-join [] [?e :b])
    '[:find ?e :where [?e :a ?v] (not-join [?e ?e] [?e :b])] :parser/where '(not-join [?e ?e] [?e :b])
    '[:find ?e :where [?e :a ?v] (or)]        :parser/where '(or)
    '[:find ?e :where [?e :a ?v] (or [?e :b] (and))] :parser/where '(and)
    '[:find ?e :where [?e :a ?v] (or-join [] [?e :b])] :parser/where '(or-join [] [?e :b])
    '[:find ?e :where [?e :a ?v] (or-join [[] ?e] [?e :b])] :parser/where '(or-join [[] ?e] [?e :b])
    '[:find ?e :where [?e :a ?v] (or-join [?e :x] [?e :b])] :parser/where '(or-join [?e :x] [?e :b])
    '[:find ?e :where [?e :a ?v] (clojure.core/inc ?v)] :parser/where '(clojure.core/inc ?v)
    '[:find ?e :in $ % :where [?e :a ?v] (anc)] :parser/where '(anc)
    '[:find ?e :in $ % :where [?e :a ?v] (anc ?e $)] :parser/where '(anc ?e $)
    ;; :query/unbound-var
    '[:find ?z :where [?e :a ?v]]             :query/unbound-var '?z
    '[:find ?e (count ?z) :where [?e :a ?v]]  :query/unbound-var '(count ?z)
    '[:find (pull ?z [*]) :where [?e :a ?v]]  :query/unbound-var '(pull ?z [*])
    '[:find ?e :with ?z :where [?e :a ?v]]    :query/unbound-var '?z
    '[:find ?w :where [?e :a ?v] (not [?e :b ?w])] :query/unbound-var '?w
    '[:find ?w :where [?e :a ?v] (or-join [?e] [?e :b ?w] [?e :c ?w])] :query/unbound-var '?w
    '[:find (sample ?n ?v) :where [?e :a ?v] [?e :n ?n]] :query/unbound-var '(sample ?n ?v)
    '[:find ?e :where [?e :a ?v] [(> ?w 1)]]  :query/unbound-var '[(> ?w 1)]
    '[:find ?e :where [?e :a ?v] [(?f ?v)]]   :query/unbound-var '[(?f ?v)]
    '[:find ?e :where [?e :a ?v] [(inc ?w) ?u]] :query/unbound-var '[(inc ?w) ?u]
    '[:find ?e :where [?e :a ?v] [(> ?u 1)] [(inc ?w) ?u]] :query/unbound-var '[(inc ?w) ?u]
    '[:find ?e :where [?e :a ?v] [(inc ?u) ?w] [(inc ?w) ?u]] :query/unbound-var '[(inc ?u) ?w]
    '[:find ?e :where [?e :a ?v] (not [?e :b ?w] [(> ?z ?w)])] :query/unbound-var '[(> ?z ?w)]
    '[:find ?e :where [?e :a ?v] (not-join [?e] [?e :b ?w] [(> ?v ?w)])] :query/unbound-var '[(> ?v ?w)]
    '[:find ?e :where [?e :a ?v] (or-join [?e] [?e :b 1] (and [?e :c ?w] [(> ?v ?w)]))] :query/unbound-var '[(> ?v ?w)]
    ;; :query/insufficient-binding
    '[:find ?e :where [?e :a ?v] (not [?x :b ?y])] :query/insufficient-binding '(not [?x :b ?y])
    '[:find ?e :where [?e :a ?v] (not [(> ?z 1)])] :query/insufficient-binding '(not [(> ?z 1)])
    '[:find ?e :where [?e :a ?v] (not-join [?x] [?x :b ?e])] :query/insufficient-binding '(not-join [?x] [?x :b ?e])
    '[:find ?e :where [?e :a ?v] (not-join [?e ?x] [?e :b 1])] :query/insufficient-binding '(not-join [?e ?x] [?e :b 1])
    '[:find ?e :where [?e :a ?v] (or-join [?e ?x] [?e :b 1] [?e :c ?x])] :query/insufficient-binding '(or-join [?e ?x] [?e :b 1] [?e :c ?x])
    '[:find ?e :where [?e :a ?v] (or-join [[?x] ?e] [?e :b ?x] [?e :c ?x])] :query/insufficient-binding '(or-join [[?x] ?e] [?e :b ?x] [?e :c ?x])
    '[:find ?e :where [?e :a ?v] (or-join [?e ?x] [?e :b ?x] [(pos? ?x)])] :query/insufficient-binding '(or-join [?e ?x] [?e :b ?x] [(pos? ?x)])
    '[:find ?e :where [?e :a ?v] (or [?e :b 1] [?v :c 2])] :query/insufficient-binding '(or [?e :b 1] [?v :c 2])
    '[:find ?e :where [?e :a ?v] (or [?e :b 1] [?e :c ?x])] :query/insufficient-binding '(or [?e :b 1] [?e :c ?x])
    '[:find ?e :where (or [?e :b ?x] (not [?e :c ?x]))] :query/insufficient-binding '(or [?e :b ?x] (not [?e :c ?x]))
    '[:find ?e :where [?e :a ?v] (or-join [?e ?x] [?e :b 1])] :query/insufficient-binding '(or-join [?e ?x] [?e :b 1])
    ;; :query/missing-rules
    '[:find ?e :where [?e :a ?v] (anc ?e ?v)] :query/missing-rules '(anc ?e ?v)
    '[:find ?e :where [?e :a ?v] (> ?v 1)]    :query/missing-rules '(> ?v 1)
    '[:find ?e :where [?e :a ?v] (or [?e :b] (and (anc ?e)))] :query/missing-rules '(anc ?e)
    ;; :query/unknown-source
    '[:find ?e :in $a :where [?e :a ?v]]      :query/unknown-source '[?e :a ?v]
    '[:find ?e :where [$b ?e :a ?v]]          :query/unknown-source '[$b ?e :a ?v]
    '[:find ?e :where [?e :a ?v] ($b not [?e :c 1])] :query/unknown-source '($b not [?e :c 1])
    '[:find ?e :where [?e :a ?v] [(missing? $b ?e :c)]] :query/unknown-source '[(missing? $b ?e :c)]
    '[:find (pull $b ?e [*]) :where [?e :a ?v]] :query/unknown-source '(pull $b ?e [*])))

(def tricky-queries
  [
    '[:find ?x :in ?x]
    '[:find ?a ?b :in [[?a ?b]]]
    '[:find ?e :where [?e :a ?v] (not [?e :b ?w] [(> ?w ?v)])]
    '[:find ?e :where [?e :a ?v] (not-join [?e] [?e :b ?w] [?w :c ?z] [(> ?z 2)])]
    '[:find ?e :where [?e :a ?v] (or (not [?e :b 1]) [?e :c 2])]
    '[:find ?e :where [?e :a ?v] (or (and [?e :b 1] (not [?e :c 2])) [?e :d 3])]
    '[:find ?e :where [?e :a ?v] (or-join [?e] (not-join [?e] [?e :n _]) (and [?e :n ?n] [(< ?n 10)]))]
    '[:find ?e :in $ ?max :where [?e :id] (or-join [?e ?max] (not [?e :n _]) (and [?e :n ?n] [(< ?n ?max)]))]
    '[:find ?e :where [?e :a ?v] (or-join [[?v] ?e] [?e :b ?v] (and [?e :c ?w] [(= ?w ?v)]))]
    '[:find ?e :where [?e :a ?v] (not (not [?e :b ?w] [?w :c ?v]))]
    '[:find ?e :where [?e :a ?v] (not [?e :b ?w] (not [?w :c ?v]))]
    '[:find ?e :where [?e :a ?v] (or [?e :b 1] (or [?e :c 1] [?e :d 1]))]
    '[:find ?e :where [(ground 1) ?e] [(> ?e 0)]]
    '[:find ?e :where [?e :a ?v] [(> ?u 1)] [(inc ?v) ?u]]
    '[:find ?e ?w :in $ $h :where [?e :a ?v] [$h ?e :b ?w] ($h not [?e :c 1]) ($h or [?e :d ?w] [?e :e ?w])]
    '[:find ?e :in $ % :where [?e :a ?v] (anc ?e ?v) ($ anc ?v _)]
    '[:find ?e :in % ?x :where (positive ?x ?e)]
    '[:find ?e :where [?e :a ?v] [(tuple ?e ?v) ?t] [(untuple ?t) [?a ?b]]]
    '[:find ?e :where [?e :a ?v] [(get-some $ ?e :b :c) [?attr ?val]] [(identity ?val) ?i]]
    '[:find ?e :in $ ?e :where [(missing? $ ?e :a)]]
    '[:find (pull ?e pat) :in $ pat ?e]
    '[:find (max ?n ?v) (my.ns/top ?n $ 0.5 ?v) :in $ ?n :where [_ :a ?v]]
    '[:find ?e . :where [?e :a #{1 2}]]
    '[:find ?e :where [?e :a foo] [?e :b ?v] [(= ?v 'bar)] [(str ?v ''baz) ?s]]
    '[:find (my.ns/agg 'sym ?v) :where [_ :a ?v]]
    '[:find ?k ?v ?w :in [[?k [?v ?w]] ...]]
    '[:find ?x :in [?x ...] :where]
    '[:find ?a ?b :in ?t :where [(identity ?t) [?a [[?b]]]]]
    '{:find [?e ?v] :keys [e v] :in [$] :where [[?e :a ?v]] :timeout 10}
    "[:find ?e :in $ [?x ...] :where [?e :a ?x] [(str ?x \"!\") ?s] [(clojure.string/starts-with? ?s \"a\")]]"])

(deftest valid-tricky-queries
  (doseq [q tricky-queries]
    (let [parsed (parse q)]
      (is (instance? Query parsed) (str q))
      (is (= parsed (parse (str parsed))) "prints as a query that parses back equal"))))

(def family
  '[[(parent ?p ?c) [?c :parent ?p]]
    [(anc ?a ?d) (parent ?a ?d)]
    [(anc ?a ?d) (parent ?a ?x) (anc ?x ?d)]
    [(older [?a] ?b) [?a :age ?x] [?b :age ?y] [(> ?x ?y)]]
    [(same-age ?a ?b) [?a :age ?x] [?b :age ?x] (not [(= ?a ?b)])]
    [(young ?p) (or-join [?p] [?p :kid true] (and [?p :age ?x] [(< ?x 18)]))]
    [(in-h ?p) [$h ?p :x]]
    [(positive ?x ?y) [(> ?x 0)] [(identity ?x) ?y]]])

(deftest parsing-rules
  (let [parsed (rules family)
        ^Rule older (nth parsed 3)]
    (is (= 8 (count parsed)))
    (is (= '[parent anc anc older same-age young in-h positive] (map #(.name ^Rule %) parsed)))
    (is (= '[[?a] [?a ?b]] [(map #(.symbol ^Variable %) (.requiredVars older))
                            (map #(.symbol ^Variable %) (.vars older))]))
    (is (= "[(older [?a] ?b) [?a :age ?x] [?b :age ?y] [(> ?x ?y)]]" (str older)))
    (is (= parsed (rules (pr-str family))) "string form")
    (is (= '[?a ?b] (map #(.symbol ^Variable %) (.joinVars ^Not (last (.clauses ^Rule (nth parsed 4)))))))))

(deftest rule-errors
  (are [rs error form] (= {:error error :form form} (failure #(rules rs)))
    ':nope                                        :parser/rule ':nope
    '[[(r ?a)]]                                   :parser/rule '[(r ?a)]
    '[[r [?a :b]]]                                :parser/rule '[r [?a :b]]
    '[[(?r ?a) [?a :b]]]                          :parser/rule '[(?r ?a) [?a :b]]
    '[[(ns/r ?a) [?a :b]]]                        :parser/rule '[(ns/r ?a) [?a :b]]
    '[[(not ?a) [?a :b]]]                         :parser/rule '[(not ?a) [?a :b]]
    '[[(r) [?a :b]]]                              :parser/rule '[(r) [?a :b]]
    '[[(r ?a ?a) [?a :b]]]                        :parser/rule '[(r ?a ?a) [?a :b]]
    '[[(r ?a 1) [?a :b]]]                         :parser/rule '[(r ?a 1) [?a :b]]
    '[[(r ?a ?b) [?a :b]]]                        :parser/rule '[(r ?a ?b) [?a :b]]
    '[[(r ?a) [?a :b]] [(r ?a ?b) [?a :b ?b]]]    :parser/rule '[(r ?a ?b) [?a :b ?b]]
    '[[(r [?a] ?b) [?a :b ?b]] [(r ?a ?b) [?a :b ?b]]] :parser/rule '[(r ?a ?b) [?a :b ?b]]
    '[[(r ?a) [?a :b]] [(s ?a) (r foo)]]          :parser/rule '(r foo)
    '[[(r ?a) (s ?a)]]                            :query/missing-rules '(s ?a)
    '[[(r ?a) [?a :b]] [(s ?a) (r ?a ?a)]]        :query/missing-rules '(r ?a ?a)
    '[[(r ?a) [?a :b ?v] [(> ?v ?w)]]]            :query/unbound-var '[(> ?v ?w)]
    '[[(r ?a) [?a :b] (not [?x :b ?y])]]         :query/insufficient-binding '(not [?x :b ?y])
    '[[(r [?a] ?b) [?a :b ?b]] [(s ?x) (r ?y ?x)]] :query/insufficient-binding '(r ?y ?x)
    '[[(r [?a] ?b) [?a :b ?b]] [(s ?x) (r _ ?x)]]  :query/insufficient-binding '(r _ ?x)))

(deftest validating-rules
  (let [rs (rules family)]
    (are [q] (nil? (.validateRules (parse q) rs))
      '[:find ?d :in $ % :where [?a :name "x"] (anc ?a ?d)]
      '[:find ?b :in $ % ?a :where (older ?a ?b)]
      '[:find ?b :in $ % :where [?a :name "x"] (older ?a ?b) (not (young ?b))]
      '[:find ?p :in $ $h % :where [?p :y] (in-h ?p)]
      '[:find ?p :in $h % :where ($h parent ?p ?c)]
      '[:find ?y :in % ?x :where (positive ?x ?y)])
    (are [q error form] (= {:error error :form form} (failure #(.validateRules (parse q) rs)))
      '[:find ?d :in $ % :where (ancestor ?a ?d)]        :query/missing-rules '(ancestor ?a ?d)
      '[:find ?d :in $ % :where (anc ?a ?b ?d)]          :query/missing-rules '(anc ?a ?b ?d)
      '[:find ?b :in $ % :where (older ?a ?b)]           :query/insufficient-binding '(older ?a ?b)
      '[:find ?b :in $ % :where [?b :a] (older _ ?b)]    :query/insufficient-binding '(older _ ?b)
      '[:find ?d :in $h % :where [$h ?a :b] (anc ?a ?d)] :query/unknown-source '(anc ?a ?d)
      '[:find ?p :in $ % :where [?p :y] (in-h ?p)]       :query/unknown-source (nth family 6))))

(defn- nested
  "`inner` wrapped n times by `wrap`."
  [n wrap inner]
  (nth (iterate wrap inner) n))

(deftest nesting-limits
  (testing "a query or rule set nested deeper than the limit is refused before anything recurses"
    (are [q] (= :parser/query (:error (failure #(parse q))))
      [:find '?e :where '[?e :a] (nested 1000 #(list 'not %) '[?e :b 1])]
      [:find '?e :where '[?e :a] (nested 1000 #(list 'or % '[?e :c 1]) '[?e :b 1])]
      [:find '?e :where '[?e :a] (nested 1000 #(list 'not-join '[?e] %) '[?e :b 1])]
      [:find '?e :where '[?e :a] (nested 1000 #(list 'and %) '[?e :b 1])]
      [:find '?e :in (nested 1000 #(vector % '...) '?x) :where '[?e :a ?x]]
      [:find '?e :where ['?e :a (nested 1000 vector 1)]]
      [:find '?e :where ['?e :a (nested 1000 #(hash-map :k %) 1)]]
      (pr-str [:find '?e :where '[?e :a] (nested 1000 #(list 'not %) '[?e :b 1])])
      ;; deep enough that reading the string would overflow the reader's stack
      (str "[:find ?e :where [?e :a " (apply str (repeat 100000 "[")) (apply str (repeat 100000 "]")) "]]"))
    (is (= :parser/rule (:error (failure #(rules [(list* '(r ?e) (nested 1000 (fn [c] (list 'not c)) '[?e :b 1]) ['[?e :a]])])))))
    (is (= :parser/rule (:error (failure #(rules (pr-str [[(list 'r '?e) '[?e :a] (nested 1000 (fn [c] (list 'not c)) '[?e :b 1])]])))))))
  (testing "nesting within the limit parses"
    (is (instance? Query (parse [:find '?e :where '[?e :a] (nested 40 #(list 'not %) '[?e :b 1])])))
    (is (instance? Query (parse [:find '?e :where ['?e :a (nested 90 vector 1)]])))))

(deftest queries-that-are-not-queries
  (are [q] (= :parser/query (:error (failure #(parse q))))
    nil
    ""
    "   "
    :find
    'find
    []
    ()
    {}
    #{[:find '?e]}
    (Object.)))

(def ^:private gen-atom
  (gen/elements [:find :in :where :with :keys :strs :syms :timeout :a :b/c
                 '?e '?x '?y '_ '$ '$h '% '%x '. '... 'pull 'not 'not-join 'or 'or-join 'and
                 'count 'max 'sample 'foo 'ns/foo 'quote '< 'ground 'missing?
                 nil true 0 1 -1 2.5 "s" \c]))

(def ^:private gen-form
  "Query-ish data: the section keywords, variables, the grammar's symbols and constants,
  nested in vectors, lists, maps and sets."
  (gen/recursive-gen
    (fn [inner]
      (gen/one-of [(gen/vector inner 0 6)
                   (gen/fmap #(apply list %) (gen/vector inner 0 5))
                   (gen/map inner inner {:max-elements 3})
                   (gen/set inner {:max-elements 3})]))
    gen-atom))

(def ^:private gen-query
  (gen/one-of [gen-form
               (gen/fmap #(into [:find] %) (gen/vector gen-form 0 8))
               (gen/fmap (fn [[f in w]] (vec (concat [:find] f [:in] in [:where] w)))
                         (gen/tuple (gen/vector gen-form 1 3) (gen/vector gen-form 0 3)
                                    (gen/vector gen-form 0 4)))]))

(defspec any-form-parses-or-fails-with-a-parser-error 300
  (prop/for-all [q gen-query]
    (try (parse q) true
         (catch ExceptionInfo e
           (and (contains? #{"parser" "query"} (namespace (:error (ex-data e))))
                (contains? (ex-data e) :form)))
         (catch Throwable _ false))))

;; ---------------------------------------------------------------- :valid-at (h-valid3, #19)

(deftest valid-at-section
  (testing "the vector, map and string forms are one query, which prints back"
    (doseq [[v m s] [['[:find ?c :in $ ?t :valid-at ?t :where [?e :c ?c]]
                      '{:find [?c] :in [$ ?t] :valid-at ?t :where [[?e :c ?c]]}
                      "{:find [?c] :in [$ ?t] :valid-at [$ ?t] :where [[?e :c ?c]]}"]
                     ['[:find ?c :in $ $b ?t :valid-at $b #inst "2030-01-01" :where [$b ?e :c ?c]]
                      '{:find [?c] :in [$ $b ?t] :valid-at [$b #inst "2030-01-01"] :where [[$b ?e :c ?c]]}
                      "[:find ?c :in $ $b ?t :valid-at $b #inst \"2030-01-01\" :where [$b ?e :c ?c]]"]
                     ['[:find ?c :in $ $b :valid-at $b :any-valid-time :where [$b ?e :c ?c ?from ?to]]
                      '{:find [?c] :in [$ $b] :valid-at [$b :any-valid-time] :where [[$b ?e :c ?c ?from ?to]]}
                      "[:find ?c :in $ $b :valid-at $b :any-valid-time :where [$b ?e :c ?c ?from ?to]]"]
                     ['[:find ?c :valid-at :any-valid-time :where [?e :c ?c]]
                      '{:find [?c] :valid-at :any-valid-time :where [[?e :c ?c]]}
                      "{:find [?c] :valid-at [$ :any-valid-time] :where [[?e :c ?c]]}"]]]
      (is (= (parse v) (parse m) (parse s)) (str v))
      (is (= (parse v) (parse (str (parse v)))))))
  (testing "the instant is part of the query's identity (plans and caches are by query)"
    (is (not= (parse '[:find ?c :in $ ?t :valid-at ?t :where [?e :c ?c]])
              (parse '[:find ?c :in $ ?t :where [?e :c ?c]])))
    (is (not= (parse '[:find ?c :valid-at #inst "2030-01-01" :where [?e :c ?c]])
              (parse '[:find ?c :valid-at #inst "2031-01-01" :where [?e :c ?c]])))))
