(ns ^:no-doc datalith.bulk
  "Export and import (`datalith.core/export`, `import!`): a database's log as
  records of tx-data, and the sources `import!` reads (EDN files and readers,
  seqs of tx-data or records, datoms) as chunks for datalith.conn.Import."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [datalith.args :refer [error function?]]
            [datalith.readers :as readers]
            [datalith.replica :as replica]
            [datalith.valid :as valid])
  (:import (datalith.conn Conn ExportLines Import Import$Staging)
           (datalith.db Db Schema)
           (datalith.index Datom)
           (java.io BufferedReader File PushbackReader Reader Writer)
           (java.net URI)
           (java.nio.file Path)
           (java.util Base64 Iterator)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------- export

(def ^:private attr-defining
  "The attributes whose assertion, with :db/ident's, makes an entity an attribute."
  #{:db/valueType :db/cardinality})

(def ^:private system-ref-attrs
  "The schema attributes whose values are system entities, exported by ident."
  #{:db/valueType :db/cardinality :db/unique :db/tupleType})

(defn- schema-attr? [a] (= "db" (namespace a)))

(defn- exported-value
  "`v` as an export record holds it: system entities by ident."
  [sys-idents a v]
  (if (and (system-ref-attrs a) (contains? sys-idents v)) (sys-idents v) v))

(defn- printable
  "`v` as export writes it: the values EDN has no literal for (byte arrays,
  floats, URIs, also inside tuples) as datalith's tags, which datalith.readers reads."
  [v]
  (cond
    (bytes? v) (tagged-literal 'datalith/bytes (.encodeToString (Base64/getEncoder) ^bytes v))
    (instance? Float v) (tagged-literal 'datalith/float (str v))
    (instance? URI v) (tagged-literal 'datalith/uri (str v))
    (vector? v) (mapv printable v)
    :else v))

(defn- printable-form [form]
  (if (map? form) (update-vals form printable) (mapv printable form)))

(defn- attribute-maps
  "The entities `datoms` (one transaction's) makes attributes: e -> the map that
  declares it, {:db/id e :db/ident k ...} with every schema attribute asserted."
  [sys-idents datoms]
  (let [by-e (group-by :e datoms)]
    (into {}
          (for [[e ds] by-e
                :when (and (some #(and (:added %) (= :db/ident (:a %))) ds)
                           (not-any? #(and (not (:added %)) (= :db/ident (:a %))) ds)
                           (some #(and (:added %) (attr-defining (:a %))) ds))]
            [e (into {:db/id e}
                     (for [d ds :when (and (:added d) (schema-attr? (:a d)))]
                       [(:a d) (exported-value sys-idents (:a d) (:v d))]))]))))

(defn- record
  "The export record of transaction `t`: {:t t :tx-data [...]}, entity ids as
  they are, attributes it installs as maps first, derived composite tuples left
  out (the transactor derives them again)."
  [sys-idents composite? t datoms]
  (let [attrs (attribute-maps sys-idents datoms)
        forms (for [^Datom d datoms
                    :let [a (.a d)]
                    :when (not (composite? a))
                    :when (not (and (.added d) (contains? attrs (.e d)) (schema-attr? a)))]
                [(if (.added d) :db/add :db/retract) (.e d) a (exported-value sys-idents a (.v d))])]
    {:t t :tx-data (into (vec (vals attrs)) forms)}))

(def ^:private page 64) ; transactions read from the log at a time

(defn export-seq
  "The export records of `db`'s transactions 1 to its basis t, lazily."
  [^Db db]
  (let [schema (.toMap (.schema db))
        composite? (into #{} (for [[k a] schema :when (:db/tupleAttrs a)] k))
        sys-idents (into {} (for [^objects d (Schema/bootstrap)
                                  :when (= Schema/IDENT (aget d 1))]
                              [(aget d 0) (aget d 2)]))
        last-t (.basisT db)
        step (fn step [from]
               (lazy-seq
                (when (<= from last-t)
                  (let [to (min (inc last-t) (+ from page))
                        rows (.txRange db from to)]
                    (concat (for [^objects row rows]
                              (valid/export-record
                                db (record sys-idents composite? (aget row 0) (vec (aget row 2)))))
                            (step to))))))]
    (step 1)))

(defn export-to
  "Writes `records` to `out` (a Writer, kept open), one EDN record a line;
  returns {:transactions :datoms :t-last}."
  [records ^Writer out]
  (binding [*print-length* nil *print-level* nil *print-namespace-maps* false
            *print-meta* false *print-dup* false]
    (reduce (fn [acc {:keys [t tx-data] :as r}]
              (.write out (pr-str (assoc r :tx-data (mapv printable-form tx-data))))
              (.write out "\n")
              (-> acc (update :transactions inc) (update :datoms + (count tx-data)) (assoc :t-last t)))
            {:transactions 0 :datoms 0 :t-last nil}
            records)))

(defn export-file
  "Writes `records` to the file `out` (a path, File or Path), replacing it;
  returns export-to's summary. An unwritable path is :export/io."
  [records out]
  (when-not (or (string? out) (instance? File out) (instance? Path out))
    (throw (error :export/invalid-target "Export writes to a file path, File, Path or Writer"
                  {:out out})))
  (let [f (io/file (str out))]
    (try
      (with-open [w (io/writer f)]
        (export-to records w))
      (catch java.io.IOException e
        (throw (error :export/io (str "Cannot write " f ": " (ex-message e)) {:out (str out)}))))))

;; ---------------------------------------------------------------- import sources

(defn- op? [x]
  (or (map? x) (and (sequential? x) (or (keyword? (first x)) (symbol? (first x))))))

(defn- export-record? [x] (and (map? x) (contains? x :tx-data)))

(defn- tx-data? [x]
  (and (or (vector? x) (seq? x) (instance? java.util.List x)) (every? op? x)))

(defn- form-chunks
  "The chunks of one top-level form of a source: a record or a tx-data is one;
  a vector of them, each of its elements."
  [form]
  (cond
    (export-record? form) [form]
    (tx-data? form) [form]
    (and (sequential? form) (every? #(or (export-record? %) (tx-data? %)) form)) form
    :else (throw (error :import/invalid-source
                        "An import source holds tx-data, vectors of tx-data or export records"
                        {:form form}))))

(def edn-readers
  "The tags an import reads: datalith's, and `#inst`, `#uuid`."
  readers/readers)

(defn- read-edn-forms
  "The top-level forms of `r`, lazily (a read error is :import/invalid-source)."
  [^PushbackReader r]
  (lazy-seq
   (let [form (try (edn/read {:eof ::eof :readers edn-readers} r)
                   (catch Exception e
                     (throw (error :import/invalid-source
                                   (str "Cannot read the import source as EDN: " (ex-message e))
                                   {:cause (ex-message e)}))))]
     (when-not (= ::eof form)
       (cons form (read-edn-forms r))))))

(defn- read-line-form
  "The record on one line of an export file: ExportLines' fast reading, or the EDN reader's."
  [^String line]
  (or (ExportLines/parse line)
      (try (edn/read-string {:readers edn-readers} line)
           (catch Exception e
             (throw (error :import/invalid-source
                           (str "Cannot read the import source as EDN: " (ex-message e))
                           {:cause (ex-message e)}))))))

(def ^:private record-start "{:t ")

(defn- read-forms
  "The top-level forms of `r`, lazily. A source that starts as export writes its
  records, one a line, is read line by line (datalith.conn.ExportLines, the EDN
  reader for a line it leaves); any other, form by form by the EDN reader."
  [^Reader r]
  (let [^BufferedReader r (if (instance? BufferedReader r) r (BufferedReader. r))
        start (char-array (count record-start))
        n (do (.mark r (count record-start))
              (let [n (.read r start)] (.reset r) n))]
    (if (= record-start (String. start 0 (int (max 0 n))))
      (map read-line-form (remove str/blank? (line-seq r)))
      (read-edn-forms (PushbackReader. r)))))

(defn- datoms-chunks
  "Datoms (of any index, of another database) as chunks of tx-data: first the
  attributes they define, as maps; then the other user datoms as [:db/add e a
  v], `size` a chunk. System entities, transactions' own datoms and composite
  tuples (derived again) are left out. Entity ids are kept."
  [datoms size]
  (when-let [bad (first (remove #(instance? Datom %) datoms))]
    (throw (error :import/invalid-source "A source of datoms holds datoms only" {:form bad})))
  (let [user (filterv (fn [^Datom d] (and (.added d) (<= Schema/FIRST_USER_ID (.e d))
                                          (< (.e d) Db/TX0)))
                      datoms)
        sys-idents (into {} (for [^objects d (Schema/bootstrap) :when (= Schema/IDENT (aget d 1))]
                              [(aget d 0) (aget d 2)]))
        attrs (attribute-maps sys-idents user)
        composite? (into #{} (for [[_ m] attrs :when (:db/tupleAttrs m)] (:db/ident m)))
        rest (for [^Datom d user
                   :when (not (or (contains? attrs (.e d)) (composite? (.a d))))]
               [:db/add (.e d) (.a d) (exported-value sys-idents (.a d) (.v d))])]
    (cond->> (map vec (partition-all size rest))
      (seq attrs) (cons (vec (vals attrs))))))

(defn- staging
  "The Import$Staging of import!'s :staged and :staged-budget."
  ^Import$Staging [{:keys [staged staged-budget]}]
  (Import$Staging. staged (long (or staged-budget (Import/defaultBudget)))))

(defn- run [^Conn conn chunks {:keys [progress skip resume?] :as opts}]
  (if (.replicated conn) ; a node: the chunks go through the log (datalith.replica)
    (replica/import-chunks! conn chunks progress skip)
    (Import/run conn ^Iterator (.iterator ^Iterable chunks) progress (long (or skip 0))
                (boolean resume?) (staging opts))))

(defn import!
  "See datalith.core/import!."
  [^Conn conn source {:keys [progress skip chunk-size] :as opts}]
  (when-not (or (nil? progress) (function? progress))
    (throw (error :import/invalid-options ":progress is a function of the progress map"
                  {:progress progress})))
  (when-not (or (nil? skip) (nat-int? skip))
    (throw (error :import/invalid-options ":skip is a count of chunks" {:skip skip})))
  (when-not (or (nil? (:staged opts)) (boolean? (:staged opts)))
    (throw (error :import/invalid-options ":staged is true or false" {:staged (:staged opts)})))
  (when-not (or (nil? (:staged-budget opts)) (pos-int? (:staged-budget opts)))
    (throw (error :import/invalid-options ":staged-budget is a positive count of datoms"
                  {:staged-budget (:staged-budget opts)})))
  (when-not (or (nil? chunk-size) (pos-int? chunk-size))
    (throw (error :import/invalid-options ":chunk-size is a positive count of datoms"
                  {:chunk-size chunk-size})))
  (cond
    (or (string? source) (instance? File source) (instance? Path source))
    (let [f (io/file (str source))]
      (when-not (.isFile f)
        (throw (error :import/invalid-source (str "No such file " source) {:source (str source)})))
      (with-open [r (io/reader f)]
        (run conn (mapcat form-chunks (read-forms r)) opts)))

    (instance? Reader source)
    (run conn (mapcat form-chunks (read-forms source)) opts)

    (and (sequential? source) (instance? Datom (first source)))
    (run conn (datoms-chunks source (or chunk-size 10000)) opts)

    (sequential? source)
    (run conn (mapcat form-chunks source) opts)

    :else
    (throw (error :import/invalid-source
                  "An import source is an EDN file, a Reader, or a seq of tx-data, records or datoms"
                  {:source source}))))
