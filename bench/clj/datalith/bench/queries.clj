(ns datalith.bench.queries
  "The Datalog of the benchmark, the same text for datalith and Datomic Local
  (whose client API answers only relation find specs, so every :find here is
  a relation). Q1-Q4 are the workload's (datalith.workload), shared with the demo."
  (:require [datalith.workload :as w]))

(def q1 "Q1, point lookup (datalith.workload/q1)." w/q1)
(def q1-param
  "Q1 with the email bound in :in: one query form for all emails (query caches hit)."
  '[:find ?e ?name :in $ ?email :where [?e :user/email ?email] [?e :user/name ?name]])

(def q2 "Q2, ref traversal." w/q2)
(def q3 "Q3, aggregate." w/q3)
(def q4 "Q4, predicate." w/q4)

(def in-bindings
  "Users by a collection of emails bound in :in."
  '[:find ?e ?name
    :in $ [?email ...]
    :where [?e :user/email ?email] [?e :user/name ?name]])

(def since
  "The issues whose state was asserted in the since-db."
  '[:find ?i ?state :where [?i :issue/state ?state]])

(def top20-open-recent
  "The 20 most recently created open issues, newest first: datalith's :order-by and :limit
  (an ordered walk of :issue/created-at's AVET datoms, backwards, stopping at the 20th)."
  '[:find ?i ?created
    :where [?i :issue/state :state/open] [?i :issue/created-at ?created]
    :order-by [[?created :desc]] :limit 20])

(def open-created
  "Every open issue with its creation instant: what Datomic Local, which has no :order-by,
  sorts and cuts in Clojure for :top20-open-recent."
  '[:find ?i ?created :where [?i :issue/state :state/open] [?i :issue/created-at ?created]])

(def pull-star "Pull pattern of :pull-star." '[*])

(def pull-nested
  "Pull pattern of :pull-nested."
  [:issue/title :issue/state {:issue/assignee [:user/email :user/name]}])
