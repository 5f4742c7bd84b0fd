(ns datalith.test-util
  "Helpers shared by the tests: run a body against each store."
  (:require [datalith.core :as d]
            [datalith.lmdb-file :as lmdb-file])
  (:import (java.io File)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)))

(def stores
  "The stores every behaviour is tested on."
  [:lmdb :mem])

(def checked-stores
  "The stores the store and property tests run on: `stores` (:lmdb as `d/connect`
  opens it: with write-behind, since stop 38); :lmdb-through, LMDB without
  write-behind (each commit put into LMDB's trees: the path after another
  process's open, and of {:sync false}); :lmdb-plain, LMDB with
  `:page-reader :lmdb` and no write-behind (every read and write LMDB's own),
  the slow twin that the Java page reader is checked against (to run every
  test on LMDB alone: JVM_OPTS=\"-Ddatalith.page-reader=lmdb
  -Ddatalith.write-behind=false\" lein test); and :lmdb-behind, write-behind
  written back every few commits or milliseconds, so that reads meet every
  state of the layers."
  [:lmdb :lmdb-through :lmdb-plain :mem :lmdb-behind])

(defn durable?
  "Whether `store` keeps its data in a directory."
  [store]
  (not= store :mem))

(defn store-opts
  "`opts` for a connection on `store`."
  [store opts]
  (cond-> opts
    (= store :lmdb-through) (assoc :write-behind false)
    (= store :lmdb-plain) (assoc :page-reader :lmdb :write-behind false)
    ;; write-behind needs durable commits through the log: a test's {:sync false} is dropped
    (= store :lmdb-behind) (-> (dissoc :sync)
                               (assoc :write-behind true :write-back-commits 5 :write-back-ms 2))))

(defn temp-dir
  "A new empty temporary directory."
  ^File []
  (.toFile (Files/createTempDirectory "datalith-test" (make-array FileAttribute 0))))

(defn await-true
  "Waits (at most 60 s) until (f) is truthy, looking every 20 ms; its last value."
  [f]
  (let [deadline (+ (System/nanoTime) 60000000000)]
    (loop []
      (or (f) (if (< (System/nanoTime) deadline) (do (Thread/sleep 20) (recur)) (f))))))

(defn delete-tree [^File f]
  (when (.isDirectory f)
    (doseq [c (.listFiles f)] (delete-tree c)))
  (.delete f))

(defn store-dir
  "A new temporary directory for a database: empty, or with `psize` other than 4096, holding a
  new database (its bootstrap alone) whose pages are spread to `psize` bytes (LMDB's layout on
  a system of that page size: 16 KiB on Apple silicon; see lmdb-file's spread-pages!)."
  ^File [psize]
  (let [dir (temp-dir)]
    (when (not= 4096 psize)
      (let [base (temp-dir)]
        (try
          (d/close (d/connect (.getPath base)))
          (lmdb-file/spread-pages! (.getPath base) (.getPath dir) psize)
          (finally (delete-tree base)))))
    dir))

(defn open-conn
  "A connection on a fresh database of kind `store` (:lmdb, :lmdb-through,
  :lmdb-plain, :lmdb-behind or :mem); returns [conn cleanup-fn]."
  [store opts]
  (if (durable? store)
    (let [dir (temp-dir)]
      [(d/connect (.getPath dir) (store-opts store opts)) #(delete-tree dir)])
    [(d/connect :mem opts) (fn [])]))

(defmacro with-conn
  "Runs body with `conn` bound to a fresh connection on `store`, closed and
  deleted afterwards."
  [[conn store opts] & body]
  `(let [[~conn cleanup#] (open-conn ~store ~(or opts {}))]
     (try ~@body
          (finally (d/close ~conn) (cleanup#)))))

(defmacro each-store
  "Runs body once per store with `conn` bound to a fresh connection (and
  `store` to :lmdb or :mem, for messages)."
  [[conn opts] & body]
  `(doseq [store# stores]
     (clojure.test/testing (str "store " store#)
       (with-conn [~conn store# ~opts] ~@body))))
