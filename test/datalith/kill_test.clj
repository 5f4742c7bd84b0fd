(ns datalith.kill-test
  "kill -9 (issue #13): a child JVM streams transactions against an LMDB directory and is
  killed with SIGKILL at random moments, DATALITH_KILLS times (default 32, 8 lives of each
  mode, which keeps CI's run under 20 minutes), its lives in turn with durable commits, with
  durable commits and write-behind, and with {:sync false}; after each kill the directory is
  reopened and checked (see datalith.kill-harness): nothing acknowledged is lost or partial,
  d/verify finds nothing, and the current, history and as-of views are the model's. Then
  the same with 8 writer threads per child, whose transactions commit in groups (#17).
  `lein kill-test 2000` runs a long series."
  (:require [clojure.test :refer [deftest is]]
            [datalith.kill-harness :as harness]))

(def kills
  (or (some-> (System/getenv "DATALITH_KILLS") parse-long) 32))

(defn- check-totals
  "Prints the totals of `lives` lives and checks them: every life killed, transactions
  acknowledged, no failure."
  [label lives totals]
  (println (str label ":") (pr-str (update totals :failures #(take 3 %))))
  (is (= lives (:kills totals)))
  (is (pos? (:acks totals)) "transactions were acknowledged before the kills")
  (is (empty? (:failures totals)) (pr-str (take 3 (:failures totals)))))

(deftest nothing-acknowledged-is-lost-or-partial-after-kill-9
  (let [totals (harness/run {:lives kills :per-dir kills :seed 13})]
    (check-totals "kill-test" kills totals)
    (is (= (frequencies (map #(nth harness/modes (mod % (count harness/modes))) (range kills)))
           (:by-mode totals)))))

(deftest nothing-acknowledged-is-lost-or-partial-after-kill-9-amid-group-commits
  (let [lives (max 2 (quot kills 2))
        totals (harness/run {:lives lives :per-dir lives :seed 17 :threads 8})]
    (check-totals "kill-test, 8 writer threads" lives totals)))

(deftest nothing-acknowledged-is-lost-or-partial-after-kill-9-on-pages-of-16-kib
  ;; a store of LMDB's layout on Apple silicon (since stop 46): its recovery writes meta pages
  ;; of 16 KiB, its write-backs write trees of 16 KiB pages
  (let [lives (max 4 (quot kills 4))
        totals (harness/run {:lives lives :per-dir lives :seed 19 :psize 16384})]
    (check-totals "kill-test, pages of 16 KiB" lives totals)))
