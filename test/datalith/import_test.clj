(ns datalith.import-test
  "Bulk export and import (`d/export`, `d/import!`): an export imported into an
  empty database of either store gives an equal one (every index, history, the
  log, as-of at every t), for hand-written and generated histories; chunks are
  transactions with transact!'s semantics; a bad chunk stops the import with
  transact!'s error and the chunk's index, the chunks before it committed; a
  stopped import resumes; generated tx-data imports as transact! wrote it."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.walk :as walk]
            [clojure.test :refer [are deftest is testing]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [datalith.child-jvm :as child]
            [datalith.core :as d]
            [datalith.lmdb-file :as f]
            [datalith.naive :as naive]
            [datalith.readers :as readers]
            [datalith.test-util :as tu]
            [datalith.tx-property-test :as txp])
  (:import (datalith.conn ExportLines)
           (java.io File StringReader StringWriter)
           (java.util.concurrent LinkedBlockingQueue TimeUnit)))

(set! *warn-on-reflection* true)

(def ^:private schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :user/blob {:db/valueType :db.type/bytes}
   :user/score {:db/valueType :db.type/float}
   :user/first {:db/valueType :db.type/string}
   :user/last {:db/valueType :db.type/string}
   :user/full {:db/valueType :db.type/tuple :db/tupleAttrs [:user/first :user/last]
               :db/unique :db.unique/identity}})

(def ^:private modes
  "Options that must not change what an import gives: :resume? skips only the
  records a database has, so into an empty one it imports everything; :staged
  stages the chunks in memory (true) or commits each into the store (false)."
  [{} {:resume? true} {:staged true} {:staged false :resume? true}])

(defn- history!
  "A history with schema installed and altered, upserts, retractions,
  cardinality many, refs, bytes, floats, composite tuples, tx metadata, an
  attribute installed by use and one defined and used in one transaction."
  [conn]
  (d/transact! conn [{:db/id "a" :user/email "ada@x" :user/name "Ada" :user/tags #{:p :q}
                      :user/first "Ada" :user/last "L"}
                     {:db/id "b" :user/email "bob@x" :user/friend "a" :user/blob (byte-array [1 2 3])
                      :user/score (float 1.5)}])
  (d/transact! conn [{:user/email "ada@x" :user/name "Ada L."}   ; upsert
                     [:db/retract [:user/email "bob@x"] :user/blob]
                     [:db/add "datomic.tx" :tx/source "import-test"]])
  (d/transact! conn [{:db/ident :item/n :db/valueType :db.type/long}
                     {:item/n 7 :free/any {:a 1}}])
  (d/transact! conn [{:db/ident :user/name :db/doc "a name"}
                     [:db/retractEntity [:user/email "bob@x"]]])
  (d/transact! conn [[:db/cas [:user/email "ada@x"] :user/name "Ada L." "Ada"]
                     {:user/email "cy@x" :user/tags #{:p} :user/first "Cy" :user/last "M"}]))

(defn- view
  "Everything an equal database must have equal."
  [db]
  {:basis-t (d/basis-t db)
   :schema (d/schema db)
   :indexes (into {} (for [ix [:eavt :aevt :avet :vaet]] [ix (vec (d/datoms db ix))]))
   :history (vec (d/datoms (d/history db) :eavt))
   :as-of (vec (for [t (range (inc (d/basis-t db)))] (vec (d/datoms (d/as-of db t) :eavt))))
   :log (vec (for [{:keys [t data]} (d/tx-range db nil nil)] [t (set data)]))})

(deftest an-export-imports-into-an-equal-database-of-either-store
  (doseq [from tu/stores, into tu/stores]
    (testing (str from " -> " into)
      (tu/with-conn [src from {:schema schema}]
        (history! src)
        (doseq [mode modes]
         (testing (str "through the lazy records " mode)
          (tu/with-conn [dst into]
            (let [r (d/import! dst (d/export src) mode)]
              (is (= (view (d/db src)) (view (d/db dst))))
              (is (= {:transactions (d/basis-t (d/db src)) :t-first 1 :t-last (d/basis-t (d/db src))
                      :skipped 0 :stopped-at nil}
                     (select-keys r [:transactions :t-first :t-last :skipped :stopped-at])))))))
        (testing "through an EDN file"
          (let [dir (tu/temp-dir)
                file (io/file dir "export.edn")]
            (try
              (let [w (d/export src file)]
                (is (= (d/basis-t (d/db src)) (:transactions w) (:t-last w)))
                (tu/with-conn [dst into]
                  (d/import! dst (.getPath file))
                  (is (= (view (d/db src)) (view (d/db dst))))))
              (finally (tu/delete-tree dir)))))))))

(defn- user-datoms
  "[e a v] of the current datoms of user entities (not system entities, not transactions)."
  [db]
  (set (for [d (d/datoms db :eavt) :when (< 999 (:e d) 13194139533312)] [(:e d) (:a d) (:v d)])))

(deftest an-import-reads-every-kind-of-source
  (let [tx1 [{:db/ident :k/name :db/valueType :db.type/string :db/unique :db.unique/identity}]
        tx2 [{:k/name "a"} {:k/name "b"}]
        tx3 [[:db/add [:k/name "a"] :k/n 1]]
        names #(set (d/q '[:find ?n ?x :where [?e :k/name ?n] [(get-else $ ?e :k/n 0) ?x]] %))]
    (tu/each-store [conn]
      (are [source] (tu/with-conn [c :mem]
                      (let [r (d/import! c source)]
                        (and (= 3 (:transactions r))
                             (= #{["a" 1] ["b" 0]} (names (d/db c))))))
        [tx1 tx2 tx3]                                            ; a seq of tx-data
        (StringReader. (pr-str [tx1 tx2 tx3]))                   ; a vector of tx-data
        (StringReader. (str (pr-str tx1) "\n" (pr-str tx2) (pr-str tx3)))) ; forms
      (testing "datoms of another database: attributes first, then chunks of datoms"
        (d/import! conn [tx1 tx2 tx3])
        (tu/with-conn [c :mem]
          (let [r (d/import! c (d/datoms (d/db conn) :eavt) {:chunk-size 2})]
            (is (= #{["a" 1] ["b" 0]} (names (d/db c))))
            (is (= 3 (:transactions r)) "the attributes, then 3 datoms in chunks of 2")
            (is (= (user-datoms (d/db conn)) (user-datoms (d/db c))))))))))

(deftest chunks-are-transactions
  (doseq [mode modes]
   (tu/each-store [conn {:schema {:k/id {:db/unique :db.unique/identity}
                                 :k/n {:db/cardinality :db.cardinality/one}}}]
    (let [t0 (d/basis-t (d/db conn))
          seen (atom [])
          r (d/import! conn [[{:k/id 1 :k/n 1}] [{:k/id 1 :k/n 2}] [{:k/id 1 :k/n 2}]]
                       (assoc mode :progress #(swap! seen conj (select-keys % [:chunk :transactions :basis-t]))))
          db (d/db conn)]
      (is (= [{:chunk 0 :transactions 1 :basis-t (+ t0 1)}
              {:chunk 1 :transactions 2 :basis-t (+ t0 2)}
              {:chunk 2 :transactions 3 :basis-t (+ t0 3)}]
             @seen))
      (is (= (+ t0 3) (d/basis-t db) (:t-last r)))
      (testing "each its own t: upserts, cardinality one, redundant datoms dropped"
        (is (= [1 2 2] (for [t (range (+ t0 1) (+ t0 4))]
                         (d/q '[:find ?n . :where [?e :k/n ?n]] (d/as-of db t)))))
        (is (= [3 3 1] (for [{:keys [data]} (d/tx-range db (+ t0 1) nil)] (count data))))
        (is (= 1 (count (d/datoms db :aevt :k/id)))))))))

(deftest a-bad-chunk-stops-the-import-with-transacts-error
  (doseq [mode modes]
   (tu/each-store [conn {:schema {:k/id {:db/unique :db.unique/value}}}]
    (let [t0 (d/basis-t (d/db conn))
          bad [{:k/id 1}]
          expected (try (d/transact! conn [{:k/id 1} {:k/id 1}]) (catch Exception e e))
          ex (try (d/import! conn [[{:k/id 1}] [{:k/id 2}] bad [{:k/id 3}]] mode) nil
                  (catch clojure.lang.ExceptionInfo e e))]
      (is (= :tx/unique (:error (ex-data expected)) (:error (ex-data ex))))
      (is (= 2 (:import/chunk (ex-data ex))))
      (is (= {:transactions 2 :t-first (+ t0 1) :t-last (+ t0 2)}
             (select-keys (:import/report (ex-data ex)) [:transactions :t-first :t-last])))
      (is (= #{1 2} (set (map :v (d/datoms (d/db conn) :aevt :k/id)))) "the chunks before it stay")
      (is (= (+ t0 2) (d/basis-t (d/db conn))))
      (testing "a rerun skipping what was committed, the bad chunk mended"
        (d/import! conn [[{:k/id 1}] [{:k/id 2}] [{:k/id 9}] [{:k/id 3}]] (assoc mode :skip 2))
        (is (= #{1 2 3 9} (set (map :v (d/datoms (d/db conn) :aevt :k/id))))))))))

(deftest a-stopped-import-resumes-to-the-same-database
  (tu/with-conn [src :mem {:schema schema}]
    (history! src)
    (let [records (vec (d/export src))]
      (doseq [store tu/stores, k (range 1 (count records)), mode modes]
        (testing (str store ", stopped after " k " chunks " mode)
          (tu/with-conn [dst store]
            (let [r (d/import! dst records (assoc mode :progress #(when (= (dec k) (:chunk %)) :stop)))]
              (is (= k (:stopped-at r) (:transactions r) (d/basis-t (d/db dst)))))
            (testing "a rerun without :resume? refuses the records the database has"
              (is (= :import/record-t
                     (try (d/import! dst records) (catch Exception e (:error (ex-data e)))))))
            (let [r (d/import! dst records (assoc mode :resume? true))]
              (is (= k (:skipped r)))
              (is (= (- (count records) k) (:transactions r))))
            (is (= (view (d/db src)) (view (d/db dst))))))))))

(deftest an-import-into-a-durable-store-is-on-disk-when-it-returns
  (doseq [staged [true false]
          commit [:wal :lmdb-sync]
          :let [dir (tu/temp-dir)]]
    (try
      (with-open [conn (d/connect (.getPath dir) {:commit commit})]
        (d/import! conn [[{:k/n 1}] [{:k/n 2}]] {:staged staged})
        (testing "the connection commits durably again after it"
          (d/transact! conn [{:k/n 3}])))
      (with-open [conn (d/connect (.getPath dir) {:commit commit})]
        (is (= #{1 2 3} (set (map :v (d/datoms (d/db conn) :aevt :k/n)))))
        (is (:ok? (d/verify conn))))
      (finally (tu/delete-tree dir)))))

(deftest bad-import-arguments-are-refused
  (tu/with-conn [conn :mem]
    (are [source opts error] (= error (try (d/import! conn source opts) nil
                                           (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))
      "/no/such/file.edn" {} :import/invalid-source
      42 {} :import/invalid-source
      [[1 2 3]] {} :import/invalid-source
      (StringReader. "[{:a 1}") {} :import/invalid-source
      [] {:progress 3} :import/invalid-options
      [[{:k/n 1}]] {:progress [\y \;]} :import/invalid-options ; an IFn, not a function of the map
      [[{:k/n 1}]] {:progress :chunk} :import/invalid-options
      [[{:k/n 1}]] {:progress {:chunk 1}} :import/invalid-options
      [] {:skip -1} :import/invalid-options
      [] {:chunk-size 0} :import/invalid-options
      [] {:staged :yes} :import/invalid-options
      [] {:staged-budget 0} :import/invalid-options
      [] :x :db/invalid-options
      [{:t "1" :tx-data []}] {} :import/record-t
      [{:t 5 :tx-data []}] {} :import/record-t)
    (is (= 0 (d/basis-t (d/db conn))))))

(deftest a-failing-progress-function-stops-the-import-as-a-failing-chunk-does
  (doseq [store tu/stores
          staged (if (= store :lmdb) [true false] [false])]
    (testing (str store ", staged " staged)
      (tu/with-conn [conn store]
        (let [ex (try (d/import! conn [[{:k/n 1}] [{:k/n 2}] [{:k/n 3}]]
                                 {:staged staged
                                  :progress (fn [{:keys [chunk]}]
                                              (when (= 1 chunk) (throw (IllegalStateException. "no"))))})
                      nil
                      (catch clojure.lang.ExceptionInfo e e))]
          (is (= :import/failed (:error (ex-data ex))))
          (is (instance? IllegalStateException (.getCause ^Throwable (ex-cause ex))))
          (is (= 1 (:import/chunk (ex-data ex))))
          (is (= 2 (:transactions (:import/report (ex-data ex)))))
          (is (= #{1 2} (set (map :v (d/datoms (d/db conn) :aevt :k/n))))
              "the chunks committed before it stay"))))))

(deftest an-attribute-given-an-explicit-new-id-is-usable-in-its-transaction
  (tu/each-store [conn]
    (let [r (d/transact! conn [{:db/id 1005 :db/ident :k/tags :db/valueType :db.type/keyword
                                :db/cardinality :db.cardinality/many}
                               [:db/add 1010 :k/tags :a] [:db/add 1010 :k/tags :b]
                               {:k/tags :c}])]
      (is (= {:db/ident :k/tags :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
             (:k/tags (d/schema (d/db conn)))))
      (is (= #{[1010 :a] [1010 :b] [1011 :c]}
             (set (map (juxt :e :v) (d/datoms (d/db conn) :aevt :k/tags)))))
      (is (= 1012 (:e (first (:tx-data (d/transact! conn [{:k/tags :d}])))))
          "the allocator went above the ids named")
      (is (some? r)))))

(defn- kill-after
  "Runs an import of `file` into `dir` in a child JVM, staged or not, and kills it (SIGKILL)
  once it has reported chunk `k`; whether it got that far."
  [^File work dir file k staged]
  (let [p (child/start (child/command (.getPath work) "datalith.import-kill-child" dir file
                                      (str staged))
                       (io/file work "stderr"))
        ^LinkedBlockingQueue lines (child/line-queue (.getInputStream p))]
    (try
      (loop []
        (let [l (.poll lines 120 TimeUnit/SECONDS)]
          (cond
            (nil? l) false
            (= :eof l) false
            (and (string? l) (.startsWith ^String l "chunk ")
                 (>= (parse-long (subs l 6)) k)) true
            :else (recur))))
      (finally
        (.destroyForcibly p)
        (.waitFor p 60 TimeUnit/SECONDS)))))

(defn- after-a-killed-import
  "Exports a history of 150 users, kills a child importing it (`staged`) after 20 chunks, and
  calls (f src conn file t) with the reopened directory's connection and its basis t."
  [staged f]
  (tu/with-conn [src :mem {:schema schema}]
    (history! src)
    (dotimes [i 150]
      (d/transact! src [{:user/email (str "u" i "@x") :user/tags #{(keyword (str "t" (mod i 7)))}}]))
    (let [work (tu/temp-dir)
          dir (.getPath (io/file work "db"))
          file (.getPath (io/file work "export.edn"))]
      (try
        (d/export src file)
        (is (kill-after work dir file 20 staged) (slurp (io/file work "stderr")))
        (with-open [conn (d/connect dir)]
          (f src conn file (d/basis-t (d/db conn))))
        (finally (tu/delete-tree work))))))

(defn- resumes-to-the-same-database [src conn file]
  (testing "a rerun with :resume? completes it: the same database"
    (d/import! conn file {:resume? true})
    (is (= (view (d/db src)) (view (d/db conn))))))

(deftest a-killed-import-leaves-a-consistent-prefix-and-resumes
  (after-a-killed-import false
    (fn [src conn file t]
      (testing "what the kill left: a whole prefix of the chunks, which verify passes"
        (is (<= 21 t (d/basis-t (d/db src))))
        (is (:ok? (d/verify conn)))
        (is (= (vec (d/datoms (d/as-of (d/db src) t) :eavt)) (vec (d/datoms (d/db conn) :eavt)))))
      (resumes-to-the-same-database src conn file))))

(deftest a-killed-staged-import-leaves-the-database-as-before-or-all-of-it
  (after-a-killed-import true
    (fn [src conn file t]
      (testing "the staged chunks reach the store in one commit: none of them, or all"
        (is (contains? #{0 (d/basis-t (d/db src))} t))
        (is (:ok? (d/verify conn))))
      (resumes-to-the-same-database src conn file))))

;; ---------------------------------------------------------------- generated histories

(def ^:private trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 25))

(defn- generated-history!
  "Runs the generated transactions `txs` (tx-property-test's abstract ops) on
  `conn`, advancing the naive model as tx-property-test does; refused ones are
  left out."
  [conn schema txs]
  (let [db0 (d/db conn)
        model0 (naive/empty-db schema (d/basis-t db0) (set (map :e (d/datoms db0 :eavt))))]
    (reduce (fn [model ops]
              (let [tx-data (@#'txp/interpret-tx model ops)
                    report (try (d/transact! conn tx-data) (catch clojure.lang.ExceptionInfo _ nil))]
                (if report
                  (or (:model (naive/transact model tx-data (@#'txp/engine-new-eid report))) model)
                  model)))
            model0 txs)))

(deftest generated-histories-round-trip-between-the-stores
  (let [result (tc/quick-check
                trials
                (prop/for-all [schema txp/gen-schema
                               txs txp/gen-txs
                               from (gen/elements tu/stores)
                               mode (gen/elements modes)]
                  (tu/with-conn [src from {:schema (txp/engine-schema schema)}]
                    (generated-history! src schema txs)
                    (tu/with-conn [dst (if (= from :mem) :lmdb :mem)]
                      (let [out (StringWriter.)]
                        (d/export src out)
                        (d/import! dst (StringReader. (str out)) mode)
                        (= (view (d/db src)) (view (d/db dst))))))))]
    (is (:pass? result) (pr-str (select-keys result [:seed :shrunk])))))

;; ---------------------------------------------------------------- reading export files

(defn- edn-read [line]
  (edn/read-string {:readers readers/readers} line))

(defn- comparable
  "`x` with its byte arrays as vectors, which = compares by value."
  [x]
  (walk/postwalk #(if (bytes? %) (vec %) %) x))

(defn- same-reading?
  "Whether ExportLines reads `line` as the EDN reader does, or leaves it to it (nil)."
  [line]
  (let [fast (ExportLines/parse line)]
    (or (nil? fast)
        (= (comparable (edn-read line)) (comparable fast)))))

(deftest export-lines-read-as-the-edn-reader-reads-them
  (tu/with-conn [src :mem {:schema schema}]
    (history! src)
    (let [out (StringWriter.)
          _ (d/export src out)
          lines (str/split-lines (str out))]
      (testing "every line of an export: read fast, and as the EDN reader does"
        (is (every? #(some? (ExportLines/parse %)) lines))
        (is (every? same-reading? lines)))))
  (testing "values export does not print, left to the EDN reader or read alike"
    (are [value] (same-reading? (str "{:t 1, :tx-data [[:db/add 1000 :k/v " value "]]}"))
      "12N" "1.5M" "##NaN" "##-Inf" "-0" "007" "-0.0" "1e300" "1.0E-5" ".5" "5." "1/2" "0x1F"
      "\"a\\u0041b\"" "\"tab\\tq\\\"\"" "sym" "#{1 2}" "(1 2)" "[1 [2 {:a 3}]]"
      "{:a 1, :a 2}" ":a/b/c" "::a" ":a" "#inst \"2020-01-01T00:00:00.000-00:00\""
      "#inst \"2020\"" "#uuid \"00000000-0000-0000-0000-000000000001\"" "#uuid \"x\""
      "#datalith/float \"1.1\"" "9223372036854775808" "-9223372036854775808" "true" "nil"
      "#datalith/bytes \"AQID\"")))

(deftest generated-exports-read-as-the-edn-reader-reads-them
  (let [result (tc/quick-check
                trials
                (prop/for-all [schema txp/gen-schema
                               txs txp/gen-txs]
                  (tu/with-conn [src :mem {:schema (txp/engine-schema schema)}]
                    (generated-history! src schema txs)
                    (let [out (StringWriter.)]
                      (d/export src out)
                      (every? same-reading? (str/split-lines (str out)))))))]
    (is (:pass? result) (pr-str (select-keys result [:seed :shrunk])))))

;; ---------------------------------------------------------------- import against transact! (#17)

(defn- merging
  "Calls `f` with stagings that merge their reads with the store's however small it is (none
  copied into the delta: the path of a large database), when `merge?`."
  [merge? f]
  (if merge?
    (do (System/setProperty "datalith.staged.absorb" "0")
        (try (f) (finally (System/clearProperty "datalith.staged.absorb"))))
    (f)))

(defn- accepted-tx-data!
  "Runs the generated transactions `txs` on `conn` as generated-history! does;
  returns the tx-data of those transact! accepted, in order."
  [conn schema txs]
  (let [db0 (d/db conn)
        model0 (naive/empty-db schema (d/basis-t db0) (set (map :e (d/datoms db0 :eavt))))]
    (:accepted
     (reduce (fn [{:keys [model] :as acc} ops]
               (let [tx-data (@#'txp/interpret-tx model ops)
                     report (try (d/transact! conn tx-data) (catch clojure.lang.ExceptionInfo _ nil))]
                 (if report
                   {:model (or (:model (naive/transact model tx-data (@#'txp/engine-new-eid report)))
                               model)
                    :accepted (conj (:accepted acc) tx-data)}
                   acc)))
             {:model model0 :accepted []} txs))))

(defn- instant-free
  "`view` of `db` without the :db/txInstant datoms, the one thing an import of
  the same tx-data writes differently (its own clock)."
  [db]
  (let [keep? (fn [d] (not= :db/txInstant (:a d)))
        strip (fn [ds] (vec (filter keep? ds)))
        v (view db)]
    (-> v
        (update :indexes update-vals strip)
        (update :history strip)
        (update :as-of #(mapv strip %))
        (update :log #(vec (for [[t data] %] [t (set (filter keep? data))]))))))

(deftest generated-tx-data-imports-as-transact-wrote-it
  (testing "the tx-data transact! accepted (tempids, upserts, lookup refs, retractions,
            cardinality many, reverse refs, tx ids), imported as chunks into a fresh database
            of the same schema, the first of them transacted there before (the staging lies over
            them, and its upserts and retractions reach them): the same datoms, ids, history and
            log, t by t; staged or not, the staging written after a few datoms (its budget) and
            the rest chunk by chunk"
    (let [result (tc/quick-check
                  trials
                  (prop/for-all [schema txp/gen-schema
                                 txs txp/gen-txs
                                 from (gen/elements tu/stores)
                                 into (gen/elements tu/stores)
                                 staged gen/boolean
                                 budget (gen/elements [nil 1 5 20])
                                 transacted gen/nat
                                 merge? gen/boolean]
                    (let [engine-schema (txp/engine-schema schema)]
                      (tu/with-conn [src from {:schema engine-schema}]
                        (let [tx-data (accepted-tx-data! src schema txs)
                              ;; the first ones transacted into dst: the import stages over them
                              [before imported] (split-at (mod transacted (inc (count tx-data))) tx-data)]
                          (tu/with-conn [dst into {:schema engine-schema}]
                            (doseq [tx before] (d/transact! dst tx))
                            (let [r (merging merge? #(d/import! dst imported (cond-> {:staged staged}
                                                                               budget (assoc :staged-budget budget))))]
                              (and (= (count imported) (:transactions r))
                                   (= (instant-free (d/db src)) (instant-free (d/db dst)))))))))))]
      (is (:pass? result) (pr-str (select-keys result [:seed :shrunk]))))))

(deftest lookup-refs-resolve-against-each-chunks-database
  (doseq [[what moves]
          [["the value retracted, then asserted on the other entity"
            [[[:db/retract [:k/id 1] :k/id 1]] [{:db/id [:k/n 2] :k/id 1}]]]
           ["its entity retracted, then the value asserted on the other"
            [[[:db/retractEntity [:k/id 1]]] [[:db/add [:k/n 2] :k/id 1]]]]
           ["retracted and asserted in one chunk"
            [[[:db/retract [:k/id 1] :k/id 1] [:db/add [:k/n 2] :k/id 1]]]]]]
    (testing (str "a lookup ref names the entity that has the value when its chunk runs, though
                  an earlier chunk of the import found another: " what)
      (tu/each-store [conn {:schema {:k/id {:db/unique :db.unique/identity}
                                     :k/ref {:db/valueType :db.type/ref}
                                     :k/n {:db/unique :db.unique/identity}}}]
        (d/import! conn (concat [[{:db/id "a" :k/id 1 :k/n 1} {:db/id "b" :k/n 2}]
                                 [{:k/n 10 :k/ref [:k/id 1]}]]
                                moves
                                [[{:k/n 11 :k/ref [:k/id 1]}]]))
        (let [db (d/db conn)
              by-n (fn [n] (d/q '[:find ?e . :in $ ?n :where [?e :k/n ?n]] db n))
              ref-of (fn [n] (d/q '[:find ?r . :in $ ?n :where [?e :k/n ?n] [?e :k/ref ?r]] db n))]
          (is (= (by-n 1) (ref-of 10)))
          (is (= (by-n 2) (ref-of 11))))))))

;; ---------------------------------------------------------------- the oracle widened for a bulk path (#17, h-bulk)
;; The cases a bulk path would special-case, each a source of chunks run both ways: through
;; transact!, one transaction a chunk, and through import!; the two databases must be equal but
;; for the txInstants. A chunk transact! refuses stops the import there (its chunks before it
;; committed), so both sides keep only the chunks before the first refused one.

(def ^:private bulk-schema-tx
  [{:db/ident :b/id :db/valueType :db.type/long :db/unique :db.unique/identity}
   {:db/ident :b/email :db/valueType :db.type/string :db/unique :db.unique/value}
   {:db/ident :b/n :db/valueType :db.type/long}
   {:db/ident :b/tags :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   {:db/ident :b/ref :db/valueType :db.type/ref}
   {:db/ident :b/refs :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}])

(defn- transact-chunks!
  "Transacts `chunks` one by one until the first that transact! refuses; returns
  how many it committed."
  [conn chunks]
  (reduce (fn [n chunk]
            (if (try (d/transact! conn chunk) (catch clojure.lang.ExceptionInfo _ nil))
              (inc n)
              (reduced n)))
          0 chunks))

(defn- import-against-transact
  "`chunks` transacted on an empty database of store `from`, and imported into
  one of store `into` (with import! options `opts`): [the chunks transact!
  committed, whether the import stopped where transact! refused (or took them
  all), whether the two databases are equal but for their txInstants]."
  [from into chunks opts]
  (tu/with-conn [src from]
    (let [n (transact-chunks! src chunks)]
      (tu/with-conn [dst into]
        (let [r (try (d/import! dst chunks opts) (catch clojure.lang.ExceptionInfo e e))]
          [n
           (if (< n (count chunks))
             (= n (:import/chunk (ex-data r)) (:transactions (:import/report (ex-data r))))
             (= n (:transactions r)))
           (= (instant-free (d/db src)) (instant-free (d/db dst)))])))))

(deftest the-cases-a-bulk-path-special-cases-import-as-transact-wrote-them
  (are [what committed chunks]
       (every? true? (for [from tu/stores into tu/stores staged [true false]]
                       (is (= [(inc committed) true true]
                              (import-against-transact from into (cons bulk-schema-tx chunks)
                                                       {:staged staged}))
                           (str what " (" from " -> " into ", staged " staged ")"))))
    "an upsert across chunks" 3
    [[{:b/id 1 :b/n 1}] [{:b/id 1 :b/n 2 :b/tags :x}] [{:db/id "u" :b/id 1 :b/tags :y}]]

    "a lookup ref to an entity of an earlier chunk, also as a ref value and in a map" 3
    [[{:b/id 1} {:b/id 2 :b/email "e"}]
     [[:db/add [:b/id 1] :b/n 5] {:db/id [:b/email "e"] :b/ref [:b/id 1]}]
     [{:b/id 3 :b/refs [[:b/id 1] [:b/email "e"]]}]]

    "card-one replacement within a chunk and across chunks" 3
    [[{:db/id "a" :b/id 1 :b/n 1}] [[:db/add [:b/id 1] :b/n 2] [:db/retract [:b/id 1] :b/n 1]]
     [[:db/add [:b/id 1] :b/n 3]]]

    "two values of a card-one attribute in one chunk: refused, the import stops there" 1
    [[{:b/id 1 :b/n 1}] [[:db/add [:b/id 1] :b/n 2] [:db/add [:b/id 1] :b/n 3]] [{:b/id 2}]]

    "redundant datoms, within a chunk and of earlier chunks" 3
    [[{:b/id 1 :b/n 1 :b/tags [:x :x]}] [{:b/id 1 :b/n 1 :b/tags :x}] [[:db/add [:b/id 1] :b/n 1]]]

    "retractions of earlier chunks' datoms, of missing ones, and of entities" 4
    [[{:b/id 1 :b/n 1 :b/tags [:x :y]} {:b/id 2 :b/ref "r"} {:db/id "r" :b/id 3}]
     [[:db/retract [:b/id 1] :b/tags :x] [:db/retract [:b/id 1] :b/n 9]]
     [[:db/retractEntity [:b/id 3]]] [{:b/id 3 :b/n 4}]]

    "a uniqueness violation against an earlier chunk stops the import" 1
    [[{:b/id 1 :b/email "e"}] [{:b/id 2 :b/email "e"}] [{:b/id 3}]]

    "schema in the source: installed, then altered, then used" 4
    [[{:db/ident :c/x :db/valueType :db.type/string}]
     [{:b/id 1 :c/x "v"}]
     [{:db/id :c/x :db/cardinality :db.cardinality/many}]
     [{:b/id 1 :c/x ["w" "v"]}]]

    "a new attribute and its first use in one chunk, then a lookup ref on it" 2
    [[{:db/ident :c/key :db/valueType :db.type/string :db/unique :db.unique/identity}
      {:c/key "k" :b/n 1}]
     [{:db/id [:c/key "k"] :b/n 2} {:b/id 9 :b/ref [:c/key "k"]}]]))

(deftest generated-tx-data-with-its-schema-in-the-source-imports-as-transact-wrote-it
  (testing "as generated-tx-data-imports-as-transact-wrote-it, the schema installed by the
            source's first chunk rather than by the connection"
    (let [result (tc/quick-check
                  trials
                  (prop/for-all [schema txp/gen-schema
                                 txs txp/gen-txs
                                 from (gen/elements tu/stores)
                                 into (gen/elements tu/stores)
                                 staged gen/boolean]
                    (let [schema-tx (vec (for [[a m] (txp/engine-schema schema)]
                                           (assoc m :db/ident a)))]
                      (tu/with-conn [src from]
                        (d/transact! src schema-tx)
                        (let [tx-data (accepted-tx-data! src schema txs)]
                          (tu/with-conn [dst into]
                            (let [r (d/import! dst (cons schema-tx tx-data) {:staged staged})]
                              (and (= (inc (count tx-data)) (:transactions r))
                                   (= (instant-free (d/db src)) (instant-free (d/db dst)))))))))))]
      (is (:pass? result) (pr-str (select-keys result [:seed :shrunk]))))))

;; ---------------------------------------------------------------- staged imports (#17, h-staged)
;; An import into an LMDB database (or any, with :staged true) commits its chunks into a layered
;; store over it, each its own transaction, and writes them into the store in one commit at its end
;; (also when a chunk or the source fails, or :progress stops it). The oracle above runs both
;; ways; these check what the staging changes: when the store sees the chunks, the budget past
;; which it writes and goes on chunk by chunk, failures, another writer, the values it hands out.

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
  (testing "a staging derives AEVT and writes its trees in place between reads: transaction
            functions reading :aevt of the chunks staged before them (and older staged values
            kept from earlier chunks), schema alterations checked against staged datoms (one
            refused), retractions and retracted entities of the base and of the staging, give
            the database transact! gives, and stop at the same chunk"
    (let [stash (atom [])
          counted (fn [db i] ; reads :aevt, and the values of earlier chunks kept
                    (swap! stash conj db)
                    [{:k/id (+ 1000 i) :k/count (count (d/datoms db :aevt :k/n))
                      :k/old (pr-str (for [old (take-last 3 @stash)]
                                       [(d/basis-t old) (count (d/datoms old :aevt :k/n))
                                        (count (d/datoms old :eavt))]))}])
          schema {:k/id {:db/unique :db.unique/identity}
                  :k/n {:db/valueType :db.type/long}
                  :k/count {:db/valueType :db.type/long}
                  :k/old {:db/valueType :db.type/string}
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
