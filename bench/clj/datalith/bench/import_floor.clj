(ns datalith.bench.import-floor
  "The floors under bulk import (issue #17): the CPU that writing index keys
  costs with no transactor at all. Makes the keys of N datoms shaped like the
  tracker's (8 entities' worth of attributes per entity, inline long values),
  sorts each chunk's keys, and writes them through the store's own write path
  (LmdbStore's WriteTxn: WriteLog, then LmdbReplay in key order) in chunks of
  `--chunk` datoms, each chunk one commit, with fsync paused, as import! does.
  One run a SubDb (each index alone into an empty store), then all four
  together. Prints this thread's CPU per key and the keys/s that CPU allows.

    lein with-profile +bench run -m datalith.bench.import-floor [--datoms N] [--chunk C]

  With --replace, instead: the keys of N datoms in :eavt :aevt :avet-rand :vaet-rand written
  into an empty store in one commit, by LmdbStore.replaceAll (trees written as pages) and by
  Store.replaceAll's generic way (one write transaction of puts), from a MemStore, interleaved `--reps` times
  (default 2); prints CPU per key, keys/s and the data file's MB/s.

    lein with-profile +bench run -m datalith.bench.import-floor --replace [--datoms N] [--reps R]"
  (:require [datalith.bench.system :refer [delete-tree]])
  (:import (datalith.store LmdbStore MemStore Store SubDb WriteTxn)
           (org.lmdbjava ByteBufferProxy Cursor Dbi DbiFlags Env EnvFlags PutFlags Txn)
           (java.io File)
           (java.lang.management ManagementFactory)
           (java.nio ByteBuffer)
           (java.util Arrays)))

(set! *warn-on-reflection* true)

(defn- cpu-ns ^long []
  (.getCurrentThreadCpuTime (ManagementFactory/getThreadMXBean)))

(def ^:private empty-val (.asReadOnlyBuffer (ByteBuffer/allocateDirect 0)))

(defn- key-of
  "The key of datom i in index `db`, as bytes: e = i/8, a = 10 + i%8, v an
  inline long (9 bytes, tag first), tx the chunk's. In :eavt, :aevt, :avet and
  :vaet every key goes past the index's end (v grows with i); in :avet-rand and
  :vaet-rand v is one of 2,000 (as the tracker's refs to its users), so that
  each chunk's keys land all over the index."
  ^bytes [db ^long i ^long tx]
  (let [e (+ 1000 (quot i 8))
        a (+ 10 (rem i 8))
        v (if (#{:avet-rand :vaet-rand} db)
            (+ 1000 (Math/floorMod (unchecked-multiply i -7046029254386353131) 2000))
            (* 7919 i))
        b (ByteBuffer/allocate 33)
        v! (fn [^ByteBuffer b] (.put b (byte 3)) (.putLong b v))]
    (case db
      :eavt (do (.putLong b e) (.putLong b a) (v! b) (.putLong b tx))
      :aevt (do (.putLong b a) (.putLong b e) (v! b) (.putLong b tx))
      (:avet :avet-rand) (do (.putLong b a) (v! b) (.putLong b e) (.putLong b tx))
      (:vaet :vaet-rand) (do (.putLong b v) (.putLong b a) (.putLong b e) (.putLong b tx)))
    (.array b)))

(defn- sorted-keys
  "[db keys] for each index of `idx`: the keys of datoms start..end-1 of chunk
  `tx`, sorted as the store orders them (unsigned bytes)."
  [idx key-of start end tx]
  (vec (for [db idx]
         (let [ks (object-array (for [i (range start end)] (key-of db i tx)))]
           (Arrays/sort ks ^java.util.Comparator (fn [^bytes a ^bytes b]
                                                   (Arrays/compareUnsigned a b)))
           [db ks]))))

(def ^:private subdbs {:eavt SubDb/EAVT :aevt SubDb/AEVT :avet SubDb/AVET :vaet SubDb/VAET
                       :avet-rand SubDb/HAVET :vaet-rand SubDb/HVAET})

(defn- run-one
  "Writes the keys of `n` datoms into the indexes `idx` of a fresh store, `chunk`
  datoms a commit; returns [keys cpu-ns]."
  [dir idx ^long n ^long chunk]
  (delete-tree dir)
  (let [^Store store (LmdbStore/open (.toPath ^File dir) {"map-size" (long (* 4 1024 1024 1024))})
        kb (ByteBuffer/allocateDirect 64)
        keys-made (volatile! 0)
        cpu (volatile! 0)]
    (try
      (with-open [_pause (.pauseSync store)]
        (doseq [start (range 0 n chunk)
                :let [end (min n (+ start chunk))
                      tx (+ 1000000 start)]]
          (let [per (sorted-keys idx key-of start end tx)
                c0 (cpu-ns)]
            (with-open [^WriteTxn wt (.beginWrite store)]
              (doseq [[db ks] per
                      ^bytes k ks]
                (.clear kb)
                (.put kb k)
                (.flip kb)
                (.put wt (subdbs db) kb empty-val))
              (.commit wt))
            (vswap! cpu + (- (cpu-ns) c0))
            (vswap! keys-made + (* (count idx) (- end start))))))
      (finally (.close store) (delete-tree dir)))
    [@keys-made @cpu]))

(defn- written
  "Bytes this process has written (/proc/self/io's wchar), or 0."
  ^long []
  (let [f (File. "/proc/self/io")]
    (if (.exists f)
      (or (some->> (String. (java.nio.file.Files/readAllBytes (.toPath f))) (re-find #"wchar: (\d+)") second parse-long) 0)
      0)))

(defn- run-raw
  "As run-one, through lmdbjava alone (no WriteLog, no LmdbReplay): one Dbi an
  index, cursor puts of the sorted keys, `flags` on every put (MDB_APPEND or
  none), the environment MDB_NOSYNC (and MDB_WRITEMAP when `writemap?`)."
  [dir idx n chunk append? writemap?]
  (delete-tree dir)
  (.mkdirs ^File dir)
  (let [env-flags (cond-> [EnvFlags/MDB_NOTLS EnvFlags/MDB_NOSYNC]
                    writemap? (conj EnvFlags/MDB_WRITEMAP))
        ^Env env (-> (Env/create ByteBufferProxy/PROXY_OPTIMAL)
                     (.setMapSize (* 4 1024 1024 1024))
                     (.setMaxDbs 8)
                     (.open ^File dir ^"[Lorg.lmdbjava.EnvFlags;" (into-array EnvFlags env-flags)))
        dbis (into {} (for [db idx]
                        [db (.openDbi env ^String (name db)
                                      ^"[Lorg.lmdbjava.DbiFlags;" (into-array DbiFlags [DbiFlags/MDB_CREATE]))]))
        put-flags (if append? (into-array PutFlags [PutFlags/MDB_APPEND]) (make-array PutFlags 0))
        kb (ByteBuffer/allocateDirect 64)
        vb (ByteBuffer/allocateDirect 0)
        keys-made (volatile! 0)
        cpu (volatile! 0)]
    (try
      (doseq [start (range 0 n chunk)
              :let [end (min n (+ start chunk))
                    tx (+ 1000000 start)]]
        (let [per (sorted-keys idx key-of start end tx)
              c0 (cpu-ns)]
          (with-open [^Txn txn (.txnWrite env)]
            (doseq [[db ks] per]
              (with-open [^Cursor c (.openCursor ^Dbi (dbis db) txn)]
                (doseq [^bytes k ks]
                  (.clear kb)
                  (.put kb k)
                  (.flip kb)
                  (.put c kb vb ^"[Lorg.lmdbjava.PutFlags;" put-flags))))
            (.commit txn))
          (vswap! cpu + (- (cpu-ns) c0))
          (vswap! keys-made + (* (count idx) (- end start)))))
      (finally (.close env) (delete-tree dir)))
    [@keys-made @cpu]))

(defn- mem-source
  "A MemStore holding `keys-by-db` ({SubDb sorted byte arrays}, empty values): the source
  replaceAll gets from an import staged in memory."
  ^Store [keys-by-db]
  (let [s (MemStore/open)
        kb (ByteBuffer/allocate 512)]
    (with-open [^WriteTxn w (.beginWrite s)]
      (doseq [[db ^objects ks] keys-by-db, ^bytes k ks]
        (.clear kb)
        (.put kb k)
        (.flip kb)
        (.put w db kb empty-val))
      (.commit w))
    s))

(defn- run-replace
  "Writes the keys of `n` datoms, in the indexes `idx` (all sorted up front, not timed), into a
  fresh store in one commit with fsync paused: `direct?` by LmdbStore.replaceAll (the trees
  written as pages), else as Store.replaceAll's generic way does into an empty store (one write
  transaction of every put, in key order). Returns [keys cpu-ns wall-ns data-file-bytes]."
  [dir idx ^long n direct?]
  (delete-tree dir)
  (let [^Store mem (mem-source (into {} (for [[db ks] (sorted-keys idx key-of 0 n 1000000)]
                                          [(subdbs db) ks])))
        src (.beginRead mem)
        ^LmdbStore store (LmdbStore/open (.toPath ^File dir)
                                         {"map-size" (long (* 4 1024 1024 1024))})]
    (try
      (with-open [_pause (.pauseSync store)]
        (let [c0 (cpu-ns)
              t0 (System/nanoTime)]
          (if direct?
            (.replaceAll store src)
            (with-open [^WriteTxn wt (.beginWrite store)]
              (doseq [db (SubDb/values)]
                (let [c (.cursor src db)]
                  (loop [more (.first c)]
                    (when more
                      (.put wt db (.key c) (.val c))
                      (recur (.next c))))))
              (.commit wt)))
          (let [cpu (- (cpu-ns) c0)
                wall (- (System/nanoTime) t0)]
            (when direct?
              (assert (= 1 (.directReplaces store)) "replaceAll fell back to the generic way"))
            [(* (count idx) n) cpu wall (.length (File. ^File dir "data.mdb"))])))
      (finally (.close src) (.close mem) (.close store) (delete-tree dir)))))

(defn- replace-main
  "--replace: replaceAll's direct pages against its generic way, runs interleaved."
  [dir n reps]
  (doseq [_ (range reps)
          [label direct?] [["replaceAll generic" false] ["replaceAll direct" true]]]
    (let [[k cpu wall bytes] (run-replace dir [:eavt :aevt :avet-rand :vaet-rand] n direct?)]
      (printf "%-20s %,10d keys: %6.3f s CPU, %5.0f ns/key, %,11.0f keys/s, %,11.0f datoms/s, %6.1f MB file, %6.1f MB/s (wall %.3f s)%n"
              label k (/ cpu 1e9) (/ (double cpu) k) (/ k (/ cpu 1e9)) (/ n (/ cpu 1e9))
              (/ bytes 1e6) (/ bytes 1e6 (/ wall 1e9)) (/ wall 1e9))
      (flush))))

(defn -main [& args]
  (let [replace? (some #{"--replace"} args)
        opts (merge {"--datoms" "1000000" "--chunk" "7500" "--dir" "target/import-floor"
                     "--reps" "2"}
                    (apply hash-map (remove #{"--replace"} args)))
        n (parse-long (opts "--datoms"))
        chunk (parse-long (opts "--chunk"))
        dir (File. ^String (opts "--dir"))]
    (when replace?
      (replace-main dir n (parse-long (opts "--reps")))
      (shutdown-agents)
      (System/exit 0))
    (doseq [[label f] (concat
                       (for [idx [[:eavt] [:aevt] [:avet] [:vaet] [:eavt :aevt :avet :vaet] [:avet-rand]
                                  [:vaet-rand] [:eavt :aevt :avet-rand :vaet-rand]]]
                         [(str "store " (pr-str idx)) #(run-one dir idx n chunk)])
                       (for [[label append? writemap?] [["raw" false false] ["raw append" true false]
                                                        ["raw writemap" false true]]
                             idx [[:eavt] [:eavt :aevt :avet :vaet] [:eavt :aevt :avet-rand :vaet-rand]]
                             :when (or (not append?) (= idx [:eavt]))]
                         [(str label " " (pr-str idx)) #(run-raw dir idx n chunk append? writemap?)]))]
      (let [w0 (written)
            [k cpu] (f)
            w (- (written) w0)]
        (printf "%-36s %,10d keys: %6.3f s CPU, %5.0f ns/key, %,11.0f keys/s, %,11.0f datoms/s, %,6d bytes written/key%n"
                label k (/ cpu 1e9) (/ (double cpu) k) (/ k (/ cpu 1e9))
                (/ n (/ cpu 1e9)) (quot w k))
        (flush)))
    (shutdown-agents)))
