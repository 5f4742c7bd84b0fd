(ns datalith.qseq-child
  "A child JVM of datalith.query-stream-test, run with a small heap (-Xmx256m): builds an
  in-memory database whose product query answers millions of rows, reads them through qseq
  and drops them as it goes, and cuts the same answer with :limit through q and qseq; prints
  one line per result, then \"done\"."
  (:require [datalith.core :as d]))

(defn- counted
  "The number of items of `xs`, read and dropped one by one (the head is not held)."
  [xs]
  (reduce (fn [n _] (inc n)) 0 xs))

(defn -main [n]
  (let [n (parse-long n)
        conn (d/connect :mem {})]
    (d/transact! conn [{:db/ident :p/n :db/valueType :db.type/long
                        :db/cardinality :db.cardinality/one}])
    (doseq [part (partition-all 1000 (range n))]
      (d/transact! conn (for [i part] {:p/n i})))
    (let [db (d/db conn)
          product '[:find ?x ?a ?y :where [?x :p/n ?a] [?y :p/n ?b]]]
      (println "qseq" (counted (d/qseq product db)))
      (println "qseq-pull" (counted (d/qseq '[:find (pull ?x [:p/n]) ?a ?y
                                              :where [?x :p/n ?a] [?y :p/n ?b]] db)))
      (println "q-limit" (count (d/q (conj product :limit 1000) db)))
      (println "qseq-limit" (counted (d/qseq (conj product :offset 10 :limit 2000000) db)))
      (println "done"))
    (d/close conn)
    (shutdown-agents)))
