(ns datalith.readers
  "Reader functions for the tags datalith prints, so that printed values read
  back. resources/data_readers.clj maps `#datalith/datom` to `read-datom` for
  `read` and `read-string`; `datalith.core` loads this namespace, so the tag
  reads wherever datoms can have been printed. For `clojure.edn`, pass
  `readers`:

    (clojure.edn/read-string {:readers datalith.readers/readers} s)

  Database values (`#datalith/db`) and entities (`#datalith/entity`) print for
  people and have no reader: each is a view of a store, which the text does not
  hold. A reader given `*default-data-reader-fn*` (e.g. `tagged-literal`) still
  reads them, as tagged literals."
  (:import (datalith.index Datom)))

(set! *warn-on-reflection* true)

(defn- id? [x]
  (and (integer? x) (<= 0 x Long/MAX_VALUE)))

(defn read-datom
  "The datom that `#datalith/datom [e a v tx added]` prints: equal to the one
  printed (its attribute id, which the text does not name, is
  Datom/UNKNOWN_AID). Values read back as Clojure reads them: a float reads
  as a double, a byte array prints as an object and does not read.

    (read-string \"#datalith/datom [1000 :user/name \\\"Ada\\\" 13194139533313 true]\")
    ; => #datalith/datom [1000 :user/name \"Ada\" 13194139533313 true]"
  ^Datom [form]
  (if (and (vector? form) (= 5 (count form)))
    (let [[e a v tx added] form]
      (when-not (and (id? e) (keyword? a) (some? v) (id? tx) (boolean? added))
        (throw (ex-info "A datom reads from [e a v tx added]: e and tx entity ids, a keyword, v a value, added a boolean"
                        {:error :db/invalid-datom :form form})))
      (Datom. (long e) Datom/UNKNOWN_AID a v (long tx) (boolean added)))
    (throw (ex-info "A datom reads from a vector [e a v tx added]"
                    {:error :db/invalid-datom :form form}))))

(defn read-bytes
  "The byte array that `#datalith/bytes \"base64\"` stands for (`export` writes
  byte arrays so)."
  ^bytes [form]
  (if (string? form)
    (try (.decode (java.util.Base64/getDecoder) ^String form)
         (catch IllegalArgumentException e
           (throw (ex-info (str "#datalith/bytes takes base64: " (ex-message e))
                           {:error :db/invalid-bytes :form form}))))
    (throw (ex-info "#datalith/bytes takes a base64 string" {:error :db/invalid-bytes :form form}))))

(defn read-float
  "The float that `#datalith/float \"1.5\"` stands for (`export` writes floats
  so: EDN reads a bare 1.5 as a double)."
  [form]
  (if-let [f (and (string? form) (parse-double form))]
    (float f)
    (throw (ex-info "#datalith/float takes a decimal string" {:error :db/invalid-float :form form}))))

(defn read-uri
  "The java.net.URI that `#datalith/uri \"https://example.com/a\"` stands for
  (`export` writes the values of `:db.type/uri` attributes so)."
  ^java.net.URI [form]
  (if (string? form)
    (try (java.net.URI. ^String form)
         (catch java.net.URISyntaxException e
           (throw (ex-info (str "#datalith/uri takes a URI: " (ex-message e))
                           {:error :db/invalid-uri :form form}))))
    (throw (ex-info "#datalith/uri takes a string" {:error :db/invalid-uri :form form}))))

(def readers
  "The tags datalith's values read back from, for `clojure.edn/read` `:readers`."
  {'datalith/datom read-datom
   'datalith/bytes read-bytes
   'datalith/float read-float
   'datalith/uri read-uri})
