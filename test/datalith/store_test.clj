(ns datalith.store-test
  "LmdbStore and MemStore against the Store contract: puts, gets, deletes, seeks and cursor
  moves, empty values and key limits, snapshot isolation, a writer beside readers, close and
  reopen, the LMDB options, close waiting for open transactions, expectations guarding a commit,
  an interrupted writer. Their generative tests against sorted-map models are store-model-test's;
  cursor walks and warmed seeks store-cursor-test's; the order and page fill of writes
  store-writes-test's; LMDB's map growth and file size store-map-growth-test's."
  (:require [clojure.test :refer [deftest is are testing use-fixtures]]
            [datalith.heap-watch :as heap-watch]
            [datalith.store-support :refer [buf bytes-of commit! delete-tree lookup open-lmdb put!
                                            run-for scan str-of strs temp-dir with-each-store]])
  (:import [datalith.store Cursor LmdbStore MemStore Store SubDb]
           [java.nio ByteBuffer]))

(set! *warn-on-reflection* true)

;; The heap watch of store-model-test (see there): should anything fill the heap, it prints every
;; thread's stack and the heap's largest classes.
(use-fixtures :once (fn [f] (heap-watch/watch!) (f)))

(defn- seek-key [^Cursor c k] (when (.seek c (buf k)) (str-of (.key c))))

;; ---- basic operations ------------------------------------------------------

(deftest put-get-delete-seek
  (with-each-store [s]
    (commit! s [[SubDb/EAVT "b" "2"] [SubDb/EAVT "d" "4"] [SubDb/EAVT "a" "1"]
                [SubDb/EAVT "c" "3"] [SubDb/AEVT "b" "other db"]])
    (commit! s [[SubDb/EAVT "c" nil] [SubDb/EAVT "d" "four"] [SubDb/EAVT "zz" nil]])
    (with-open [r (.beginRead s)]
      (are [k v] (= v (lookup r k))
        "a" "1", "b" "2", "c" nil, "d" "four", "e" nil, "" nil)
      (is (= "other db" (str-of (.get r SubDb/AEVT (buf "b")))))
      (is (nil? (.get r SubDb/AVET (buf "b"))))
      (is (= [["a" "1"] ["b" "2"] ["d" "four"]] (strs (scan r SubDb/EAVT))))
      (is (= [["d" "four"] ["b" "2"] ["a" "1"]] (strs (scan r SubDb/EAVT false))))
      (is (= [] (scan r SubDb/LOG) (scan r SubDb/LOG false)))
      (with-open [c (.cursor r SubDb/EAVT)]
        (are [k found] (= found (seek-key c k))
          "" "a", "a" "a", "a\u0000" "b", "b" "b", "bb" "d", "c" "d", "d" "d", "d\u0000" nil, "e" nil))
      (testing "moves and their ends"
        (with-open [c (.cursor r SubDb/EAVT)]
          (is (thrown? IllegalStateException (.key c)))
          (is (false? (.next c)))
          (is (.last c))
          (is (= "d" (str-of (.key c))))
          (is (false? (.next c)))
          (is (false? (.next c)) "stays off the end")
          (is (false? (.prev c)) "stays off the end until positioned again")
          (is (thrown? IllegalStateException (.val c)))
          (is (.first c))
          (is (false? (.prev c)))
          (is (.seek c (buf "b")))
          (is (.prev c))
          (is (= ["a" "1"] [(str-of (.key c)) (str-of (.val c))]))))
      (testing "returned buffers are read-only and at position 0"
        (with-open [c (.cursor r SubDb/EAVT)]
          (.seek c (buf "b" true))
          (doseq [^ByteBuffer b [(.key c) (.val c) (.get r SubDb/EAVT (buf "b" true))]]
            (is (.isReadOnly b))
            (is (zero? (.position b)))
            (is (= 1 (.remaining b)))))))))

(deftest empty-values-and-key-limits
  (with-each-store [s]
    (commit! s [[SubDb/EAVT "k" ""] [SubDb/EAVT (byte-array 511 (byte -1)) "max"]])
    (with-open [r (.beginRead s)]
      (is (= "" (lookup r "k")))
      (is (= "max" (lookup r (byte-array 511 (byte -1)))))
      (is (nil? (lookup r (byte-array 600 (byte -1)))))
      (with-open [c (.cursor r SubDb/EAVT)]
        (is (= "k" (seek-key c (byte-array 1 (byte 0x6b)))))
        (is (= 511 (count (bytes-of (do (.seek c (buf (byte-array 511 (byte -2)))) (.key c))))))
        (is (false? (.seek c (buf (byte-array 512 (byte -1))))) "past every key")
        (is (.seek c (buf (byte-array 520 (byte -2)))) "a long key before the 511 x 0xFF key")))
    (with-open [w (.beginWrite s)]
      (doseq [k ["" (byte-array 512)]]
        (let [e (is (thrown? clojure.lang.ExceptionInfo (.put w SubDb/EAVT (buf k) (buf "v"))))]
          (is (= :store/key-size (:error (ex-data e)))))))))

;; ---- isolation -------------------------------------------------------------

(deftest snapshot-isolation
  (with-each-store [s]
    (commit! s [[SubDb/EAVT "k1" "v1"]])
    (let [before (.beginRead s)
          w (.beginWrite s)]
      (put! w SubDb/EAVT "k2" "v2")
      (put! w SubDb/META "m" "1")
      (with-open [during (.beginRead s)]
        (is (nil? (lookup during "k2")) "uncommitted writes are not seen")
        (.commit w)
        (.close w)
        (is (nil? (lookup during "k2")) "opened before the commit")
        (is (nil? (lookup before "k2")) "opened before the write")
        (is (= [["k1" "v1"]] (strs (scan before SubDb/EAVT)))))
      (.close before)
      (with-open [after (.beginRead s)]
        (is (= [["k1" "v1"] ["k2" "v2"]] (strs (scan after SubDb/EAVT))))
        (is (= "1" (str-of (.get after SubDb/META (buf "m")))))))
    (testing "a write closed without commit is discarded"
      (with-open [w (.beginWrite s)]
        (put! w SubDb/EAVT "k3" "v3")
        (.delete w SubDb/EAVT (buf "k1")))
      (with-open [r (.beginRead s)]
        (is (= [["k1" "v1"] ["k2" "v2"]] (strs (scan r SubDb/EAVT))))))
    (testing "transactions refuse use after close"
      (let [r (.beginRead s) c (.cursor r SubDb/EAVT)]
        (.close r)
        (is (thrown? IllegalStateException (.get r SubDb/EAVT (buf "k1"))))
        (is (= :store/closed (:error (ex-data (is (thrown? IllegalStateException (.first c))))))))
      (with-open [r (.beginRead s)]
        (let [c (.cursor r SubDb/EAVT)]
          (.close c)
          (is (thrown? IllegalStateException (.first c)))))
      (let [w (.beginWrite s)]
        (.commit w)
        (is (thrown? IllegalStateException (put! w SubDb/EAVT "x" "y")))
        (.close w)
        (is (thrown? IllegalStateException (.commit w)))))))

;; ---- concurrency -----------------------------------------------------------

(deftest writer-and-readers
  (with-each-store [s {"sync" false}]
    (let [n 20
          stop (atom false)
          keys (mapv #(format "k%02d" %) (range n))
          write (fn [i] (commit! s (cons [SubDb/META "counter" (str i)]
                                         (map (fn [k] [SubDb/EAVT k (str i)]) keys))))
          _ (write 0)
          check (fn []
                  (with-open [r (.beginRead s)]
                    (let [counter (str-of (.get r SubDb/META (buf "counter")))
                          vals (map second (strs (scan r SubDb/EAVT)))]
                      (when-not (and (= n (count vals)) (every? #{counter} vals))
                        (throw (ex-info "inconsistent snapshot" {:counter counter :vals vals}))))))
          readers (doall (repeatedly 3 #(run-for stop check)))
          writer (future (loop [i 1]
                           (if @stop i (do (write i) (recur (inc i))))))]
      (Thread/sleep 2000)
      (reset! stop true)
      (is (< 10 @writer) "the writer was not blocked by readers")
      (doseq [r readers] (is (< 10 @r) "readers were not blocked")))))

;; ---- close and reopen -------------------------------------------------------

(deftest close-and-reopen
  (let [dir (temp-dir)]
    (try
      (let [s (open-lmdb dir {})]
        (is (.durable s))
        (commit! s [[SubDb/EAVT "a" "1"] [SubDb/META "basis" "7"]])
        (let [w (.beginWrite s)]
          (put! w SubDb/EAVT "b" "uncommitted")
          (.close w))
        (.close s)
        (.close s)
        (testing "use after close"
          (let [e (is (thrown? IllegalStateException (.beginRead s)))]
            (is (= :store/closed (:error (ex-data e)))))
          (is (thrown? IllegalStateException (.beginWrite s)))))
      (with-open [s (open-lmdb dir {"sync" false})]
        (is (not (.durable s)))
        (with-open [r (.beginRead s)]
          (is (= [["a" "1"]] (strs (scan r SubDb/EAVT))))
          (is (= "7" (str-of (.get r SubDb/META (buf "basis")))))))
      (finally (delete-tree dir))))
  (testing "one process opens a directory once"
    (let [dir (temp-dir)]
      (try
        (with-open [_ (open-lmdb dir {})]
          (let [e (is (thrown? clojure.lang.ExceptionInfo (open-lmdb dir {})))]
            (is (= :store/lmdb (:error (ex-data e))))))
        (with-open [_ (open-lmdb dir {})])
        (finally (delete-tree dir)))))
  (testing "mem"
    (let [s (MemStore/open)]
      (is (not (.durable s)))
      (.close s)
      (is (thrown? IllegalStateException (.beginRead s)))
      (is (thrown? IllegalStateException (.beginWrite s))))))

(deftest page-reader-option
  (let [dir (temp-dir)
        option-error (fn [opts] (try (.close (open-lmdb dir opts)) nil
                                     (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))]
    (try
      (are [opts] (= :store/option (option-error opts))
        {"page-reader" "mmap"}
        {"page-reader" :lmdb})
      (are [opts] (nil? (option-error opts))
        {"page-reader" "java"}
        {"page-reader" "lmdb"})
      (testing "the system property sets the default"
        (System/setProperty LmdbStore/PAGE_READER_PROPERTY "mmap")
        (try
          (is (= :store/option (option-error {})))
          (is (nil? (option-error {"page-reader" "lmdb"})) "the option wins")
          (finally (System/clearProperty LmdbStore/PAGE_READER_PROPERTY))))
      (finally (delete-tree dir)))))

(deftest max-readers-option
  ;; LMDB's lock file holds 64 bytes a reader, written out before LMDB maps it: a count in
  ;; the billions filled the disk (found by the bad-input test at 10,000 trials)
  (let [dir (temp-dir)
        lock (.toFile (.resolve dir "lock.mdb"))
        option-error (fn [opts] (try (.close (open-lmdb dir opts)) nil
                                     (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))]
    (try
      (are [n] (= :store/option (option-error {"max-readers" n}))
        0 -1 (inc LmdbStore/MAX_MAX_READERS) Integer/MAX_VALUE Long/MAX_VALUE
        (long 1e12) 1.5 (bigint 1) 1M)
      (is (or (not (.exists lock)) (< (.length lock) (* 1024 1024)))
          "a refused count writes no lock file of its size")
      (are [n] (nil? (option-error {"max-readers" n}))
        1 126 (int 2048) LmdbStore/MAX_MAX_READERS)
      (is (<= (.length lock) (+ (* 64 LmdbStore/MAX_MAX_READERS) 8192)))
      (finally (delete-tree dir)))))

(deftest an-option-nested-deep-is-named-not-printed
  (let [dir (temp-dir)
        deep (reduce (fn [v _] [v]) [] (range 100000))]
    (try
      (let [e (is (thrown? clojure.lang.ExceptionInfo (open-lmdb dir {"max-readers" deep})))]
        (is (= :store/option (:error (ex-data e)))))
      (finally (delete-tree dir)))))

(deftest close-waits-for-open-transactions
  (with-each-store [s]
    (commit! s [[SubDb/EAVT "a" "1"]])
    (let [r (.beginRead s)
          w (.beginWrite s)
          closing (future (.close s) :closed)]
      (Thread/sleep 100)
      (is (not (realized? closing)) "waits while transactions are open")
      (is (= "1" (lookup r "a")))
      (.close w)
      (.close r)
      (is (= :closed (deref closing 5000 :timeout)))
      (is (thrown? IllegalStateException (.beginRead s)))))
  (testing "refuses while this thread holds a transaction"
    (with-each-store [s]
      (let [w (.beginWrite s)]
        (is (thrown? IllegalStateException (.close s)))
        (.close w)))))

;; ---- expectations and the writer lock ---------------------------------------

(defn- commit-expecting!
  "Commits a put of k2 in EAVT, expecting `k` of META to hold `v` (nil:
  absent); the :error of the commit's ex-info, or nil when it commits."
  [^Store s k v]
  (try
    (with-open [w (.beginWrite s)]
      (.expect w SubDb/META (buf k) (when v (buf v)))
      (put! w SubDb/EAVT "k2" "written")
      (.commit w)
      nil)
    (catch clojure.lang.ExceptionInfo e (:error (ex-data e)))))

(deftest expect-guards-the-commit
  (with-each-store [s]
    (are [k v error]
         (do (commit! s [[SubDb/META "t" "7"] [SubDb/EAVT "k2" nil]])
             (= [error (when-not error "written")]
                [(commit-expecting! s k v) (with-open [r (.beginRead s)] (lookup r "k2"))]))
      "t" "7" nil
      "u" nil nil
      "t" "8" :store/conflict
      "t" "77" :store/conflict
      "t" nil :store/conflict
      "u" "7" :store/conflict)
    (testing "the conflict's data"
      (let [e (try (with-open [w (.beginWrite s)]
                     (.expect w SubDb/META (buf "t") (buf "6"))
                     (.commit w))
                   (catch clojure.lang.ExceptionInfo e e))]
        (is (= ["META" "t" "6" "7"]
               (-> (ex-data e)
                   ((juxt :sub-db :key :expected :found))
                   (update 1 #(String. ^bytes %))
                   (update 2 #(String. ^bytes %))
                   (update 3 #(String. ^bytes %)))))))
    (testing "after a conflict the store takes the next write"
      (is (nil? (commit-expecting! s "t" "7"))))
    (testing "an expected key is checked like a written one"
      (with-open [w (.beginWrite s)]
        (let [e (is (thrown? clojure.lang.ExceptionInfo (.expect w SubDb/META (buf "") nil)))]
          (is (= :store/key-size (:error (ex-data e)))))))))

(deftest an-interrupted-writer-still-writes
  (with-each-store [s]
    (.interrupt (Thread/currentThread))
    (try
      (commit! s [[SubDb/EAVT "a" "1"]])
      (is (Thread/interrupted) "the interrupt is kept for the caller")
      (finally (Thread/interrupted)))
    (commit! s [[SubDb/EAVT "b" "2"]])
    (with-open [r (.beginRead s)]
      (is (= [["a" "1"] ["b" "2"]] (strs (scan r SubDb/EAVT)))))))
