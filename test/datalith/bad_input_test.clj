(ns datalith.bad-input-test
  "Every public function of datalith.core, fed random and near-valid bad
  input (wrong types, nils, deep and huge nesting, bad keywords, unknown
  attributes and idents, bad lookup refs, negative and huge numbers, strings
  for numbers, functions, arrays, random EDN, and valid forms with one part
  replaced by such a value), on both stores: each call either succeeds (its
  result read through) or throws an ex-info whose :error is a namespaced
  keyword, never another Throwable; and a transact! that fails leaves the
  database as it was (same basis-t, same datoms), as `with` always does.

  DATALITH_TRIALS=n raises the trial count (each trial is one call per
  store)."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.core :as d]
            [datalith.test-util :as tu])
  (:import (java.io File)))

(def trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 400))

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/age {:db/valueType :db.type/long :db/index true}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :user/boss {:db/valueType :db.type/ref}
   :user/part {:db/valueType :db.type/ref :db/isComponent true}
   :user/score {:db/valueType :db.type/double}
   :user/at {:db/valueType :db.type/instant}
   :user/id {:db/valueType :db.type/uuid :db/unique :db.unique/value}})

(def seed-data
  [{:db/id "a" :user/email "a@x" :user/name "A" :user/age 30 :user/tags #{:x :y}
    :user/friend ["b"] :user/part {:user/name "a-part"}}
   {:db/id "b" :user/email "b@x" :user/name "B" :user/age 40 :user/boss "a" :user/friend ["a"]}
   {:db/ident :my/enum}])

(defn ok-tx-fn
  "A transaction function for the near-valid tx-data: adds a name."
  [_db e n]
  [[:db/add e :user/name (str n)]])

(defn ok-pred "A query predicate." [x] (some? x))

;; ---------------------------------------------------------------- bad values

(defn- nested
  "`leaf` wrapped in `depth` collections made by `wrap`."
  [wrap depth leaf]
  (loop [x leaf n depth] (if (zero? n) x (recur (wrap x) (dec n)))))

(def deep-values
  "Values nested far deeper than a recursive reader of them could go."
  (delay [(nested vector 20000 :user/name)
          (nested list 20000 '?e)
          (nested #(hash-map :user/friend %) 20000 [:user/name])
          (nested #(vector :user/friend %) 20000 1)
          (nested #(list 'not %) 20000 '[?e :user/name])
          (nested #(vector % %) 12 1)]))

(def huge-values
  (delay [(vec (range 200000))
          (apply str (repeat 1000000 "x"))
          (vec (repeat 50000 [:db/add "x" :user/name "n"]))
          (set (range 100000))]))

(def gen-weird-keyword
  (gen/elements [(keyword "") (keyword "a b") (keyword "db" "") (keyword "/") (keyword "a/b/c")
                 (keyword "db" "id") :db/ident :db.part/db :db/txInstant :_friend :user/_friend
                 :user/_name :no/such-attr :db/retractEntity :db.fn/cas (keyword "user" "_")
                 :db/valueType :db.type/ref]))

(def gen-scalar
  (gen/one-of
   [(gen/return nil) gen/boolean gen/large-integer gen/double gen/ratio gen/char
    gen/string-ascii gen/keyword gen/keyword-ns gen/symbol gen/symbol-ns gen/uuid
    gen-weird-keyword
    (gen/elements [0 -1 1 Long/MAX_VALUE Long/MIN_VALUE Integer/MAX_VALUE (bigint 1e30)
                   (bigdec "1e400") ##NaN ##Inf ##-Inf -0.0 "" "1" "-1" "1e9" "nil" "[" "{:a"
                   "[:find ?e :where [?e]]" "[*]" (java.util.Date. 0) (java.util.Date. Long/MAX_VALUE)
                   (Object.) (object-array [1 :a]) (byte-array 3) (long-array [1 2])
                   (int 7) (short 3) (byte 1) (float 1.5) \a 'datalith.core/q '... '* '_ '$ '%
                   (fn [& _] 1) inc (java.util.ArrayList. [1 2]) (java.util.HashMap. {:a 1})
                   (StringBuilder. "x") (Thread/currentThread) (atom 1) (delay 1) (promise)
                   (range 5) (map inc [1 2])])]))

(defn- gen-bad
  "A bad value: mostly scalars and random EDN, sometimes deep or huge."
  []
  (gen/frequency [[10 gen-scalar]
                  [4 (gen/scale #(min % 8) gen/any-equatable)]
                  [1 (gen/fmap #(nth @deep-values %) (gen/choose 0 (dec (count @deep-values))))]
                  [1 (gen/fmap #(nth @huge-values %) (gen/choose 0 (dec (count @huge-values))))]]))

(defn- names-a-directory?
  "Whether `connect` would take `x` for a directory (and create it): never
  generated but for temporary ones."
  [x]
  (or (string? x) (instance? File x) (instance? java.nio.file.Path x)
      (and (map? x) (contains? x :dir))))

;; ---------------------------------------------------------------- near-valid forms

(defn- nodes
  "The positions (paths of child indexes) of every node of form `x`, pre-order."
  [x]
  (cons [] (when (and (coll? x) (not (map? x)) (< (count x) 50))
             (mapcat (fn [i c] (map #(cons i %) (nodes c))) (range) x))))

(defn- replace-at
  "`x` with the node at `path` replaced by `v`, keeping each collection's kind."
  [x path v]
  (if (empty? path)
    v
    (let [[i & more] path
          items (vec x)
          items (assoc items i (replace-at (nth items i) more v))]
      (cond (vector? x) items
            (set? x) (set items)
            (seq? x) (apply list items)
            :else items))))

(defn- mutate
  "A generator of `form` with one node replaced by a bad value (or left whole)."
  [form]
  (let [ps (vec (nodes form))]
    (gen/frequency [[1 (gen/return form)]
                    [6 (gen/let [i (gen/choose 0 (dec (count ps)))
                                 v (gen-bad)]
                         (replace-at form (map identity (nth ps i)) v))]])))

(def queries
  '[[:find ?e :where [?e :user/name]]
    [:find ?n . :in $ ?email :where [?e :user/email ?email] [?e :user/name ?n]]
    [:find [?n ...] :where [?e :user/friend ?f] [?f :user/name ?n]]
    [:find (count ?e) (max ?a) :where [?e :user/age ?a] [(> ?a 10)]]
    [:find ?e ?x :in $ [?x ...] :where [?e :user/age ?x]]
    [:find ?e :where [?e :user/name ?n] (not [?e :user/boss])]
    [:find ?e :where (or [?e :user/age 30] [?e :user/age 40])]
    [:find ?a :in $ % :where (r ?a)]
    [:find (pull ?e [:user/name {:user/friend ...}]) :where [?e :user/email]]
    [:find ?e ?y :where [?e :user/age ?a] [(+ ?a 1) ?y] [(datalith.bad-input-test/ok-pred ?y)]]
    [:find ?e :with ?n :where [?e :user/name ?n] [(str/starts-with? ?n "A")]]
    {:find [?e] :where [[?e :user/email _]] :timeout 1000}
    [:find ?tx :where [?e :user/name _ ?tx true]]
    [:find ?e :in $ $h :where [$h ?e :user/name _ _ false]]])

(def fn-queries
  "Queries taking a function, a pull pattern or a query as their second input."
  '[[:find ?y :in $ ?f :where [_ :user/age ?a] [(?f ?a) ?y]]
    [:find ?e :in $ ?f :where [?e :user/name ?n] [(?f ?n)]]
    [:find (pull ?e ?p) :in $ ?p :where [?e :user/email]]
    [:find ?r :in $ ?q :where [(q ?q $) ?r]]
    [:find ?r :in $ ?q :where [(datalith.core/q ?q $) [[?r]]]]])

(def rules '[[(r ?a) [?e :user/age ?a]] [(r ?a) [?e :user/score ?a]]])

(def patterns
  '[[*] [:user/name {:user/friend ...}] [:db/id [:user/tags :limit 1 :as :t]]
    [{:user/friend 2} :user/_friend] [(default :user/age 0) (limit :user/tags nil)]
    [:user/name {[:user/boss :as :b] [:user/email]}] [[:user/name :xform clojure.core/count]]
    [:user/part {:user/part 1}]])

(def tx-templates
  '[[[:db/add "t" :user/name "n"]]
    [{:db/id "t" :user/email "c@x" :user/friend [[:user/email "a@x"]]}]
    [[:db/retract [:user/email "a@x"] :user/age 30]]
    [[:db/retractEntity [:user/email "b@x"]]]
    [[:db/cas [:user/email "a@x"] :user/age 30 31]]
    [[datalith.bad-input-test/ok-tx-fn [:user/email "a@x"] "z"]]
    [{:db/id "p" :user/part {:user/name "q"} :user/tags #{:a}}]
    [[:db/add "t" :user/score 1.5] [:db/add "t" :user/at #inst "2020-01-01"]]
    [{:db/ident :new/attr :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]
    [[:db/retract [:user/email "a@x"] :user/tags]]
    [[:db.fn/retractAttribute [:user/email "a@x"] :user/tags]]])

(def tx-templates-with-values
  "tx-data holding function values, which a quoted form cannot."
  (conj tx-templates [[:db.fn/call ok-tx-fn [:user/email "a@x"] "z"]]
        ;; valid time (h-valid, #19)
        [[:db/add [:user/email "a@x"] :user/age 31 {:db/valid-from #inst "2020-01-01"
                                                    :db/valid-to #inst "2021-01-01"}]]
        [[:db/retract [:user/email "a@x"] :user/age 30 {:db/valid-from #inst "2020-01-01"}]]
        [{:db/id "datomic.tx" :db/valid-from #inst "2020-01-01"} [:db/add "t" :user/name "n"]]
        [{:db/id [:user/email "a@x"] :user/name "v" :db/valid-to #inst "2040-01-01"}]))

;; ---------------------------------------------------------------- calls

(defn- gen-of
  "Picks a valid-ish value from `valid` (a vector) most of the time, else a bad one."
  [valid]
  (gen/frequency [[3 (gen/elements valid)] [1 (gen-bad)]]))

(defn gen-call
  "A generator of [fn-name args], where args refer to the fixture through
  keywords (::db, ::conn, ::hist ...) resolved per store by `resolve-args`."
  []
  (let [db (gen-of [::db ::db ::as-of ::since ::hist ::with-db])
        conn (gen-of [::conn])
        ;; for functions that take a directory too: never one but temporary ones
        not-a-dir (gen/frequency [[3 (gen/return ::conn)]
                                  [1 (gen/such-that (complement names-a-directory?) (gen-bad) 100)]])
        eid (gen-of [::a ::b ::missing ::tx 0 -1 [:user/email "a@x"] [:user/email "nobody"]
                     [:user/name "A"] [:no/attr 1] :my/enum :user/email :no/ident [:user/email]
                     [:user/email "a@x" "b@x"] ["user/email" "a@x"] [::a] 3.5 "a"])
        attr (gen-of [:user/email :user/age :user/friend :db/ident :no/attr :user/tags])
        point (gen-of [::t ::tx 0 1 -5 Long/MAX_VALUE (java.util.Date.) (java.util.Date. 0)])
        index (gen-of [:eavt :aevt :avet :vaet])
        component (gen-of [::a :user/email "a@x" 30 :user/age ::tx nil [:user/email "a@x"]])
        query (gen/bind (gen/elements queries) mutate)
        inputs (gen/vector (gen-of ["a@x" [30 40] rules ::db ::hist]) 0 3)
        pattern (gen/bind (gen/elements patterns) mutate)
        tx-data (gen/frequency [[6 (gen/bind (gen/elements tx-templates-with-values) mutate)] [1 (gen-bad)]])]
    (gen/one-of
     [(gen/tuple (gen/return 'transact!) (gen/tuple conn tx-data))
      (gen/tuple (gen/return 'transact!) (gen/tuple conn (gen/fmap #(hash-map :tx-data %) tx-data)))
      (gen/tuple (gen/return 'with) (gen/tuple db tx-data))
      (gen/tuple (gen/return 'q) (gen/fmap (fn [[q ins]] (into [q] (cons ::db ins))) (gen/tuple query inputs)))
      (gen/tuple (gen/return 'q) (gen/fmap (fn [[q ins]] [{:query q :args (cons ::db ins) :timeout 5000}])
                                           (gen/tuple query inputs)))
      (gen/tuple (gen/return 'q) (gen/tuple (gen-bad) db))
      (gen/tuple (gen/return 'explain) (gen/fmap (fn [[q ins]] (into [q] (cons ::db ins))) (gen/tuple query inputs)))
      (gen/tuple (gen/return 'pull) (gen/tuple db pattern eid))
      (gen/tuple (gen/return 'pull) (gen/tuple db (gen-bad) eid))
      (gen/tuple (gen/return 'pull-many) (gen/tuple db pattern (gen/one-of [(gen/vector eid 0 4) (gen-bad)])))
      (gen/tuple (gen/return 'entity) (gen/tuple db eid))
      (gen/tuple (gen/return 'touch) (gen/tuple (gen-of [::entity])))
      (gen/tuple (gen/return 'entid) (gen/tuple db eid))
      (gen/tuple (gen/return 'ident) (gen/tuple db eid))
      (gen/tuple (gen/return 'datoms) (gen/fmap (fn [[db index cs]] (into [db index] cs))
                                                (gen/tuple db index (gen/vector component 0 4))))
      (gen/tuple (gen/return 'seek-datoms) (gen/fmap (fn [[db index cs]] (into [db index] cs))
                                                     (gen/tuple db index (gen/vector component 0 4))))
      (gen/tuple (gen/return 'index-range) (gen/tuple db attr component component))
      (gen/tuple (gen/return 'tx-range) (gen/tuple (gen-of [::db ::conn ::log]) point point))
      (gen/tuple (gen/return 'as-of) (gen/tuple db point))
      (gen/tuple (gen/return 'since) (gen/tuple db point))
      (gen/tuple (gen/elements '[history basis-t schema as-of-t since-t history?]) (gen/tuple db))
      (gen/tuple (gen/elements '[t->tx tx->t]) (gen/tuple (gen-of [0 1 ::tx ::t])))
      (gen/tuple (gen/elements '[db log]) (gen/tuple conn))
      (gen/tuple (gen/return 'close) (gen/tuple (gen/one-of [(gen-bad) (gen/return ::fresh-conn)])))
      (gen/tuple (gen/return 'verify)
                 (gen/one-of [(gen/tuple not-a-dir) (gen/tuple not-a-dir (gen-bad))]))
      (gen/tuple (gen/return 'rebuild-indexes)
                 (gen/one-of [(gen/tuple not-a-dir (gen/elements [:mem ::temp-dir]))
                              (gen/tuple not-a-dir (gen/elements [:mem ::temp-dir]) (gen-bad))
                              (gen/tuple not-a-dir not-a-dir)]))
      (gen/tuple (gen/return 'rseek-datoms) (gen/fmap (fn [[db index cs]] (into [db index] cs))
                                                      (gen/tuple db index (gen/vector component 0 4))))
      (gen/tuple (gen/return 'index-pull)
                 (gen/tuple db (gen/one-of
                                [(gen/hash-map :index (gen-of [:avet :aevt]) :selector pattern
                                               :start (gen/one-of [(gen/vector component 1 3)
                                                                   (gen/fmap (fn [[a cs]] (into [a] cs))
                                                                             (gen/tuple attr (gen/vector component 0 2)))])
                                               :reverse (gen-of [true false]))
                                 (gen-bad)])))
      (gen/tuple (gen/return 'qseq) (gen/fmap (fn [[q ins]] (into [q] (cons ::db ins))) (gen/tuple query inputs)))
      (gen/tuple (gen/return 'qseq) (gen/fmap (fn [[q ins]] [{:query q :args (cons ::db ins) :timeout 5000}])
                                              (gen/tuple query inputs)))
      (gen/tuple (gen/return 'prepare) (gen/tuple (gen/one-of [query (gen-bad)])))
      (gen/tuple (gen/return 'run) (gen/tuple query (gen/one-of [(gen-bad)
                                                                 (gen/vector (gen-of ["a@x" [30 40]]) 0 3)
                                                                 (gen/return {:x 1})])))
      (gen/tuple (gen/return 'q) (gen/fmap (fn [[q f]] [q ::db f]) (gen/tuple (gen/elements fn-queries) (gen-bad))))
      (gen/tuple (gen/return 'filter) (gen/tuple db (gen-of [(fn [_ d] (odd? (:e d))) (fn [_ _] true)])))
      (gen/tuple (gen/return 'filtered?) (gen/tuple db))
      (gen/tuple (gen/return 'entity-db) (gen/tuple (gen-of [::entity])))
      (gen/tuple (gen/return 'squuid) (gen/return []))
      (gen/tuple (gen/return 'squuid-time-millis) (gen/tuple (gen-of [(java.util.UUID/randomUUID)])))
      (gen/tuple (gen/return 'tempid) (gen/one-of [(gen/tuple (gen-of [:db.part/user :db.part/tx]))
                                                   (gen/tuple (gen-of [:db.part/user]) (gen-of [-1 -7]))]))
      (gen/tuple (gen/return 'resolve-tempid) (gen/one-of [(gen/tuple (gen-of [{"a" 1000} {-7 1001}]) (gen-of ["a" -7 (int -7)]))
                                                           (gen/tuple db (gen-of [{"a" 1000}]) (gen-of ["a" "b"]))]))
      (gen/tuple (gen/return 'db-stats) (gen/tuple db))
      (gen/tuple (gen/return 'sync) (gen/one-of [(gen/tuple conn) (gen/tuple conn point)]))
      (gen/tuple (gen/return 'transact-async) (gen/tuple conn tx-data))
      ;; listeners and queues on a connection of their own, closed after the call
      (gen/tuple (gen/return 'listen!) (gen/one-of [(gen/tuple (gen-of [::fresh-conn]) (gen-of [identity]))
                                                    (gen/tuple (gen-of [::fresh-conn]) (gen-bad) (gen-of [identity]))]))
      (gen/tuple (gen/elements '[unlisten!]) (gen/tuple (gen-of [::fresh-conn]) (gen-bad)))
      (gen/tuple (gen/elements '[tx-report-queue remove-tx-report-queue]) (gen/tuple (gen-of [::fresh-conn])))
      (gen/tuple (gen/return 'backup)
                 (gen/one-of [(gen/tuple not-a-dir (gen/return ::temp-dir))
                              (gen/tuple not-a-dir (gen/return ::temp-dir) (gen-bad))
                              (gen/tuple not-a-dir not-a-dir)]))
      (gen/tuple (gen/return 'connect) (gen/one-of
                                        [(gen/tuple (gen/such-that (complement names-a-directory?) (gen-bad) 100))
                                         (gen/tuple (gen/return :mem) (gen/fmap #(hash-map :schema %) (gen-bad)))
                                         (gen/tuple (gen/return :mem) (gen/fmap #(hash-map :schema {:x/y %}) (gen-bad)))
                                         (gen/tuple (gen/return ::temp-dir)
                                                    (gen/fmap #(apply hash-map %) (gen/tuple (gen/elements [:map-size :sync :max-readers :schema :strict?]) (gen-bad))))
                                         (gen/tuple (gen/return ::temp-dir) (gen/return {:map-size -1}))
                                         (gen/tuple (gen/return "/proc/no/such/dir/x"))]))
      (gen/tuple (gen/return 'export) (gen/tuple (gen-of [::db ::conn ::hist])))
      (gen/tuple (gen/return 'export)
                 (gen/tuple (gen-of [::db ::conn])
                            (gen/one-of [(gen/return ::temp-dir)
                                         (gen/such-that #(not (or (string? %) (instance? File %)))
                                                        (gen-bad) 100)])))
      (gen/tuple (gen/return 'import!)
                 (gen/tuple conn (gen/one-of [(gen/vector tx-data 0 3) (gen-bad)])
                            (gen/one-of [(gen/return {})
                                         (gen/fmap #(apply hash-map %) (gen/tuple (gen/elements [:progress :skip :resume? :chunk-size]) (gen-bad)))])))
      ;; valid time (h-valid, #19)
      (gen/tuple (gen/return 'valid-at) (gen/tuple db (gen/one-of [point (gen/return d/end-of-time)])))
      (gen/tuple (gen/return 'valid-intervals) (gen/one-of [(gen/tuple db attr)
                                                            (gen/tuple db eid attr)]))
      ;; any valid time (h-valid3, #19)
      (gen/tuple (gen/return 'any-valid-time) (gen/tuple db))])))

(def public-fns
  "The entry points the generator calls, by name: every public function of datalith.core."
  '#{connect close db transact! with basis-t t->tx tx->t as-of since history as-of-t since-t
     history? schema entid ident entity touch datoms seek-datoms index-range tx-range log q explain
     pull pull-many verify rebuild-indexes backup
     entity-db squuid squuid-time-millis tempid resolve-tempid db-stats sync transact-async listen! unlisten!
     tx-report-queue remove-tx-report-queue rseek-datoms index-pull qseq filter filtered?
     export import! prepare run
     valid-at valid-intervals any-valid-time})

;; ---------------------------------------------------------------- the fixture

(def ^:dynamic *fixture* nil)

(defn- open-fixture [store]
  (let [[conn cleanup] (tu/open-conn store {:schema schema})
        ids (:tempids (d/transact! conn seed-data))
        t0 (d/basis-t (d/db conn))]
    (d/transact! conn [[:db/add (get ids "a") :user/name "A2"]])
    {:store store :conn conn :cleanup cleanup :a (get ids "a") :b (get ids "b") :t0 t0}))

(use-fixtures :once
  (fn [run]
    (let [fixtures (mapv open-fixture tu/stores)]
      (try (binding [*fixture* fixtures] (run))
           (finally (doseq [{:keys [conn cleanup]} fixtures] (d/close conn) (cleanup)))))))

(defn- resolve-args
  "Replaces the fixture keywords in `args` (at the top, and inside :args of a
  query map) by this store's values; returns [args cleanup-fn]."
  [{:keys [conn a b t0]} args]
  (let [temps (atom [])
        db (d/db conn)
        value (fn value [x]
                (case x
                  ::db db ::conn conn ::log (d/log conn) ::hist (d/history db)
                  ::as-of (d/as-of db t0) ::since (d/since db t0)
                  ::with-db (:db-after (d/with db [[:db/add "w" :user/name "W"]]))
                  ::filtered (d/filter db (fn [_ d] (not= :user/age (:a d))))
                  ::a a ::b b ::missing 987654321 ::tx (d/t->tx t0) ::t t0
                  ::entity (d/entity db a)
                  ::fresh-conn (let [c (d/connect :mem {})] (swap! temps conj #(d/close c)) c)
                  ::temp-dir (let [dir (tu/temp-dir)] (swap! temps conj #(tu/delete-tree dir)) (.getPath dir))
                  x))
        value* (fn [x] (if (keyword? x) (value x) x))
        args (mapv (fn [x]
                     (cond (keyword? x) (value x)
                           (and (map? x) (contains? x :args)) (update x :args #(map value* %))
                           :else x))
                   args)]
    [args (fn [] (doseq [f @temps] (try (f) (catch Exception _))))]))

;; ---------------------------------------------------------------- outcomes

(defn- realize
  "Reads a result through: lazy sequences, nested collections (bounded), not
  into entities (a graph, with cycles)."
  [r]
  (dorun (take 200000 (tree-seq #(and (or (coll? %) (instance? clojure.lang.LazySeq %))
                                      (not (instance? datalith.db.Entity %)))
                                seq r))))

(defn- datoms-of [db] (vec (d/datoms db :eavt)))

(defn outcome
  "Calls `f` with `args` on fixture `fx`: :ok, :error (a proper ex-info) or
  {:leak throwable}; also checks that a failed transact!
  changed nothing."
  [fx f args]
  (let [[args cleanup] (resolve-args fx args)
        conn (:conn fx)
        before (when ('#{transact! transact-async with} f) (d/db conn))
        before-datoms (some-> before datoms-of)
        result (try (let [r (apply (ns-resolve 'datalith.core f) args)
                          r (if (= 'transact-async f) @r r)]
                      (if (instance? datalith.conn.Conn r) (d/close r) (realize r))
                      :ok)
                    (catch clojure.lang.ExceptionInfo e
                      (let [k (:error (ex-data e))]
                        (if (and (keyword? k) (namespace k)) :error {:leak e})))
                    (catch Throwable t {:leak t})
                    (finally (cleanup)))]
    (if (and before (or (= 'with f) (not= :ok result)))
      (let [after (d/db conn)]
        (if (and (= (d/basis-t before) (d/basis-t after)) (= before-datoms (datoms-of after)))
          result
          {:leak (ex-info "a failed transaction changed the database" {:f f})}))
      result)))

(defn- short-str [x]
  (binding [*print-length* 8 *print-level* 4] (let [s (pr-str x)] (subs s 0 (min 400 (count s))))))

(defn- leak-key
  "What tells one leak from another: the function, the Throwable's class, and
  the first datalith stack frame."
  [f ^Throwable t]
  [f (.getName (class t))
   (some #(when (str/starts-with? (.getClassName ^StackTraceElement %) "datalith.") (str %))
         (.getStackTrace t))])

(deftest every-entry-point-is-generated
  (is (= public-fns (set (for [[k v] (ns-publics 'datalith.core) :when (fn? @v)] k)))
      "a new public function of datalith.core needs a generator here")
  (is (= '#{end-of-time} ; h-validend: the values, not called
         (set (for [[k v] (ns-publics 'datalith.core) :when (not (fn? @v))] k)))))

(defn- cwd-entries [] (set (.list (File. "."))))

(deftest bad-input-gives-ex-info
  (let [cwd-before (cwd-entries)
        tally (atom {})
        leaks (atom {}) ; leak-key -> the shortest call that showed it
        result (tc/quick-check
                trials
                (prop/for-all [[f args] (gen-call)]
                  (doseq [fx *fixture*]
                    (let [o (outcome fx f args)]
                      (swap! tally update (if (keyword? o) o :leak) (fnil inc 0))
                      (when-let [t (:leak o)]
                        (let [call (str (:store fx) " (d/" f " " (short-str args) ") -> " t)]
                          (swap! leaks update (leak-key f t)
                                 #(if (and % (<= (count %) (count call))) % call))))))
                  true))]
    (println "bad input:" (:num-tests result) "calls on each store," @tally)
    (doseq [[k call] @leaks]
      (println "LEAK" k "\n   " call))
    (is (empty? @leaks) (str (count @leaks) " kinds of leak (printed above)"))
    (is (= cwd-before (cwd-entries)) "no call made a file or directory where the tests run")))

(defn- error-of
  "The :error of calling `f` on `args`, or :no-error."
  [f args]
  (try (let [r (apply f args)] (when (seq? r) (doall r))) :no-error
       (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))

(defn- are-errors
  "Each keyword, then the calls [f & args] that must throw it."
  [& keys-and-calls]
  (loop [k nil [x & more] keys-and-calls]
    (cond (nil? x) nil
          (keyword? x) (recur x more)
          :else (do (is (= k (error-of (first x) (rest x))) (pr-str x))
                    (recur k more)))))

(deftest arguments-of-the-wrong-type
  (tu/each-store [conn {:schema schema}]
    (let [db (d/db conn)]
      (are-errors
       :db/invalid-conn [d/transact! nil []] [d/transact! db []] [d/db "conn"] [d/log 1] [d/close :conn]
       :db/invalid-db [d/pull conn [:user/name] 1] [d/basis-t nil] [d/as-of conn 1] [d/since "db" 1]
       [d/history {}] [d/schema conn] [d/entid nil 1] [d/entity 1 1] [d/datoms nil :eavt]
       [d/seek-datoms "db" :eavt] [d/index-range nil :user/age 1 2] [d/tx-range :log nil nil]
       [d/with conn []] [d/as-of-t 1] [d/since-t 1] [d/history? 1] [d/pull-many nil [:user/name] []]
       :db/invalid-entity [d/touch 1] [d/touch {:db/id 1}]
       :db/invalid-t [d/t->tx "1"] [d/t->tx 1.5] [d/tx->t nil] [d/tx->t (bigint 1e30)]
       :db/invalid-options [d/connect :mem [:map-size 1]]
       :db/invalid-schema [d/connect :mem {:schema {:user/x :not-a-map}}]
       :query/args [d/q {:query '[:find ?e :where [?e :user/name]] :args 1}]
       :pull/entities [d/pull-many db [:user/name] 1] [d/pull-many db [:user/name] "ab"]
       :pull/xform [d/pull db [[:db/id :xform name]] 1000]))))
