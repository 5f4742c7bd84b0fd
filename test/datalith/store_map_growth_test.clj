(ns datalith.store-map-growth-test
  "LMDB's map growing under writes and reads (by itself, ahead of need once half used, through
  many growths with reads on many threads, past write-behind's bound, closing the reads that
  would wait for it), and the data file staying bounded under overwrites (on every store kind)."
  (:require [clojure.test :refer [deftest is are testing use-fixtures]]
            [datalith.heap-watch :as heap-watch]
            [datalith.store-support :refer [buf call-with-store commit! delete-tree kinds open-lmdb
                                            open-mem run-for scan str-of temp-dir]])
  (:import [datalith.store LmdbStore ReadTxn Store SubDb WriteTxn]
           [java.nio ByteBuffer]
           [java.nio.file Files Path]
           [java.util Arrays]))

(set! *warn-on-reflection* true)

;; The heap watch of store-model-test (see there): should anything fill the heap, it prints every
;; thread's stack and the heap's largest classes.
(use-fixtures :once (fn [f] (heap-watch/watch!) (f)))

;; ---- LMDB map growth and file size -----------------------------------------

(defn- data-file-size [^Path dir] (Files/size (.resolve dir "data.mdb")))

(defn- value-of [i size] (let [b (byte-array size)] (Arrays/fill b (unchecked-byte (mod i 251))) b))

(deftest map-grows-by-itself
  (doseq [kind kinds]
    (testing (name kind)
      (call-with-store
       kind {"map-size" (* 1024 1024) "sync" false}
       (fn [^Store s]
         (let [stop (atom false)
               reader (run-for stop #(with-open [r (.beginRead s)] (.get r SubDb/EAVT (buf "k0000000"))))
               batches (concat [[0 8000]] (map (fn [b] [(+ 8000 (* b 2000)) 2000]) (range 21)))]
           ;; 8 MB in the first transaction, 50 MB in all
           (doseq [[from n] batches]
             (with-open [w (.beginWrite s)]
               (doseq [i (range from (+ from n))]
                 (.put w SubDb/EAVT (buf (format "k%07d" i)) (ByteBuffer/wrap (value-of i 1000))))
               (.commit w)))
           (reset! stop true)
           (is (pos? @reader))
           (with-open [r (.beginRead s) c (.cursor r SubDb/EAVT)]
             (is (= 50000 (loop [ok (.first c) i 0]
                            (if-not ok
                              i
                              (do (when-not (and (= (format "k%07d" i) (str-of (.key c)))
                                                 (.equals (ByteBuffer/wrap (value-of i 1000)) (.val c)))
                                    (throw (ex-info "bad entry" {:i i})))
                                  (recur (.next c) (inc i))))))))))))))

(defn- put-values! [^WriteTxn w from n]
  (doseq [i (range from (+ from n))]
    (.put w SubDb/EAVT (buf (format "k%07d" i)) (ByteBuffer/wrap (value-of i 1000)))))

(defn- map-size-of
  "The LMDB store's map size in bytes (package-private, read by reflection)."
  [^LmdbStore s]
  (let [m (.getDeclaredMethod LmdbStore "mapSize" (make-array Class 0))]
    (.setAccessible m true)
    (.invoke m s (object-array 0))))

(deftest map-grows-ahead-of-need-once-half-used
  ;; 1000-byte values go three to a 4 KiB page: 100 take ~34 pages of the map's 256, 450 ~150
  (doseq [kind [:lmdb :lmdb-plain]]
    (testing (name kind)
      (call-with-store
       kind {"map-size" (* 1024 1024) "sync" false}
       (fn [^Store s]
         (are [from n size] (= size (do (with-open [w (.beginWrite s)]
                                          (put-values! w from n)
                                          (.commit w))
                                        (map-size-of s)))
           0   100 (* 1024 1024)       ; a quarter used: as it was
           100 350 (* 2 1024 1024)     ; more than half used: doubled by the commit
           450 10  (* 2 1024 1024))))))) ; a quarter of the grown map: as it was

(deftest reads-on-many-threads-through-many-growths
  ;; the map lock keeps every growth (a remap, which may move the map) out of every open read,
  ;; whichever thread, stripe or nesting it came by; a read of the moved map would crash the JVM
  ;; with the Java page reader, or read garbage
  (doseq [kind [:lmdb :lmdb-plain]]
    (testing (name kind)
      (call-with-store
       kind {"map-size" (* 1024 1024) "sync" false}
       (fn [^Store s]
         (let [written (atom 0)
               stop (atom false)
               bad (atom [])
               read-one (fn [^ReadTxn r ^java.util.Random rnd n] ; n: committed before r began
                          (let [n (long n)]
                            (when (pos? n)
                              (let [i (.nextInt rnd n)
                                    v (.get r SubDb/EAVT (buf (format "k%07d" i)))]
                                (when-not (and v (.equals (ByteBuffer/wrap (value-of i 1000)) v))
                                  (swap! bad conj i))))))
               readers (doall
                        (for [t (range 4)]
                          (let [rnd (java.util.Random. t)]
                            (run-for stop
                                     #(let [n @written]
                                        (with-open [r (.beginRead s)]
                                          (read-one r rnd n)
                                          (when (zero? (.nextInt rnd 4)) ; a read inside a read
                                            (with-open [r2 (.beginRead s)]
                                              (read-one r2 rnd n)))
                                          (read-one r rnd n)))))))]
           ;; 40 MB in 1,000-entry commits: the map grows from 1 MiB six times
           (dotimes [b 40]
             (with-open [w (.beginWrite s)]
               (put-values! w (* b 1000) 1000)
               (.commit w))
             (reset! written (* (inc b) 1000)))
           (Thread/sleep 100)
           (reset! stop true)
           (is (every? #(< 20 @%) readers) "every reader went on through the growths")
           (is (= [] (take 5 @bad)) "every read found its value")
           (is (<= (* 64 1024 1024) (map-size-of s)) "the map grew six times")))))))

(defn- commit-past-write-behinds-bound
  "Opens an LMDB store with write-behind and a map of 1 MiB in `dir`, and from another thread
  commits twice write-behind's bound in 1 MB commits, within a minute, while `hold` is
  :writer (that thread holds a read throughout) or :other (a third thread holds one for its
  first 3 s: the write-back, which must grow the map, waits for it); returns [store
  read-or-nil batches], or [store ::stuck batches] when the commits did not get past the bound
  (the store cannot then close)."
  [dir hold]
  (let [bound (let [f (.getDeclaredField (Class/forName "datalith.store.LmdbBehind")
                                         "MAX_BEHIND_BYTES")]
                (.setAccessible f true)
                (.getLong f nil))
        batches (+ 2 (quot (* 2 bound) (* 1000 1000))) ; 1,000 values of 1,000 bytes a commit
        ^Store s (open-lmdb dir {"write-behind" true "write-back-commits" 3
                                 "map-size" (* 1024 1024)})
        other (when (= hold :other)
                (let [held (promise)]
                  (future (with-open [_r (.beginRead s)]
                            (deliver held true)
                            (Thread/sleep 3000)))
                  @held))
        writer (future
                 (let [r (when (= hold :writer) (.beginRead s))]
                   (dotimes [b batches]
                     (with-open [w (.beginWrite s)]
                       (put-values! w (* b 1000) 1000)
                       (.commit w)))
                   r))]
    [s (deref writer 60000 ::stuck) batches]))

(deftest commits-past-write-behinds-bound
  (testing "a write that waits at the bound holds no lock the write-back needs (it held the
  commit lock, which the write-back's checkpoint takes: both waited for ever)"
    (let [dir (temp-dir)
          [^Store s r batches] (commit-past-write-behinds-bound dir :other)]
      (is (not= ::stuck r) "the commits past the bound went on")
      (when (not= ::stuck r) ; else the store cannot close: left to the process's end
        (try
          (with-open [r (.beginRead s)]
            (is (= (* batches 1000) (count (scan r SubDb/EAVT)))))
          (finally (.close s) (delete-tree dir))))))
  (testing "a thread holds a read and commits on while the write-back must grow the map, which
  waits for every read: once it waits at the bound, the growth closes its read, as it closes
  those of threads waiting for the writer lock (it stalled 30 s, then the write-back failed the
  waiting commit)"
    (let [dir (temp-dir)
          [^Store s ^ReadTxn r batches] (commit-past-write-behinds-bound dir :writer)]
      (is (not= ::stuck r) "the commits past the bound went on")
      (when (not= ::stuck r)
        (try
          (let [e (is (thrown? IllegalStateException (.get r SubDb/EAVT (buf "k0000000"))))]
            (is (= :store/closed (:error (ex-data e))) "the held read was closed for the growth"))
          (.close r)
          (with-open [r (.beginRead s)]
            (is (= (* batches 1000) (count (scan r SubDb/EAVT))))
            (is (.equals (ByteBuffer/wrap (value-of 7 1000)) (.get r SubDb/EAVT (buf "k0000007")))))
          (finally (.close s) (delete-tree dir)))))))

(deftest map-growth-closes-reads-that-would-wait-for-it
  (testing "a read open on the committing thread"
    (call-with-store
     :lmdb {"map-size" (* 1024 1024) "sync" false}
     (fn [^Store s]
       (let [r (.beginRead s)
             c (.cursor r SubDb/EAVT)]
         (with-open [w (.beginWrite s)]
           (put-values! w 0 4000)
           (.commit w))
         (let [e (is (thrown? IllegalStateException (.get r SubDb/EAVT (buf "k0000000"))))]
           (is (= :store/closed (:error (ex-data e)))))
         (is (thrown? IllegalStateException (.first c)))
         (.close r)
         (with-open [r (.beginRead s)]
           (is (= 4000 (count (scan r SubDb/EAVT)))))))))
  (testing "a read open on a thread waiting to write"
    (call-with-store
     :lmdb {"map-size" (* 1024 1024) "sync" false}
     (fn [^Store s]
       (let [w (.beginWrite s)
             waiting (promise)
             other (future
                     (with-open [r (.beginRead s)]
                       (deliver waiting true)
                       (with-open [w2 (.beginWrite s)]
                         (try (.get r SubDb/EAVT (buf "k0000000")) :still-open
                              (catch IllegalStateException _ :closed)))))]
         @waiting
         (Thread/sleep 200)
         (put-values! w 0 4000)
         (let [t0 (System/nanoTime)]
           (.commit w)
           (is (< (- (System/nanoTime) t0) 10e9) "the commit did not wait for the parked reader"))
         (.close w)
         (is (= :closed (deref other 10000 :timeout)))
         (with-open [r (.beginRead s)]
           (is (= 4000 (count (scan r SubDb/EAVT))))))))))

(deftest file-stays-bounded-under-overwrites
  (doseq [kind kinds]
    (testing (name kind)
      (let [dir (temp-dir)]
        (try
          (with-open [^Store s (case kind
                          :lmdb (open-lmdb dir {"sync" false "page-reader" "java"})
                          :lmdb-plain (open-lmdb dir {"sync" false "page-reader" "lmdb"})
                          :lmdb-behind (open-lmdb dir {"write-behind" true "write-back-commits" 3})
                          (:mem :mem-in-place) (open-mem kind))]
            (let [stop (atom false)
                  readers (doall (repeatedly 3 #(run-for stop (fn [] (with-open [r (.beginRead s)]
                                                                       (count (scan r SubDb/EAVT)))))))]
              (dotimes [round 300]
                (commit! s (map (fn [i] [SubDb/EAVT (format "key%04d" i) (value-of round 100)]) (range 1000))))
              (reset! stop true)
              (doseq [r readers] (is (pos? @r)))
              (with-open [r (.beginRead s)]
                (is (= 1000 (count (scan r SubDb/EAVT))))))
            (when (#{:lmdb :lmdb-plain :lmdb-behind} kind)
              ;; about 110 KB of live entries; 300 unreclaimed versions would take 30+ MB.
              ;; Readers pin a few versions each, more on a loaded machine: allow 12 MiB.
              (is (< (data-file-size dir) (* 12 1024 1024)) (str "data.mdb: " (data-file-size dir)))))
          (finally (delete-tree dir)))))))
