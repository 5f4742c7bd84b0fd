(ns datalith.bench.ops
  "The arguments of each read operation, its expected result computed from the
  generated data alone, and the normal form every system's result is compared
  in: entity ids replaced by their tempids, collections of rows as sets,
  cardinality-many values as sets."
  (:require [datalith.bench.queries :as queries]
            [datalith.workload :as w])
  (:import (java.util HashMap Map Random)))

(set! *warn-on-reflection* true)

(def since-update
  "The since point is the t after this update transaction (of the ten)."
  6)

(defn points
  "Which history the as-of and since reads see, for `data` loaded with
  `batch-size`: {:as-of-batch k :as-of-issues n :since-update u}. The as-of
  point is the t after issue batch k, the middle one; the db then holds the
  first n issues."
  [data batch-size]
  (let [n (count (:issues data))
        batches (long (Math/ceil (/ n (double batch-size))))
        k (max 1 (quot batches 2))]
    {:as-of-batch k
     :as-of-issues (min n (* k batch-size))
     :since-update since-update}))

(defn system-points
  "The as-of and since ts of one system, from its load result."
  [{:keys [as-of-batch since-update]} {:keys [batch-ts update-ts]}]
  {:as-of-t (batch-ts as-of-batch) :since-t (update-ts since-update)})

(defn args
  "{op [arg ...]}: the arguments each read cycles through, the same for every system."
  [data]
  (let [rnd (Random. 7)
        n-users (count (:users data))
        n-issues (count (:issues data))
        emails (fn [k] (vec (repeatedly k #(w/email (.nextInt rnd (int n-users))))))
        issues (fn [k] (vec (repeatedly k #(w/issue-tempid (.nextInt rnd (int n-issues))))))
        distinct-emails (fn []
                          (->> (repeatedly #(w/email (.nextInt rnd (int n-users))))
                               distinct (take (min 100 n-users)) vec))]
    {:q1-point (mapv (fn [e] {:email e :query (queries/q1 e)}) (emails 100))
     :q1-param (emails 100)
     :q2-ref (emails 20)
     :q3-aggregate [nil]
     :q4-predicate [nil]
     :pull-star (issues 100)
     :pull-nested (issues 100)
     :in-bindings (vec (repeatedly 4 distinct-emails))
     :as-of-q2 (emails 20)
     :valid-at-q2 (emails 20)
     :since [nil]
     :top20-open-recent [nil]}))

;; ---------------------------------------------------------------- truth

(defn- final-states [data]
  (reduce (fn [states changes] (reduce (fn [s [i st]] (assoc s i st)) states changes))
          (mapv :state (:issues data))
          (:updates data)))

(defn- user-index [email] (parse-long (second (re-find #"^user(\d+)@" email))))
(defn- issue-index [tempid] (parse-long (subs tempid 1)))

(defn expected
  "(fn [op arg]) -> the normal form of op's result on arg, from the data alone."
  [data {:keys [as-of-issues since-update]}]
  (let [users (:users data)
        issues (:issues data)
        states (final-states data)
        by-assignee (group-by (fn [i] (:assignee (issues i))) (range (count issues)))
        q2 (fn [email n state-of]
             (set (for [i (by-assignee (user-index email)) :when (< i n)]
                    [(w/issue-tempid i) (:title (issues i)) (state-of i)])))
        users-of (fn [emails]
                   (set (for [e emails :let [u (user-index e)]]
                          [(w/user-tempid u) (:name (users u))])))
        changed (set (map first (mapcat (:updates data)
                                        (range (inc since-update) (count (:updates data))))))]
    (fn [op arg]
      (case op
        :q1-point (users-of [(:email arg)])
        :q1-param (users-of [arg])
        :q2-ref (q2 arg (count issues) states)
        :q3-aggregate (set (frequencies states))
        :q4-predicate (set (for [i (range (count issues))
                                 :let [{:keys [title priority]} (issues i)]
                                 :when (and (= :state/open (states i)) (>= priority 4))]
                             [(w/issue-tempid i) title priority]))
        :pull-star (let [i (issue-index arg)
                         {:keys [title priority assignee reporter created-at labels]} (issues i)]
                     (cond-> {:db/id arg :issue/title title :issue/state (states i)
                              :issue/priority priority
                              :issue/assignee {:db/id (w/user-tempid assignee)}
                              :issue/reporter {:db/id (w/user-tempid reporter)}
                              :issue/created-at created-at}
                       (seq labels) (assoc :issue/labels
                                           (set (map #(hash-map :db/id (w/label-tempid %)) labels)))))
        :pull-nested (let [i (issue-index arg)
                           {:keys [title assignee]} (issues i)]
                       {:issue/title title :issue/state (states i)
                        :issue/assignee {:user/email (:email (users assignee))
                                         :user/name (:name (users assignee))}})
        :in-bindings (users-of arg)
        :as-of-q2 (q2 arg as-of-issues (fn [i] (:state (issues i))))
        :valid-at-q2 (q2 arg (count issues) states) ; no valid-time events: the plain answer
        :since (set (for [i changed] [(w/issue-tempid i) (states i)]))
        :top20-open-recent (->> (range (count issues))
                                (filter #(= :state/open (states %)))
                                (sort-by #(:created-at (issues %)) #(compare %2 %1))
                                (take 20)
                                (mapv (fn [i] [(w/issue-tempid i) (:created-at (issues i))])))))))

;; ---------------------------------------------------------------- normal form

(defn reverse-ids
  "eid -> tempid of a load result's :ids."
  ^Map [^Map ids]
  (let [r (HashMap.)]
    (doseq [[k v] ids] (.put r (long v) k))
    r))

(defn- norm-pull [^Map rev x]
  (cond
    (map? x) (into {} (map (fn [[k v]]
                             [k (if (= :db/id k) (.get rev (long v)) (norm-pull rev v))]))
                   x)
    (sequential? x) (set (map #(norm-pull rev %) x))
    :else x))

(defn normalise
  "The normal form of a system's raw result of `op`; `rev` maps its eids to tempids."
  [^Map rev op result]
  (case op
    (:pull-star :pull-nested) (norm-pull rev result)
    :q3-aggregate (set (map vec result))
    :top20-open-recent (mapv (fn [row] (assoc (vec row) 0 (.get rev (long (first row))))) result)
    (set (map (fn [row] (assoc (vec row) 0 (.get rev (long (first row)))))
              result))))
