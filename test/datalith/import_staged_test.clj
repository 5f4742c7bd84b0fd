(ns datalith.import-staged-test
  "Staged imports (#17, h-staged): an import into an LMDB database (or any, with :staged true)
  commits its chunks into a layered store over it and writes them into the store in one commit
  at its end. When the store sees the chunks, the budget past which it writes and goes on chunk
  by chunk, a failing source, another writer (commits nothing), the two ways its delta is
  written, the old pages it keeps (on pages of 4 and 16 KiB), the values it hands out, and
  staged chunks reading :aevt and older values as transact! does."
  (:require [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.import-support :refer [instant-free merging transact-chunks! view]]
            [datalith.lmdb-file :as f]
            [datalith.test-util :as tu])
  (:import (java.io File StringReader)
           (java.util.concurrent LinkedBlockingQueue)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------- staged imports (#17, h-staged)
;; An import into an LMDB database (or any, with :staged true) commits its chunks into a layered
;; store over it, each its own transaction, and writes them into the store in one commit at its end
;; (also when a chunk or the source fails, or :progress stops it). import-transact-test's oracle
;; runs both ways; these check what the staging changes: when the store sees the chunks, the
;; budget past which it writes and goes on chunk by chunk, failures, another writer, the values it
;; hands out.

(defn- import-seeing
  "Imports `chunks` into `conn` with `opts`: [the basis t of `(d/db conn)` as the
  progress function saw it after each chunk, the report or the ex-info]."
  [conn chunks opts]
  (let [seen (atom [])
        r (try (d/import! conn chunks (assoc opts :progress (fn [_] (swap! seen conj (d/basis-t (d/db conn))) nil)))
               (catch clojure.lang.ExceptionInfo e e))]
    [@seen r]))

(deftest a-staged-import-reaches-the-store-at-its-end
  (doseq [store tu/stores, staged [true false nil]]
    (testing (str store ", :staged " staged " (nil: auto, staged into LMDB)")
      (tu/with-conn [conn store {:schema {:k/id {:db/unique :db.unique/identity}
                                          :k/n {:db/valueType :db.type/long}}}]
        (d/transact! conn [{:k/id 0}])
        (let [t0 (d/basis-t (d/db conn))
              staged? (if (nil? staged) (= store :lmdb) staged)
              [seen r] (import-seeing conn [[{:k/id 1}] [{:k/id 2}] [[:db/add [:k/id 1] :k/n 5]]]
                                      (if (nil? staged) {} {:staged staged}))]
          (is (= (if staged? [t0 t0 t0] [(+ t0 1) (+ t0 2) (+ t0 3)]) seen)
              "d/db sees the database before the import until the staged chunks are written")
          (is (= (+ t0 3) (:t-last r) (d/basis-t (d/db conn))))
          (is (= #{0 1 2} (set (map :v (d/datoms (d/db conn) :aevt :k/id)))))
          (is (= [1 1 1] (for [{:keys [data]} (d/tx-range (d/db conn) (inc t0) nil)]
                           (count (remove #(= :db/txInstant (:a %)) data))))
              "each chunk its own transaction"))))))

(deftest auto-stages-into-an-lmdb-database-of-any-size
  (tu/with-conn [conn :lmdb {:schema {:k/id {:db/unique :db.unique/identity}}}]
    (d/transact! conn (vec (for [i (range 40000)] {:k/id i})))
    (let [t0 (d/basis-t (d/db conn))
          [seen r] (import-seeing conn [[{:k/id -1}] [{:k/id -2}]] {})]
      (is (= [t0 t0] seen) "160,000 entries and more in the store: staged all the same")
      (is (= (+ t0 2) (:t-last r) (d/basis-t (d/db conn)))))))

(deftest past-its-budget-a-staged-import-writes-and-goes-on-chunk-by-chunk
  (doseq [store tu/stores]
    (testing (str store)
      (let [chunks (cons [{:db/ident :k/id :db/valueType :db.type/long :db/unique :db.unique/identity}]
                         (for [i (range 6)] [{:k/id i :k/n i} [:db/add "x" :k/tags i]]))]
        (tu/with-conn [conn store]
          (d/transact! conn [{:k/other 1}])
          (let [t0 (d/basis-t (d/db conn))
                [seen r] (import-seeing conn chunks {:staged true :staged-budget 10})]
            (is (= [t0 (+ t0 2) (+ t0 3) (+ t0 4) (+ t0 5) (+ t0 6) (+ t0 7)] seen)
                "chunk 0 staged, chunk 1 staged past 10 datoms and both written, then one by one")
            (is (= 7 (:transactions r)))
            (tu/with-conn [src store]
              (d/transact! src [{:k/other 1}])
              (is (= 7 (transact-chunks! src chunks)))
              (is (= (instant-free (d/db src)) (instant-free (d/db conn)))))))))))

(deftest a-failing-source-commits-what-was-staged-before-it
  (doseq [store tu/stores, staged [true false]]
    (testing (str store ", staged " staged)
      (tu/with-conn [conn store]
        (let [good (apply str (for [i (range 10)] (pr-str [{:k/n i}])))
              ex (try (d/import! conn (StringReader. (str good "[{:k/n 99")) {:staged staged}) nil
                      (catch clojure.lang.ExceptionInfo e e))]
          (let [n (:import/chunk (ex-data ex))] ; the reader reads a form ahead
            (is (= :import/invalid-source (:error (ex-data ex))))
            (is (<= 5 n 10))
            (is (= n (:transactions (:import/report (ex-data ex))) (d/basis-t (d/db conn))))
            (is (= (set (range n)) (set (map :v (d/datoms (d/db conn) :aevt :k/n)))))))))))

(deftest another-writer-during-a-staged-import-makes-it-commit-nothing
  (doseq [store tu/stores
          [way base-n] [[:puts 300] [:replace-all 0]]]
    (testing (str store ", " way ": two connections over one store, the other commits while it stages")
      (let [dir (when (= store :lmdb) (tu/temp-dir))
            s (if dir
                (datalith.store.LmdbStore/open (.toPath ^File dir) {})
                (datalith.store.MemStore/open))
            a (datalith.conn.Conn/open s)
            b (datalith.conn.Conn/open s)]
        (try
          (when (pos? base-n) ; a base large against the import: its delta is written by puts
            (d/transact! a (vec (for [i (range base-n)] {:k/base i}))))
          (let [t0 (d/basis-t (d/db a))
                replaced (when dir (.directReplaces ^datalith.store.LmdbStore s))
                big (when (= way :replace-all) [(vec (for [i (range 500)] {:k/x i}))])
                ex (try (merging (= way :puts)
                                 #(d/import! a (concat [[{:k/n 1}] [{:k/n 2}]] big)
                                             {:staged true
                                              :progress (fn [{:keys [chunk]}]
                                                          (when (= 0 chunk)
                                                            @(future (d/transact! b [{:k/other 7}])))
                                                          nil)}))
                        nil
                        (catch clojure.lang.ExceptionInfo e e))]
            (is (= :import/conflict (:error (ex-data ex))))
            (is (= 0 (:transactions (:import/report (ex-data ex)))))
            (is (= (inc t0) (d/basis-t (d/db a)) (d/basis-t (d/db b))) "the other's commit stands")
            (is (empty? (d/datoms (d/db a) :aevt :k/n)) "none of the import")
            (is (= [7] (map :v (d/datoms (d/db a) :aevt :k/other))))
            (when dir
              (is (= replaced (.directReplaces ^datalith.store.LmdbStore s)) "no tree replaced")))
          (finally (d/close a) (d/close b) (some-> dir tu/delete-tree)))))))

;; LmdbStore.replaceAll's direct commit reads the source, and gives up when another writer of
;; LMDB's lock committed while it grew the map; the generic way then reads the source again,
;; under a writer lock of its own. A store that does so here: the staging's check must hold on
;; the second reading too, else the other writer's commit is replaced away.
(deftest a-store-that-reads-a-staged-write-twice-finds-the-other-writer-the-second-time
  (let [mem (datalith.store.MemStore/open)
        b (datalith.conn.Conn/open mem)
        s (reify datalith.store.Store
            (beginRead [_] (.beginRead mem))
            (beginWrite [_] (.beginWrite mem))
            (durable [_] false)
            (close [_] (.close mem))
            (replaceAll [_ source]
              ;; a first reading, which gives up writing nothing; another writer commits
              (with-open [c (.cursor ^datalith.store.ReadTxn source datalith.store.SubDb/EAVT)]
                (.first c))
              @(future (d/transact! b [{:k/other 7}]))
              (.replaceAll mem source)))
        a (datalith.conn.Conn/open s)]
    (try
      (let [t0 (d/basis-t (d/db a))
            ex (try (d/import! a [[{:k/n 1}] [{:k/n 2}]] {:staged true}) nil
                    (catch clojure.lang.ExceptionInfo e e))]
        (is (= :import/conflict (:error (ex-data ex))))
        (is (= (inc t0) (d/basis-t (d/db b))) "the other's commit stands")
        (is (= [7] (map :v (d/datoms (d/db b) :aevt :k/other))))
        (is (empty? (d/datoms (d/db b) :aevt :k/n)) "none of the import"))
      (finally (d/close a) (d/close b)))))

(deftest a-staged-import-writes-its-delta-by-puts-or-by-rewriting-every-tree
  (doseq [[way base-n] [[:puts 300] [:replace-all 5]]]
    (testing (str way)
      (tu/with-conn [conn :lmdb]
        (d/transact! conn (vec (for [i (range base-n)] {:k/base i :k/n i})))
        (let [^datalith.store.LmdbStore s (.store ^datalith.conn.Conn conn)
              e0 (:e (first (d/datoms (d/db conn) :avet :k/base 0)))
              replaced (.directReplaces s)
              ;; 500 new entities: a delta large against an empty database
              more (when (= way :replace-all) [(vec (for [i (range 500)] {:k/x i}))])
              r (merging (= way :puts)
                         #(d/import! conn (concat [[{:k/n -1}] [[:db/retract e0 :k/n 0]]] more)
                                     {:staged true}))]
          (is (= (+ 2 (count more)) (:transactions r)))
          (is (= (if (= way :puts) replaced (inc replaced)) (.directReplaces s)))
          (is (= (set (cons -1 (range 1 base-n))) (set (map :v (d/datoms (d/db conn) :aevt :k/n)))))
          (is (:ok? (d/verify conn))))))))

(deftest a-staged-import-over-a-database-keeps-the-pages-it-leaves-whole
  (testing "a non-empty LMDB database, then a staged import large enough to rewrite every tree:
  the old leaf pages past which the import only adds (EAVT and AEVT's new entities, the log's
  new t) are kept as they are, and the database equals the same history in memory; on pages of
  4 KiB and of 16 KiB (Apple silicon's: a copy of the database with its pages spread, since
  stop 46; such stores took the generic way before)"
    (tu/with-conn [src :mem]
      (d/transact! src (vec (for [i (range 3000)] {:k/base i :k/n i})))
      (d/import! src (vec (for [c (range 4)]
                            (vec (for [i (range 1500)] {:k/x (+ (* c 1500) i) :k/n i})))))
      (d/transact! src [{:k/base -1 :k/n -1}])
      (let [records (vec (d/export src))
            [before-import imported after] [(drop-last 5 records) (take 4 (take-last 5 records))
                                            (take-last 1 records)]]
        (doseq [psize [4096 16384]]
          (testing (str "pages of " psize " bytes")
            (let [dir (tu/temp-dir)
                  spread (tu/temp-dir)]
              (try
                (with-open [conn (d/connect (.getPath dir))]
                  (d/import! conn before-import))
                (let [at (if (= 4096 psize)
                           dir
                           (do (f/spread-pages! (.getPath dir) (.getPath spread) psize) spread))]
                  (is (= psize (:psize (f/last-meta at))))
                  (with-open [conn (d/connect (.getPath at))]
                    (let [^datalith.store.LmdbStore s (.store ^datalith.conn.Conn conn)
                          replaced (.directReplaces s)
                          taken (.takenPages s)]
                      (d/import! conn imported {:staged true})
                      (is (= (inc replaced) (.directReplaces s)) "every tree rewritten")
                      (is (< (+ taken 20) (.takenPages s)) "old pages kept")
                      (is (nil? (.pageAccountingProblem s)))
                      (d/import! conn after)
                      (is (= (view (d/db src)) (view (d/db conn))))
                      (is (:ok? (d/verify conn)))
                      (is (nil? (.pageAccountingProblem s)))))
                  (with-open [conn (d/connect (.getPath at))]
                    (testing "reopened, and written to by LMDB's own commits"
                      (d/transact! conn [{:k/base -2 :k/n -2}])
                      (is (= (inc (count (d/datoms (d/db src) :aevt :k/n)))
                             (count (d/datoms (d/db conn) :aevt :k/n))))
                      (is (:ok? (d/verify conn))))))
                (finally (tu/delete-tree dir) (tu/delete-tree spread))))))))))

(deftest a-staged-imports-values-stay-readable-and-the-store-reopens
  (let [dir (tu/temp-dir)]
    (try
      (with-open [conn (d/connect (.getPath dir))]
        (let [reports (LinkedBlockingQueue.)]
          (d/listen! conn ::reports #(.add reports %))
          (d/import! conn [[{:db/id "a" :k/n 1}] [{:k/n 2}]] {:staged true})
          (d/transact! conn [{:k/n 3}])
          (let [[r1 r2 r3] (vec reports)]
            (is (= [1 2 3] (map #(d/basis-t (:db-after %)) [r1 r2 r3])) "in commit order")
            (is (= #{1 2} (set (map :v (d/datoms (:db-after r2) :aevt :k/n))))
                "a staged chunk's value reads as it did, after later commits")
            (is (= #{1} (set (map :v (d/datoms (:db-before r2) :aevt :k/n))))))))
      (with-open [conn (d/connect (.getPath dir))]
        (is (= #{1 2 3} (set (map :v (d/datoms (d/db conn) :aevt :k/n)))))
        (is (= 3 (d/basis-t (d/db conn))))
        (is (:ok? (d/verify conn))))
      (finally (tu/delete-tree dir)))))

(deftest staged-chunks-read-aevt-and-older-values-as-transact-does
  (testing "a staging derives AEVT, and AVET of the attributes that are not unique, and writes
            its trees in place between reads: transaction functions reading :aevt and :avet
            (datoms, a value's entities, a range of values) of the chunks staged before them
            (and older staged values
            kept from earlier chunks), schema alterations checked against staged datoms (one
            refused), retractions and retracted entities of the base and of the staging, give
            the database transact! gives, and stop at the same chunk"
    (let [stash (atom [])
          counted (fn [db i] ; reads :aevt, and the values of earlier chunks kept
                    (swap! stash conj db)
                    [{:k/id (+ 1000 i) :k/count (count (d/datoms db :aevt :k/n))
                      :k/avet (pr-str [(take 3 (map (juxt :e :v) (d/datoms db :avet :k/n (- i 2))))
                                       (count (d/datoms db :avet :k/n))
                                       (count (d/datoms db :avet :k/u))
                                       (sort (d/q '[:find [?e ...] :where [?e :k/n ?n] [(< 3 ?n 9)]] db))])
                      :k/old (pr-str (for [old (take-last 3 @stash)]
                                       [(d/basis-t old) (count (d/datoms old :aevt :k/n))
                                        (count (d/datoms old :eavt))]))}])
          schema {:k/id {:db/unique :db.unique/identity}
                  :k/n {:db/valueType :db.type/long}
                  :k/count {:db/valueType :db.type/long}
                  :k/old {:db/valueType :db.type/string}
                  :k/avet {:db/valueType :db.type/string}
                  :k/u {:db/valueType :db.type/long}
                  :k/dup {:db/valueType :db.type/long :db/cardinality :db.cardinality/many}}
          chunks (fn [fns?]
                   (for [i (range 40)]
                     (cond-> [{:db/id "e" :k/id i :k/n i :k/u (* 10 i)}]
                       fns? (conj [:db.fn/call counted i])
                       (< i 10) (conj [:db/add "e" :k/dup (mod i 2)])
                       (and (> i 5) (zero? (mod i 3))) (conj [:db/retract [:k/id (- i 3)] :k/n (- i 3)])
                       (and (> i 5) (zero? (mod i 7))) (conj [:db/retractEntity [:k/id (- i 5)]])
                       (= i 12) (conj [:db/retractEntity [:k/id -7]] [:db/retract [:k/id -9] :k/n -9])
                       (= i 30) (conj {:db/ident :k/u :db/unique :db.unique/value})
                       (= i 32) (conj {:db/ident :k/dup :db/cardinality :db.cardinality/one})
                       (= i 35) (conj {:db/ident :k/dup :db/unique :db.unique/value}))))
          outcome (fn [store staged fns?]
                    (reset! stash [])
                    (tu/with-conn [conn store {:schema schema}]
                      (d/transact! conn (vec (for [i (range 200)] {:k/id (- -1 i) :k/n (- -1 i)})))
                      (let [e (try (d/import! conn (chunks fns?) {:staged staged}) nil
                                   (catch clojure.lang.ExceptionInfo e
                                     [(:error (ex-data e)) (:import/chunk (ex-data e))]))]
                        [e (instant-free (d/db conn))])))]
      (doseq [store tu/stores, fns? [true false]]
        (testing (str store (if fns? ", transaction functions reading :aevt" ", no reads"))
          (let [[e :as want] (outcome store false fns?)]
            (is (= [:schema/alter 35] e) "the alteration to unique refused, the same chunk")
            (doseq [merge? [false true]]
              (is (= want (merging merge? #(outcome store true fns?)))
                  (str "staged" (when merge? ", merging with the store"))))))))))
