(ns datalith.lmdb-replace-test
  "LmdbStore.replaceAll, which writes the new trees directly as pages and commits them with one
  meta page (LmdbDirectCommit, issue #17), and what it writes:
  - random contents of every shape (one key, none, one page, several levels of branch pages,
    keys of 1 and 511 bytes, values of 0 bytes to 100 KB on either side of the overflow
    threshold) replace a store's: every cursor op and get agrees with the source, on the Java
    page reader and on LMDB's own; a read transaction begun before still reads the old
    contents; then ordinary commits (puts, overwrites, runs of deletes that split and merge the
    written pages) and reopens (in process and in a child JVM) agree with a model; twice in a
    row, so both meta slots are written; once more from a source that is not a MemStore's
  - a MemStore source is read from its B+trees' leaves, any other through its cursors: both
    ways write the same data file, byte for byte, for contents of every shape
  - the lock file's txnid at the offset the commit writes follows LMDB's commits
  - a map too small for the new trees grows
  - through the public API: a database replaced from a MemStore conn's store equals it
    (every index, history, log, as-of), and takes transactions after
  - a sub-database that is not a SubDb makes replaceAll take the generic way, which keeps it
  - a source whose keys are out of order is refused, nothing committed
  A replace whole or not at all, through kills and failures and for other processes, is
  lmdb-replace-atomicity-test's; what becomes of the old trees' pages lmdb-replace-pages-test's."
  (:require [clojure.test :refer [deftest is testing]]
            [datalith.child-jvm :as child]
            [datalith.core :as d]
            [datalith.lmdb-file :as f]
            [datalith.lmdb-replace-child :as rc]
            [datalith.lmdb-replace-support :refer [check-store entries mem-cursor open-store
                                                   random-writes! replace-with! stats-agree]]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.conn Conn)
           (datalith.store Cursor LmdbStore ReadTxn SubDb)
           (java.io File)
           (java.nio ByteBuffer ByteOrder)
           (java.nio.channels FileChannel)
           (java.nio.file StandardOpenOption)
           (java.util Arrays Random TreeMap)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- child-digest
  "The digest a child JVM reads from the store at dir."
  [^File dir commit]
  (let [p (child/start (child/command (.getParent dir) "datalith.lmdb-replace-child"
                                      "digest" (.getPath dir) commit)
                       (File. (.getParentFile dir) "digest.err"))
        q (child/line-queue (.getInputStream p))
        line (.poll q 120 TimeUnit/SECONDS)]
    (.waitFor p)
    (second (re-matches #"digest (.*)" (str line)))))

(defn- packed-leaf-pages
  "The leaf pages of `psize` bytes that `m`'s entries (none on overflow pages) take when each
  page is filled."
  [^TreeMap m psize]
  (let [node (fn [[^bytes k ^bytes v]] (+ 2 (* 2 (quot (+ 9 (alength k) (alength v)) 2))))]
    (loop [[e & more :as es] (entries m), used (long 0), pages 1]
      (cond (empty? es) pages
            (<= (+ used (long (node e))) (- psize 16)) (recur more (+ used (long (node e))) pages)
            :else (recur more (long (node e)) (inc pages))))))

(defn- replace-scenario
  "Replaces a store's contents, of pages of `psize` bytes (other than 4 KiB: a copy with its
  pages spread, lmdb-file's spread-pages!), by way `way`, and checks what reads, writes and a
  reopen find."
  [reader other commit way psize]
  (let [dir (File. (tu/temp-dir) "db")
        rnd (Random. 7)
        old-model (rc/contents 1 0.3)
        new-model (rc/contents 2 1)]
    (try
      (with-open [s (open-store (File. (.getParentFile dir) "first") reader commit)]
        (with-open [w (.beginWrite s)]
          (doseq [[db ^TreeMap m] old-model, [^bytes k ^bytes v] m]
            (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v)))
          (.commit w)))
      (f/spread-pages! (.getPath (File. (.getParentFile dir) "first")) (.getPath dir) psize)
      (let [s (open-store dir reader commit)]
        (try
          (let [old (.beginRead s)]
            (try
              (replace-with! s new-model way)
              (testing "the new contents, read by a new transaction"
                (with-open [r (.beginRead s)] (check-store r new-model rnd)))
              (testing "a read transaction begun before reads the old contents"
                (is (= (rc/model-digest old-model) (rc/digest #(rc/scan old %)))))
              (finally (.close old))))
          (stats-agree s new-model)
          (testing "written as full pages (not through LMDB's puts, which leave them half full)"
            (is (<= (:leaf-pages (.pageStats s SubDb/EAVT))
                    (packed-leaf-pages (new-model SubDb/EAVT) psize))))
          (testing "ordinary commits after"
            (dotimes [_ 4] (random-writes! s new-model rnd 400))
            (with-open [r (.beginRead s)] (check-store r new-model rnd)))
          (testing "a second replace: the other meta slot"
            (let [m3 (rc/contents 3 0.5)]
              (replace-with! s m3 way)
              (with-open [r (.beginRead s)] (check-store r m3 rnd))
              (dotimes [_ 3] (random-writes! s m3 rnd 400))
              (with-open [r (.beginRead s)] (check-store r m3 rnd))
              (stats-agree s m3)
              (.close s)
              (testing "reopened, on the other page reader"
                (with-open [s2 (open-store dir other commit)
                            r (.beginRead s2)]
                  (check-store r m3 rnd)))
              (testing "reopened in a child JVM"
                (is (= (rc/model-digest m3) (child-digest dir commit))))))
          (finally (.close s))))
      (finally (tu/delete-tree (.getParentFile dir))))))

(deftest replace-all-writes-every-shape
  (doseq [[reader other] [["java" "lmdb"] ["lmdb" "java"]]
          commit ["wal" "lmdb-sync"]]
    (testing (str "page-reader " reader ", commit " commit)
      (replace-scenario reader other commit :leaves 4096)))
  (testing "a source that is not a MemStore's (read through its cursors)"
    (replace-scenario "java" "lmdb" "wal" :cursor 4096))
  ;; written as pages since stop 46 (the generic way's puts before)
  (doseq [psize [16384 32768]]
    (testing (str "pages of " psize " bytes")
      (replace-scenario "java" "lmdb" "wal" :leaves psize))))

(defn- file-bytes ^bytes [^File f]
  (java.nio.file.Files/readAllBytes (.toPath f)))

(deftest both-ways-of-reading-write-the-same-file
  (testing "a MemStore source read from its leaves and the same read through cursors make data
  files equal byte for byte, for contents of every shape"
    (let [root (tu/temp-dir)]
      (try
        (doseq [[seed scale] [[1 0.3] [2 1] [3 0.02] [4 0]]
                :let [model (if (zero? scale)
                              (into {} (for [db (SubDb/values)] [db (TreeMap. rc/unsigned)]))
                              (rc/contents seed scale))]]
          (testing (str "contents " seed ", scale " scale)
            (let [files (for [way [:leaves :cursor]]
                          (let [dir (File. root (str "db-" seed "-" (name way)))]
                            (with-open [s (open-store dir "java" "wal")]
                              (replace-with! s model way)
                              (with-open [r (.beginRead s)] (check-store r model (Random. 1))))
                            (file-bytes (File. dir "data.mdb"))))]
              (is (Arrays/equals ^bytes (first files) ^bytes (second files))))))
        (finally (tu/delete-tree root))))))

(defn- with-caller-trees
  "Calls `f` with replaceAll's split between its threads fixed: the caller writes the first `k`
  trees, the helper thread the rest (LmdbTreeWrites)."
  [k f]
  (System/setProperty "datalith.replace.caller-trees" (str k))
  (try (f) (finally (System/clearProperty "datalith.replace.caller-trees"))))

(deftest trees-written-on-either-thread-make-the-same-file
  (testing "a MemStore's trees written k by the caller into the file, the rest by a helper thread
  in memory, then renumbered as they are appended (branch children, overflow pages, roots):
  the data file of one thread writing every tree, byte for byte, for every k"
    (let [root (tu/temp-dir)
          model (rc/contents 2 1)
          write (fn [dir-name way]
                  (let [dir (File. root ^String dir-name)]
                    (with-open [s (open-store dir "java" "wal")]
                      (replace-with! s model way)
                      (with-open [r (.beginRead s)] (check-store r model (Random. 1))))
                    (file-bytes (File. dir "data.mdb"))))]
      (try
        (let [expected (write "cursor" :cursor)]
          (doseq [k (range (inc (alength (SubDb/values))))]
            (testing (str k " trees written by the caller")
              (is (Arrays/equals ^bytes expected
                                 ^bytes (with-caller-trees k #(write (str "leaves-" k) :leaves)))))))
        (finally (tu/delete-tree root))))))

(defn- first-leaf
  "The first leaf of the MemStore B+tree beneath `node`."
  [node]
  (let [children (Class/forName "datalith.store.BTree$Branch")]
    (if (instance? children node)
      (recur (aget ^objects (.get (doto (.getDeclaredField children "children") (.setAccessible true))
                                  node)
                   0))
      node)))

(defn- widen-first-key!
  "Makes the first key of a MemStore leaf `n` bytes of zeros, behind the store's back: the
  leaf's keys lie back to back in its array, key i at [offs[i], offs[i + 1]), its room ending at
  end; the widened keys get an array of their own."
  [leaf n]
  (let [field (fn [^Class c name] (doto (.getDeclaredField c name) (.setAccessible true)))
        leaf-class (Class/forName "datalith.store.BTree$Leaf")
        data-field (field leaf-class "data")
        ^bytes data (.get data-field leaf)
        ^ints offs (.get (field leaf-class "offs") leaf)
        size (.getInt (field (Class/forName "datalith.store.BTree$Node") "size") leaf)
        first-end (aget offs 1)
        rest-bytes (- (aget offs size) first-end)
        widened (byte-array (+ n rest-bytes))]
    (System/arraycopy data first-end widened n rest-bytes)
    (doseq [i (range 1 (inc size))]
      (aset offs i (int (+ n (- (aget offs i) first-end)))))
    (aset offs 0 (int 0))
    (.set data-field leaf widened)
    (.setInt (field leaf-class "end") leaf (alength widened))))

(deftest a-tree-that-fails-on-either-thread-commits-nothing
  (testing "a key of 512 bytes in a MemStore's last tree (corrupted behind its back), written by
  the helper thread or by the caller: replaceAll throws :store/key-size, nothing committed"
    (doseq [k [0 (alength (SubDb/values))]]
      (testing (str k " trees written by the caller")
        (let [dir (File. (tu/temp-dir) "db")
              model (rc/contents 6 0.05)]
          (try
            (with-open [s (open-store dir "java" "wal")
                        src (rc/mem-store (rc/contents 7 0.05))
                        r (.beginRead src)]
              (replace-with! s model)
              (let [before (.directReplaces s)
                    root (with-open [c (.cursor r SubDb/META)]
                           (.invoke (doto (.getDeclaredMethod ^Class mem-cursor "root"
                                                              (make-array Class 0))
                                      (.setAccessible true))
                                    c (object-array 0)))
]
                (widen-first-key! (first-leaf root) 512)
                (is (= :store/key-size
                       (with-caller-trees k
                         #(try (.replaceAll s r) nil
                               (catch ExceptionInfo e (:error (ex-data e)))))))
                (is (= before (.directReplaces s)))
                (is (= (rc/model-digest model) (rc/store-digest s)) "nothing committed")
                (random-writes! s model (Random. 2) 20)
                (is (= (rc/model-digest model) (rc/store-digest s)) "later commits go on")))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

(defn- lock-txnid
  "The u64 at the offset LmdbDirectCommit writes the lock file's txnid to."
  [^File dir]
  (with-open [ch (FileChannel/open (.toPath (File. dir "lock.mdb"))
                                   (into-array StandardOpenOption [StandardOpenOption/READ]))]
    (let [b (.order (ByteBuffer/allocate 8) (ByteOrder/nativeOrder))]
      (.read ch b 48)
      (.getLong b 0))))

(defn- meta-txnid
  "The larger txnid of the data file's two meta pages."
  [^File dir]
  (with-open [ch (FileChannel/open (.toPath (File. dir "data.mdb"))
                                   (into-array StandardOpenOption [StandardOpenOption/READ]))]
    (apply max (for [m [0 1]]
                 (let [b (.order (ByteBuffer/allocate 8) (ByteOrder/nativeOrder))]
                   (.read ch b (+ (* m 4096) 16 128))
                   (.getLong b 0))))))

(deftest lock-file-txnid-follows-commits
  (let [dir (File. (tu/temp-dir) "db")
        rnd (Random. 3)]
    (try
      (with-open [s (open-store dir "java" "wal")]
        (let [model (rc/contents 5 0.05)]
          (dotimes [i 4]
            (if (even? i)
              (random-writes! s model rnd 20)
              (replace-with! s model))
            (is (= (meta-txnid dir) (lock-txnid dir))))))
      (finally (tu/delete-tree (.getParentFile dir))))))

(deftest replace-grows-the-map
  (let [dir (File. (tu/temp-dir) "db")
        rnd (Random. 5)
        model (rc/contents 9 1)]
    (try
      (with-open [s (open-store dir "java" "wal" {"map-size" (bit-shift-left 64 10)})]
        (replace-with! s model)
        (with-open [r (.beginRead s)] (check-store r model rnd))
        (random-writes! s model rnd 200)
        (with-open [r (.beginRead s)] (check-store r model rnd)))
      (finally (tu/delete-tree (.getParentFile dir))))))

(deftest replace-refuses-unsorted-sources
  (let [dir (File. (tu/temp-dir) "db")]
    (try
      (with-open [s (open-store dir "java" "wal")]
        (let [model (rc/contents 4 0.05)
              before (rc/store-digest s)
              unsorted (reify ReadTxn
                         (cursor [_ db]
                           (let [ks (atom (if (= db SubDb/AVET) [[2] [1]] []))]
                             (reify Cursor
                               (first [_] (boolean (seq @ks)))
                               (next [_] (swap! ks rest) (boolean (seq @ks)))
                               (key [_] (ByteBuffer/wrap (byte-array (first @ks))))
                               (val [_] (ByteBuffer/allocate 0))
                               (close [_]))))
                         (get [_ _ _] nil)
                         (close [_]))]
          (replace-with! s model)
          (is (= :store/order (try (.replaceAll s unsorted)
                                   (catch ExceptionInfo e (:error (ex-data e))))))
          (is (= (rc/model-digest model) (rc/store-digest s)) "nothing committed")
          (is (not= before (rc/store-digest s)))))
      (finally (tu/delete-tree (.getParentFile dir))))))

;; ---- through the public API ------------------------------------------------

(def ^:private schema
  {:p/name {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :p/friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :p/age {:db/valueType :db.type/long :db/index true}
   :p/bio {:db/valueType :db.type/string}})

(defn- transact-all! [conn ^Random rnd n]
  (d/transact! conn [{:p/name "p0" :p/age 0}])
  (dotimes [i n]
    (d/transact! conn [{:p/name (str "p" (.nextInt rnd 50))
                        :p/age (.nextInt rnd 100)
                        :p/bio (apply str (repeat (.nextInt rnd 3000) (char (+ 97 (mod i 26)))))
                        :p/friend [[:p/name "p0"]]}])
    (when-let [age (and (zero? (mod i 5)) (:p/age (d/entity (d/db conn) [:p/name "p0"])))]
      (d/transact! conn [[:db/retract [:p/name "p0"] :p/age age]]))))

(defn- db-view [conn]
  (let [db (d/db conn)
        t (quot (d/basis-t db) 2)]
    {:indexes (into {} (for [i [:eavt :aevt :avet :vaet]] [i (vec (d/datoms db i))]))
     :history (vec (d/datoms (d/history db) :eavt))
     :as-of (vec (d/datoms (d/as-of db t) :eavt))
     :log (vec (d/tx-range (d/log conn) nil nil))
     :basis (d/basis-t db)}))

(deftest replace-through-the-api
  (let [dir (File. (tu/temp-dir) "db")]
    (try
      (with-open [mem (d/connect :mem {:schema schema})]
        (transact-all! mem (Random. 1) 60)
        (with-open [other (d/connect (.getPath dir) {:schema schema})]
          (transact-all! other (Random. 2) 10)) ; old contents, replaced below
        (with-open [s (LmdbStore/open (.toPath dir) {})
                    r (.beginRead (.store ^Conn mem))]
          (.replaceAll s r)
          (is (= 1 (.directReplaces s))))
        (with-open [conn (d/connect (.getPath dir) {:schema schema})]
          (is (= (db-view mem) (db-view conn)))
          (is (:ok? (d/verify conn)))
          (let [tx [{:p/name "new" :p/age 1 :p/friend [[:p/name "p1"]]}
                    {:db/id "datomic.tx" :db/txInstant (java.util.Date.)}]]
            (d/transact! mem tx)
            (d/transact! conn tx))
          (is (= (db-view mem) (db-view conn)))))
      (finally (tu/delete-tree (.getParentFile dir))))))

;; ---- a sub-database that is not a SubDb ----------------------------------------

(defn- raw-env
  "LMDB's own environment on `dir`, as another program would open it."
  ^org.lmdbjava.Env [^File dir]
  (-> (org.lmdbjava.Env/create)
      (.setMapSize (bit-shift-left 1 30))
      (.setMaxDbs 20)
      (.open dir (make-array org.lmdbjava.EnvFlags 0))))

(defn- foreign-key ^ByteBuffer []
  (.flip (.put (ByteBuffer/allocateDirect 3) (.getBytes "key"))))

(defn- put-foreign!
  "Another program's sub-database FOREIGN in the LMDB file of `dir`, holding \"key\" -> 7."
  [^File dir]
  (.mkdirs dir)
  (with-open [env (raw-env dir)]
    (let [^org.lmdbjava.Dbi dbi
          (.openDbi env "FOREIGN" ^"[Lorg.lmdbjava.DbiFlags;"
                    (into-array org.lmdbjava.DbiFlags [org.lmdbjava.DbiFlags/MDB_CREATE]))]
      (.put dbi (foreign-key) (.flip (.put (ByteBuffer/allocateDirect 1) (byte 7)))))))

(defn- foreign-value
  "The byte FOREIGN holds under \"key\" in the LMDB file of `dir`."
  [^File dir]
  (with-open [env (raw-env dir)]
    (let [^org.lmdbjava.Dbi dbi (.openDbi env "FOREIGN" ^"[Lorg.lmdbjava.DbiFlags;"
                                          (make-array org.lmdbjava.DbiFlags 0))]
      (with-open [^org.lmdbjava.Txn txn (.txnRead env)]
        (.get ^ByteBuffer (.get dbi txn (foreign-key)) 0)))))

(deftest foreign-sub-databases-take-the-generic-way
  (doseq [behind [false true]]
    (testing (str "write-behind " behind ": a main database naming a sub-database that is not a
  SubDb: replaceAll falls back to deletes and puts, which keep it (with write-behind, that
  fallback refused itself until stop 46: its write transaction waited for the write-behind's
  hold of the commits, which was its own thread's)")
      (let [dir (File. (tu/temp-dir) "db")
            rnd (Random. 23)
            model (rc/contents 31 0.05)]
        (try
          (put-foreign! dir)
          (with-open [s (open-store dir "java" (if behind "wal" "lmdb-sync") {"write-behind" behind})]
            (with-open [src (rc/mem-store model)
                        r (.beginRead src)]
              (.replaceAll s r))
            (is (zero? (.directReplaces s)))
            (with-open [r (.beginRead s)] (check-store r model rnd)))
          (is (= 7 (foreign-value dir)))
          (finally (tu/delete-tree (.getParentFile dir))))))))

(deftest a-staged-import-into-a-store-with-a-foreign-sub-database
  (testing "d/import! (staged, with write-behind: connect's defaults) into a database whose
  main database names a sub-database that is not datalith's (made there by another program
  before datalith's first open): its final write takes the generic way, and the foreign
  sub-database stays"
    (let [dir (File. (tu/temp-dir) "db")]
      (try
        (put-foreign! dir)
        (with-open [c (d/connect (.getPath dir) {:schema {:k/n {:db/valueType :db.type/long
                                                                 :db/cardinality :db.cardinality/one}}})]
          (let [r (d/import! c (for [i (range 3)] (vec (for [j (range 100)] {:k/n (+ (* 100 i) j)}))))]
            (is (= 3 (:transactions r)))
            (is (= 300 (count (d/datoms (d/db c) :aevt :k/n))))
            (is (zero? (.directReplaces ^LmdbStore (.store ^Conn c))) "the generic way")))
        (with-open [c (d/connect (.getPath dir))]
          (is (= 300 (count (d/datoms (d/db c) :aevt :k/n))) "reopened")
          (is (:ok? (d/verify c))))
        (is (= 7 (foreign-value dir)) "the foreign sub-database stays")
        (finally (tu/delete-tree (.getParentFile dir)))))))
