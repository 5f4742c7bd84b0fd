(ns datalith.query-stream-test
  "Answers read a chunk at a time: a limit without an order stops once it has
  enough; qseq reads its chunks as the sequence is consumed, so that an answer
  of millions of rows, read and dropped, fits a 256 MB heap (a child JVM); the
  chunks together are the whole answer, once each, on both stores."
  (:require [clojure.string :as str]
            [clojure.test :refer [are deftest is testing]]
            [datalith.child-jvm :as child]
            [datalith.core :as d]
            [datalith.test-util :as tu :refer [each-store]])
  (:import (java.io File)))

(def schema
  [{:db/ident :p/n :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
   {:db/ident :p/tag :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   {:db/ident :p/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}])

(defn- data! [conn n]
  (d/transact! conn schema)
  (d/transact! conn (for [i (range n)]
                      {:db/id (str i) :p/n (mod i 97) :p/tag #{(keyword (str "t" (mod i 5)))
                                                               (keyword (str "u" (mod i 3)))}
                       :p/friend [(str (mod (* 7 i) n)) (str (mod (inc i) n))]}))
  (d/db conn))

(def queries
  "Queries whose first step is a scan read in chunks: distinct tuples across chunks, tuples
  that repeat across chunks (kept once), a join behind the scan, pulls."
  ['[:find ?e ?n :where [?e :p/n ?n]]
   '[:find ?n :where [?e :p/n ?n]]
   '[:find ?t :where [?e :p/tag ?t]]
   '[:find ?e ?f ?t :where [?e :p/friend ?f] [?f :p/tag ?t]]
   '[:find ?n ?t :where [?e :p/n ?n] [?e :p/tag ?t] [(< ?n 50)]]
   '[:find (pull ?e [:db/id :p/n]) ?t :where [?e :p/tag ?t]]
   '[:find [?n ...] :where [?e :p/friend ?f] [?f :p/n ?n]]])

(deftest chunks-make-the-whole-answer
  (each-store [conn]
    (let [db (data! conn 3000)]
      (doseq [q queries]
        (testing (pr-str q)
          (let [all (d/q q db)
                streamed (d/qseq q db)]
            (is (= (count all) (count streamed)) "each tuple once")
            (is (= (set all) (set streamed)))
            (testing "a limit without an order: that many tuples of the answer"
              (let [r (d/q (conj q :limit 500) db)]
                (is (= (min 500 (count all)) (count r)))
                (is (every? (set all) r))))
            (testing "qseq with an offset and a limit"
              (let [r (d/qseq (conj q :offset 100 :limit 700) db)]
                (is (= (max 0 (min 700 (- (count all) 100))) (count r)))
                (is (= (count r) (count (set r))))
                (is (every? (set all) r))))))))))

(deftest qseq-reads-as-it-goes
  (each-store [conn]
    (let [db (data! conn 300)
          s (d/qseq '[:find ?e ?n :where [?e :p/n ?n]] db)]
      (is (seq? s))
      (is (= 10 (count (take 10 s))))
      (testing "a database value read later through a sequence made earlier"
        (d/transact! conn [{:p/n 1000}])
        (is (= 300 (count s)))))))

(deftest millions-of-rows-in-a-small-heap
  ;; 2,500 entities: the product query answers 6.25 million rows, several hundred MB held at
  ;; once; a 256 MB child reads them through qseq and cuts them with :limit
  (let [work (tu/temp-dir)
        err (File. work "stderr.txt")
        cmd (concat [(first (child/command work "x"))]
                    ["-Xmx256m"]
                    (rest (child/command work "datalith.qseq-child" 2500)))
        p (child/start cmd err)
        lines (child/drain (child/line-queue (.getInputStream p)))]
    (try
      (is (zero? (.waitFor p)) (slurp err))
      (is (= ["qseq 6250000" "qseq-pull 6250000" "q-limit 1000" "qseq-limit 2000000" "done"]
             lines)
          (str/join "\n" (take 20 (str/split-lines (slurp err)))))
      (finally (tu/delete-tree work)))))
