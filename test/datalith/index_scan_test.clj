(ns datalith.index-scan-test
  "IndexScan/restart: a scan re-positioned on another prefix gives exactly the
  datoms of a fresh scan of that prefix, on every kind of database view."
  (:require [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]])
  (:import (datalith.db Db IndexScan Snapshot)
           (datalith.index Index)
           (java.nio ByteBuffer)
           (java.util Random)))

(def schema
  {:k/id {:db/valueType :db.type/long :db/unique :db.unique/identity}
   :k/state {:db/valueType :db.type/keyword}
   :k/name {:db/valueType :db.type/string}
   :k/texts {:db/valueType :db.type/string :db/cardinality :db.cardinality/many}
   :k/friend {:db/valueType :db.type/ref}})

(def ^:private long-prefix (apply str (repeat 500 "x"))) ; values > 380 bytes keep a prefix and a hash

(defn- load-data!
  "Entities over several transactions (with retractions and changed values, so that
  history has datoms); returns [t-mid [eid ...]]."
  [conn]
  (let [ids (range 1 41)
        r (d/transact! conn (vec (for [i ids]
                                   (cond-> {:db/id (str i) :k/id i
                                            :k/state ([:open :closed :done :new] (mod i 4))
                                            :k/name (if (zero? (mod i 5)) (str long-prefix (- 100 i)) (str "n" i))}
                                     (zero? (mod i 3)) (assoc :k/texts #{(str long-prefix "b" i) (str long-prefix "a" i)
                                                                         (str long-prefix "c") "short"})
                                     (> i 1) (assoc :k/friend (str (dec i)))))))
        eid #(get-in r [:tempids (str %)])
        eids (mapv eid ids)
        t-mid (d/basis-t (d/db conn))]
    (d/transact! conn (vec (for [i ids :when (even? i)]
                             [:db/add (eid i) :k/state ([:done :new :open] (mod i 3))])))
    (d/transact! conn (vec (concat
                            (for [i ids :when (zero? (mod i 3))]
                              [:db/retract (eid i) :k/texts (str long-prefix "a" i)])
                            (for [i ids :when (zero? (mod i 7))]
                              [:db/add (eid i) :k/name (str long-prefix "z" i)]))))
    (d/transact! conn (vec (for [i ids :when (zero? (mod i 4))]
                             [:db/add (eid i) :k/texts (str long-prefix "a" i)])))
    [t-mid eids]))

(defn- read-datoms
  "Up to n datoms (all when n is nil) of scan as vectors."
  [^IndexScan scan n]
  (loop [acc []]
    (if (and (or (nil? n) (< (count acc) n)) (.next scan))
      (recur (conj acc [(.e scan) (.aid scan) (.v scan) (.tx scan) (.added scan)]))
      acc)))

(defn- fresh [^Db db ^Index index ^ByteBuffer prefix]
  (with-open [s (.snapshot db)]
    (let [scan (.scan db s index prefix)]
      (try (read-datoms scan nil) (finally (.close scan))))))

(defn- restarted
  "One scan restarted on each [prefix n] in turn, reading n datoms (nil: all) from each.
  The prefixes are passed in one reused buffer (alternately direct and at a position > 0)."
  [^Db db ^Index index steps]
  (with-open [^Snapshot s (.snapshot db)]
    (let [scan (.scan db s index (ffirst steps))
          heap (ByteBuffer/allocate 256)
          direct (ByteBuffer/allocateDirect 256)]
      (try
        (read-datoms scan 1) ; leave it part way
        (.limitEntries scan 1)
        (vec (map-indexed
              (fn [i [^ByteBuffer prefix n]]
                (let [^ByteBuffer b (if (even? i) direct heap)
                      at (if (even? i) 0 7)]
                  (.clear b)
                  (.put b (byte-array at (byte -1)))
                  (.put b (.duplicate prefix))
                  (.flip b)
                  (.position b at)
                  (.restart scan b)
                  (doseq [j (range at (.limit b))] ; the scan keeps no reference to the buffer
                    (.put b (int j) (byte 0)))
                  (read-datoms scan n)))
              steps))
        (finally (.close scan))))))

(defn- prefix-of ^ByteBuffer [^Db db ^Index index components]
  (ByteBuffer/wrap (.keyFor db index (object-array components))))

(defn- prefixes
  "Prefixes of index keys of db: by attribute, by attribute and entity, by entity, ..."
  [^Db db ^Index index eids]
  (let [attrs [:k/id :k/state :k/name :k/texts :k/friend]
        a+e (for [a attrs e eids] [a e])]
    (condp = index
      Index/EAVT (concat [[]] (map vector eids) (for [e eids a attrs] [e a]))
      Index/AEVT (concat [[]] (map vector attrs) a+e)
      Index/AVET (concat [[]] (map vector attrs)
                         (for [v [:open :closed :done :new]] [:k/state v])
                         (for [i (range 1 41)] [:k/id i]))
      Index/VAET (concat [[]] (map vector eids) (for [e eids] [e :k/friend])))))

(defn- check-view [^Db db eids view]
  (doseq [^Index index [Index/EAVT Index/AEVT Index/AVET Index/VAET]]
    (let [ps (mapv #(prefix-of db index %) (prefixes db index eids))
          expected (mapv #(fresh db index %) ps)
          rnd (Random. 42)]
      (when (= view "current")
        (is (some #(> (count %) 2) expected)))
      (testing (str view " " index)
        (testing "ascending prefixes, read whole"
          (is (= expected (restarted db index (map vector ps (repeat nil))))))
        (testing "random prefixes (repeats, extensions, going back), read part way"
          (let [order (vec (repeatedly 300 #(.nextInt rnd (count ps))))
                ns (vec (repeatedly 300 #(when (pos? (.nextInt rnd 3)) (.nextInt rnd 4))))]
            (is (= (mapv (fn [i n] (cond->> (expected i) n (take n) true vec)) order ns)
                   (restarted db index (map (fn [i n] [(ps i) n]) order ns))))))
        (testing "ascending, every other prefix left part way"
          (is (= (vec (map-indexed (fn [i x] (if (odd? i) (vec (take 1 x)) x)) expected))
                 (restarted db index (map-indexed (fn [i p] [p (when (odd? i) 1)]) ps)))))))))

(deftest restart-gives-the-datoms-of-a-fresh-scan
  (each-store [conn {:schema schema}]
    (let [old (d/db conn)
          [t-mid eids] (load-data! conn)
          db (d/db conn)
          texts (fresh db Index/AEVT (prefix-of db Index/AEVT [:k/texts (eids 11)]))]
      (is (= 4 (count texts)) "a group of long values under one prefix")
      (is (= (sort (map #(nth % 2) texts)) (map #(nth % 2) texts)))
      (is (empty? (fresh old Index/AEVT (prefix-of db Index/AEVT [:k/state]))))
      (testing "after a scan that began at a seek key past the next prefix"
        (let [[lo mid hi] (sort-by #(d/entid db %) [:k/id :k/state :k/name])
              p #(prefix-of db Index/AEVT [%])]
          (with-open [s (.snapshot db)]
            (let [scan (.scanRange db s Index/AEVT (p lo) (p hi) nil)]
              (try
                (is (empty? (read-datoms scan nil)))
                (.restart scan (p mid))
                (is (= (fresh db Index/AEVT (p mid)) (read-datoms scan nil)))
                (is (= 40 (count (fresh db Index/AEVT (p mid)))))
                (finally (.close scan)))))))
      (check-view db eids "current")
      (check-view (d/as-of db t-mid) eids "as-of")
      (check-view (d/as-of db (inc t-mid)) eids "as-of 2")
      (check-view (d/since db t-mid) eids "since")
      (check-view (d/history db) eids "history")
      (check-view (d/history (d/as-of db (+ t-mid 2))) eids "history as-of")
      (let [before-last (d/as-of db (+ t-mid 2))
            ;; an older value the store moved past: merges history to hide later datoms
            stale (:db-after (d/transact! conn [[:db/retract (eids 0) :k/state :closed]]))]
        (d/transact! conn [[:db/add (eids 0) :k/state :new] [:db/retractEntity (eids 5)]])
        (check-view stale eids "stale")
        (check-view before-last eids "as-of 3")))))

;; IndexScan keeps a few short values it decoded, to serve the next datoms that hold them: on an
;; entity's datoms, values of few kinds (states) read between values read once (names), which
;; replace each other there rather than the states. Every value read must be the one transacted.
(deftest a-scan-reads-the-values-transacted
  (each-store [conn {:schema schema}]
    (let [states [:open :closed :done :new]
          model (vec (for [i (range 300)]
                       {:k/id i
                        :k/state (states (mod (* i i) 4))
                        :k/name (if (zero? (mod i 7)) (str long-prefix i) (str "name-" i))}))
          r (d/transact! conn (vec (map-indexed #(assoc %2 :db/id (str %1)) model)))
          db (d/db conn)
          expected (into {} (map-indexed (fn [i m] [(get-in r [:tempids (str i)]) m]) model))
          ident (into {} (for [a [:k/id :k/state :k/name]] [(d/entid db a) a]))]
      (doseq [[what prefix] [["EAVT" (prefix-of db Index/EAVT [])]
                             ["AEVT states" (prefix-of db Index/AEVT [:k/state])]]]
        (testing what
          (let [datoms (if (= what "EAVT")
                         (fresh db Index/EAVT prefix)
                         (fresh db Index/AEVT prefix))
                ours (filter (fn [[e]] (contains? expected e)) datoms)]
            (is (= (if (= what "EAVT") 900 300) (count ours)))
            (is (every? (fn [[e aid v]] (= (get-in expected [e (ident aid)]) v)) ours))))))))
