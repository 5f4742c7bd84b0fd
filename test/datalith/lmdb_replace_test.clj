(ns datalith.lmdb-replace-test
  "LmdbStore.replaceAll, which writes the new trees directly as pages and commits them with one
  meta page (LmdbDirectCommit, issue #17):
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
  - child JVMs killed after replaceAll returned keep the new contents; killed in the middle,
    they hold the old or the new contents, whole (:commit :wal and :lmdb-sync, each outside
    and inside a pause)
  - the old trees' pages go to the free list and later commits reuse them; old trees that do
    not read soundly are left behind; a sub-database that is not a SubDb makes replaceAll
    take the generic way, which keeps it
  - a source whose keys are out of order is refused, nothing committed
  - the safety review: a child killed the moment its replace is published (the lock file's
    txnid) keeps it after recovery; a reader older than a replace reads the old contents whole
    after many commits, which reuse the old pages once it ends; a process committing through
    LMDB's own write lock alone waits for a replace and its later commits stay
  - a free list whose tree has branch pages is written back in key order"
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [datalith.child-jvm :as child]
            [datalith.core :as d]
            [datalith.lmdb-file :as f]
            [datalith.lmdb-replace-child :as rc]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.conn Conn)
           (datalith.store Cursor LayeredStore LmdbBackup LmdbStore ReadTxn Store SubDb WriteTxn)
           (java.io File)
           (java.nio ByteBuffer ByteOrder)
           (java.nio.channels FileChannel)
           (java.nio.file StandardOpenOption)
           (java.util Arrays List Map$Entry Random TreeMap)
           (java.util.concurrent LinkedBlockingQueue TimeUnit)))

(set! *warn-on-reflection* true)

(defn- open-store
  "A store without write-behind: these tests read the pages of LMDB's file after each commit."
  ^LmdbStore [^File dir reader commit & [opts]]
  (LmdbStore/open (.toPath dir) (merge {"page-reader" reader "commit" commit
                                        "map-size" (bit-shift-left 1 30) "write-behind" false}
                                       opts)))

(defn- bytes-of ^bytes [^ByteBuffer b]
  (let [a (byte-array (.remaining b))]
    (.get (.duplicate b) a)
    a))

(defn- entries
  "[[key val] ...] of a model's TreeMap."
  [^TreeMap m]
  (mapv (fn [^Map$Entry e] [(.getKey e) (.getValue e)]) m))

(defn- same-entries?
  [xs ys]
  (and (= (count xs) (count ys))
       (every? true? (map (fn [[^bytes k1 ^bytes v1] [^bytes k2 ^bytes v2]]
                            (and (Arrays/equals k1 k2) (Arrays/equals v1 v2)))
                          xs ys))))

(defn- scan-back [^ReadTxn txn db]
  (with-open [c (.cursor txn db)]
    (loop [more (.last c), out (transient [])]
      (if more
        (let [out (conj! out [(bytes-of (.key c)) (bytes-of (.val c))])]
          (recur (.prev c) out))
        (persistent! out)))))

(defn- at? [^Cursor c ^Map$Entry e]
  (and (Arrays/equals ^bytes (.getKey e) (bytes-of (.key c)))
       (Arrays/equals ^bytes (.getValue e) (bytes-of (.val c)))))

(defn- probe
  "A key to seek: a stored one, one just past it, one just before, or random bytes."
  ^bytes [^Random rnd keys]
  (if (or (empty? keys) (zero? (.nextInt rnd 4)))
    (let [b (byte-array (inc (.nextInt rnd 20)))] (.nextBytes rnd b) b)
    (let [^bytes k (nth keys (.nextInt rnd (count keys)))]
      (case (.nextInt rnd 3)
        0 k
        1 (Arrays/copyOf k (inc (alength k)))
        (if (> (alength k) 1) (Arrays/copyOf k (dec (alength k))) k)))))

(defn- check-store
  "Every cursor op (first, last, next, prev, seek) and get of `txn` gives `model`'s entries."
  [^ReadTxn txn model ^Random rnd]
  (doseq [db (SubDb/values)]
    (testing (str db)
      (let [^TreeMap m (model db)
            es (entries m)
            keys (mapv first es)]
        (is (same-entries? es (rc/scan txn db)) "first/next")
        (is (same-entries? (rseq es) (scan-back txn db)) "last/prev")
        (with-open [c (.cursor txn db)]
          (dotimes [_ 60]
            (let [p (probe rnd keys)
                  e (.ceilingEntry m p)
                  found (.seek c (ByteBuffer/wrap p))]
              (is (= (some? e) found) "seek")
              (when (and e found)
                (is (at? c e) "seek")
                (let [nx (.higherEntry m (.getKey e))]
                  (is (= (some? nx) (.next c)) "next after seek")
                  (when nx
                    (is (at? c nx) "next after seek")
                    (is (.prev c))
                    (is (at? c e) "prev after next")))))))
        (dotimes [_ 60]
          (let [p (probe rnd keys)
                v (.get txn db (ByteBuffer/wrap p))
                expected (.get m p)]
            (is (if expected (Arrays/equals ^bytes expected (bytes-of v)) (nil? v)) "get")))))))

(defn- cursor-source
  "`txn` read through cursors that are not a MemStore's: replaceAll takes its generic way of
  reading a source (key and value buffers, copied) rather than a MemStore's leaves."
  ^ReadTxn [^ReadTxn txn]
  (reify ReadTxn
    (cursor [_ db]
      (let [^Cursor c (.cursor txn db)]
        (reify Cursor
          (seek [_ k] (.seek c k))
          (first [_] (.first c))
          (last [_] (.last c))
          (next [_] (.next c))
          (prev [_] (.prev c))
          (key [_] (.key c))
          (val [_] (.val c))
          (close [_] (.close c)))))
    (get [_ db k] (.get txn db k))
    (close [_] (.close txn))))

(def ^:private mem-cursor (Class/forName "datalith.store.MemCursor"))

(defn- source-of
  "A read transaction of the MemStore `src`, as replaceAll reads it by way `way`: :leaves (its
  cursors are MemCursors: the B+trees' leaves are read) or :cursor (see cursor-source)."
  ^ReadTxn [^Store src way]
  (let [r (.beginRead src)
        source (if (= way :cursor) (cursor-source r) r)]
    (with-open [c (.cursor source SubDb/EAVT)]
      (is (= (= way :leaves) (instance? mem-cursor c)) (str "the way " way " is taken")))
    source))

(defn- replace-with!
  "Replaces the contents of `s` with `model`'s, read by way `way` (:leaves by default, see
  source-of), and checks that the trees were written as pages (not through the generic way's
  puts)."
  ([s model] (replace-with! s model :leaves))
  ([^LmdbStore s model way]
   (let [before (.directReplaces s)]
     (with-open [src (rc/mem-store model)
                 r (source-of src way)]
       (.replaceAll s r))
     (is (= (inc before) (.directReplaces s)) "written as pages"))))

(defn- random-bytes ^bytes [^Random rnd n]
  (let [b (byte-array n)] (.nextBytes rnd b) b))

(defn- random-writes!
  "One write transaction of n random puts of new keys, overwrites and runs of deletes on
  `s`, applied to `model` too."
  [^Store s model ^Random rnd n]
  (let [dbs (SubDb/values)]
    (with-open [w (.beginWrite s)]
      (dotimes [_ n]
        (let [db (aget dbs (.nextInt rnd (alength dbs)))
              ^TreeMap m (model db)
              value #(random-bytes rnd (if (zero? (.nextInt rnd 10)) (.nextInt rnd 5000)
                                           (.nextInt rnd 50)))]
          (case (int (if (.isEmpty m) 0 (.nextInt rnd 3)))
            0 (let [k (random-bytes rnd (inc (.nextInt rnd 60))), v (value)]
                (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v))
                (.put m k v))
            1 (let [k (.ceilingKey m (random-bytes rnd 4))
                    k (or k (.firstKey m))
                    v (value)]
                (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v))
                (.put m k v))
            2 (let [from (or (.ceilingKey m (random-bytes rnd 4)) (.firstKey m))]
                (doseq [k (vec (take (inc (.nextInt rnd 60)) (.keySet (.tailMap m from))))]
                  (.delete w db (ByteBuffer/wrap k))
                  (.remove m k))))))
      (.commit w))))

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

(defn- stats-agree [^LmdbStore s model]
  (doseq [db (SubDb/values)]
    (is (= (count (model db)) (:entries (.pageStats s db))) (str db " entries"))))

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

;; ---- crashes ---------------------------------------------------------------

(defn- start-replace
  "A child replacing the store at dir with (contents seed 1); {:process :lines}."
  [^File dir commit seed pause]
  (let [p (child/start (apply child/command (.getParent dir) "datalith.lmdb-replace-child"
                              "replace" (.getPath dir) commit seed 1 (when pause ["pause"]))
                       (File. (.getParentFile dir) "replace.err"))]
    {:process p :lines (child/line-queue (.getInputStream p))}))

(defn- await-line [{:keys [^LinkedBlockingQueue lines]} line]
  (loop []
    (let [l (.poll lines 120 TimeUnit/SECONDS)]
      (cond (= l line) true
            (or (nil? l) (= l :eof)) false
            :else (recur)))))

(defn- kill! [{:keys [^Process process]}]
  (.destroyForcibly process)
  (.waitFor process))

(defn- reopened-digest
  "The digest of the store at dir after a reopen (recovering), with each page reader: both
  must agree, and the forward and backward scans of every sub-database too."
  [^File dir commit]
  (let [ds (for [reader ["java" "lmdb"]]
             (with-open [s (open-store dir reader commit)
                         r (.beginRead s)]
               (doseq [db (SubDb/values)]
                 (is (same-entries? (rseq (rc/scan r db)) (scan-back r db))))
               (rc/digest #(rc/scan r %))))]
    (is (apply = ds))
    (first ds)))

(deftest replace-survives-kill-9
  (doseq [[commit pause] [["wal" false] ["wal" true] ["lmdb-sync" false] ["lmdb-sync" true]]]
    (testing (str commit (when pause ", inside a pause"))
      (let [dir (File. (tu/temp-dir) "db")
            rnd (Random. 11)
            digests {11 (rc/model-digest (rc/contents 11 1))
                     12 (rc/model-digest (rc/contents 12 1))}]
        (try
          (with-open [s (open-store dir "java" commit)]
            (replace-with! s (rc/contents 11 1)))
          (let [took (let [c (start-replace dir commit 12 pause)
                           _ (is (await-line c "start"))
                           started (System/nanoTime)]
                       (testing "killed after replaceAll returned: the new contents"
                         (is (await-line c "replaced"))
                         (kill! c)
                         (is (= (digests 12) (reopened-digest dir commit))))
                       (max 1 (quot (- (System/nanoTime) started) 1000000)))]
           (testing "killed in the middle: the old contents or the new, whole"
            (loop [i 0, now 12, seen #{}]
              (if (< i 6)
                (let [target (if (= now 12) 11 12)
                      c (start-replace dir commit target pause)]
                  (is (await-line c "start"))
                  (Thread/sleep (long (.nextInt rnd (int (+ 5 (* 3 took))))))
                  (kill! c)
                  (let [d (reopened-digest dir commit)
                        got (some (fn [[seed dg]] (when (= dg d) seed)) digests)]
                    (is (contains? #{now target} got) (str "iteration " i))
                    (recur (inc i) (long (or got now)) (conj seen got))))
                (println "replace-survives-kill-9" commit pause "contents seen:" seen)))))
          (finally (tu/delete-tree (.getParentFile dir))))))))

(deftest another-process-reads-the-replaced-contents
  (testing "a store open in this process, its map smaller than what another process's replace
  wrote, grows its map and reads the new contents at its next read"
    (let [dir (File. (tu/temp-dir) "db")
          rnd (Random. 13)
          model (rc/contents 12 1)]
      (try
        (with-open [s (open-store dir "java" "wal" {"map-size" (bit-shift-left 64 10)})]
          (random-writes! s (rc/contents 1 0.01) rnd 10)
          (with-open [r (.beginRead s)] (rc/scan r SubDb/EAVT)) ; a reader of the old state
          (let [c (start-replace dir "wal" 12 false)]
            (try
              (is (await-line c "replaced"))
              (doseq [reader-thread [:this :another]]
                (testing (name reader-thread)
                  (let [check #(with-open [r (.beginRead s)] (check-store r model rnd))]
                    (if (= reader-thread :this)
                      (check)
                      (let [f (future (check))] @f)))))
              (finally (kill! c)))))
        (finally (tu/delete-tree (.getParentFile dir)))))))

(defn- last-meta
  "The first 160 bytes of the data file's last commit's meta page (that of the larger txnid),
  native order."
  ^ByteBuffer [^File dir]
  (with-open [ch (FileChannel/open (.toPath (File. dir "data.mdb"))
                                   (into-array StandardOpenOption [StandardOpenOption/READ]))]
    (let [metas (for [m [0 1]]
                  (let [b (.order (ByteBuffer/allocate 160) (ByteOrder/nativeOrder))]
                    (.read ch b (* m 4096))
                    b))]
      (last (sort-by #(.getLong ^ByteBuffer % 144) metas)))))

(defn- last-page
  "The last page of the data file's last commit."
  [^File dir]
  (.getLong (last-meta dir) 136))

(defn- write-model! [^Store s model parts]
  (doseq [part (range parts)]
    (with-open [w (.beginWrite s)]
      (doseq [[db ^TreeMap m] model
              [i [^bytes k ^bytes v]] (map-indexed vector (entries m))
              :when (= part (mod i parts))]
        (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v)))
      (.commit w))))

(deftest replaced-pages-are-reused
  (testing "the old trees' pages go to the free list, and later commits reuse them"
    (let [dir (File. (tu/temp-dir) "db")
          rnd (Random. 17)
          big (into {} (for [db (SubDb/values)]
                         [db (condp = db
                               SubDb/EAVT (#'rc/fill 20000 #(random-bytes rnd 30) #(byte-array 0))
                               SubDb/AVET (#'rc/fill 3000 #(random-bytes rnd 450) #(byte-array 0))
                               (TreeMap. rc/unsigned))]))
          small (rc/contents 21 0.01)]
      (try
        (with-open [s (open-store dir "java" "lmdb-sync")]
          (write-model! s big 1)
          (let [old-pages (last-page dir)]
            (replace-with! s small)
            (random-writes! s small rnd 1) ; the next commit: no reader older than the replace
            (let [after-replace (last-page dir)]
              (write-model! s big 1)
              (is (< (- (last-page dir) after-replace) (quot old-pages 2))
                  (str "pages: " old-pages " before the replace, " after-replace " after it, "
                       (last-page dir) " after writing as much again")))
            (doseq [[db ^TreeMap m] small] (.putAll ^TreeMap (big db) m))
            (with-open [r (.beginRead s)] (check-store r big rnd))))
        (finally (tu/delete-tree (.getParentFile dir)))))))

(defn- append-past-the-ends!
  "One write transaction of `n` new keys past the last of each sub-database of `model` (as a
  staged import's new entities land past EAVT's end), on `s` and in `model`."
  [^Store s model ^Random rnd n]
  (with-open [w (.beginWrite s)]
    (doseq [db (SubDb/values)
            :let [^TreeMap m (model db)]
            i (range n)]
      (let [k (byte-array (+ 3 (.nextInt rnd 40)) (unchecked-byte 0xff))
            _ (aset-byte k 2 (unchecked-byte i))
            v (random-bytes rnd (if (zero? (.nextInt rnd 8)) 3000 (.nextInt rnd 40)))]
        (when (or (.isEmpty m) (pos? (Arrays/compareUnsigned k ^bytes (.lastKey m))))
          (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v))
          (.put m k v))))
    (.commit w)))

(deftest a-replace-over-the-old-trees-keeps-the-pages-it-passes-whole
  (doseq [commit ["wal" "lmdb-sync"]]
    (testing (str "commit " commit ": the old trees under a sparse delta (puts, overwrites, runs
  of deletes) and keys past their ends, written back by replaceAll")
      (let [dir (File. (tu/temp-dir) "db")
            rnd (Random. 29)
            model (rc/contents 1 0.3)]
        (try
          (with-open [s (open-store dir "java" commit)]
            (write-model! s model 1)
            (let [taken (.takenPages s)
                  replaced (.directReplaces s)]
              (with-open [layered (LayeredStore/over s 0)]
                (random-writes! layered model rnd 20)
                (append-past-the-ends! layered model rnd 30)
                (with-open [r (.beginRead layered)]
                  (.replaceAll s r)))
              (is (= (inc replaced) (.directReplaces s)) "written as pages")
              (is (< (+ taken 100) (.takenPages s)) "most old leaf pages are kept"))
            (is (nil? (.pageAccountingProblem s)) "no page kept is in the free list")
            (with-open [r (.beginRead s)] (check-store r model rnd))
            (stats-agree s model)
            (testing "later commits reuse the freed pages, never the kept ones"
              (dotimes [_ 6] (random-writes! s model rnd 400))
              (with-open [r (.beginRead s)] (check-store r model rnd))
              (stats-agree s model)
              (is (nil? (.pageAccountingProblem s))))
            (testing "a second replace over trees that hold pages kept by the first"
              (let [taken (.takenPages s)]
                (with-open [layered (LayeredStore/over s 0)]
                  (random-writes! layered model rnd 20)
                  (append-past-the-ends! layered model rnd 30)
                  (with-open [r (.beginRead layered)]
                    (.replaceAll s r)))
                (is (< taken (.takenPages s))))
              (is (nil? (.pageAccountingProblem s)))
              (dotimes [_ 4] (random-writes! s model rnd 400))
              (with-open [r (.beginRead s)] (check-store r model rnd))
              (is (nil? (.pageAccountingProblem s)))))
          (testing "reopened, on LMDB's own page reader"
            (with-open [s2 (open-store dir "lmdb" commit)
                        r (.beginRead s2)]
              (check-store r model rnd)))
          (finally (tu/delete-tree (.getParentFile dir))))))))

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

(deftest damaged-old-trees-are-left-behind
  (testing "an old tree whose pages do not read soundly is replaced all the same; its pages
  are not freed"
    (let [dir (File. (tu/temp-dir) "db")
          rnd (Random. 29)
          old-model (rc/contents 41 0.3)
          model (rc/contents 42 0.3)
          eavt-keys (java.util.HashSet. ^java.util.Collection
                                        (map #(vec ^bytes %) (.keySet ^TreeMap (old-model SubDb/EAVT))))]
      (try
        (with-open [s (open-store dir "java" "lmdb-sync")]
          (replace-with! s old-model))
        (testing "a leaf page of EAVT says it is another page"
          (with-open [ch (FileChannel/open (.toPath (File. dir "data.mdb"))
                                           (into-array StandardOpenOption
                                                       [StandardOpenOption/READ
                                                        StandardOpenOption/WRITE]))]
            (let [b (.order (ByteBuffer/allocate 4096) (ByteOrder/nativeOrder))
                  leaf (first (for [n (range 2 (inc (last-page dir)))
                                    :let [_ (.clear b)
                                          _ (.read ch b (* n 4096))
                                          node (bit-and 0xFFFF (.getShort b 16))
                                          ksize (bit-and 0xFFFF (.getShort b (+ node 6)))]
                                    :when (and (= 2 (.getShort b 10)) (< (+ node 8 ksize) 4096)
                                               (.contains eavt-keys
                                                          (vec (Arrays/copyOfRange (.array b) (+ node 8)
                                                                                   (+ node 8 ksize)))))]
                                n))]
              (is leaf)
              (.write ch (.putLong (.order (ByteBuffer/allocate 8) (ByteOrder/nativeOrder)) 0 12345)
                      (long (* leaf 4096))))))
        (with-open [s (open-store dir "java" "lmdb-sync")]
          (replace-with! s model)
          (with-open [r (.beginRead s)] (check-store r model rnd))
          (random-writes! s model rnd 300)
          (with-open [r (.beginRead s)] (check-store r model rnd)))
        (finally (tu/delete-tree (.getParentFile dir)))))))

;; ---- the safety review (h-pagesrev) ------------------------------------------

(defn- published-txnid
  "The txnid the lock file publishes (mti_txnid, LmdbDirectCommit.LOCK_TXNID), read by pread:
  what every process's next read transaction reads."
  ^long [^FileChannel ch]
  (let [b (.order (ByteBuffer/allocate 8) (ByteOrder/nativeOrder))]
    (.read ch b 48)
    (.getLong b 0)))

(deftest a-published-replace-survives-a-kill
  (testing "a child's replace is killed the moment the lock file publishes it (every process's
  next read transaction sees the new contents from then on): a reopen keeps the new contents,
  whatever step after the publish the kill fell in"
    (doseq [commit ["wal" "lmdb-sync"]]
      (testing commit
        (let [dir (File. (tu/temp-dir) "db")
              digests {11 (rc/model-digest (rc/contents 11 1))
                       12 (rc/model-digest (rc/contents 12 1))}]
          (try
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s (rc/contents 11 1)))
            (doseq [[i target] (map-indexed vector [12 11 12 11])]
              (let [c (start-replace dir commit target false)]
                (is (await-line c "start"))
                (with-open [lock (FileChannel/open (.toPath (File. dir "lock.mdb"))
                                                   (into-array StandardOpenOption
                                                               [StandardOpenOption/READ]))]
                  ;; the wait is long: the replace's fsyncs wait for the whole machine's
                  ;; dirty pages, and a run beside I/O-heavy processes once took over 120 s
                  (let [t (published-txnid lock)
                        deadline (+ (System/nanoTime) (* 300 1000000000))]
                    (while (and (= t (published-txnid lock)) (< (System/nanoTime) deadline))
                      (Thread/onSpinWait))
                    (let [timed-out (= t (published-txnid lock))]
                      (kill! c)
                      (is (not timed-out) "the child published its replace within 300 s")
                      (is (= (inc t) (published-txnid lock)) "published before the kill"))))
                (is (= (digests target) (reopened-digest dir commit)) (str "iteration " i))))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

(deftest a-reader-older-than-a-replace-keeps-its-pages
  (testing "a read transaction begun before a replace reads the old contents whole after many
  ordinary commits that take free pages (the old trees' pages, listed under the replace's
  txnid, wait for it to end), and those commits reuse them once it ends"
    (doseq [commit ["wal" "lmdb-sync"], reader ["java" "lmdb"]]
      (testing (str commit ", page-reader " reader)
        (let [dir (File. (tu/temp-dir) "db")
              rnd (Random. 23)
              old (rc/contents 31 0.5)
              new (rc/contents 32 0.05)]
          (try
            (with-open [s (open-store dir reader commit)]
              (replace-with! s old)
              (random-writes! s old rnd 200) ; an ordinary commit: pages freed, then reused
              (let [before (.beginRead s)]
                (try
                  (replace-with! s new)
                  (dotimes [_ 60] (random-writes! s new rnd 100))
                  (check-store before old rnd)
                  (finally (.close before))))
              (with-open [r (.beginRead s)] (check-store r new rnd)))
            ;; reopened: with "wal", the pin of the replace's checkpoint holds its free pages
            ;; until the next checkpoint, as it holds those of the commits after one
            (with-open [s (open-store dir reader commit)]
              (let [grown (last-page dir)]
                (dotimes [_ 60] (random-writes! s new rnd 100))
                (is (< (- (last-page dir) grown) 200) "the old trees' pages reused after it")
                (with-open [r (.beginRead s)] (check-store r new rnd))))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

;; ---- a free list of several levels ---------------------------------------------

(defn- free-list-depth
  "The depth of the free list's tree in the data file's last commit (its MDB_db record's
  md_depth, at 24 + 6 past the meta page's header)."
  [^File dir]
  (.getShort (last-meta dir) 46))

(deftest a-free-list-of-several-levels-is-written-back-in-key-order
  (testing "a replace over a free list whose tree has branch pages (many commits while a
  reader held their freed pages; found by a replicated node's catch-up, which failed with
  :store/order): written as pages, the old entries kept in key order; later commits and a
  reopen read the new contents"
    (doseq [commit ["wal" "lmdb-sync"]]
      (testing commit
        (let [dir (File. (tu/temp-dir) "db")
              rnd (Random. 37)
              old (rc/contents 51 0.2)
              new (rc/contents 52 0.05)]
          (try
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s old)
              (let [reader (.beginRead s)] ; each commit's freed pages wait: one entry each
                (try
                  (dotimes [_ 400] (random-writes! s old rnd 2))
                  (finally (.close reader))))
              (is (<= 2 (free-list-depth dir)) "the free list has branch pages")
              (replace-with! s new)
              (with-open [r (.beginRead s)] (check-store r new rnd))
              (dotimes [_ 40] (random-writes! s new rnd 50))
              (with-open [r (.beginRead s)] (check-store r new rnd)))
            (with-open [s (open-store dir "lmdb" commit)
                        r (.beginRead s)]
              (check-store r new rnd))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

(deftest a-writer-of-lmdb-alone-waits-for-a-replace
  (testing "a process that commits through LMDB's own write lock alone (a datalith from before
  writer.lock, another program) while a replace runs: its commits wait for the replace, which
  holds that lock too; those after it stay, on the new trees, read soundly, and none before it"
    (let [dir (File. (tu/temp-dir) "db")
          model (rc/contents 12 1)
          lock-file (atom nil)]
      (try
        (with-open [s (open-store dir "java" "lmdb-sync")]
          (replace-with! s (rc/contents 11 0.2))
          (let [p (child/start (child/command (.getParent dir) "datalith.lmdb-replace-child"
                                              "lmdb-writer" (.getPath dir) "lmdb-sync")
                               (File. (.getParentFile dir) "writer.err"))
                c {:process p :lines (child/line-queue (.getInputStream p))}
                put (fn [] (let [l (.poll ^LinkedBlockingQueue (:lines c) 120 TimeUnit/SECONDS)]
                             (when (string? l) (parse-long (subs l 4)))))]
            (try
              (is (put) "the writer commits before the replace")
              (replace-with! s model)
              ;; closing a descriptor of lock.mdb drops the process's locks on it, s's
              ;; environment's among them: this one is closed after s is
              (let [^FileChannel lock (reset! lock-file
                                              (FileChannel/open (.toPath (File. dir "lock.mdb"))
                                                                (into-array StandardOpenOption
                                                                            [StandardOpenOption/READ])))]
                (let [replaced (published-txnid lock)
                      deadline (+ (System/nanoTime) (* 120 1000000000))]
                  (while (and (< (published-txnid lock) (+ replaced 3))
                              (< (System/nanoTime) deadline))
                    (Thread/sleep 1))
                  (kill! c)
                  (is (<= (+ replaced 3) (published-txnid lock)) "3 commits after the replace")))
              (with-open [r (.beginRead s)]
                (let [child? (fn [[^bytes k _]] (and (= 10 (alength k)) (= -1 (aget k 0))
                                                    (= -1 (aget k 1))))
                      eavt (rc/scan r SubDb/EAVT)
                      ids (set (map (fn [[^bytes k _]] (.getLong (ByteBuffer/wrap k) 2))
                                    (filter child? eavt)))
                      counter (some (fn [[^bytes k ^bytes v]]
                                      (when (= "child" (String. k "US-ASCII"))
                                        (.getLong (ByteBuffer/wrap v))))
                                    (rc/scan r SubDb/META))]
                  (is (some? counter))
                  (is (<= 3 (count ids)) "the writer's commits after the replace")
                  (is (= (set (range (apply min (or counter 0) ids) (inc (or counter 0)))) ids)
                      "the writer's keys since the replace, and none from before it")
                  (is (true? (same-entries? (entries (model SubDb/EAVT)) (remove child? eavt))))
                  (doseq [db (SubDb/values) :when (not (#{SubDb/EAVT SubDb/META} db))]
                    (is (true? (same-entries? (entries (model db)) (rc/scan r db))) (str db)))
                  (is (true? (same-entries?
                              (entries (model SubDb/META))
                              (remove (fn [[^bytes k _]] (= "child" (String. k "US-ASCII")))
                                      (rc/scan r SubDb/META)))))))
              (finally (kill! c)))))
        (is (some? (reopened-digest dir "lmdb-sync")) "reopened, read soundly both ways")
        (finally
          (some-> ^FileChannel @lock-file .close)
          (tu/delete-tree (.getParentFile dir)))))))

(deftest a-replace-that-cannot-write-its-pages-commits-nothing
  (testing "a child whose file writes fail past a size (RLIMIT_FSIZE, as a full disk fails
  them) while its replace writes the new pages: :store/io, nothing committed; the store reopens
  with the old contents, and a replace then writes over the pages left behind"
    (doseq [commit ["wal" "lmdb-sync"]]
      (testing commit
        (let [dir (File. (tu/temp-dir) "db")
              old (rc/contents 11 0.2)
              err (File. (.getParentFile dir) "replace.err")]
          (try
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s old))
            (let [limit-kb (+ 1024 (quot (.length (File. dir "data.mdb")) 1024))
                  cmd (str "ulimit -f " limit-kb " && exec "
                           (str/join " " (map #(str "'" % "'")
                                              (child/command (.getParent dir)
                                                             "datalith.lmdb-replace-child"
                                                             "replace" (.getPath dir) commit
                                                             12 1))))
                  p (child/start ["sh" "-c" cmd] err)
                  lines (child/line-queue (.getInputStream p))]
              (is (await-line {:lines lines} "start"))
              (is (.waitFor p 120 TimeUnit/SECONDS))
              (is (= ["failed :store/io"] (child/drain lines)) (slurp err)))
            (is (= (rc/model-digest old) (reopened-digest dir commit)) "the old contents")
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s (rc/contents 12 1)))
            (is (= (rc/model-digest (rc/contents 12 1)) (reopened-digest dir commit)))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

(deftest a-backup-during-a-replace-is-whole
  (testing "page-for-page backups (LMDB's copy takes its write lock while it copies the meta
  pages) taken over and over while replaces run: each opens with the old contents or the new,
  whole, never a meta page of a replace without its pages"
    (doseq [commit ["wal" "lmdb-sync"]]
      (testing commit
        (let [root (tu/temp-dir)
              dir (File. root "db")
              models {11 (rc/contents 11 0.3) 12 (rc/contents 12 0.3)}
              digests (into {} (for [[k m] models] [(rc/model-digest m) k]))]
          (try
            (with-open [s (open-store dir "java" commit)]
              (replace-with! s (models 11))
              (let [done (promise)
                    backups (future
                              (loop [i 0, out []]
                                (if (realized? done)
                                  out
                                  (let [d (File. root (str "backup" i))]
                                    (.mkdirs d)
                                    (LmdbBackup/copy s (.toPath d) false)
                                    (recur (inc i) (conj out d))))))]
                (try
                  (doseq [seed (take 10 (cycle [12 11]))]
                    (replace-with! s (models seed)))
                  (finally (deliver done true)))
                (is (pos? (count @backups)))
                (doseq [^File d @backups]
                  (let [got (try (with-open [b (LmdbStore/open (.toPath d)
                                                               {"commit" "lmdb-sync"})]
                                   (rc/store-digest b))
                                 (catch ExceptionInfo e (ex-message e)))]
                    (is (contains? digests got) (str (.getName d) ": " got))))))
            (finally (tu/delete-tree root))))))))

(deftest a-replace-without-the-log-survives-a-switch-to-it
  (testing "a store written through the log (its checkpoint left behind), replaced with
  \"lmdb-sync\" (inside a pause or not), then reopened with \"wal\": recovery keeps the replace
  (the replace retires the log's checkpoint), and commits after it stay"
    (doseq [pause [false true]]
      (testing (if pause "inside a pause" "outside a pause")
        (let [dir (File. (tu/temp-dir) "db")
              rnd (Random. 41)
              model (rc/contents 12 0.3)]
          (try
            (with-open [s (open-store dir "java" "wal")]
              (random-writes! s (rc/contents 11 0.1) rnd 50))
            (with-open [s (open-store dir "java" "lmdb-sync")]
              (if pause
                (with-open [_ (.pauseSync s)] (replace-with! s model))
                (replace-with! s model)))
            (is (= (rc/model-digest model) (reopened-digest dir "wal")))
            (with-open [s (open-store dir "java" "wal")]
              (random-writes! s model rnd 50))
            (is (= (rc/model-digest model) (reopened-digest dir "wal")))
            (finally (tu/delete-tree (.getParentFile dir)))))))))

(defn- field [^Class c ^String name obj]
  (.get (doto (.getDeclaredField c name) (.setAccessible true)) obj))

(deftest a-replace-whose-checkpoint-fails-is-seen-by-no-one
  (testing "through the log, the segment the replace's checkpoint goes to fails its writes
  (/dev/full: a full disk): replaceAll throws :store/io, and no reader, now or after a reopen,
  sees the new contents; commits go on after"
    (let [dir (File. (tu/temp-dir) "db")
          rnd (Random. 43)
          old (rc/contents 11 0.2)]
      (try
        (with-open [s (open-store dir "java" "wal")]
          (replace-with! s old)
          (random-writes! s old rnd 20) ; this process owns the log's last checkpoint
          (let [wal (field LmdbStore "wal" s)
                ^"[Ljava.nio.channels.FileChannel;" files (field (class wal) "files" wal)
                target (- 1 (long (field (class wal) "segment" wal)))
                kept (aget files target)]
            (aset files target (FileChannel/open (.toPath (File. "/dev/full"))
                                                 (into-array StandardOpenOption
                                                             [StandardOpenOption/READ
                                                              StandardOpenOption/WRITE])))
            (try
              (is (= :store/io
                     (try (with-open [src (rc/mem-store (rc/contents 12 0.2))
                                      r (.beginRead src)]
                            (.replaceAll s r))
                          nil
                          (catch ExceptionInfo e (:error (ex-data e))))))
              (is (= (rc/model-digest old) (rc/store-digest s)) "a reader sees the old contents")
              (finally
                (.close ^FileChannel (aget files target))
                (aset files target kept)))
            (random-writes! s old rnd 20)
            (is (= (rc/model-digest old) (rc/store-digest s)))))
        (is (= (rc/model-digest old) (reopened-digest dir "wal")) "reopened: the old contents")
        (finally (tu/delete-tree (.getParentFile dir)))))))
