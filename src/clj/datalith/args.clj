(ns ^:no-doc datalith.args
  "What datalith.core checks of its arguments before the Java core sees them (a value
  of the wrong type is an ex-info here, not a ClassCastException below), and the
  :explain it adds to an error about a form's shape."
  (:require [datalith.specs :as specs])
  (:import (datalith.conn Conn)
           (datalith.db Db)))

(set! *warn-on-reflection* true)

(defn error [k msg data]
  (ex-info msg (assoc data :error k)))

(defn function?
  "Whether `x` is a function a caller means to be called (a callback, a predicate):
  an IFn that is not a collection, keyword or symbol, which are IFns that look a key
  up and throw, or answer nil, when called with something else."
  [x]
  (and (ifn? x) (not (coll? x)) (not (keyword? x)) (not (symbol? x))))

;; A form refused for its shape (a :parser/* or :pull/pattern error of a query, a
;; :pull/pattern of a pull, a :tx/invalid-op or :tx/invalid-data of tx-data) is
;; rethrown with what its spec (datalith.specs) finds wrong under :explain: only on
;; this error path, so a valid form costs nothing.

(defn explained
  "`e` with `(specs/explain spec form)` added as :explain when `shape?` holds
  for its :error and the spec finds a problem; else `e` itself."
  [^clojure.lang.ExceptionInfo e spec form shape?]
  (let [data (ex-data e)
        problems (when (and (shape? (:error data)) (not (string? form)))
                   (specs/explain spec form))]
    (if problems
      (doto ^Throwable (ex-info (ex-message e) (assoc data :explain problems) (ex-cause e))
        (.setStackTrace (.getStackTrace e)))
      e)))

(defmacro explaining
  "Runs body; an ex-info it throws goes through `explained`."
  [spec form shape? & body]
  `(try ~@body
        (catch clojure.lang.ExceptionInfo e#
          (throw (explained e# ~spec ~form ~shape?)))))

(defn query-shape? [k]
  (and (keyword? k) (or (= "parser" (namespace k)) (= :pull/pattern k))))

(def tx-shape? #{:tx/invalid-op :tx/invalid-data})

;; Arguments of the wrong type are ex-infos here, not ClassCastExceptions below.

(defn conn-arg ^datalith.conn.Conn [x]
  (if (instance? Conn x)
    x
    (throw (error :db/invalid-conn "Expected a connection (from connect)" {:conn x}))))

(defn db-arg ^datalith.db.Db [x]
  (if (instance? Db x)
    x
    (throw (error :db/invalid-db "Expected a database value (from db, as-of, since, history or with)"
                  {:db x}))))

(defn long-arg
  "`x` as a long, or :db/invalid-t naming `what`."
  [x what]
  (if (and (integer? x) (<= Long/MIN_VALUE x Long/MAX_VALUE))
    (long x)
    (throw (error :db/invalid-t (str "Expected " what ": a whole number that fits a long")
                  {what x}))))

(defn opts-arg
  "`opts`, a map of options or nil, or :db/invalid-options."
  [opts]
  (if (or (nil? opts) (map? opts))
    opts
    (throw (error :db/invalid-options "Options are a map" {:options opts}))))
