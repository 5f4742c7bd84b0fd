(ns datalith.backup-test
  "d/backup on both stores: the copy opens like any database and reads as the source did at
  the copy's t (current datoms, history and log), verifies, and stays so when the copy is
  taken while another thread writes; compacted copies too; a directory source (closed);
  refused targets and sources leave everything as it was."
  (:require [clojure.java.io :as io]
            [clojure.test :refer [deftest is testing]]
            [datalith.core :as d]
            [datalith.damage :as dmg]
            [datalith.test-util :as tu])
  (:import (datalith.conn Logged Logged$Record)
           (datalith.index Datom)
           (java.io File)))

(set! *warn-on-reflection* true)

(defn- rows
  "Every datom of the database, current and retracted, as [e a v tx added]."
  [db]
  (set (for [index [:eavt] ^Datom x (d/datoms (d/history db) index)]
         [(.e x) (.a x) (.v x) (.tx x) (.added x)])))

(defn- reads-like
  "Whether the copy in dir reads as `db` (or the as-of view `db`) does, and verifies."
  [db ^File dir]
  (with-open [copy (d/connect (.getPath dir))]
    (let [cdb (d/db copy)]
      (and (is (= (or (d/as-of-t db) (d/basis-t db)) (d/basis-t cdb)))
           (is (= (rows db) (rows cdb)))
           (is (= (d/schema db) (d/schema cdb)))
           (is (:ok? (d/verify copy)))))))

(defmacro ^:private with-target
  "Runs body with `target` a File of a directory that does not exist yet (in a temporary
  directory deleted afterwards)."
  [[target] & body]
  `(let [parent# (tu/temp-dir)
         ~target (io/file parent# "copy")]
     (try ~@body (finally (tu/delete-tree parent#)))))

(deftest a-backup-reads-like-its-source
  (doseq [compact [false true]]
    (tu/each-store [conn]
      (testing (str "compact " compact)
        (dmg/load-sample! conn)
        (with-target [target]
          (let [r (d/backup conn (.getPath target) {:compact compact})
                db (d/db conn)]
            (is (= (.getPath target) (:dir r)))
            (is (= (d/basis-t db) (:t r)))
            (is (= (.length (io/file target "data.mdb")) (:bytes r)))
            (reads-like db target)
            (testing "the source goes on"
              (d/transact! conn [{:user/name "after the backup"}])
              (is (= (inc (:t r)) (d/basis-t (d/db conn)))))))))))

(deftest a-backup-taken-while-another-thread-writes-is-one-commit
  (tu/each-store [conn]
    (d/transact! conn [{:db/ident :n :db/valueType :db.type/long}])
    (with-target [target]
      (let [writer (future (dotimes [i 300] (d/transact! conn [{:n i}])))
            _ (while (< (d/basis-t (d/db conn)) 20) (Thread/yield))
            r (d/backup conn (.getPath target))]
        @writer
        (is (<= 20 (:t r) 301))
        (reads-like (d/as-of (d/db conn) (:t r)) target)))))

(deftest a-closed-database-is-backed-up-from-its-directory
  (let [dir (tu/temp-dir)]
    (try
      (with-open [conn (d/connect (.getPath dir))]
        (dmg/load-sample! conn))
      (with-target [target]
        (let [r (d/backup (.getPath dir) target {:compact true})]
          (with-open [conn (d/connect (.getPath dir))]
            (is (= (d/basis-t (d/db conn)) (:t r)))
            (reads-like (d/db conn) target))))
      (finally (tu/delete-tree dir)))))

(deftest refused-targets-and-sources
  (tu/each-store [conn]
    (d/transact! conn [{:user/name "Ada"}])
    (with-target [target]
      (testing "a target that holds a file: :store/not-empty, untouched"
        (.mkdirs target)
        (spit (io/file target "notes.txt") "mine")
        (let [e (try (d/backup conn target) nil (catch Exception e e))]
          (is (= :store/not-empty (:error (ex-data e))))
          (is (= ["notes.txt"] (vec (.list target))))
          (is (= "mine" (slurp (io/file target "notes.txt"))))))))
  (testing "a source directory without a database: :db/no-database, no target made"
    (let [empty-dir (tu/temp-dir)]
      (try
        (with-target [target]
          (let [e (try (d/backup (.getPath empty-dir) target) nil (catch Exception e e))]
            (is (= :db/no-database (:error (ex-data e))))
            (is (not (.exists target)))
            (is (= [] (vec (.list empty-dir))))))
        (finally (tu/delete-tree empty-dir)))))
  (testing "an empty target directory is fine"
    (tu/each-store [conn]
      (d/transact! conn [{:user/name "Ada"}])
      (with-target [target]
        (.mkdirs target)
        (is (= 1 (:t (d/backup conn target))))))))

(deftest a-copy-keeps-a-nodes-offset-in-its-replicated-log
  ;; a node's offset commits with its datoms (datalith.conn.Logged); a copy opened as a node
  ;; continues from it, so every kind of copy keeps it: LMDB's, and a rebuild from the log
  (tu/each-store [conn]
    (Logged/apply conn [(Logged$Record. [{:db/ident :x/n :db/valueType :db.type/long
                                          :db/cardinality :db.cardinality/one}] 40 0)
                        (Logged$Record. [{:x/n 1}] 41 0)])
    (is (= 42 (Logged/offset conn)))
    (let [dir (tu/temp-dir) target (io/file dir "copy") rebuilt (io/file dir "rebuilt")]
      (try
        (d/backup conn target)
        (with-open [copy (d/connect (str target))]
          (is (= 42 (Logged/offset copy)) "backup"))
        (d/rebuild-indexes (str target) rebuilt)
        (with-open [copy (d/connect (str rebuilt))]
          (is (= 42 (Logged/offset copy)) "rebuild-indexes"))
        (finally (tu/delete-tree dir))))))
