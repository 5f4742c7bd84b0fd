(ns datalith.import-test
  "Bulk export and import (`d/export`, `d/import!`): an export imported into an
  empty database of either store gives an equal one (every index, history, the
  log, as-of at every t), for hand-written and generated histories; chunks are
  transactions with transact!'s semantics (a lookup ref resolves against its
  chunk's database); a bad chunk stops the import with transact!'s error and the
  chunk's index, the chunks before it committed; a stopped import resumes, also
  one killed with its process; export lines read as the EDN reader reads them.
  Generated tx-data imported as transact! wrote it is import-transact-test's;
  what staging changes import-staged-test's."
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
            [datalith.import-support :refer [trials view]]
            [datalith.naive :as naive]
            [datalith.readers :as readers]
            [datalith.test-util :as tu]
            [datalith.tx-property-support :as txp])
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

(defn- generated-history!
  "Runs the generated transactions `txs` (tx-property-support's abstract ops) on
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
