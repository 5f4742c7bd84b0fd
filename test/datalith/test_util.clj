(ns datalith.test-util
  "Helpers shared by the tests: run a body against each store."
  (:require [datalith.core :as d])
  (:import (java.io File)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)))

(def stores
  "The stores every behaviour is tested on."
  [:lmdb :mem])

(defn temp-dir
  "A new empty temporary directory."
  ^File []
  (.toFile (Files/createTempDirectory "datalith-test" (make-array FileAttribute 0))))

(defn delete-tree [^File f]
  (when (.isDirectory f)
    (doseq [c (.listFiles f)] (delete-tree c)))
  (.delete f))

(defn open-conn
  "A connection on a fresh database of kind `store` (:lmdb or :mem); returns
  [conn cleanup-fn]."
  [store opts]
  (case store
    :mem [(d/connect :mem opts) (fn [])]
    :lmdb (let [dir (temp-dir)]
            [(d/connect (.getPath dir) opts) #(delete-tree dir)])))

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
