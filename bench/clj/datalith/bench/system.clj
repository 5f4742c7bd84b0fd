(ns datalith.bench.system
  "What every benchmarked system implements: the same data, operations and
  results, phrased in its own API.")

(set! *warn-on-reflection* true)

(def read-ops
  "The single-threaded read operations, in report order. Arguments (the same
  for every system):
    :q1-point     an email (the query has it as a literal, as in the issue)
    :q1-param     an email, bound to ?email in :in (one query form for every email)
    :q2-ref       an email: issues assigned to that user, with title and state
    :q3-aggregate nil: issue count per state
    :q4-predicate nil: open issues with priority >= 4, with title and priority
    :pull-star    an issue tempid: pull [*]
    :pull-nested  an issue tempid: title, state and the assignee's email and name
    :in-bindings  a vector of 100 emails bound to a collection in :in
    :as-of-q2     an email: :q2-ref on the db as of the middle of the load
    :since        nil: the issues whose state changed since a recent t
    :top20-open-recent nil: the 20 most recently created open issues, newest first"
  [:q1-point :q1-param :q2-ref :q3-aggregate :q4-predicate :pull-star :pull-nested :in-bindings
   :as-of-q2 :since :top20-open-recent])

(defprotocol BenchSystem
  (system-name [s] "The name in results.csv.")
  (load-data! [s data opts]
    "Creates a fresh database and loads `data` (datalith.workload/load! with
    opts :batch-size and :progress); returns load!'s result.")
  (prepare! [s points]
    "Fixes the database values that reads use; points: {:as-of-t t :since-t t},
    ts in this system's own numbering (from load-data!'s result).")
  (session [s] "A handle for one thread's reads (a connection, or nil).")
  (end-session [s session] "Releases what `session` opened.")
  (run-op [s session op arg] "The raw result of read `op` (see read-ops) on `arg`.")
  (transact-one! [s n] "One transaction asserting one datom (a new entity's :issue/title).")
  (writer [s]
    "A handle for one thread's concurrent transact-in! calls (a connection, or nil), durable
    commits as the system's best concurrent-writer setting has them.")
  (end-writer [s writer] "Releases what `writer` opened.")
  (transact-in! [s writer n] "transact-one! through `writer`, alongside other threads'.")
  (relax-sync! [s]
    "Switches commits to relaxed fsync; true when the system has such a mode
    (else does nothing and returns false).")
  (close! [s] "Closes the database and deletes its files."))

(defn delete-tree
  "Deletes a file or directory tree."
  [^java.io.File f]
  (when (.isDirectory f)
    (doseq [c (.listFiles f)] (delete-tree c)))
  (.delete f))
