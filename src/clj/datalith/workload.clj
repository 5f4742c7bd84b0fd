(ns datalith.workload
  "The issue-tracker workload of the mentat benchmarks, shared by the demo
  (`datalith.cli`) and the benchmarks (`bench/`): users, labels and issues
  generated from a fixed seed, so every run and every system gets the same
  data, and a loader that transacts them through any Datomic-shaped
  transact function.

    (def data (generate :100k))
    (:datoms data)                        ; => 120484
    (load! data {:transact (fn [tx-data] ...) :batch-size 1000})

  Scales (users / issues / labels): :100k 200 / 16,000 / 50; :300k 600 /
  49,000 / 100; :1m 2,000 / 162,000 / 200 (about 1.22M datoms). Every user
  has 2 datoms, every label 1, every issue 6 plus 0-3 labels."
  (:import (java.util Date HashMap Map Random)))

(set! *warn-on-reflection* true)

(def seed "The generator's seed." 42)

(def scales
  "Scale name -> entity counts."
  {:100k {:users 200 :issues 16000 :labels 50}
   :300k {:users 600 :issues 49000 :labels 100}
   :1m {:users 2000 :issues 162000 :labels 200}})

(def schema
  "The attributes, Datomic style (datalith's `connect` :schema and Datomic's
  transact both take it)."
  [{:db/ident :user/email :db/valueType :db.type/string :db/cardinality :db.cardinality/one
    :db/unique :db.unique/identity}
   {:db/ident :user/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   {:db/ident :label/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one
    :db/unique :db.unique/identity}
   {:db/ident :issue/title :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   {:db/ident :issue/state :db/valueType :db.type/keyword :db/cardinality :db.cardinality/one}
   {:db/ident :issue/priority :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
   {:db/ident :issue/assignee :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
   {:db/ident :issue/reporter :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
   {:db/ident :issue/created-at :db/valueType :db.type/instant :db/cardinality :db.cardinality/one}
   {:db/ident :issue/labels :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}])

(def states "Issue states, in the order of their share." [:state/open :state/in-progress :state/closed :state/wontfix])

(def ^:private first-names
  ["Ada" "Alan" "Barbara" "Claude" "Dennis" "Donald" "Edsger" "Frances" "Grace" "John"
   "Ken" "Leslie" "Margaret" "Niklaus" "Radia" "Rich" "Robin" "Shafi" "Tony" "Whitfield"])

(def ^:private last-names
  ["Lovelace" "Turing" "Liskov" "Shannon" "Ritchie" "Knuth" "Dijkstra" "Allen" "Hopper"
   "McCarthy" "Thompson" "Lamport" "Hamilton" "Wirth" "Perlman" "Hickey" "Milner" "Goldwasser"
   "Hoare" "Diffie"])

(def ^:private verbs ["Fix" "Add" "Remove" "Speed up" "Document" "Refactor" "Test" "Rename"])
(def ^:private nouns ["crash" "leak" "timeout" "typo" "race" "regression" "option" "warning"])
(def ^:private components ["parser" "planner" "index" "pull" "store" "cli" "codec" "schema"])

(def ^:private epoch-2020 1577836800000)

(defn email "The email of user `i`." [i] (str "user" i "@example.com"))
(defn label-name "The name of label `i`." [i] (str "label-" i))

(defn user-tempid "Tempid of user `i`." [i] (str "u" i))
(defn label-tempid "Tempid of label `i`." [i] (str "l" i))
(defn issue-tempid "Tempid of issue `i`." [i] (str "i" i))

(defn- pick [^Random rnd v] (nth v (.nextInt rnd (count v))))

(defn- pick-state [^Random rnd]
  (let [r (.nextInt rnd 100)]
    (cond (< r 40) :state/open (< r 50) :state/in-progress (< r 95) :state/closed :else :state/wontfix)))

(defn- distinct-ints
  "n distinct random ints below bound, in the order drawn."
  [^Random rnd n bound]
  (loop [seen #{} out []]
    (if (= n (count out))
      out
      (let [i (.nextInt rnd (int bound))]
        (recur (conj seen i) (if (seen i) out (conj out i)))))))

(defn- issue-labels [^Random rnd n-labels]
  (distinct-ints rnd (min n-labels (.nextInt rnd 4)) n-labels))

(defn- updates
  "Ten transactions of state changes, each to max(1, issues/1000) distinct
  random issues: a vector of vectors of [issue new-state]."
  [^Random rnd issues]
  (let [n (min (count issues) (max 1 (quot (count issues) 1000)))]
    (loop [tx 0 current (mapv :state issues) out []]
      (if (= tx 10)
        out
        (let [changes (mapv (fn [i] [i (pick rnd (vec (remove #{(current i)} states)))])
                            (distinct-ints rnd n (count issues)))]
          (recur (inc tx) (reduce (fn [c [i s]] (assoc c i s)) current changes)
                 (conj out changes)))))))

(defn generate
  "The data set of `scale` (a key of `scales`), from seed 42:
  {:scale :users [{:email :name}] :labels [{:name}] :issues [{:title :state
  :priority :assignee :reporter :created-at :labels}] :updates [[[issue state]]]
  :datoms n}. Refs are indexes into :users and :labels; :updates are the state
  changes applied after the load (for as-of and since); :datoms counts the
  loaded data's datoms (not the updates)."
  [scale]
  (let [{n-users :users n-issues :issues n-labels :labels :as counts} (scales scale)
        _ (when-not counts
            (throw (ex-info (str "Unknown scale " scale ", one of " (keys scales))
                            {:error :workload/scale :scale scale})))
        rnd (Random. seed)
        users (mapv (fn [i] {:email (email i)
                             :name (str (pick rnd first-names) " " (pick rnd last-names))})
                    (range n-users))
        labels (mapv (fn [i] {:name (label-name i)}) (range n-labels))
        issues (mapv (fn [i]
                       {:title (str (pick rnd verbs) " " (pick rnd nouns) " in "
                                    (pick rnd components) " (#" i ")")
                        :state (pick-state rnd)
                        :priority (inc (.nextInt rnd 5))
                        :assignee (.nextInt rnd (int n-users))
                        :reporter (.nextInt rnd (int n-users))
                        :created-at (Date. (long (+ epoch-2020 (* i 600000) (.nextInt rnd 600000))))
                        :labels (issue-labels rnd n-labels)})
                     (range n-issues))]
    {:scale scale
     :users users
     :labels labels
     :issues issues
     :updates (updates rnd issues)
     :datoms (+ (* 2 n-users) n-labels
                (reduce + (map #(+ 6 (count (:labels %))) issues)))}))

;; ---------------------------------------------------------------- queries

(defn q1
  "Q1, point lookup: the user with `email` (a literal in the query) and her name."
  [email]
  [:find '?e '?name
   :where ['?e :user/email email] ['?e :user/name '?name]])

(def q2
  "Q2, ref traversal: the issues assigned to the user with ?email, with title and state."
  '[:find ?i ?title ?state
    :in $ ?email
    :where [?u :user/email ?email]
           [?i :issue/assignee ?u]
           [?i :issue/title ?title]
           [?i :issue/state ?state]])

(def q3
  "Q3, aggregate: how many issues are in each state."
  '[:find ?state (count ?i) :where [?i :issue/state ?state]])

(def q4
  "Q4, predicate: open issues with priority >= 4, with title and priority."
  '[:find ?i ?title ?p
    :where [?i :issue/state :state/open]
           [?i :issue/priority ?p]
           [(>= ?p 4)]
           [?i :issue/title ?title]])

;; ---------------------------------------------------------------- tx-data

(defn- eid ^long [^Map ids tempid]
  (let [e (.get ids tempid)]
    (if e
      (long e)
      (throw (ex-info (str "No entity id for " tempid) {:error :workload/missing-id :tempid tempid})))))

(defn directory-tx-data
  "Tx-data of all users and labels (tempids \"u<i>\", \"l<i>\")."
  [data]
  (into (vec (map-indexed (fn [i {:keys [email name]}]
                            {:db/id (user-tempid i) :user/email email :user/name name})
                          (:users data)))
        (map-indexed (fn [i {:keys [name]}] {:db/id (label-tempid i) :label/name name}))
        (:labels data)))

(defn issues-tx-data
  "Tx-data of issues from (inclusive) to `to` (exclusive), tempids
  \"i<index>\"; refs to users and labels through `ids` (tempid -> entity id)."
  [data ^Map ids from to]
  (let [issues (:issues data)]
    (mapv (fn [i]
            (let [{:keys [title state priority assignee reporter created-at labels]} (issues i)]
              (cond-> {:db/id (issue-tempid i)
                       :issue/title title
                       :issue/state state
                       :issue/priority priority
                       :issue/assignee (eid ids (user-tempid assignee))
                       :issue/reporter (eid ids (user-tempid reporter))
                       :issue/created-at created-at}
                (seq labels) (assoc :issue/labels (mapv #(eid ids (label-tempid %)) labels)))))
          (range from to))))

(defn update-tx-data
  "Tx-data of one transaction of `(:updates data)`."
  [^Map ids changes]
  (mapv (fn [[i state]] [:db/add (eid ids (issue-tempid i)) :issue/state state]) changes))

(defn import-tx-data
  "The load's transactions as one seq of tx-data for `import!`: the users and
  labels, then the issues `batch-size` a transaction, naming their users and
  labels by lookup ref (no ids are known before the import); the same datoms as
  `load!` without its updates."
  [data batch-size]
  (let [users (:users data)
        labels (:labels data)]
    (cons (directory-tx-data data)
          (for [from (range 0 (count (:issues data)) batch-size)]
            (mapv (fn [{:keys [title state priority assignee reporter created-at] :as issue}]
                    (cond-> {:issue/title title
                             :issue/state state
                             :issue/priority priority
                             :issue/assignee [:user/email (:email (users assignee))]
                             :issue/reporter [:user/email (:email (users reporter))]
                             :issue/created-at created-at}
                      (seq (:labels issue))
                      (assoc :issue/labels (mapv #(vector :label/name (:name (labels %)))
                                                 (:labels issue)))))
                  (subvec (:issues data) from (min (count (:issues data)) (+ from batch-size))))))))

(defn- issue-datoms ^long [data from to]
  (reduce + (map #(+ 6 (count (:labels %))) (subvec (:issues data) from to))))

(defn load!
  "Loads `data` in batched transactions and applies its updates.
  Options:
    :transact    (fn [tx-data]) -> {:t basis-t-after :tempids {tempid eid}}
    :batch-size  issues per transaction (default 1000)
    :progress    (fn [datoms-done datoms-total]), called after each batch
  Returns {:ids (HashMap tempid -> eid) :batch-ts [t after each load batch]
  :update-ts [t after each update] :load-ns (load time, updates excluded)}."
  [data {:keys [transact batch-size progress] :or {batch-size 1000 progress (fn [_ _])}}]
  (let [ids (HashMap.)
        total (long (:datoms data))
        n (count (:issues data))
        start (System/nanoTime)
        remember! (fn [{:keys [t tempids]}]
                    (doseq [[k v] tempids :when (string? k)] (.put ids k v))
                    t)
        t0 (remember! (transact (directory-tx-data data)))
        done0 (- total (issue-datoms data 0 n))
        _ (progress done0 total)
        batch-ts (loop [from 0 done done0 ts [t0]]
                   (if (>= from n)
                     ts
                     (let [to (min n (+ from (long batch-size)))
                           t (remember! (transact (issues-tx-data data ids from to)))
                           done (+ done (issue-datoms data from to))]
                       (progress done total)
                       (recur to done (conj ts t)))))
        load-ns (- (System/nanoTime) start)
        update-ts (mapv (fn [changes] (:t (transact (update-tx-data ids changes))))
                        (:updates data))]
    {:ids ids :batch-ts batch-ts :update-ts update-ts :load-ns load-ns}))
