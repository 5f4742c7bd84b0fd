(ns ^:no-doc datalith.printing
  "How datalith's values print at the REPL. #datalith/datom reads back
  (resources/data_readers.clj, datalith.readers); a database value, a connection or
  an entity is a view of a store, which its printed form does not hold."
  (:import (datalith.conn Conn)
           (datalith.db Db Entity)
           (datalith.index Datom)
           (java.io Writer)))

(set! *warn-on-reflection* true)

(defmethod print-method Datom [^Datom d ^Writer w]
  (.write w "#datalith/datom ")
  (print-method [(.e d) (.a d) (.v d) (.tx d) (.added d)] w))

(defmethod print-method Db [^Db db ^Writer w]
  (.write w (str db)))

;; #datalith/conn {:dir "/tmp/people", :basis-t 12, :open? true}, or {:dir :mem ...}
(defmethod print-method Conn [^Conn conn ^Writer w]
  (.write w (str conn)))

(defn- printable [v]
  (cond
    (instance? Entity v) {:db/id (.eid ^Entity v)}
    (set? v) (into #{} (map printable) v)
    :else v))

(defmethod print-method Entity [^Entity e ^Writer w]
  (.write w "#datalith/entity ")
  (print-method (into {:db/id (.eid e)} (map (fn [[k v]] [k (printable v)])) (.toMap e)) w))
