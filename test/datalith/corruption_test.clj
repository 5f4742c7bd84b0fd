(ns datalith.corruption-test
  "Structural damage to an LMDB data file, row by row: a database is built,
  copied, and each copy damaged in one way (truncations, an empty file, zeroed
  meta, branch and leaf pages, branch nodes pointing past the map, past the file,
  at the meta pages, at themselves or elsewhere in the tree, nodes and pages with
  bad offsets, sizes and bounds). Every copy is then opened and read whole, both
  ways, in a child JVM (a regression would crash the JVM), once with the Java
  page reader and once with LMDB alone (:page-reader :lmdb), and each outcome is
  checked against the row's: reads the same data, reads other data (damage no
  page check can see), a :store/corrupt ex-info on a read, or a clear ex-info at
  connect that leaves the files as they were. A JVM crash (exit 134, an hs_err
  file) fails the row it happened on."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.java.shell :as sh]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.lmdb-file :as f]
            [datalith.test-util :as tu])
  (:import (datalith.store Cursor LmdbStore ReadTxn Store SubDb)
           (java.io File)
           (java.nio ByteBuffer)
           (java.nio.file Files StandardCopyOption)
           (java.security MessageDigest)
           (java.util Arrays)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------- the database

(def ^:private schema
  {:p/id {:db/valueType :db.type/long :db/cardinality :db.cardinality/one
          :db/unique :db.unique/identity}
   :p/name {:db/valueType :db.type/string :db/cardinality :db.cardinality/one}
   :p/friend {:db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
   :p/tags {:db/valueType :db.type/long :db/cardinality :db.cardinality/many}})

(defn- build!
  "3000 people in 7 transactions, each LMDB's own commit (no write-behind, which would
  write them back in one and lay the trees out otherwise): EAVT three levels deep (a root,
  4 branch pages, about 275 leaves), and the log's values on overflow pages. The rows'
  outcomes with :page-reader :lmdb (whose reads are LMDB's, unchecked) hold for this file."
  [^File dir]
  (with-open [conn (d/connect (.getPath dir) {:schema schema :write-behind false})]
    (doseq [batch (partition-all 500 (range 3000))]
      (d/transact! conn (vec (for [i batch]
                               {:p/id i :p/name (str "name-" i "-" (apply str (repeat (mod i 7) "x")))
                                :p/tags (hash-set (mod i 5) (+ 100 (mod i 11)))}))))
    (d/transact! conn (vec (for [i (range 0 3000 3)]
                             {:p/id i :p/friend [:p/id (mod (* 7 i) 3000)]})))))

;; ---------------------------------------------------------------- reading a copy (child JVM)

(defn- hash-pairs [pairs]
  (reduce (fn [h [^bytes k ^bytes v]]
            (unchecked-add (unchecked-multiply 31 h) (+ (Arrays/hashCode k) (* 7 (Arrays/hashCode v)))))
          17 pairs))

(defn- bytes-of ^bytes [^ByteBuffer b]
  (let [a (byte-array (.remaining b))] (.get b (.position b) a) a))

(defn- scan
  "Every [key val] of `db`, forward or backward."
  [^ReadTxn r db forward?]
  (with-open [c (.cursor r db)]
    (loop [ok (if forward? (.first c) (.last c)) acc (transient [])]
      (if ok
        (let [acc (conj! acc [(bytes-of (.key c)) (bytes-of (.val c))])]
          (recur (if forward? (.next c) (.prev c)) acc))
        (persistent! acc)))))

(defn- direct ^ByteBuffer [^bytes k]
  (.flip (.put (ByteBuffer/allocateDirect (alength k)) k)))

(defn- read-store
  "Each sub-database of the store in `dir` read whole both ways, and seeks to
  every 37th key, warmed first (Cursor.warm reads the pages of all of them):
  {name [count forward-hash backward-hash seeks-found]}."
  [dir mode]
  (with-open [^Store s (LmdbStore/open (.toPath (io/file dir)) {"page-reader" mode})
              r (.beginRead s)]
    (into (sorted-map)
          (for [^SubDb db (SubDb/values)]
            (let [fwd (scan r db true)
                  bwd (scan r db false)
                  seeks (with-open [^Cursor c (.cursor r db)]
                          (let [ks (mapv first (take-nth 37 fwd))]
                            (.warm c (into-array ByteBuffer (map direct ks)) (count ks)))
                          (count (for [[^bytes k] (take-nth 37 fwd)
                                       :when (and (.seek c (ByteBuffer/wrap k))
                                                  (Arrays/equals k (bytes-of (.key c))))]
                                   k)))]
              [(str db) [(count fwd) (hash-pairs fwd) (hash-pairs (rseq bwd)) seeks]])))))

(defn- read-db
  "The datoms of each index and a query, through datalith.core."
  [dir mode]
  (with-open [conn (d/connect dir {:page-reader (keyword mode)})]
    (let [db (d/db conn)]
      [(mapv #(hash (vec (d/datoms db %))) [:eavt :aevt :avet :vaet])
       (d/q '[:find (count ?e) . :where [?e :p/name]] db)])))

(defn- outcome-of
  "What reading the copy in `dir` did: [:read result] or [:error code message]."
  [f]
  (try [:read (f)]
       (catch clojure.lang.ExceptionInfo e
         [:error (:error (ex-data e)) (.getMessage e)])
       (catch Throwable t
         [:error (symbol (.getName (class t))) (str t)])))

(declare write-outcome)

(defn -main
  "The child JVM. `connect dir ...`: prints `CONNECT dir outcome` for a connect
  to each directory. `write dir ...`: prints `ROW dir outcome` of a write into each
  (write-outcome). `java|lmdb dir ...` (the page reader): prints one line
  `ROW dir {:open .. :store .. :db ..}` per copy as it is read."
  [mode & dirs]
  (doseq [dir dirs :when (= mode "write")]
    (println "ROW" dir (pr-str (write-outcome dir)))
    (flush))
  (doseq [dir dirs]
    (when (= mode "connect")
      (println "CONNECT" dir (pr-str (outcome-of #(with-open [conn (d/connect dir)]
                                                    (d/basis-t (d/db conn))))))
      (flush)))
  (doseq [dir dirs :when (not (#{"connect" "write"} mode))]
    (let [open (outcome-of #(.close (LmdbStore/open (.toPath (io/file dir)) {"page-reader" mode})))
          store (when (= :read (first open)) (outcome-of #(read-store dir mode)))
          db (when (= :read (first store)) (outcome-of #(read-db dir mode)))]
      (println "ROW" dir (pr-str {:open open :store store :db db}))
      (flush)))
  (shutdown-agents))

;; ---------------------------------------------------------------- damage

;; Each damage is a function of the copy's directory. EAVT is three levels deep:
;; `branch` is the second of its four mid-level pages, `leaf` its middle leaf.

(defn- eavt [dir] (f/tree dir (get (f/sub-db-roots dir) "EAVT")))
(defn- psize [dir] (:psize (f/last-meta dir)))
(defn- root [dir] (ffirst (eavt dir)))
(defn- branch [dir] (second (second (eavt dir))))
(defn- leaf [dir] (let [ls (last (eavt dir))] (nth ls (quot (count ls) 2))))
(defn- node-at [p i] (+ (:offset p) (:at (nth (:nodes p) i))))
(defn- pointer-at [p i] (+ (:offset p) 16 (* 2 i)))

(defn- cut [fraction] #(f/truncate! % (long (* fraction (f/size %)))))
(defn- cut-to [size] #(f/truncate! % size))

(defn- zero [page]
  #(let [n (psize %), pgno (if (number? page) page (:pgno (page %)))]
     (f/write-bytes! % (* pgno n) (byte-array n))))

(defn- log-overflow [dir]
  {:pgno (inc (:pgno (ffirst (f/tree dir (get (f/sub-db-roots dir) "LOG")))))})

(defn- last-meta-field [offset value-of]
  #(let [{:keys [number] :as m} (f/last-meta %)]
     (f/write-u64! % (+ (* number (psize %)) offset) (value-of m))))

(defn- child [pgno-of]
  #(let [b (branch %), pgno (pgno-of % b), at (node-at b 3)]
     (doseq [[i shift] [[0 0] [2 16] [4 32]]]
       (f/write-u16! % (+ at i) (bit-and (bit-shift-right pgno shift) 0xFFFF)))))

(defn- u16 [page offset-of value-of]
  #(let [p (page %)] (f/write-u16! % (offset-of p) (value-of p))))

(defn- free-entry
  "The free list's largest entry, of `ids` ids at least: {:page p :node n}, its count at
  (:data-at n), its ids after it."
  [dir ids]
  (let [{:keys [free-root psize]} (f/last-meta dir)
        p (f/page dir psize free-root)
        n (apply max-key :data-size (:nodes p))]
    (when-not (and (= f/P_LEAF (:flags p)) (zero? (:flags n)) (>= (:data-size n) (* 8 (inc ids))))
      (throw (ex-info (str "the free list is not one leaf page with a list of " ids " ids")
                      {:page p})))
    {:page p :node n}))

(defn- free-id-at
  "Where id `i` (from 1) of the free list's largest entry lies in the file."
  [dir i]
  (let [{:keys [page node]} (free-entry dir i)] (+ (:offset page) (:data-at node) (* 8 i))))

(defn- free-tail
  "Makes the last commit end `extra` pages past the file's end, and lists
  `listed` of those pages on the free list (in place of others on its largest
  list): LMDB leaves pages a transaction freed unwritten, so a file may end
  before its last page when the pages missing are free."
  [extra listed]
  (fn [dir]
    (let [{:keys [psize last-pg number]} (f/last-meta dir)]
      (free-entry dir (inc listed)) ; a list with more ids than those written
      (doseq [i (range listed)]
        (f/write-u64! dir (free-id-at dir (inc i)) (- (+ last-pg extra) i)))
      (f/write-u64! dir (+ (* number psize) 136) (+ last-pg extra)))))

(defn- free-list-loop
  "free-tail, with the free list's root page made a branch page whose every
  node points back at it."
  [dir]
  ((free-tail 3 3) dir)
  (let [{:keys [free-root psize]} (f/last-meta dir)
        p (f/page dir psize free-root)]
    (f/write-u16! dir (+ (:offset p) 10) f/P_BRANCH)
    (doseq [i (range (count (:nodes p)))
            [at shift] [[0 0] [2 16] [4 32]]]
      (f/write-u16! dir (+ (node-at p i) at) (bit-and (bit-shift-right free-root shift) 0xFFFF)))))

(defn- record-at
  "The address in the file of sub-database `name`'s MDB_db record, in the main
  database's leaf page: {pad u32, flags u16, depth u16, branch, leaf and overflow
  pages, entries, root u64}."
  [dir name]
  (let [{:keys [psize main-root]} (f/last-meta dir)
        p (f/page dir psize main-root)
        n (first (filter #(= name (String. ^bytes (:key %) "US-ASCII")) (:nodes p)))]
    (+ (:offset p) (:data-at n))))

(defn- eavt-root [pgno-of]
  #(f/write-u64! % (+ 40 (record-at % "EAVT")) (pgno-of %)))

(defn- eavt-depth [depth]
  #(f/write-u16! % (+ 6 (record-at % "EAVT")) depth))

(defn- log-value-page
  "Points the first overflow value of the LOG's first leaf at page `pgno-of`."
  [pgno-of]
  #(let [p (ffirst (f/tree % (get (f/sub-db-roots %) "LOG")))
         n (first (filter (fn [n] (= f/F_BIGDATA (:flags n))) (:nodes p)))]
     (f/write-u64! % (+ (:offset p) (:data-at n)) (pgno-of %))))

(defn- root-child [pgno-of]
  #(let [r (root %), at (node-at r 1), pgno (pgno-of %)]
     (doseq [[i shift] [[0 0] [2 16] [4 32]]]
       (f/write-u16! % (+ at i) (bit-and (bit-shift-right pgno shift) 0xFFFF)))))

(defn- main-leaf
  "The main database's page: the named sub-databases' records (one leaf)."
  [dir]
  (let [{:keys [psize main-root]} (f/last-meta dir)] (f/page dir psize main-root)))

(defn- older-meta-txnid [value-of]
  #(let [{:keys [number] :as m} (f/last-meta %)]
     (f/write-u64! % (+ (* (- 1 number) (psize %)) 144) (value-of m))))

(def ^:private either #{:corrupt :differs})

(def ^:private rows
  "[name damage java-outcome lmdb-outcome]: the outcome of reading the damaged
  copy with the Java page reader and with LMDB alone: :same (reads as the
  intact copy), :differs (reads, other data: damage no page check can see),
  :corrupt (a :store/corrupt ex-info on a read), :connect (a :store/corrupt
  ex-info at connect, the files left as they were); a set where the outcome
  depends on what the damaged node points at."
  [["intact"                              (fn [_])                      :same    :same]
   ;; truncated copies and an empty file: LMDB would map pages the file lacks
   ["truncated to 90%"                    (cut 0.9)                     :connect :connect]
   ["truncated to 50%"                    (cut 0.5)                     :connect :connect]
   ["truncated to 10%"                    (cut 0.1)                     :connect :connect]
   ["truncated mid-page"                  #(f/truncate! % (- (f/size %) 100)) :connect :connect]
   ["truncated to one page"               (cut-to 4096)                 :connect :connect]
   ["truncated to 100 bytes"              (cut-to 100)                  :connect :connect]
   ["empty file"                          (cut-to 0)                    :connect :connect]
   ;; meta pages
   ["meta page 0 zeroed"                  (zero 0)                      :connect :connect]
   ["meta page 1 zeroed"                  (zero 1)                      :connect :connect]
   ["last page past the file"             (last-meta-field 136 #(+ 10 (:last-pg %))) :connect :connect]
   ["last pages past the file, all free"  (free-tail 3 3)               :same    :same]
   ["last pages past the file, one not free" (free-tail 3 2)            :connect :connect]
   ["last pages past the file, free list loops" free-list-loop          :connect :connect]
   ["main root past the file"             (last-meta-field 128 #(+ 10 (:last-pg %))) :connect :connect]
   ["older meta's transaction past the last" (older-meta-txnid #(+ 0x1000000 (:txnid %))) :connect :connect]
   ;; lowered by 2, the last meta's transaction is the older's less 1: read as the commit before
   ["last meta's transaction lowered by 2" (last-meta-field 144 #(- (:txnid %) 2)) :differs :differs]
   ;; zeroed tree pages
   ["EAVT root page zeroed"               (zero root)                   :corrupt :corrupt]
   ["EAVT branch page zeroed"             (zero branch)                 :corrupt :corrupt]
   ["EAVT leaf page zeroed"               (zero leaf)                   :corrupt :corrupt]
   ["LOG overflow page zeroed"            (zero log-overflow)           :corrupt :differs]
   ;; a branch node pointing elsewhere
   ["child past the map"                  (child (fn [_ _] (bit-shift-left 1 40)))      :corrupt :corrupt]
   ["child past the file, in the map"     (child (fn [d _] (+ 100 (:last-pg (f/last-meta d))))) :corrupt :corrupt]
   ["child is meta page 0"                (child (fn [_ _] 0))          :corrupt :corrupt]
   ["child is meta page 1"                (child (fn [_ _] 1))          :corrupt :corrupt]
   ["child is its own branch page"        (child (fn [_ b] (:pgno b)))  :corrupt :corrupt]
   ["child is the root"                   (child (fn [d _] (:pgno (root d)))) :corrupt :corrupt]
   ;; LMDB alone: its steps from the leaf's keys to the next page's go back (since stop 43 a step
   ;; out of order is :store/corrupt; before, the scans read other data)
   ["child is a leaf elsewhere"           (child (fn [d _] (:pgno (first (last (eavt d)))))) :corrupt :corrupt]
   ["branch node offset past the page"    (u16 branch #(pointer-at % 3) (constantly 0xFFF0)) :corrupt :corrupt]
   ;; leaf nodes and page bounds
   ["leaf node offset past the page"      (u16 leaf #(pointer-at % 5) (constantly 0xFFF0)) :corrupt either]
   ["leaf node offset in the header"      (u16 leaf #(pointer-at % 5) (constantly 2)) :corrupt :corrupt]
   ["leaf key size 65535"                 (u16 leaf #(+ 6 (node-at % 5)) (constantly 0xFFFF)) :corrupt :corrupt]
   ["leaf key size 0"                     (u16 leaf #(+ 6 (node-at % 5)) (constantly 0)) :corrupt :corrupt]
   ["leaf data size 4 GiB"                #(do ((u16 leaf (fn [p] (node-at p 5)) (constantly 0xFFFF)) %)
                                               ((u16 leaf (fn [p] (+ 2 (node-at p 5))) (constantly 0xFFFF)) %))
    :corrupt :corrupt]
   ["leaf node on overflow pages, falsely" (u16 leaf #(+ 4 (node-at % 5)) (constantly 1)) :corrupt :corrupt]
   ["leaf lower 65535"                    (u16 leaf #(+ 12 (:offset %)) (constantly 0xFFFF)) :corrupt either]
   ["leaf lower past upper"               (u16 leaf #(+ 12 (:offset %)) #(+ 2 (:upper %))) :corrupt :corrupt]
   ["leaf upper 0"                        (u16 leaf #(+ 14 (:offset %)) (constantly 0)) :corrupt :same]
   ["leaf page number wrong"              #(f/write-u64! % (:offset (leaf %)) 5) :corrupt :same]
   ;; a key's first byte raised (a flipped byte of its entity id): the page's keys out of
   ;; order, which a scan stepping along the page meets (a scan seeking on from such a key came
   ;; back to it for ever: flip-test seed 371, stop 43)
   ["leaf keys out of order"              #(f/write-bytes! % (+ 8 (node-at (leaf %) 5))
                                                           (byte-array [(unchecked-byte 0x7F)]))
    :corrupt :corrupt]
   ;; the main database's page, which LMDB's open of the sub-databases reads in C (a node at
   ;; its end past the page crashed the JVM: flip-test seeds 7109 and 7909, stop 44)
   ["main database node offset past the page" (u16 main-leaf #(pointer-at % 5) (constantly 0xFFF0)) :connect :connect]
   ["main database key size 65535"        (u16 main-leaf #(+ 6 (node-at % 5)) (constantly 0xFFFF)) :connect :connect]
   ["main database node not a record"     (u16 main-leaf #(+ 4 (node-at % 5)) (constantly 0)) :connect :connect]
   ["main database page a branch"         (u16 main-leaf #(+ 10 (:offset %)) (constantly f/P_BRANCH)) :connect :connect]
   ["main database lower past upper"      (u16 main-leaf #(+ 12 (:offset %)) #(+ 2 (:upper %))) :connect :connect]
   ;; the trees' records, and the depth a descent must take
   ["EAVT root past the file"             (eavt-root #(+ 100 (:last-pg (f/last-meta %)))) :corrupt :corrupt]
   ["EAVT root is meta page 1"            (eavt-root (constantly 1))    :corrupt :corrupt]
   ["EAVT root is one of its leaves"      (eavt-root #(:pgno (leaf %))) :corrupt :differs]
   ["EAVT depth 1"                        (eavt-depth 1)                :corrupt :same]
   ["EAVT depth 33"                       (eavt-depth 33)               :corrupt :same]
   ["EAVT depth 0, a root"                (eavt-depth 0)                :corrupt :same]
   ["root child is a leaf a level early"  (root-child #(:pgno (leaf %))) :corrupt either]
   ;; a value's overflow pages
   ["LOG value pages past the file"       (log-value-page #(+ 100 (:last-pg (f/last-meta %)))) :corrupt :corrupt]
   ["LOG value pages are a leaf"          (log-value-page #(:pgno (leaf %))) :corrupt :differs]
   ["LOG value pages are meta page 0"     (log-value-page (constantly 0)) :corrupt :corrupt]])

;; ---------------------------------------------------------------- the parent

(defn- sha [^File file]
  (let [md (MessageDigest/getInstance "SHA-256")]
    (.digest md (Files/readAllBytes (.toPath file)))))

(defn- run-child
  "Runs -main in a child JVM over `dirs`; {:exit code :rows {dir outcome} :out text}."
  [mode dirs ^File work]
  (let [cmd (concat [(str (System/getProperty "java.home") "/bin/java")
                     "--add-opens=java.base/java.nio=ALL-UNNAMED"
                     "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
                     (str "-XX:ErrorFile=" work "/hs_err_%p.log")
                     "-Xss4m" "-cp" (System/getProperty "java.class.path")
                     "clojure.main" "-m" "datalith.corruption-test" mode]
                    dirs)
        p (-> (ProcessBuilder. ^java.util.List (vec cmd)) (.redirectErrorStream true) (.start))
        out (slurp (.getInputStream p))
        exited (.waitFor p 300 TimeUnit/SECONDS)]
    (when-not exited (.destroyForcibly p))
    {:exit (if exited (.exitValue p) :timeout)
     :out out
     :rows (into {} (for [line (str/split-lines out)
                          :when (str/starts-with? line "ROW ")
                          :let [[_ dir data] (re-matches #"ROW (\S+) (.*)" line)]]
                      [dir (edn/read-string data)]))}))

(defn- classify
  "The outcome of a row's reading, given the intact copy's."
  [{:keys [open store db]} intact]
  (let [corrupt? #(= [:error :store/corrupt] (subvec % 0 2))]
    (cond
      (corrupt? open) :connect
      (= :error (first open)) [:unexpected open]
      (corrupt? store) :corrupt
      (= :error (first store)) [:unexpected store]
      (corrupt? db) :corrupt
      (= :error (first db)) [:unexpected db]
      (and (= store (:store intact)) (= db (:db intact))) :same
      :else :differs)))

(defn- damaged-copies
  "Each row's copy of the intact database in `work`, damaged."
  [^File work ^File intact]
  (vec (map-indexed
        (fn [i [label damage java lmdb]]
          (let [dir (io/file work (str (.getName intact) "-row" i))]
            (.mkdirs dir)
            (Files/copy (.toPath (f/data-file intact)) (.toPath (f/data-file dir))
                        ^"[Ljava.nio.file.CopyOption;" (make-array java.nio.file.CopyOption 0))
            (damage (.getPath dir))
            {:label label :dir (.getPath dir) :expected {:java java :lmdb lmdb}
             :digest (vec (sha (f/data-file dir)))}))
        rows)))

(defn- outcomes [expected] (if (set? expected) expected #{expected}))

(defn- read-all
  "Reads the copies in `dirs` in child JVMs: {dir outcome}, :crash for a copy
  whose reading ended its JVM (the rows after it are read by the next one)."
  [mode dirs work]
  (loop [dirs dirs acc {}]
    (if (empty? dirs)
      acc
      (let [{:keys [exit rows out]} (run-child mode dirs work)
            [done [crashed & more]] (split-with #(contains? rows %) dirs)
            acc (merge acc rows)]
        (if crashed
          (do (println "child JVM exit" exit "reading" crashed ":\n" out)
              (recur more (assoc acc crashed :crash)))
          (do (is (= 0 exit) (str "the child JVM exited with " exit ":\n" out))
              acc))))))

(defn- crash-reports [^File work]
  (filter #(str/starts-with? (.getName ^File %) "hs_err") (.listFiles work)))

(defn- check-mode
  "Reads every copy in child JVMs with page reader `mode`, checking each row."
  [mode copies work]
  (let [rows (read-all mode (map :dir copies) work)
        intact (get rows (:dir (first copies)))]
    (is (empty? (crash-reports work)) (str "JVM crash reports: " (vec (crash-reports work))))
    (doseq [{:keys [label dir expected digest]} copies]
      (testing label
        (let [row (get rows dir)
              got (if (map? row) (classify row intact) row)]
          (is (contains? (outcomes (get expected (keyword mode))) got) (pr-str row))
          (when (= got :connect)
            (is (= digest (vec (sha (f/data-file dir)))) "the data file is left as it was")
            (is (= ["data.mdb"] (vec (.list (io/file dir)))) "no lock file is made")))))))

(defn- spread!
  "A copy in `work` of the store in `intact` with pages of `psize` bytes, as LMDB makes them
  on a system of that page size (16 KiB: Apple silicon)."
  ^File [^File work ^File intact psize]
  (let [dir (io/file work (str "intact" psize))]
    (f/spread-pages! (.getPath intact) (.getPath dir) psize)
    dir))

(deftest damaged-files-never-crash-the-jvm
  (let [work (tu/temp-dir)
        intact (io/file work "intact")]
    (try
      (.mkdirs intact)
      (build! intact)
      (let [copies (damaged-copies work intact)]
        (doseq [mode ["java" "lmdb"]]
          (testing (str "page reader " mode)
            (check-mode mode copies work)))
        (run! #(tu/delete-tree (io/file (:dir %))) copies))
      ;; the same damage to a store of pages of 16 KiB, read in Java as those of 4 KiB are (LMDB
      ;; alone read them before stop 46, in C: "leaf node offset past the page" ended the JVM).
      ;; The copy holds the last commit's pages alone, so the commit before it reads as zeros.
      (testing "pages of 16 KiB, page reader java"
        (check-mode "java" (for [c (damaged-copies work (spread! work intact 16384))]
                             (cond-> c (= "last meta's transaction lowered by 2" (:label c))
                                     (assoc-in [:expected :java] :connect)))
                    work))
      (finally (tu/delete-tree work)))))

;; ---------------------------------------------------------------- damage a write meets

;; LMDB's write transactions read the pages they descend, split and merge, and the free list
;; they take pages from, in C, as they find them: a damaged node there was a read out of
;; bounds that ended the JVM (flip-test seed 987, with writes, in mdb_page_split). So before a
;; store's first write every page of the last commit's trees and its free list is read as
;; those writes read it (LmdbPagesCheck); a store where that fails refuses the
;; write, writes nothing, and verify names it (check :pages). The rows are damage a write can
;; meet anywhere: not only on its own path (a merge reads a neighbour, the free list any page).

(defn- free-ids
  "Rewrites the free list's largest entry with `ids-of` of (dir, its ids), count and all."
  [ids-of]
  (fn [dir]
    (let [{:keys [page node]} (free-entry dir 2)
          at (+ (:offset page) (:data-at node))
          b (f/read-bytes dir at (:data-size node))
          ids (vec (for [i (range 1 (inc (.getLong b 0)))] (.getLong b (int (* 8 i)))))]
      (doseq [[i id] (map-indexed vector (ids-of dir ids))]
        (f/write-u64! dir (+ at (* 8 i)) id)))))

(def ^:private write-rows
  "[name damage]: each copy must refuse a write with :store/corrupt, leave the data file as it
  was, and verify must name the damage; the intact copy writes."
  [["intact"                              (fn [_])]
   ["free list names a page in use"       (free-ids (fn [d ids] (into [(count ids) (:pgno (leaf d))]
                                                                      (rest ids))))]
   ["free list count past its ids"        (free-ids (fn [_ ids] [(+ 5 (count ids))]))]
   ["free list ids out of order"          (free-ids (fn [_ [a b & more]] (into [(+ 2 (count more)) b a] more)))]
   ["free list id past the last page"     #(f/write-u64! % (free-id-at % 1) (+ 100 (:last-pg (f/last-meta %))))]
   ["leaf flagged as a write's copy"      (u16 leaf #(+ 10 (:offset %)) (constantly 0x12))]
   ["leaf node flagged as duplicates"     (u16 leaf #(+ 4 (node-at % 5)) (constantly 4))]
   ["leaf data size past the page"        (u16 leaf #(+ 2 (node-at % 5)) (constantly 0x10))]
   ["leaf key size 65535"                 (u16 leaf #(+ 6 (node-at % 5)) (constantly 0xFFFF))]
   ["branch lower past upper"             (u16 branch #(+ 12 (:offset %)) #(+ 2 (:upper %)))]
   ["LOG overflow run one page short"     #(let [n (:pgno (log-overflow %))]
                                             (f/write-bytes! % (+ 12 (* n (psize %)))
                                                             (byte-array [0 0 0 0])))]])

(defn- write-outcome
  "The child's write into the copy in `dir`: connect, transact a person, then verify."
  [dir]
  (let [write (outcome-of #(with-open [conn (d/connect dir)]
                              (d/transact! conn [{:p/id 5000 :p/name "written"}])
                              (:p/name (d/pull (d/db conn) [:p/name] [:p/id 5000]))))
        report (outcome-of #(d/verify dir))]
    {:write write
     :verify (if (= :read (first report))
               (let [r (second report)]
                 {:ok? (:ok? r) :pages (get-in r [:checks :pages])
                  :problems (set (map (juxt :index :problem) (:problems r)))})
               report)}))

(defn- check-writes
  "Damages a copy of the store in `intact` by each of the write rows, writes into each in a
  child JVM and checks the outcome."
  [^File work ^File intact]
  (let [copies (vec (map-indexed
                     (fn [i [label damage]]
                       (let [dir (io/file work (str (.getName intact) "-write" i))]
                         (.mkdirs dir)
                         (io/copy (f/data-file intact) (f/data-file dir))
                         (damage (.getPath dir))
                         {:label label :dir (.getPath dir)
                          :digest (vec (sha (f/data-file dir)))}))
                     write-rows))
        {:keys [exit out rows]} (run-child "write" (map :dir copies) work)]
    (is (= 0 exit) out)
    (is (empty? (crash-reports work)) (str "JVM crash reports: " (vec (crash-reports work))))
    (doseq [{:keys [label dir digest]} copies
            :let [{:keys [write verify] :as row} (get rows dir)]]
      (testing label
        (if (= "intact" label)
          (do (is (= [:read "written"] write) (pr-str row))
              (is (= {:ok? true :pages {:problems 0}} (dissoc verify :problems)) (pr-str row)))
          (do (is (= :store/corrupt (second write)) (pr-str row))
              (is (re-find #"LMDB's writes" (str (nth write 2 nil))) (pr-str row))
              (is (= digest (vec (sha (f/data-file dir)))) "nothing was written")
              (is (contains? (:problems verify) [:pages :unsound]) (pr-str row))))))
    (run! #(tu/delete-tree (io/file (:dir %))) copies)))

(deftest damage-a-write-meets-refuses-the-write
  (let [work (tu/temp-dir)
        intact (io/file work "intact")]
    (try
      (.mkdirs intact)
      (build! intact)
      (check-writes work intact)
      ;; pages of 16 KiB: the check before writes walked pages of 4 KiB alone before stop 46
      (testing "pages of 16 KiB"
        (check-writes work (spread! work intact 16384)))
      (finally (tu/delete-tree work)))))

;; ---------------------------------------------------------------- a full disk at connect

(defn- fill!
  "Writes a file in `dir` until its file system is full."
  [^File dir]
  (with-open [out (java.io.FileOutputStream. (io/file dir "filler"))]
    (try (while true (.write out (byte-array 4096)))
         (catch java.io.IOException _))))

(deftest a-full-disk-at-connect-is-an-error
  ;; LMDB sizes its lock file with ftruncate and writes it through a map: on a
  ;; full disk that write was a SIGBUS. Needs a small file system of its own: a
  ;; tmpfs of 1 MiB, mounted when this runs as root with the right to mount.
  (let [work (tu/temp-dir)
        fs (io/file work "fs")]
    (.mkdirs fs)
    (try
      (if-not (zero? (:exit (sh/sh "mount" "-t" "tmpfs" "-o" "size=1m" "tmpfs" (.getPath fs))))
        (println "a-full-disk-at-connect-is-an-error: cannot mount a tmpfs here, not run")
        (try
          (let [db (io/file fs "db")
                fresh (io/file fs "fresh")]
            (with-open [conn (d/connect (.getPath db) {:schema schema})]
              (d/transact! conn [{:p/id 1 :p/name "one"}]))
            (.delete (io/file db "lock.mdb")) ; as after a copy, or a reboot that cleared it
            (let [digest (vec (sha (f/data-file db)))]
              (fill! fs)
              (let [{:keys [exit out]} (run-child "connect" [(.getPath db) (.getPath fresh)] work)
                    outcome (into {} (for [[_ dir data] (re-seq #"CONNECT (\S+) (.*)" out)]
                                       [dir (edn/read-string data)]))]
                (is (= 0 exit) out)
                (is (empty? (crash-reports work)))
                (testing "an existing database"
                  (is (= :store/io (second (outcome (.getPath db)))) out)
                  (is (= digest (vec (sha (f/data-file db)))) "the data file is left as it was")
                  (is (not (.exists (io/file db "lock.mdb"))) "no lock file is left"))
                (testing "a new database"
                  (is (= :store/io (second (outcome (.getPath fresh)))) out)
                  (is (empty? (.list fresh)) "no file is left")))
              (.delete (io/file fs "filler"))
              (testing "with room again, the database opens as it was"
                (with-open [conn (d/connect (.getPath db))]
                  (is (= "one" (:p/name (d/pull (d/db conn) [:p/name] [:p/id 1]))))))))
          (finally (sh/sh "umount" (.getPath fs)))))
      (finally (tu/delete-tree work)))))

(deftest a-store-that-lost-its-t-is-refused-not-bootstrapped-over
  ;; a store whose META t is gone (damage the page checks cannot see: a flipped key byte) but
  ;; that holds data is damaged: connect must not take it for a new database and write a
  ;; bootstrap into it (t back to 0 over the old datoms, and LMDB's own writes into damaged
  ;; pages, which a flip test once saw crash the JVM)
  (doseq [opts [{} {:write-behind true}]]
    (let [dir (tu/temp-dir)
          t-key (doto (ByteBuffer/allocateDirect 1) (.put (byte (int \t))) (.flip))]
      (try
        (with-open [c (d/connect (.getPath dir) opts)]
          (d/transact! c [{:db/doc "before the damage"}]))
        (with-open [^Store s (LmdbStore/open (.toPath dir) {})]
          (with-open [w (.beginWrite s)]
            (.delete w SubDb/META t-key)
            (.commit w)))
        (let [e (try (d/connect (.getPath dir) opts) nil
                     (catch clojure.lang.ExceptionInfo e e))]
          (is (= :store/corrupt (:error (ex-data e))) (pr-str opts e)))
        (with-open [^Store s (LmdbStore/open (.toPath dir) {})
                    ^ReadTxn r (.beginRead s)]
          (is (nil? (.get r SubDb/META t-key)) "nothing was written: t still missing")
          (with-open [^Cursor c (.cursor r SubDb/EAVT)]
            (is (.first c) "the datoms are still there")))
        (finally (tu/delete-tree dir))))))
