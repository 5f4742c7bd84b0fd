(ns datalith.verify-test
  "d/verify and d/rebuild-indexes (issue #13, item 5) on both stores: a sound database
  verifies; each kind of damage, written straight into the store, is found and named (the
  index, the kind of problem, the datom, key or t); a damaged log record reads as
  :store/corrupt; a rebuild from the log gives a database that verifies and reads like the
  original, leaves the source untouched, refuses a damaged log before writing anything, and
  brings a store of the older format (no checksums), which connect refuses, to the current
  one."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is are testing]]
            [datalith.cli :as cli]
            [datalith.core :as d]
            [datalith.damage :as dmg :refer [with-store-conn]]
            [datalith.test-util :as tu])
  (:import (datalith.codec Codec)
           (datalith.conn Conn)
           (datalith.db Attr Latest Snapshot TxChange)
           (datalith.index Datom)
           (datalith.store LmdbStore Store WriteTxn)
           (java.security MessageDigest)
           (java.nio.file Files)))

(defn- problems-of [report]
  (set (map (juxt :index :problem) (:problems report))))

(defn- found?
  "Whether the report lists a problem with these entries."
  [report expected]
  (some #(= expected (select-keys % (keys expected))) (:problems report)))

(deftest a-sound-database-verifies
  (doseq [kind tu/stores]
    (testing kind
      (with-store-conn [conn store dir kind]
        (dmg/load-sample! conn)
        (let [r (d/verify conn)
              {:keys [log eavt aevt avet vaet heavt haevt havet hvaet blobs]} (:checks r)]
          (is (:ok? r))
          (is (= [] (:problems r)))
          (is (= 0 (:problem-count r)))
          (is (= (d/basis-t (d/db conn)) (:t r)))
          (is (= 2 (:format r)))
          (is (= {:records (inc (:t r)) :checksums :checked :problems 0}
                 (select-keys log [:records :checksums :problems])))
          (is (= (:datoms eavt) (:datoms aevt) (:datoms avet) (count (d/datoms (d/db conn) :eavt))))
          (is (= (:datoms vaet) (count (d/datoms (d/db conn) :vaet))))
          (is (= (:datoms heavt) (:datoms haevt) (:datoms havet)))
          (is (pos? (:datoms hvaet)))
          (is (= (:datoms log) (+ (:datoms eavt) (* 2 (:datoms heavt)))))
          (is (= 2 (:entries blobs))))))))

(defn- damage-cases
  "[name damage-fn expected-problem] for the sample database: damage-fn writes straight
  into the store, expected-problem is a map the report must list."
  [db {:keys [ada bob cy]}]
  (let [tx (fn [t] (d/t->tx t))
        ;; t 1 schema, 2 three users, 3 updates, 4 upsert, 5 :user/score, 6 retractions
        name-ada [ada :user/name "Ada L" (tx 3)]
        email-cy [cy :user/email "cy@x" (tx 2)]
        friend [cy :user/friends bob (tx 2)] ; retracted at 6 by bob's retractEntity
        tag-a [ada :user/tags :a (tx 2)] ; retracted at 3
        fake [ada :user/name "Eve" (tx 3)]
        log-t (fn [store t] (first (filter #(= t (.getLong (java.nio.ByteBuffer/wrap ^bytes (first %)) 0))
                                           (dmg/entries store :log))))]
    [["an AEVT key lost"
      #(dmg/write! % [[:del :aevt (dmg/index-key db :aevt name-ada)]])
      {:index :aevt :problem :missing :datom name-ada}]
     ["an EAVT key lost"
      #(dmg/write! % [[:del :eavt (dmg/index-key db :eavt email-cy)]])
      {:index :eavt :problem :missing :datom email-cy}]
     ["an AVET key too many"
      #(dmg/write! % [[:put :avet (dmg/index-key db :avet fake)]])
      {:index :avet :problem :extra :datom fake}]
     ["a datom in every current index but in no log record"
      #(dmg/write! % (for [k [:eavt :aevt :avet]] [:put k (dmg/index-key db k fake)]))
      {:index :eavt :problem :extra :datom fake}]
     ["a VAET key lost"
      #(dmg/write! % [[:del :vaet (dmg/index-key db :vaet [ada :user/friends cy (tx 3)])]])
      {:index :vaet :problem :missing :datom [ada :user/friends cy (tx 3)]}]
     ["a history key lost"
      #(dmg/write! % [[:del :heavt (dmg/index-key db :heavt tag-a (tx 3))]])
      {:index :heavt :problem :missing :datom (conj tag-a (tx 3))}]
     ["a history interval reversed"
      #(dmg/write! % [[:del :haevt (dmg/index-key db :haevt tag-a (tx 3))]
                      [:put :haevt (dmg/index-key db :haevt (assoc tag-a 3 (tx 3)) (tx 2))]])
      {:index :haevt :problem :bad-interval}]
     ["a ref's history entry lost"
      #(dmg/write! % [[:del :hvaet (dmg/index-key db :hvaet friend (tx 6))]])
      {:index :hvaet :problem :missing :datom (conj friend (tx 6))}]
     ["a datom current twice"
      #(dmg/write! % [[:put :eavt (dmg/index-key db :eavt (assoc name-ada 3 (tx 4)))]])
      {:index :eavt :problem :duplicate}]
     ["a log record damaged"
      #(let [[k v] (log-t % 3)]
         (aset-byte v 20 (unchecked-byte (bit-xor 1 (aget ^bytes v 20))))
         (dmg/write! % [[:put :log k v]]))
      {:index :log :problem :checksum :t 3}]
     ["a log record lost"
      #(dmg/write! % [[:del :log (first (log-t % 3))]])
      {:index :log :problem :gap :t 3}]
     ["a log key that is no t"
      #(dmg/write! % [[:put :log (byte-array [1 2 3]) (byte-array 0)]])
      {:index :log :problem :malformed}]
     ["META's t behind the log"
      #(dmg/write! % [[:put :meta (.getBytes "t") (dmg/longs->bytes 4)]])
      {:index :meta :problem :t}]
     ["META's next-eid below an entity id used"
      #(dmg/write! % [[:put :meta (.getBytes "next-eid") (dmg/longs->bytes cy)]])
      {:index :meta :problem :next-eid}]
     ["META's statistics wrong"
      #(dmg/write! % [[:put :meta (.getBytes "stats")
                       (dmg/longs->bytes (d/entid db :user/name) 1)]])
      {:index :meta :problem :stats :attribute :user/name}]
     ["an unknown format"
      #(dmg/write! % [[:put :meta (.getBytes "format") (dmg/longs->bytes 7)]])
      {:index :meta :problem :format :found 7}]
     ["a long value lost"
      #(dmg/write! % (for [[k _] (dmg/entries % :blobs)] [:del :blobs k]))
      {:index :eavt :problem :blob-missing}]
     ["a long value changed"
      #(let [[k v] (first (dmg/entries % :blobs))]
         (aset-byte v 30 (unchecked-byte (inc (aget ^bytes v 30))))
         (dmg/write! % [[:put :blobs k v]]))
      {:index :blobs :problem :hash-mismatch}]
     ["a malformed index key"
      #(dmg/write! % [[:put :avet (byte-array [0 0 0 0 0 0 3 -24 42])]])
      {:index :avet :problem :malformed}]]))

(deftest each-damage-is-found-and-named
  (doseq [kind tu/stores
          i (range (count (damage-cases nil {})))]
    (with-store-conn [conn store dir kind]
      (let [ids (dmg/load-sample! conn)
            [what damage expected] (nth (damage-cases (d/db conn) ids) i)]
        (testing (str kind ": " what)
          (damage store)
          (let [r (d/verify conn)]
            (is (not (:ok? r)))
            (is (found? r expected) (pr-str (:problems r)))))))))

(deftest problems-are-counted-all-and-listed-up-to-the-bound
  (doseq [kind tu/stores]
    (testing kind
      (with-store-conn [conn store dir kind]
        (dmg/load-sample! conn)
        (dmg/write! store (for [[k _] (dmg/entries store :aevt)] [:del :aevt k]))
        (let [all (count (d/datoms (d/db conn) :eavt))
              r (d/verify conn {:max-problems 3})]
          (is (= 3 (count (:problems r))))
          (is (= all (:problem-count r) (get-in r [:checks :aevt :problems])))
          (is (= 0 (get-in r [:checks :aevt :datoms])))
          (is (every? #{[:aevt :missing]} (problems-of r))))))))

(defn- flip-log-byte!
  "Flips one bit of the record of t, at offset off of its value."
  [store t off]
  (let [[k ^bytes v] (first (filter #(= t (.getLong (java.nio.ByteBuffer/wrap ^bytes (first %)) 0))
                                    (dmg/entries store :log)))]
    (aset-byte v off (unchecked-byte (bit-xor 4 (aget v off))))
    (dmg/write! store [[:put :log k v]])))

(deftest a-damaged-log-record-reads-as-store-corrupt
  (doseq [kind tu/stores
          off [0 5 13 30]]
    (testing (str kind " byte " off)
      (with-store-conn [conn store dir kind]
        (dmg/load-sample! conn)
        (flip-log-byte! store 2 off)
        (let [e (try (doall (d/tx-range conn nil nil)) nil
                     (catch clojure.lang.ExceptionInfo e e))]
          (is (= {:error :store/corrupt :t 2 :problem :checksum}
                 (select-keys (ex-data e) [:error :t :problem]))))
        (is (= [3 4 5 6] (map :t (d/tx-range conn 3 nil))) "the records after it still read")))))

(defn- to-format-1!
  "Rewrites the store as the older format wrote it: log records without their checksum."
  [store]
  (dmg/write! store (concat (for [[k ^bytes v] (dmg/entries store :log)]
                              [:put :log k (java.util.Arrays/copyOfRange v 4 (alength v))])
                            [[:put :meta (.getBytes "format") (dmg/longs->bytes 1)]])))

(deftest the-older-format-is-refused-read-by-verify-and-upgraded-by-rebuild
  (doseq [kind tu/stores]
    (testing kind
      (with-store-conn [conn store dir kind]
        (dmg/load-sample! conn)
        (let [before (dmg/database-view (d/db conn))]
          (to-format-1! store)
          (let [e (try (Conn/open store) nil (catch clojure.lang.ExceptionInfo e e))]
            (is (= {:error :store/format :format 1} (select-keys (ex-data e) [:error :format])))
            (is (str/includes? (ex-message e) "datalith repair DIR NEWDIR")))
          (let [r (d/verify conn)]
            (is (:ok? r) (pr-str (:problems r)))
            (is (= 1 (:format r)))
            (is (= :absent (get-in r [:checks :log :checksums]))))
          (let [{new-conn :conn :as r} (d/rebuild-indexes conn :mem)]
            (try
              (is (= {:source-format 1 :checksums :absent :t (:basis-t before)}
                     (select-keys r [:source-format :checksums :t])))
              (is (= 2 (:format (d/verify new-conn))))
              (is (:ok? (d/verify new-conn)))
              (is (= before (dmg/database-view (d/db new-conn))))
              (finally (d/close new-conn)))))))))

(defn- damage-indexes!
  "Loses a third of AEVT, puts a wrong datom into AVET and loses a history key."
  [store db {:keys [ada]}]
  (dmg/write! store (concat (for [[k _] (take-nth 3 (dmg/entries store :aevt))] [:del :aevt k])
                            [[:put :avet (dmg/index-key db :avet [ada :user/name "Eve" (d/t->tx 3)])]]
                            [[:del :heavt (first (first (dmg/entries store :heavt)))]])))

(defn- file-digest [^java.io.File f]
  (vec (.digest (MessageDigest/getInstance "SHA-256") (Files/readAllBytes (.toPath f)))))

(deftest rebuild-gives-the-database-the-log-describes
  (doseq [kind tu/stores
          target [:mem :dir]]
    (testing (str kind " into " target)
      (with-store-conn [conn store dir kind]
        (let [ids (dmg/load-sample! conn)
              view (dmg/database-view (d/db conn))
              out (tu/temp-dir)]
          (damage-indexes! store (d/db conn) ids)
          (is (not (:ok? (d/verify conn))))
          ;; the damage's writes go into write-behind's layers, written back into data.mdb
          ;; by the store's thread when it comes to them: all of them before the digest, so
          ;; that "untouched" means by the rebuild (it failed as often as not when a write-back
          ;; landed during the rebuild)
          (when (instance? LmdbStore store)
            (.writeBehindCatchUp ^LmdbStore store))
          (let [source-bytes (some-> dir (io/file "data.mdb") file-digest)
                r (d/rebuild-indexes conn (if (= target :mem) :mem (.getPath out)))]
            (is (= {:t (:basis-t view) :records (inc (:basis-t view)) :next-eid (:next-eid view)
                    :source-format 2 :checksums :checked}
                   (dissoc r :datoms :conn)))
            (when dir
              (is (= source-bytes (file-digest (io/file dir "data.mdb"))) "the source is untouched"))
            (with-open [^Conn rebuilt (or (:conn r) (d/connect (.getPath out)))]
              (is (:ok? (d/verify rebuilt)))
              (is (= view (dmg/database-view (d/db rebuilt))))
              (testing "and goes on as the original would"
                (let [tx [{:user/email "dee@x" :user/name "Dee"} {:user/email "ada@x" :user/score 1}]]
                  (is (= (:tempids (d/with (d/db rebuilt) tx))
                         (:tempids (d/with (d/db conn) tx)))))))
            (tu/delete-tree out)))))))

(deftest rebuild-refuses-a-damaged-log-before-writing
  (doseq [kind tu/stores]
    (with-store-conn [conn store dir kind]
      (dmg/load-sample! conn)
      (let [out (io/file (tu/temp-dir) "new")
            attempt (fn [& [opts]]
                      (try (d/rebuild-indexes conn (.getPath out) opts)
                           (catch clojure.lang.ExceptionInfo e (ex-data e))))]
        (testing (str kind ": a record fails its checksum")
          (flip-log-byte! store 4 9)
          (is (= {:error :store/corrupt :t 4 :problem :checksum}
                 (select-keys (attempt) [:error :t :problem])))
          (is (not (.exists out)) "nothing written"))
        (testing (str kind ": a record is missing")
          (dmg/write! store [[:del :log (dmg/longs->bytes 4)]])
          (is (= {:error :store/corrupt :t 4 :problem :gap}
                 (select-keys (attempt) [:error :t :problem])))
          (is (not (.exists out))))
        (testing (str kind ": the log's end is lost")
          (dmg/write! store [[:del :log (dmg/longs->bytes 5)] [:del :log (dmg/longs->bytes 6)]])
          (is (= {:error :store/corrupt :problem :log-end :meta-t 6 :log-t 3}
                 (select-keys (attempt) [:error :problem :meta-t :log-t])))
          (is (not (.exists out))))
        (testing (str kind ": unless told to trust it")
          (is (= 3 (:t (attempt {:trust-log-end true}))))
          (with-open [c (d/connect (.getPath out))]
            (is (:ok? (d/verify c)))
            (is (= 3 (d/basis-t (d/db c))))))
        (testing (str kind ": into a directory that holds something")
          (is (= :store/not-empty (:error (attempt)))))
        (tu/delete-tree (.getParentFile out))))))

(deftest the-cli-verifies-and-repairs-a-directory
  (let [dir (tu/temp-dir)
        out (io/file (tu/temp-dir) "repaired")
        [view damage!] (with-open [c (d/connect (.getPath dir))]
                         (let [ids (dmg/load-sample! c)
                               db (d/db c)
                               fake (dmg/index-key db :avet [(:ada ids) :user/name "Eve" (d/t->tx 3)])]
                           [(dmg/database-view db)
                            #(dmg/write! % [[:put :avet fake]
                                            [:del :aevt (first (first (dmg/entries % :aevt)))]])]))]
    (try
      (with-open [s (LmdbStore/open (.toPath dir) {})]
        (damage! s))
      (let [r (atom nil)
            printed (with-out-str (reset! r (cli/verify (.getPath dir))))]
        (is (not (:ok? @r)))
        (is (= #{[:avet :extra] [:aevt :missing]} (problems-of @r)))
        (is (str/starts-with? printed "DAMAGED: 2 problem(s)"))
        (is (str/includes? printed ":problem :extra")))
      (let [before (file-digest (io/file dir "data.mdb"))
            r (atom nil)
            printed (with-out-str (reset! r (cli/repair (.getPath dir) (.getPath out))))]
        (is (:ok? @r))
        (is (str/starts-with? printed "rebuilt "))
        (is (str/includes? printed "ok: t 6"))
        (is (= before (file-digest (io/file dir "data.mdb"))) "the source is untouched"))
      (with-open [c (d/connect (.getPath out))]
        (is (= view (dmg/database-view (d/db c)))))
      (finally
        (tu/delete-tree dir)
        (tu/delete-tree (.getParentFile out))))))

;; ---------------------------------------------------------------- LMDB branch pages

(def ^:private page-size 4096)

(defn- branch-separators
  "[offset-of-key length] of the keys of the branch pages of `file` whose keys are AVET keys
  of attribute `aid` with a string value: LMDB 0.9's page header (pgno 8, pad 2, flags 2,
  lower 2, upper 2) and nodes (lo 2, hi 2, flags 2, ksize 2, key), flags 1 a branch page."
  [^bytes file aid]
  (let [b (doto (java.nio.ByteBuffer/wrap file) (.order java.nio.ByteOrder/LITTLE_ENDIAN))]
    (for [page (range 2 (quot (alength file) page-size))
          :let [at (* page page-size)]
          :when (and (= page (.getLong b at)) (= 1 (.getShort b (+ at 10))))
          i (range 1 (quot (- (.getShort b (+ at 12)) 16) 2))
          :let [node (+ at (.getShort b (+ at 16 (* 2 i))))
                ksize (.getShort b (+ node 6))
                key (+ node 8)]
          :when (and (> ksize 17) (= aid (.getLong (doto (.duplicate b) (.order java.nio.ByteOrder/BIG_ENDIAN)) key))
                     (= 10 (aget file (+ key 8))))]
      [key ksize])))

(deftest a-damaged-branch-key-is-found
  (doseq [[what byte] [["raised above the keys it should route" (unchecked-byte 0xd0)]
                       ["lowered below the page before" (byte 1)]]]
    (testing what
      (let [dir (tu/temp-dir)
            emails (map #(format "user%04d@x" %) (range 1500))]
        (try
          (let [aid (with-open [c (d/connect (.getPath dir) {:schema dmg/sample-schema})]
                      (doseq [batch (partition-all 500 emails)]
                        (d/transact! c (vec (for [m batch] {:user/email m :user/name m}))))
                      (d/entid (d/db c) :user/email))
                f (io/file dir "data.mdb")
                bytes (Files/readAllBytes (.toPath f))
                separators (branch-separators bytes aid)
                [key _] (nth separators (quot (count separators) 2))]
            (is (seq separators) "AVET has branch pages")
            (aset-byte bytes (+ key 9) byte) ; the first character of the email
            (Files/write (.toPath f) ^bytes bytes ^"[Ljava.nio.file.OpenOption;" (make-array java.nio.file.OpenOption 0))
            (with-open [c (d/connect (.getPath dir))]
              (let [db (d/db c)]
                ;; a walk reads every key, or names the damage: the lazy seq seeks on from
                ;; the last key of each chunk, and a seek routed by the damaged key to the page
                ;; before finds the next page's first key not after it (which of the two
                ;; depends on where the chunks end against the page: the file's layout)
                (is (contains? #{1500 :store/corrupt}
                               (try (count (d/datoms db :avet :user/email))
                                    (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))
                    "a walk reads every key or names the damage")
                ;; LMDB's seek lands past the key; the Java page reader's finds that below
                ;; the probe, and throws
                (is (some #(nil? (try (d/entid db [:user/email %])
                                      (catch clojure.lang.ExceptionInfo e
                                        (is (= :store/corrupt (:error (ex-data e))))
                                        nil)))
                          emails)
                    "some lookups miss or find the damage")
                (let [r (d/verify c)]
                  (is (not (:ok? r)))
                  (is (contains? (problems-of r) [:avet :misrouted]) (pr-str (:problems r)))))))
          (finally (tu/delete-tree dir)))))))

(defn- reopen-error
  "The ex-data of opening a new connection on `store` (and reading its value), or nil."
  [store]
  (try (let [c (Conn/open store)] (d/db c) nil)
       (catch clojure.lang.ExceptionInfo e (ex-data e))))

(deftest malformed-meta-records-read-as-store-corrupt
  ;; META's numbers are 8 bytes and its stats pairs of them: a record of another length
  ;; was an IndexOutOfBoundsException at connect, not damage named as such
  (doseq [kind tu/stores]
    (are [record value] (with-store-conn [conn store dir kind]
                          (dmg/load-sample! conn)
                          (dmg/write! store [[:put :meta (.getBytes ^String record) value]])
                          (= :store/corrupt (:error (reopen-error store))))
      "t" (byte-array 3)
      "t" (byte-array 0)
      "next-eid" (byte-array 4)
      "format" (byte-array 2)
      "stats" (byte-array 17))))

(deftest a-log-key-that-is-not-a-t-reads-as-store-corrupt
  (doseq [kind tu/stores]
    (with-store-conn [conn store dir kind]
      (dmg/load-sample! conn)
      ;; a key of 3 bytes sorting after every t the log holds
      (dmg/write! store [[:put :log (byte-array [0x7f 1 2]) (byte-array 0)]])
      (let [e (try (doall (d/tx-range conn nil nil)) nil
                   (catch clojure.lang.ExceptionInfo e (ex-data e)))]
        (is (= {:error :store/corrupt :problem :malformed} (select-keys e [:error :problem]))))
      (let [out (io/file (tu/temp-dir) "new")
            e (try (d/rebuild-indexes conn (.getPath out) {}) nil
                   (catch clojure.lang.ExceptionInfo e (ex-data e)))]
        (is (= :store/corrupt (:error e)))
        (is (not (.exists out)) "nothing written")
        (tu/delete-tree (.getParentFile out))))))

;; Transactions written below the transactor's checks, through Latest.commit (as one written
;; before 5d46b06 could be: an alteration that its own data broke): the log says what the
;; database holds, so the log, every index and a rebuild agree, and only the schema's checks
;; can find them.
(defn- commit-unchecked!
  "Commits `datoms` ([e attr-ident v], all assertions; ref values as ids, and the retraction of
  a value held as [e attr-ident v :retract]) as the next transaction of `store`, unchecked."
  [^Store store conn datoms]
  (with-open [s (Snapshot/of store)]
    (let [latest (Latest/load conn s)
          db (.db latest)
          schema (.schema db)
          t (inc (d/basis-t db))
          tx (d/t->tx t)
          change (fn [[e ident v retract]]
                   (let [^Attr a (.attr schema ^clojure.lang.Keyword ident)
                         held (when retract
                                (some #(when (= v (:v %)) (:tx %)) (d/datoms db :eavt e ident)))]
                     (TxChange. (Datom. e (.id a) ident v tx (not retract)) a
                                ;; a value held keeps the type it was written with
                                (Codec/encode v (if (and retract (not= Codec/T_REF (.valueType a)))
                                                  (Codec/inferTag v)
                                                  (.valueType a)))
                                (or held tx))))
          ;; retractions first, as the transactor writes them
          changes (mapv change (sort-by #(if (= :retract (get % 3)) 0 1)
                                        (cons [tx :db/txInstant (java.util.Date.)] datoms)))
          schema' (.with schema (TxChange/datoms changes))]
      (with-open [^WriteTxn wt (.beginWrite store)]
        (.commit latest wt changes schema' t (.nextEid db))))))

(deftest what-the-schema-forbids-is-found
  (doseq [kind tu/stores]
    (testing kind
      (with-store-conn [conn store dir kind]
        (d/transact! conn [{:db/ident :k/tags :db/valueType :db.type/long
                            :db/cardinality :db.cardinality/many}
                           {:db/ident :k/code :db/valueType :db.type/string
                            :db/cardinality :db.cardinality/one}
                           {:db/ident :k/free :db/cardinality :db.cardinality/one}])
        (let [{{a "a" b "b"} :tempids} (d/transact! conn [{:db/id "a" :k/tags #{1 2} :k/code "x"
                                                          :k/free "text"}
                                                         {:db/id "b" :k/code "x"}])
              db (d/db conn)
              id #(d/entid db %)]
          (is (:ok? (d/verify conn)))
          ;; :k/tags made cardinality-one, :k/code unique, :k/free a long: none of the data
          ;; they already hold can stand it
          (commit-unchecked! store conn [[(id :k/tags) :db/cardinality (id :db.cardinality/one)]
                                         [(id :k/tags) :db/cardinality (id :db.cardinality/many)
                                          :retract]
                                         [(id :k/code) :db/unique (id :db.unique/value)]
                                         [(id :k/free) :db/valueType (id :db.type/long)]])
          (let [r (d/verify conn)]
            (is (not (:ok? r)))
            (is (= #{[:eavt :cardinality] [:avet :unique] [:eavt :value-type]} (problems-of r)))
            (is (found? r {:index :eavt :problem :cardinality :datom [a :k/tags 2 (d/t->tx 2)]}))
            (is (found? r {:index :avet :problem :unique :datom [b :k/code "x" (d/t->tx 2)]}))
            (is (found? r {:index :eavt :problem :value-type :datom [a :k/free "text" (d/t->tx 2)]})))
          (testing "a transaction retracting what breaks them mends the database"
            (commit-unchecked! store conn [[a :k/tags 1 :retract] [b :k/code "x" :retract]
                                           [a :k/free "text" :retract]])
            (is (:ok? (d/verify conn)))))))))
