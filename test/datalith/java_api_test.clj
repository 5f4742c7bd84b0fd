(ns datalith.java-api-test
  "The Java API (datalith.api) through interop, on both stores (and LMDB with the
  option \"write-behind\"): every failure is a
  DatalithException with a category and Java-typed data, query answers through
  typed accessors, Keyword-free pulls, lookup refs as lists and arrays, prepared
  queries, and javadoc on every public type and method."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is are testing]]
            [datalith.test-util :as tu])
  (:import (clojure.lang ExceptionInfo)
           (datalith.api Connection Database Datalith DatalithException PreparedQuery
                         QueryResult TxResult)
           (java.io ByteArrayOutputStream File)
           (java.util List Map Set)
           (javax.tools ToolProvider)))

(def schema
  "[{:db/ident :user/email :db/valueType :db.type/string :db/unique :db.unique/identity}
    {:db/ident :user/name :db/valueType :db.type/string}
    {:db/ident :user/age :db/valueType :db.type/long}
    {:db/ident :user/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
    {:db/ident :user/status :db/valueType :db.type/ref}
    {:db/ident :status/active}]")

(def people
  "[{:db/id \"ada\" :user/email \"ada@example.com\" :user/name \"Ada\" :user/age 36
     :user/status :status/active}
    {:db/id \"bob\" :user/email \"bob@example.com\" :user/name \"Bob\" :user/age 36
     :user/friend [\"ada\"]}]")

(defn- open-java
  "A Java-API connection on a fresh database of kind `store`, with the schema and
  people in it; returns [conn cleanup-fn]."
  [store]
  (if (tu/durable? store)
    (let [dir (tu/temp-dir)
          conn (Datalith/open (.toPath dir) (cond-> {"schema" schema}
                                              (= store :lmdb-through) (assoc "write-behind" false)))]
      (.transact conn people)
      [conn #(tu/delete-tree dir)])
    (let [conn (Datalith/openInMemory)]
      (.transact conn schema)
      (.transact conn people)
      [conn (fn [])])))

(defmacro ^:private each-java-store
  "Runs body once per store (and on LMDB without write-behind) with `conn` bound to a
  Java-API Connection."
  [[conn] & body]
  `(doseq [store# (conj tu/stores :lmdb-through)]
     (testing (str store#)
       (let [[~(vary-meta conn assoc :tag `Connection) cleanup#] (open-java store#)]
         (try ~@body
              (finally (.close ~conn) (cleanup#)))))))

(defn- failure
  "The DatalithException `f` throws (a failed assertion when it throws another
  exception or none)."
  ^DatalithException [f]
  (try (f)
       (is false "expected a DatalithException")
       nil
       (catch DatalithException e e)
       (catch Throwable t
         (is false (str "expected a DatalithException, got " t))
         nil)))

(def ^:private conflict
  "A transaction that gives Bob Ada's unique email."
  "[[:db/add [:user/email \"bob@example.com\"] :user/email \"ada@example.com\"]]")

(defn- email-ref [^String email] (List/of (Datalith/kw "user/email") email))

(deftest every-failure-is-a-datalith-exception
  (each-java-store [conn]
    (let [^Database db (.db conn)
          ^PreparedQuery pq (Datalith/prepare "[:find ?n . :in $ ?e :where [?e :user/name ?n]]")
          scalar-result (.query db "[:find ?n . :where [_ :user/name ?n]]" (object-array 0))
          file (doto (File/createTempFile "datalith" ".notadir") (.deleteOnExit))]
      (are [category f]
           (let [e (failure f)]
             (and (is (some? e))
                  (is (= category (.category e)) (str e))
                  (is (= category (get (.data e) "error")))
                  (is (instance? ExceptionInfo (.getCause e)))
                  (is (= (.getMessage e) (.getMessage (.getCause e))))
                  (is (not (str/blank? (.getMessage e))))
                  (is (= (keyword category) (:error (ex-data e))))))
        ;; Datalith
        "api/null-argument" #(Datalith/open nil)
        "api/null-argument" #(Datalith/open (.toPath (tu/temp-dir)) nil)
        "store/io"          #(Datalith/open (.toPath file))
        "api/edn"           #(Datalith/open (.toPath (tu/temp-dir)) {"schema" "[{:db/ident"})
        "api/null-argument" #(Datalith/kw nil)
        "api/keyword"       #(Datalith/kw ":")
        "api/edn"           #(Datalith/prepare "[:find ?e :where")
        "query/unbound-var" #(Datalith/prepare "[:find ?e :where [?x :user/name]]")
        "api/null-argument" #(Datalith/prepare nil)
        ;; Connection
        "api/edn"           #(.transact conn "[{:user/name")
        "api/null-argument" #(.transact conn nil)
        "tx/nil-value"      #(.transact conn "[{:user/name nil}]")
        "tx/unique"         #(.transact conn conflict)
        ;; Database
        "query/unbound-var" #(.q db "[:find ?e :where [?x :user/name]]" (object-array 0))
        "api/null-argument" #(.q db nil (object-array 0))
        "query/binding"     #(.q db "[:find ?e :in $ [?e ...] :where [?e :user/name]]"
                                 (object-array [42]))
        "parser/find"       #(.query db "[:find]" (object-array 0))
        "api/null-argument" #(.query db nil (object-array 0))
        "pull/entity"       #(.pull db "[*]" "ada")
        "pull/entity"       #(.pull db "[*]" (List/of (Datalith/kw "user/name") "Ada"))
        "api/edn"           #(.pull db "[*" 1)
        "api/null-argument" #(.pull db nil 1)
        "pull/entity"       #(.pullNamed db "[*]" -1)
        "api/null-argument" #(.pullMany db "[*]" nil)
        "pull/entity"       #(.pullMany db "[*]" [1.5])
        "pull/entity"       #(.pullManyNamed db "[*]" [(object-array ["user/name" "Ada"])])
        "db/invalid-lookup-ref" #(.entity db (object-array ["user/age" 36]))
        "db/invalid-entity" #(.entity db 2.5)
        "db/invalid-entity" #(.entid db 2.5)
        "db/invalid-lookup-ref" #(.ident db (object-array ["user/age" 36]))
        "db/invalid-index"  #(.datoms db "foo" (object-array 0))
        "db/invalid-index"  #(.datoms db nil (object-array 0))
        "db/invalid-lookup-ref" #(.datoms db "eavt" (object-array [(object-array ["user/name" "x"])]))
        "db/invalid-point" #(.asOf db "yesterday")
        "db/invalid-point" #(.since db "yesterday")
        "api/edn"           #(.with db "[{:user/name")
        "tx/unique"         #(.with db conflict)
        ;; QueryResult, PreparedQuery
        "api/find-shape"    #(.rel ^QueryResult scalar-result)
        "api/find-shape"    #(.coll ^QueryResult scalar-result)
        "api/null-argument" #(.run pq nil (object-array ["x"]))
        "query/inputs"      #(.run pq db (object-array 0)))
      (testing "the data is Java-typed: keywords as \"ns/name\" strings"
        (let [e (failure #(.transact conn conflict))]
          (is (every? string? (keys (.data e))))
          (is (not-any? keyword? (tree-seq coll? seq (vals (.data e))))))
        (let [e (failure #(.datoms db "foo" (object-array 0)))]
          (is (= "foo" (get (.data e) "index")))
          (is (re-find #"eavt" (.getMessage e)))))
      (testing "a closed connection"
        (.close conn)
        (is (some? (failure #(.transact conn "[{:user/name \"Cy\"}]"))))
        (is (some? (failure #(.db conn))))))))

(defn- shape-error?
  "Whether reading `result` with `accessor` throws an api/find-shape
  DatalithException whose message names the accessor that fits."
  [accessor fits f]
  (let [e (failure f)]
    (and (some? e)
         (= "api/find-shape" (.category e))
         (= accessor (get (.data e) "accessor"))
         (str/includes? (.getMessage e) fits))))

(deftest typed-query-results
  (each-java-store [conn]
    (let [db (.db conn)
          ada (.tempid ^TxResult (.with db "[]") "none")
          q (fn ^QueryResult [^String query & inputs] (.query db query (object-array inputs)))]
      (is (nil? ada))
      (testing "rel: a Set of rows"
        (let [r (q "[:find ?n ?a :where [?e :user/name ?n] [?e :user/age ?a]]")]
          (is (= "rel" (.shape r)))
          (is (instance? Set (.rel r)))
          (is (= #{["Ada" 36] ["Bob" 36]} (.rel r)))
          (is (= (.rel r) (.rows r) (.value r)))
          (is (every? #(instance? List %) (.rel r)))))
      (testing "rows: :with keeps repeats, as a List; rel() refuses it"
        (let [r (q "[:find ?a :with ?e :where [?e :user/age ?a]]")]
          (is (instance? List (.rows r)))
          (is (= [[36] [36]] (vec (.rows r))))
          (is (shape-error? "rel()" "rows()" #(.rel r)))))
      (testing "maps: :keys rows"
        (let [r (q "[:find ?n ?a :keys name age :where [?e :user/name ?n] [?e :user/age ?a]]")]
          (is (= #{{:name "Ada" :age 36} {:name "Bob" :age 36}} (set (.maps r))))
          (is (shape-error? "rel()" "maps()" #(.rel r)))
          (is (shape-error? "rows()" "maps()" #(.rows r)))))
      (testing "coll, scalar, tuple"
        (is (= #{"Ada" "Bob"} (set (.coll (q "[:find [?n ...] :where [_ :user/name ?n]]")))))
        (is (= "Ada" (.scalar (q "[:find ?n . :in $ ?m :where [?e :user/email ?m] [?e :user/name ?n]]"
                                 "ada@example.com"))))
        (is (nil? (.scalar (q "[:find ?n . :in $ ?m :where [?e :user/email ?m] [?e :user/name ?n]]"
                              "nobody@example.com"))))
        (is (= ["Ada" 36] (.tuple (q "[:find [?n ?a] :in $ ?m :where [?e :user/email ?m]
                                        [?e :user/name ?n] [?e :user/age ?a]]" "ada@example.com"))))
        (is (nil? (.tuple (q "[:find [?n ?a] :where [?e :user/name ?n] [?e :user/age ?a] [(> ?a 99)]]")))))
      (testing "each accessor refuses the other shapes, naming the one that fits"
        (let [rel (q "[:find ?n :where [_ :user/name ?n]]")
              coll (q "[:find [?n ...] :where [_ :user/name ?n]]")
              scalar (q "[:find ?n . :where [_ :user/name ?n]]")
              tuple (q "[:find [?n ?a] :where [?e :user/name ?n] [?e :user/age ?a]]")]
          (are [accessor fits f] (shape-error? accessor fits f)
            "coll()" "rel() or rows()" #(.coll rel)
            "scalar()" "rel() or rows()" #(.scalar rel)
            "tuple()" "rel() or rows()" #(.tuple rel)
            "maps()" "rel() or rows()" #(.maps rel)
            "rel()" "coll()" #(.rel coll)
            "rows()" "coll()" #(.rows coll)
            "tuple()" "coll()" #(.tuple coll)
            "rel()" "scalar()" #(.rel scalar)
            "coll()" "scalar()" #(.coll scalar)
            "tuple()" "scalar()" #(.tuple scalar)
            "rel()" "tuple()" #(.rel tuple)
            "scalar()" "tuple()" #(.scalar tuple))))
      (testing "the untyped q is unchanged"
        (is (= #{["Ada"] ["Bob"]} (.q db "[:find ?n :where [_ :user/name ?n]]" (object-array 0))))))))

(deftest prepared-queries
  (each-java-store [conn]
    (let [db (.db conn)
          pq (Datalith/prepare "[:find ?n . :in $ ?m :where [?e :user/email ?m] [?e :user/name ?n]]")
          by-age (Datalith/prepare '[:find ?n :in $ ?a :where [?e :user/age ?a] [?e :user/name ?n]])]
      (is (= "Ada" (.scalar (.run pq db (object-array ["ada@example.com"])))))
      (is (= "Bob" (.scalar (.run pq db (object-array ["bob@example.com"])))))
      (is (= #{["Ada"] ["Bob"]} (.rel (.run by-age db (object-array [36])))))
      (testing "the same answer as the string query, on any database value"
        (.transact conn "[[:db/add [:user/email \"ada@example.com\"] :user/name \"Ada L.\"]]")
        (let [now (.db conn)]
          (is (= "Ada L." (.scalar (.run pq now (object-array ["ada@example.com"])))))
          (is (= "Ada" (.scalar (.run pq db (object-array ["ada@example.com"])))))
          (doseq [d [db now (.history now) (.asOf now (.basisT db))]]
            (is (= (.q ^Database d "[:find ?n :in $ ?a :where [?e :user/age ?a] [?e :user/name ?n]]"
                       (object-array [36]))
                   (.rel (.run by-age d (object-array [36])))))))))))

(deftest keyword-free-pulls-and-lookup-refs
  (each-java-store [conn]
    (let [db (.db conn)
          ada-id (.q db "[:find ?e . :where [?e :user/email \"ada@example.com\"]]" (object-array 0))
          refs [ada-id
                (email-ref "ada@example.com")
                (List/of "user/email" "ada@example.com")
                (object-array [(Datalith/kw "user/email") "ada@example.com"])
                (object-array ["user/email" "ada@example.com"])
                (object-array [":user/email" "ada@example.com"])]]
      (testing "a lookup ref as a List or an Object[], attribute as Keyword or String (in datoms too)"
        (doseq [r refs]
          (is (= "Ada" (get (.pull db "[:user/name]" r) (Datalith/kw "user/name"))))
          (is (= "Ada" (get (.pullNamed db "[:user/name]" r) "user/name")))
          (is (= "Ada" (get (.entity db r) :user/name)))
          (is (= 4 (count (.datoms db "eavt" (object-array [r])))))   ; email, name, age, status
          (is (= 1 (count (.datoms db "vaet" (object-array [r (Datalith/kw "user/friend")])))))
          (is (= 1 (count (.datoms db "vaet" (object-array [r "user/friend"])))))
          (is (= 1 (count (.datoms db "eavt" (object-array [r "user/name"])))))
          (is (= ["Ada" "Ada"] (map #(get % "user/name")
                                    (.pullManyNamed db "[:user/name]" [r (email-ref "ada@example.com")]))))))
      (testing "pullNamed: \"ns/name\" keys and keyword values, nested too, no Keyword anywhere"
        (let [m (.pullNamed db "[:user/name {:user/status [:db/ident]} {:user/friend [:user/email]}]"
                            (email-ref "bob@example.com"))
              ada (.pullNamed db "[* {:user/status [:db/ident]}]" (object-array ["user/email" "ada@example.com"]))]
          (is (= {"user/name" "Bob" "user/friend" [{"user/email" "ada@example.com"}]} m))
          (is (= {"db/ident" "status/active"} (get ada "user/status")))
          (is (instance? Map (first (get m "user/friend"))))
          (is (not-any? #(or (keyword? %) (symbol? %)) (tree-seq coll? seq (concat m ada))))))
      (testing "nothing to pull: null, as pull gives"
        (is (nil? (.pullNamed db "[:user/name]" (email-ref "nobody@example.com"))))
        (is (= [nil] (vec (.pullManyNamed db "[:user/name]" [(email-ref "nobody@example.com")]))))))))

(deftest entid-and-ident
  (each-java-store [conn]
    (let [db (.db conn)
          ada-id (.q db "[:find ?e . :where [?e :user/email \"ada@example.com\"]]" (object-array 0))
          status-id (.q db "[:find ?e . :where [?e :db/ident :status/active]]" (object-array 0))]
      (testing "entid: an id, an ident, a lookup ref (List or Object[]) name their entity"
        (is (= ada-id (.entid db ada-id) (.entid db (email-ref "ada@example.com"))
               (.entid db (object-array ["user/email" "ada@example.com"]))))
        (is (= status-id (.entid db (Datalith/kw "status/active")))))
      (testing "ident: the inverse for attributes and enums; null for an entity without one"
        (is (= :status/active (.ident db status-id) (.ident db (Datalith/kw "status/active"))))
        (is (= :user/email (.ident db (.entid db (Datalith/kw "user/email")))))
        (is (nil? (.ident db ada-id))))
      (testing "nothing named: null"
        (is (nil? (.entid db (Datalith/kw "status/gone"))))
        (is (nil? (.entid db (email-ref "nobody@example.com"))))
        (is (nil? (.ident db (email-ref "nobody@example.com")))))
      (testing "not an entity: a DatalithException"
        (is (= "db/invalid-entity" (some-> (failure #(.entid db 2.5)) .category)))
        (is (= "db/invalid-lookup-ref"
               (some-> (failure #(.ident db (object-array ["user/age" 36]))) .category)))))))

(deftest javadoc-covers-the-java-api
  (testing "javadoc -Xdoclint:all over datalith.api reports nothing (every public type and method
            documented, every @param and @return given, every reference resolves)"
    (let [tool (ToolProvider/getSystemDocumentationTool)
          out (ByteArrayOutputStream.)
          dir (tu/temp-dir)
          rc (try (.run tool nil out out
                        (into-array String ["-Xdoclint:all" "-Werror" "-quiet"
                                            "-d" (.getPath dir)
                                            "-sourcepath" "src/java"
                                            "-classpath" (System/getProperty "java.class.path")
                                            "datalith.api"]))
                  (finally (tu/delete-tree dir)))]
      (is (= 0 rc) (str out)))))

(deftest database-of-a-core-value
  (each-java-store [conn]
    (let [core-db (.unwrap (.db conn))
          db (Database/of core-db)]
      (is (identical? core-db (.unwrap db)))
      (is (= "Ada" (.scalar (.query db "[:find ?n . :where [?e :user/email \"ada@example.com\"] [?e :user/name ?n]]"
                                    (object-array 0)))))
      (is (= "api/null-argument" (.category (failure #(Database/of nil))))))))

;; ---------------------------------------------------------------- valid time (h-valid, #19)

(deftest valid-time-views
  (each-java-store [conn]
    (let [before (.db conn)
          ada (.q before "[:find ?e . :where [?e :user/email \"ada@example.com\"]]" (object-array 0))
          _ (.transact conn "[[:db/add [:user/email \"ada@example.com\"] :user/name \"Ada Lovelace\"
                              {:db/valid-from #inst \"2020-01-01\" :db/valid-to #inst \"2021-01-01\"}]]")
          db (.db conn)
          name-at (fn [^Database d] (get (.pullNamed d "[:user/name]" ada) "user/name"))]
      (is (= "Ada Lovelace" (name-at db)) "the plain value: the latest assertion")
      (is (= "Ada Lovelace" (name-at (.validAt db #inst "2020-06-01"))))
      (is (= "Ada" (name-at (.validAt db (java.util.Date.)))))
      (is (nil? (name-at (.validAt db #inst "2019-06-01"))))
      (is (nil? (name-at (.validAt (.asOf db (.basisT before)) #inst "2020-06-01")))
          "as of before the correction, nothing was known of 2020")
      (is (= "db/invalid-valid-time" (.category (failure #(.validAt db "2020"))))))))

;; ---------------------------------------------------------------- valid time in queries (h-valid3, #19)

(deftest valid-time-intervals-and-query-forms
  (each-java-store [conn]
    (let [ada (.q (.db conn) "[:find ?e . :where [?e :user/email \"ada@example.com\"]]" (object-array 0))
          _ (.transact conn "[[:db/add [:user/email \"ada@example.com\"] :user/name \"Ada Lovelace\"
                              {:db/valid-from #inst \"2020-01-01\" :db/valid-to #inst \"2021-01-01\"}]]")
          db (.db conn)
          open-end (java.util.Date/from Database/END_OF_TIME)]
      (testing "validIntervals, of every entity and of one (by id or lookup ref)"
        (let [versions (.validIntervals db "user/name")
              of-ada (filter #(= ada (first %)) versions)]
          (is (= [["Ada Lovelace" #inst "2020-01-01" #inst "2021-01-01"]]
                 (map #(subvec (vec %) 1 4) (filter #(= "Ada Lovelace" (second %)) of-ada))))
          (is (= (map #(subvec (vec %) 1) of-ada)
                 (map vec (.validIntervals db ada "user/name"))
                 (map vec (.validIntervals db ["user/email" "ada@example.com"] (Datalith/kw "user/name")))))
          (is (some #(= open-end (nth % 2)) (.validIntervals db ada "user/name")) "an open end")
          (is (= #inst "9999-12-31T23:59:59.999-00:00" open-end) "the end of time (h-validend)")
          (is (= "db/invalid-valid-time" (.category (failure #(.validAt db open-end))))
              "valid-at takes instants before it")
          (is (= [] (.validIntervals db "no/such") (.validIntervals db 123456789 "user/name")))
          (are [f category] (= category (.category (failure f)))
            #(.validIntervals db 42) "db/invalid-attribute"
            #(.validIntervals (.validAt db #inst "2020-06-01") "user/name") "db/valid-at-view"
            #(.validIntervals db nil "user/name") "api/null-argument")))
      (testing "the :valid-at query section, an instant or :any-valid-time, the same as validAt"
        (let [name-q "[:find ?n . :in $ ?e ?t :valid-at ?t :where [?e :user/name ?n]]"]
          (is (= "Ada Lovelace" (.q db name-q (object-array [ada #inst "2020-06-01"]))
                 (.q (.validAt db #inst "2020-06-01") "[:find ?n . :in $ ?e :where [?e :user/name ?n]]"
                     (object-array [ada]))))
          (is (= "Ada" (.scalar (.query db name-q (object-array [ada (java.util.Date.)])))))
          (is (= #{["Ada Lovelace"] ["Ada"]}
                 (set (.q db "[:find ?n :in $ ?e :valid-at :any-valid-time :where [?e :user/name ?n]]"
                          (object-array [ada])))))
          (is (= #{["Ada Lovelace" #inst "2020-01-01"]}
                 (set (.q db "[:find ?n ?from :in $ $vt ?e :valid-at $vt :any-valid-time
                              :where [$vt ?e :user/name ?n ?from ?to] [(< ?from #inst \"2022-01-01\")]]"
                          (object-array [db ada]))))
              "a second source given as a Database, read at any valid time")
          (is (= "parser/valid-at" (.category (failure #(.q db "[:find ?n :in $ :valid-at \"x\" :where [_ :user/name ?n]]"
                                                           (object-array 0)))))))))))
