(ns datalith.lmdb-replace-child
  "Random store contents for the tests of Store.replaceAll (datalith.lmdb-replace-test,
  lmdb-replace-atomicity-test and lmdb-replace-pages-test), and their child JVM:

    java ... clojure.main -m datalith.lmdb-replace-child digest DIR COMMIT
    java ... clojure.main -m datalith.lmdb-replace-child replace DIR COMMIT SEED SCALE [pause]

  `digest` opens the store at DIR (option \"commit\" COMMIT), prints `digest D` (D the
  digest of every sub-database's entries, see `digest`) and exits. `replace` opens it,
  prints `ready`, builds (contents SEED SCALE) in a MemStore, prints `start`, replaces the
  store's contents with it (Store.replaceAll; inside Store.pauseSync with `pause`), prints
  `replaced` and waits to be killed (inside the pause, with `pause`); when replaceAll throws
  an ex-info, it prints `failed E` (E its :error) and exits.

    java ... clojure.main -m datalith.lmdb-replace-child lmdb-writer DIR

  `lmdb-writer` is a writer that knows only LMDB's own write lock (a datalith from before
  writer.lock, or another program): it opens DIR with lmdbjava alone and commits, i = 1, 2,
  ..., the key (child-key i) into EAVT and \"child\" = i into META, printing `put i` after
  each commit, until killed."
  (:require [clojure.string :as str]
            [datalith.child-jvm :as child])
  (:import (datalith.store Cursor LmdbStore MemStore ReadTxn Store SubDb WriteTxn)
           (java.nio ByteBuffer)
           (java.nio.file Path)
           (java.util Arrays Comparator Map Random TreeMap)
           (java.util.zip CRC32C)
           (org.lmdbjava Dbi DbiFlags Env EnvFlags PutFlags)))

(set! *warn-on-reflection* true)

(def ^Comparator unsigned
  (reify Comparator
    (compare [_ a b] (Arrays/compareUnsigned ^bytes a ^bytes b))))

(defn- random-bytes ^bytes [^Random rnd n]
  (let [b (byte-array n)] (.nextBytes rnd b) b))

(defn- long-key ^bytes [^long i]
  (.array (.putLong (ByteBuffer/allocate 8) i)))

(defn- fill
  "A TreeMap of n entries from (key-fn) and (val-fn)."
  [n key-fn val-fn]
  (let [m (TreeMap. unsigned)]
    (dotimes [_ n] (.put m (key-fn) (val-fn)))
    m))

(def node-max
  "LMDB's me_nodemax with pages of 4 KiB: a leaf node past it keeps its value on overflow pages."
  2038)

(defn db-contents
  "Random sorted entries for `db`, shaped so that every case of the page layout occurs: many
  small keys (datoms), keys of 1 to 511 bytes, long keys (several levels of branch pages), one
  key, none, about one page, values on either side of the overflow threshold, values of 0 bytes
  to 100 KB (LOG), and a few ASCII names (META)."
  [^Random rnd ^SubDb db scale]
  (let [n (fn [base] (max 1 (long (* base scale))))
        size (fn [lo hi] (+ lo (.nextInt rnd (inc (- hi lo)))))]
    (condp = db
      SubDb/EAVT (fill (n 6000) #(random-bytes rnd (size 20 40)) #(byte-array 0))
      SubDb/AEVT (fill (n 3000) #(random-bytes rnd (case (.nextInt rnd 10) 0 1 1 511 (size 1 511)))
                       #(random-bytes rnd (size 0 100)))
      SubDb/AVET (fill (n 2000) #(random-bytes rnd (size 400 511)) #(byte-array 0))
      SubDb/VAET (fill 1 #(random-bytes rnd 12) #(random-bytes rnd 3))
      SubDb/HEAVT (fill 0 nil nil)
      SubDb/HAEVT (fill 40 #(random-bytes rnd 50) #(random-bytes rnd 40))
      SubDb/HAVET (fill (n 500) #(random-bytes rnd (size 1 100))
                        #(byte-array (max 0 (+ (- node-max 8 (size 1 100)) (size -3 3)))))
      SubDb/HVAET (fill (.nextInt rnd 3) #(random-bytes rnd 8) #(byte-array 0))
      SubDb/LOG (let [m (TreeMap. unsigned)]
                  (dotimes [i (n 300)]
                    (.put m (long-key (inc i))
                          (random-bytes rnd (case (.nextInt rnd 8)
                                              0 0
                                              1 (size 90000 100000)
                                              (size 1 20000)))))
                  m)
      SubDb/BLOBS (fill (n 200) #(random-bytes rnd 16) #(random-bytes rnd (size 0 10000)))
      SubDb/META (let [m (TreeMap. unsigned)]
                   (doseq [k ["basis-t" "format" "next-e" "next-t" "x"]]
                     (.put m (.getBytes ^String k "US-ASCII") (random-bytes rnd (size 0 16))))
                   m))))

(defn contents
  "{SubDb TreeMap<byte[], byte[]>}: random contents of every sub-database from `seed`;
  `scale` multiplies the larger ones' sizes."
  [seed scale]
  (let [rnd (Random. (long seed))]
    (into {} (for [db (SubDb/values)] [db (db-contents rnd db scale)]))))

(defn mem-store
  "A MemStore holding `model` ({SubDb TreeMap})."
  ^Store [model]
  (let [s (MemStore/open)]
    (with-open [w (.beginWrite s)]
      (doseq [[db ^Map m] model, [^bytes k ^bytes v] m]
        (.put w db (ByteBuffer/wrap k) (ByteBuffer/wrap v)))
      (.commit w))
    s))

(defn- bytes-of ^bytes [^ByteBuffer b]
  (let [a (byte-array (.remaining b))]
    (.get (.duplicate b) a)
    a))

(defn scan
  "[[key val] ...] (byte arrays) of `db` in `txn`, first to last."
  [^ReadTxn txn db]
  (with-open [c (.cursor txn db)]
    (loop [more (.first c), out (transient [])]
      (if more
        (let [e [(bytes-of (.key c)) (bytes-of (.val c))]]
          (recur (.next c) (conj! out e)))
        (persistent! out)))))

(defn digest
  "A crc32c of every sub-database's entries (key and value lengths and bytes) with their
  counts: equal for stores of equal contents."
  [entries-of]
  (let [crc (CRC32C.)
        counts (vec (for [db (SubDb/values)]
                      (let [es (entries-of db)]
                        (doseq [[^bytes k ^bytes v] es]
                          (.update crc (.array (.putInt (ByteBuffer/allocate 4) (alength k))))
                          (.update crc k)
                          (.update crc (.array (.putInt (ByteBuffer/allocate 4) (alength v))))
                          (.update crc v))
                        (count es))))]
    (str (.getValue crc) ":" (str/join "," counts))))

(defn model-digest [model]
  (digest (fn [db] (seq ^Map (model db)))))

(defn store-digest [^Store s]
  (with-open [r (.beginRead s)]
    (digest #(scan r %))))

(defn child-key
  "The EAVT key of an lmdb-writer's commit i: 0xFF 0xFF then i (8 bytes)."
  ^bytes [^long i]
  (.array (.putLong (.put (.put (ByteBuffer/allocate 10) (byte -1)) (byte -1)) i)))

(defn- lmdb-writer [dir]
  (let [^Env env (-> (Env/create)
                     (.setMapSize (bit-shift-left 1 30))
                     (.setMaxDbs (alength (SubDb/values)))
                     (.setMaxReaders 1024)
                     (.open (java.io.File. ^String dir)
                            (into-array EnvFlags [EnvFlags/MDB_NOTLS EnvFlags/MDB_NOSYNC])))
        no-flags (make-array DbiFlags 0)
        dbi (fn [^SubDb db] (.openDbi env (.name db) ^"[Lorg.lmdbjava.DbiFlags;" no-flags))
        ^Dbi eavt (dbi SubDb/EAVT)
        ^Dbi meta (dbi SubDb/META)
        direct (fn [^bytes b] (.flip (.put (ByteBuffer/allocateDirect (alength b)) b)))]
    (loop [i 1]
      (with-open [txn (.txnWrite env)]
        (.put eavt txn (direct (child-key i)) (direct (byte-array 0))
              (make-array PutFlags 0))
        (.put meta txn (direct (.getBytes "child" "US-ASCII")) (direct (long-key i))
              (make-array PutFlags 0))
        (.commit txn))
      (println "put" i)
      (flush)
      (recur (inc i)))))

(defn -main [mode dir commit & [seed scale pause]]
  (child/exit-with-parent!)
  (when (= mode "lmdb-writer")
    (lmdb-writer dir))
  (let [store (LmdbStore/open (Path/of ^String dir (make-array String 0)) {"commit" commit})
        line! (fn [s] (println s) (flush))]
    (case mode
      "digest" (do (line! (str "digest " (store-digest store)))
                   (.close store)
                   (System/exit 0))
      "replace" (let [_ (line! "ready")
                      source (mem-store (contents (parse-long seed) (parse-double scale)))]
                  (line! "start")
                  (try
                    (with-open [r (.beginRead source)]
                      (if (= pause "pause")
                        (with-open [_ (.pauseSync store)] ; killed inside the pause
                          (.replaceAll store r)
                          (line! "replaced")
                          (Thread/sleep Long/MAX_VALUE))
                        (do (.replaceAll store r)
                            (line! "replaced")
                            (Thread/sleep Long/MAX_VALUE))))
                    (catch clojure.lang.ExceptionInfo e
                      (line! (str "failed " (:error (ex-data e))))
                      (System/exit 2)))))))
