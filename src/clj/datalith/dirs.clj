(ns ^:no-doc datalith.dirs
  "The directories datalith.core is handed: a target path, the directory of an
  existing database (opened for verify, rebuild-indexes and backup without a
  connection), and the new or empty directory a rebuild or backup writes."
  (:require [datalith.args :refer [error]])
  (:import (datalith.conn Conn)
           (datalith.store LmdbStore Store)
           (java.io File)
           (java.nio.file Path Paths)))

(set! *warn-on-reflection* true)

(defn ->path ^java.nio.file.Path [x]
  (cond
    (instance? Path x) x
    (instance? File x) (.toPath ^File x)
    (string? x) (Paths/get ^String x (make-array String 0))
    :else (throw (error :db/invalid-target "Expected a directory path, :mem or an options map"
                        {:target x}))))

(defn database-dir
  "The directory of an existing database: a File, checked to hold LMDB's data file (so that
  nothing is created in a directory that holds no database)."
  ^java.io.File [dir]
  (let [f (.toFile (->path dir))]
    (when-not (.isFile (File. f "data.mdb"))
      (throw (error :db/no-database "No database in this directory" {:dir (str dir)})))
    f))

(defmacro with-store
  "Runs body with `store` bound to the store of `source`: a connection's, or an LMDB store
  opened on the database directory `source` (not through a connection: its format and its
  indexes may be the ones in doubt) and closed afterwards."
  [[store source] & body]
  `(let [src# ~source]
     (if (instance? Conn src#)
       (let [~(vary-meta store assoc :tag `Store) (.store ^Conn src#)] ~@body)
       (let [^Store s# (LmdbStore/open (.toPath (database-dir src#)) {})]
         (try (let [~(vary-meta store assoc :tag `Store) s#] ~@body)
              (finally (.close s#)))))))

(defn empty-target
  "The target directory of a rebuild or backup, which must not hold anything; [File created?]."
  [dir]
  (let [f (.toFile (->path dir))]
    (when (and (.exists f) (not (and (.isDirectory f) (empty? (.list f)))))
      (throw (error :store/not-empty
                    "The target of a rebuild or backup must be a new or empty directory"
                    {:dir (str dir)})))
    [f (not (.exists f))]))

(defn delete-contents [^File f]
  (doseq [^File c (.listFiles f)]
    (when (.isDirectory c) (delete-contents c))
    (.delete c)))
