(ns datalith.bench.sqlite
  "The EAV baseline of the mentat benchmarks on SQLite (xerial sqlite-jdbc): a
  plain (e, a, v, tx) table per value type (text: strings and keywords; long:
  longs and instants; ref) with EAVT, AEVT and AVET indexes, a twin table of
  retracted values with their retraction tx (rtx) for as-of, and hand-written
  SQL per query. WAL journal, synchronous=FULL (durable commits), 64 MiB page
  cache, 1 GiB mmap; ANALYZE after the load. Concurrent writers (tx-single-Nt)
  each have their own connection with synchronous=NORMAL, SQLite's best setting
  for many writers in WAL mode: a commit is not synced (only checkpoints are),
  so it is weaker than durable."
  (:require [clojure.string :as str]
            [datalith.bench.system :as system]
            [datalith.workload :as workload])
  (:import (java.io File)
           (java.sql Connection DriverManager PreparedStatement ResultSet Statement)
           (java.util Date HashMap Map)))

(set! *warn-on-reflection* true)

;; ident -> [attribute id, value kind]
(def ^:private attrs
  {:user/email [1 :string] :user/name [2 :string] :label/name [3 :string]
   :issue/title [4 :string] :issue/state [5 :keyword] :issue/priority [6 :long]
   :issue/assignee [7 :ref] :issue/reporter [8 :ref] :issue/created-at [9 :instant]
   :issue/labels [10 :ref]})

(def ^:private many #{:issue/labels})

(def ^:private ident-of (into {} (map (fn [[k [id _]]] [id k])) attrs))
(def ^:private kind-of (into {} (map (fn [[_ [id kind]]] [id kind])) attrs))

(defn- aid ^long [k] (long (first (attrs k))))

(defn- table [kind]
  (case kind (:string :keyword) "text" (:long :instant) "long" :ref "ref"))

(defn- encode [kind v]
  (case kind
    :keyword (subs (str v) 1)
    :instant (.getTime ^Date v)
    v))

(defn- decode [kind v]
  (case kind
    :keyword (keyword v)
    :instant (Date. (long v))
    :ref {:db/id v}
    v))

(def ^:private ddl
  (concat
   ["PRAGMA journal_mode=WAL"
    "CREATE TABLE attrs (id INTEGER PRIMARY KEY, ident TEXT NOT NULL UNIQUE)"]
   (for [[t vtype] [["text" "TEXT"] ["long" "INTEGER"] ["ref" "INTEGER"]]
         stmt [(str "CREATE TABLE eav_" t " (e INTEGER NOT NULL, a INTEGER NOT NULL, v " vtype
                    " NOT NULL, tx INTEGER NOT NULL)")
               (str "CREATE INDEX eav_" t "_eavt ON eav_" t " (e, a, v, tx)")
               (str "CREATE INDEX eav_" t "_aevt ON eav_" t " (a, e, v, tx)")
               (str "CREATE INDEX eav_" t "_avet ON eav_" t " (a, v, e, tx)")
               (str "CREATE TABLE hist_" t " (e INTEGER NOT NULL, a INTEGER NOT NULL, v " vtype
                    " NOT NULL, tx INTEGER NOT NULL, rtx INTEGER NOT NULL)")
               (str "CREATE INDEX hist_" t "_eavt ON hist_" t " (e, a, v, tx, rtx)")
               (str "CREATE INDEX hist_" t "_avet ON hist_" t " (a, v, e, tx, rtx)")]]
     stmt)
   (for [[ident [id _]] (sort-by (comp first val) attrs)]
     (str "INSERT INTO attrs VALUES (" id ", '" (subs (str ident) 1) "')"))))

(defn- connect ^Connection [^File file]
  (let [c (DriverManager/getConnection (str "jdbc:sqlite:" (.getAbsolutePath file)))]
    (with-open [s (.createStatement c)]
      (doseq [p ["PRAGMA synchronous=FULL" "PRAGMA cache_size=-65536"
                 "PRAGMA mmap_size=1073741824" "PRAGMA temp_store=MEMORY"]]
        (.execute s p)))
    c))

(defn- exec! [^Connection c sql]
  (with-open [s (.createStatement c)] (.execute s ^String sql)))

;; ---------------------------------------------------------------- writes

(defn- writer
  "Prepared insert/replace statements of a connection: {[op table] ps}."
  [^Connection c]
  (into {}
        (for [t ["text" "long" "ref"]
              [op sql] {:insert (str "INSERT INTO eav_" t " (e, a, v, tx) VALUES (?, ?, ?, ?)")
                        :retire (str "INSERT INTO hist_" t " (e, a, v, tx, rtx)"
                                     " SELECT e, a, v, tx, ? FROM eav_" t " WHERE e = ? AND a = ?")
                        :delete (str "DELETE FROM eav_" t " WHERE e = ? AND a = ?")}]
          [[op t] (.prepareStatement c sql)])))

(defn- concurrent-writer
  "A writer connection of its own for one of several threads: synchronous=NORMAL
  (WAL: commits are not synced), waiting up to 60 s for the other writers' lock;
  sharing the entity counter of `w`."
  [^File file w]
  (let [c (connect file)]
    (exec! c "PRAGMA synchronous=NORMAL")
    (exec! c "PRAGMA busy_timeout=60000")
    (.setAutoCommit c false)
    {:conn c :ps (writer c) :next-e (:next-e w)}))

(defn- insert! [ps e a kind v tx]
  (let [^PreparedStatement p (ps [:insert (table kind)])
        v (encode kind v)]
    (.setLong p 1 (long e))
    (.setLong p 2 (long a))
    (if (string? v) (.setString p 3 v) (.setLong p 3 (long v)))
    (.setLong p 4 (long tx))
    (.addBatch p)))

(defn- replace! [ps e a kind v tx]
  (let [t (table kind)
        ^PreparedStatement retire (ps [:retire t])
        ^PreparedStatement delete (ps [:delete t])]
    (doseq [^PreparedStatement p (vals ps)] (.executeBatch p))
    (.setLong retire 1 (long tx)) (.setLong retire 2 (long e)) (.setLong retire 3 (long a))
    (.executeUpdate retire)
    (.setLong delete 1 (long e)) (.setLong delete 2 (long a))
    (.executeUpdate delete)
    (insert! ps e a kind v tx)))

(defn- transact!
  "Writes tx-data (entity maps of new entities, [:db/add e a v] with card-one
  a) in one transaction numbered t; returns {:t t :tempids {tempid e}}."
  [{:keys [^Connection conn ps next-e]} tx-data t]
  (let [tempids (HashMap.)
        resolve (fn [id] (if (string? id)
                           (or (.get tempids id)
                               (let [e (swap! next-e inc)] (.put tempids id e) e))
                           id))]
    (doseq [item tx-data]
      (if (map? item)
        (let [e (resolve (:db/id item))]
          (doseq [[k v] (dissoc item :db/id)
                  :let [[a kind] (attrs k)]
                  v (if (many k) v [v])]
            (insert! ps e a kind v t)))
        (let [[_ e k v] item
              [a kind] (attrs k)]
          (replace! ps (resolve e) a kind v t))))
    (doseq [^PreparedStatement p (vals ps)] (.executeBatch p))
    (.commit conn)
    {:t t :tempids (into {} tempids)}))

;; ---------------------------------------------------------------- reads

(def ^:private sql
  {:q1-point "SELECT e.e, n.v FROM eav_text e JOIN eav_text n ON n.e = e.e AND n.a = 2
              WHERE e.a = 1 AND e.v = ?"
   :q2-ref "SELECT i.e, t.v, s.v FROM eav_text u
            JOIN eav_ref i ON i.a = 7 AND i.v = u.e
            JOIN eav_text t ON t.e = i.e AND t.a = 4
            JOIN eav_text s ON s.e = i.e AND s.a = 5
            WHERE u.a = 1 AND u.v = ?"
   :q3-aggregate "SELECT v, count(e) FROM eav_text WHERE a = 5 GROUP BY v"
   :q4-predicate "SELECT s.e, t.v, p.v FROM eav_text s
                  JOIN eav_long p ON p.e = s.e AND p.a = 6
                  JOIN eav_text t ON t.e = s.e AND t.a = 4
                  WHERE s.a = 5 AND s.v = 'state/open' AND p.v >= 4"
   :pull-text "SELECT a, v FROM eav_text WHERE e = ?"
   :pull-long "SELECT a, v FROM eav_long WHERE e = ?"
   :pull-ref "SELECT a, v FROM eav_ref WHERE e = ?"
   :nested-issue "SELECT a, v FROM eav_text WHERE e = ? AND a IN (4, 5)"
   :nested-assignee "SELECT v FROM eav_ref WHERE e = ? AND a = 7"
   :nested-user "SELECT a, v FROM eav_text WHERE e = ? AND a IN (1, 2)"
   :in-bindings (str "SELECT e.e, n.v FROM eav_text e JOIN eav_text n ON n.e = e.e AND n.a = 2"
                     " WHERE e.a = 1 AND e.v IN (" (str/join ", " (repeat 100 "?")) ")")
   ;; each value as of ?1: the current row asserted by then, or a retracted row live then
   :as-of-q2 "WITH u(e) AS (
                SELECT e FROM eav_text WHERE a = 1 AND v = ?2 AND tx <= ?1
                UNION ALL SELECT e FROM hist_text WHERE a = 1 AND v = ?2 AND tx <= ?1 AND rtx > ?1),
              i(e) AS (
                SELECT r.e FROM u JOIN eav_ref r ON r.a = 7 AND r.v = u.e AND r.tx <= ?1
                UNION ALL
                SELECT r.e FROM u JOIN hist_ref r ON r.a = 7 AND r.v = u.e AND r.tx <= ?1 AND r.rtx > ?1),
              x(e, title, state) AS (
                SELECT i.e,
                  coalesce((SELECT v FROM eav_text WHERE e = i.e AND a = 4 AND tx <= ?1),
                           (SELECT v FROM hist_text WHERE e = i.e AND a = 4 AND tx <= ?1 AND rtx > ?1)),
                  coalesce((SELECT v FROM eav_text WHERE e = i.e AND a = 5 AND tx <= ?1),
                           (SELECT v FROM hist_text WHERE e = i.e AND a = 5 AND tx <= ?1 AND rtx > ?1))
                FROM i)
              SELECT e, title, state FROM x WHERE title IS NOT NULL AND state IS NOT NULL"
   :since "SELECT e, v FROM eav_text WHERE a = 5 AND tx > ?"
   :top20-open-recent "SELECT s.e, c.v FROM eav_long c
                       JOIN eav_text s ON s.e = c.e AND s.a = 5
                       WHERE c.a = 9 AND s.v = 'state/open'
                       ORDER BY c.v DESC LIMIT 20"})

(defn- rows
  "The rows of `ps` (parameters set), each made by (f rs)."
  [^PreparedStatement ps f]
  (with-open [rs (.executeQuery ps)]
    (loop [out (transient [])]
      (if (.next rs)
        (recur (conj! out (f rs)))
        (persistent! out)))))

(defn- open-session [^File file]
  (let [c (connect file)]
    {:conn c :ps (into {} (for [[k s] sql] [k (.prepareStatement c ^String s)]))}))

(defn- pull-star [ps ^long e]
  (let [add (fn [m ^ResultSet rs]
              (let [a (.getLong rs 1)
                    ident (ident-of a)
                    kind (kind-of a)
                    v (decode kind (if (#{:long :instant :ref} kind) (.getLong rs 2) (.getString rs 2)))]
                (if (many ident)
                  (assoc! m ident (conj (get m ident []) v))
                  (assoc! m ident v))))
        read-into (fn [m k]
                    (let [^PreparedStatement p (ps k)]
                      (.setLong p 1 e)
                      (with-open [rs (.executeQuery p)]
                        (loop [m m] (if (.next rs) (recur (add m rs)) m)))))]
    (-> (transient {:db/id e})
        (read-into :pull-text) (read-into :pull-long) (read-into :pull-ref)
        persistent!)))

(defn- text-attrs [^PreparedStatement p ^long e]
  (.setLong p 1 e)
  (with-open [rs (.executeQuery p)]
    (loop [m (transient {})]
      (if (.next rs)
        (let [a (.getLong rs 1)]
          (recur (assoc! m (ident-of a) (decode (kind-of a) (.getString rs 2)))))
        (persistent! m)))))

(defn- pull-nested [ps ^long e]
  (let [m (text-attrs (ps :nested-issue) e)
        ^PreparedStatement p (ps :nested-assignee)
        _ (.setLong p 1 e)
        assignee (with-open [rs (.executeQuery p)] (when (.next rs) (.getLong rs 1)))]
    (cond-> m
      assignee (assoc :issue/assignee (text-attrs (ps :nested-user) assignee)))))

(defn- run [{:keys [ps]} ^Map ids since-t as-of-t op arg]
  (let [^PreparedStatement p (ps op)]
    (case op
      :q1-point (do (.setString p 1 (:email arg))
                    (rows p (fn [^ResultSet rs] [(.getLong rs 1) (.getString rs 2)])))
      :q1-param (let [^PreparedStatement p (ps :q1-point)]
                  (.setString p 1 arg)
                  (rows p (fn [^ResultSet rs] [(.getLong rs 1) (.getString rs 2)])))
      :q2-ref (do (.setString p 1 arg)
                  (rows p (fn [^ResultSet rs]
                            [(.getLong rs 1) (.getString rs 2) (keyword (.getString rs 3))])))
      :q3-aggregate (rows p (fn [^ResultSet rs] [(keyword (.getString rs 1)) (.getLong rs 2)]))
      :q4-predicate (rows p (fn [^ResultSet rs] [(.getLong rs 1) (.getString rs 2) (.getLong rs 3)]))
      :pull-star (pull-star ps (long (.get ids arg)))
      :pull-nested (pull-nested ps (long (.get ids arg)))
      :in-bindings (do (dorun (map-indexed (fn [i email] (.setString p (int (inc i)) ^String email))
                                           arg))
                       (rows p (fn [^ResultSet rs] [(.getLong rs 1) (.getString rs 2)])))
      :as-of-q2 (do (.setLong p 1 (long as-of-t))
                    (.setString p 2 arg)
                    (rows p (fn [^ResultSet rs]
                              [(.getLong rs 1) (.getString rs 2) (keyword (.getString rs 3))])))
      :since (do (.setLong p 1 (long since-t))
                 (rows p (fn [^ResultSet rs] [(.getLong rs 1) (keyword (.getString rs 2))])))
      :top20-open-recent (rows p (fn [^ResultSet rs] [(.getLong rs 1) (Date. (.getLong rs 2))])))))

(defn- close-session [{:keys [^Connection conn ps]}]
  (doseq [^PreparedStatement p (vals ps)] (.close p))
  (.close conn))

;; ---------------------------------------------------------------- system

(deftype Sqlite [^File dir state]
  system/BenchSystem
  (system-name [_] "sqlite")

  (load-data! [_ data opts]
    (system/delete-tree dir)
    (.mkdirs dir)
    (let [file (File. dir "eav.sqlite")
          conn (connect file)
          _ (doseq [s ddl] (exec! conn s))
          _ (.setAutoCommit conn false)
          w {:conn conn :ps (writer conn) :next-e (atom 0)}
          t (atom 0)
          result (workload/load! data (assoc opts :transact
                                             (fn [tx-data] (transact! w tx-data (swap! t inc)))))]
      (.setAutoCommit conn true)
      (exec! conn "ANALYZE")
      (.setAutoCommit conn false)
      (swap! state assoc :file file :writer w :t t :ids (:ids result))
      result))

  (prepare! [_ {:keys [as-of-t since-t]}]
    (swap! state assoc :as-of-t as-of-t :since-t since-t
           :main (open-session (:file @state))))

  (session [_] (open-session (:file @state)))
  (end-session [_ s] (close-session s))

  (run-op [_ session op arg]
    (let [{:keys [ids since-t as-of-t main]} @state]
      (run (or session main) ids since-t as-of-t op arg)))

  (transact-one! [_ n]
    (let [{:keys [writer t]} @state]
      (transact! writer [[:db/add "t" :issue/title (str "bench " n)]] (swap! t inc))))

  (writer [_] (concurrent-writer (:file @state) (:writer @state)))

  (end-writer [_ w]
    (doseq [^PreparedStatement p (vals (:ps w))] (.close p))
    (.close ^Connection (:conn w)))

  (transact-in! [_ w n]
    (transact! w [[:db/add "t" :issue/title (str "bench " n)]] (swap! (:t @state) inc)))

  (relax-sync! [_]
    (let [^Connection c (:conn (:writer @state))]
      (.setAutoCommit c true) ; the pragma cannot run inside a transaction
      (exec! c "PRAGMA synchronous=OFF")
      (.setAutoCommit c false))
    true)

  (close! [_]
    (let [{:keys [writer main]} @state]
      (when main (close-session main))
      (when writer
        (doseq [^PreparedStatement p (vals (:ps writer))] (.close p))
        (.close ^Connection (:conn writer))))
    (reset! state {})
    (system/delete-tree dir)))

(defn sqlite "The SQLite EAV baseline in `dir`." [^File dir] (->Sqlite dir (atom {})))
