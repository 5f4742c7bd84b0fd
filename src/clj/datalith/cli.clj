(ns datalith.cli
  "The datalith command line (`lein run -m datalith.cli COMMAND ...`, or
  `bin/demo`):

    demo [DIR]                 an LMDB database in DIR (default ./datalith-demo):
                               loads the 100K issue tracker if it is empty, then
                               runs Q1-Q4, a pull and an as-of query with timings
    import DIR FILE.edn [--resume]
                               imports the file's tx-data (tx-data, vectors of them, or
                               export records) with d/import!, each one a transaction, with
                               a progress line (creates DIR); --resume skips the export
                               records DIR has (a rerun of an import that stopped)
    export DIR FILE.edn        writes DIR's history as export records, which import reads
                               back into an empty directory as an equal database
    query DIR [--as-of T] [--pretty] 'EDN' [ARG...]
                               prints the result of a query (ARGs: EDN inputs after the
                               db), on one line unless --pretty; --as-of T queries the
                               database as of T (a t, a tx id or an #inst)
    transact DIR [--pretty] 'EDN'
                               runs one transaction (creates DIR), prints basis-t,
                               datoms and tempids
    stats DIR                  basis-t, datoms per attribute, file size
    verify DIR                 checks DIR for damage (every index against the checksummed
                               log); prints the report, exits with 2 when it finds problems
    repair DIR NEWDIR          rebuilds DIR's database from its log into NEWDIR (DIR is only
                               read), then verifies NEWDIR; also upgrades an old format
    backup DIR DEST [--compact]
                               a consistent copy of DIR's database (open or not, in other
                               processes) into DEST, a new or empty directory; --compact
                               leaves LMDB's free pages out
    --help                     the usage, on stdout

  `run` is the command line as a function that returns the exit status: 0, 1 for a
  usage error or a failure (one line on stderr: the message, then the ex-data of an
  ex-info that is not a usage error), 2 when verify or repair find problems."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.pprint :as pprint]
            [datalith.core :as d]
            [datalith.progress :as progress]
            [datalith.workload :as w])
  (:import (java.io File FileInputStream)))

(set! *warn-on-reflection* true)

(def ^:private usage
  "usage: datalith COMMAND ...
  demo [DIR]                 load the 100K issue tracker into DIR (default ./datalith-demo) if empty,
                             then run Q1-Q4, a pull and an as-of query with timings
  import DIR FILE.edn [--resume]
                             import the file's tx-data (or vectors of it, or export records),
                             each a transaction; DIR is created if needed; --resume skips the
                             export records DIR has
  export DIR FILE.edn        write DIR's history as export records (import reads them back)
  query DIR [--as-of T] [--pretty] 'EDN' [ARG...]
                             print a query's result (one line; --pretty: pretty-printed);
                             ARGs are EDN inputs after the db; --as-of T: as of t, tx id or #inst
  transact DIR [--pretty] 'EDN'
                             run one transaction (DIR is created if needed)
  stats DIR                  basis-t, datoms per attribute, file size
  verify DIR                 check DIR for damage; exit status 2 when it finds problems
  repair DIR NEWDIR          rebuild DIR's database from its log into NEWDIR, then verify it
  backup DIR DEST [--compact]
                             copy DIR's database (open or not) into DEST, a new or empty directory;
                             --compact leaves LMDB's free pages out (of a database verify passes)
  --help                     this text")

(defn- fail! [msg & [data]]
  (throw (ex-info msg (merge {:error :cli/usage} data))))

(defn- existing-dir ^File [dir]
  (let [f (io/file dir)]
    (when-not (.isDirectory f)
      (fail! (str "No database directory " dir)))
    f))

(defn- read-edn [s what]
  (try (edn/read-string s)
       (catch Exception e (fail! (str "Cannot read the " what " as EDN: " (ex-message e))))))

(defn- ms [^long nanos] (/ nanos 1e6))

(defn- timed
  "[result first-call-ms median-ms-of-n-more-calls] of calling f."
  [f n]
  (let [t0 (System/nanoTime)
        r (f)
        first-ms (ms (- (System/nanoTime) t0))
        times (sort (for [_ (range n)]
                      (let [t (System/nanoTime)] (f) (- (System/nanoTime) t))))]
    [r first-ms (ms (nth times (quot n 2)))]))

;; ---------------------------------------------------------------- demo

(defn- transact-fn [conn]
  (fn [tx-data]
    (let [r (d/transact! conn tx-data)]
      {:t (d/basis-t (:db-after r)) :tempids (:tempids r)})))

(defn- show [title f & {:keys [rows] :or {rows 5}}]
  (let [[r first-ms median-ms] (timed f 50)]
    (println)
    (println (format "%s   (first run %.3f ms, then median %.3f ms of 50)" title first-ms median-ms))
    (cond
      (map? r) (pprint/pprint r)
      (coll? r) (do (doseq [row (take rows (sort r))] (println " " (pr-str row)))
                    (when (> (count r) rows) (println (format "  ... %,d rows in all" (count r)))))
      :else (prn r))
    r))

(defn demo
  "The README's demo: see the namespace docstring."
  [dir]
  (let [dir (or dir "datalith-demo")]
    (with-open [conn (d/connect dir {:schema w/schema})]
      (if (seq (d/datoms (d/db conn) :aevt :issue/title))
        (println (format "Reusing the database in %s (basis-t %d)." dir (d/basis-t (d/db conn))))
        (let [data (w/generate :100k)
              _ (println (format "Loading the 100K issue tracker (%,d datoms, seed %d) into %s"
                                 (:datoms data) w/seed dir))
              {:keys [load-ns]} (w/load! data {:transact (transact-fn conn)
                                               :progress (progress/bar "load")})]
          (println (format "Loaded in %.1f s: %,.0f datoms/s (durable, batches of 1000 issues)"
                           (/ load-ns 1e9) (/ (:datoms data) (/ load-ns 1e9))))))
      (let [db (d/db conn)
            email (w/email 42)
            _ (show (str "Q1 point lookup: " (pr-str (w/q1 email))) #(d/q (w/q1 email) db))
            q2 (show (str "Q2 ref traversal: issues assigned to " email)
                     #(d/q w/q2 db email))
            issue (ffirst (sort q2))
            mid-t (quot (d/basis-t db) 2)]
        (show "Q3 aggregate: issues per state" #(d/q w/q3 db))
        (show "Q4 predicate: open issues with priority >= 4" #(d/q w/q4 db))
        (when issue
          (show (str "pull [*] of issue " issue) #(d/pull db '[*] issue))
          (show (str "pull of issue " issue " with its assignee")
                #(d/pull db [:issue/title :issue/state {:issue/assignee [:user/email :user/name]}]
                         issue)))
        (show (format "as-of t=%d (half way through the history): Q2 for %s" mid-t email)
              #(d/q w/q2 (d/as-of db mid-t) email))
        (println)
        (println (format "basis-t %d; the data stays in %s (run again to reuse it)."
                         (d/basis-t db) dir))))))

;; ---------------------------------------------------------------- import and export

(defn import-file
  "Imports FILE.edn (tx-data, vectors of tx-data, or `export` records) into the database in
  dir with d/import!, a progress line on stderr; --resume skips the records it has."
  [dir file opts]
  (let [f (io/file file)]
    (when-not (.isFile f)
      (fail! (str "No such file " file)))
    (with-open [in (FileInputStream. f)
                conn (d/connect dir)]
      (let [channel (.getChannel in)
            size (max 1 (.length f))
            line (progress/import-line "import" #(/ (double (.position channel)) size))
            r (try (d/import! conn (io/reader in)
                               {:progress line :resume? (boolean (:resume opts))})
                   (catch clojure.lang.ExceptionInfo e
                     (line)
                     (if (= :import/invalid-source (:error (ex-data e)))
                       (fail! (str "Cannot read " file " as EDN: " (:cause (ex-data e)))
                              (select-keys (ex-data e) [:import/chunk]))
                       (throw e))))]
        (line)
        (println (format "Imported %,d transactions, %,d datoms (%,d skipped) in %.1f s; basis-t %d"
                         (:transactions r) (:datoms r) (:skipped r) (/ (:elapsed-ms r) 1000.0)
                         (d/basis-t (d/db conn))))))))

(defn- export-file
  "Writes the history of the database in dir to FILE.edn as export records."
  [dir file]
  (existing-dir dir)
  (with-open [conn (d/connect dir)]
    (let [start (System/nanoTime)
          r (d/export conn file)]
      (println (format "Exported %,d transactions, %,d forms in %.1f s; basis-t %s"
                       (:transactions r) (:datoms r) (/ (- (System/nanoTime) start) 1e9)
                       (:t-last r))))))

;; ---------------------------------------------------------------- the others

(defn- print-result
  "Prints x: on one line with `prn` (fast for large results), or with `pprint` when `pretty?`."
  [x pretty?]
  (binding [*print-namespace-maps* false]
    (if pretty? (pprint/pprint x) (prn x))))

(defn query
  "Prints the result of the query text on the database in dir. Options: :as-of (a t, tx id
  or Date: the database as of then), :pretty (pretty-print the result)."
  ([dir query-text args] (query dir query-text args {}))
  ([dir query-text args {:keys [as-of pretty]}]
   (with-open [conn (d/connect (existing-dir dir))]
     (let [db (cond-> (d/db conn) (some? as-of) (d/as-of as-of))]
       (print-result (apply d/q (read-edn query-text "query") db
                            (map #(read-edn % "query input") args))
                     pretty)))))

(defn transact
  "Runs the tx-data text on the database in dir (created if needed), printing basis-t, the
  number of datoms and the tempids (pretty-printed when :pretty)."
  ([dir tx-text] (transact dir tx-text {}))
  ([dir tx-text {:keys [pretty]}]
   (let [tx-data (read-edn tx-text "tx-data")]
     (with-open [conn (d/connect dir)]
       (let [r (d/transact! conn tx-data)]
         (print-result {:basis-t (d/basis-t (:db-after r))
                        :datoms (count (:tx-data r))
                        :tempids (:tempids r)}
                       pretty))))))

(defn stats
  "Prints basis-t, the datom count of each attribute and the size of the files."
  [dir]
  (let [f (existing-dir dir)]
    (with-open [conn (d/connect f)]
      (let [db (d/db conn)
            counts (for [attr (sort (keys (d/schema db)))
                         :let [n (count (d/datoms db :aevt attr))]
                         :when (pos? n)]
                     [attr n])
            bytes (reduce + (map #(.length ^File %) (filter #(.isFile ^File %) (file-seq f))))]
        (println (format "basis-t %d" (d/basis-t db)))
        (println (format "%,d datoms" (reduce + (map second counts))))
        (doseq [[attr n] counts]
          (println (format "  %-28s %,12d" attr n)))
        (println (format "files: %,.1f MiB in %s" (/ bytes 1048576.0) dir))))))

(defn- summary [{:keys [ok? t problem-count checks]}]
  (let [{:keys [records datoms checksums]} (:log checks)]
    (if ok?
      (format "ok: t %d, %,d log records (checksums %s), %,d datoms in the log, no problems"
              t records (name checksums) datoms)
      (format "DAMAGED: %,d problem(s); the log has %,d readable records" problem-count records))))

(defn verify
  "Prints the verify report of the database in dir; returns it."
  [dir]
  (let [report (d/verify (existing-dir dir))]
    (println (summary report))
    (pprint/pprint (:checks report))
    (doseq [p (:problems report)]
      (prn p))
    (when (< (count (:problems report)) (:problem-count report))
      (println (format "... %,d more" (- (:problem-count report) (count (:problems report))))))
    report))

(defn repair
  "Rebuilds the database in dir from its log into new-dir and verifies the result; returns
  the verify report of new-dir."
  [dir new-dir]
  (let [r (d/rebuild-indexes (existing-dir dir) new-dir)]
    (println (format "rebuilt %s into %s: t %d, %,d records, %,d datoms (source format %d, checksums %s)"
                     dir new-dir (:t r) (:records r) (:datoms r) (:source-format r)
                     (name (:checksums r))))
    (let [report (d/verify new-dir)]
      (println (summary report))
      report)))

(defn backup
  "Copies the database in dir into dest (see datalith.core/backup); prints what it wrote."
  ([dir dest] (backup dir dest {}))
  ([dir dest {:keys [compact]}]
   (let [{:keys [t bytes]} (d/backup (existing-dir dir) dest {:compact (boolean compact)})]
     (println (format "backed up %s (t %d) into %s: %,.1f MiB%s"
                      dir t dest (/ bytes 1048576.0) (if compact ", compacted" ""))))))

(defn- options
  "[opts positional-args] of args: --pretty, --compact and --as-of T taken out wherever
  they are."
  [args]
  (loop [[a & more :as args] args opts {} positional []]
    (cond
      (empty? args) [opts positional]
      (= "--pretty" a) (recur more (assoc opts :pretty true) positional)
      (= "--compact" a) (recur more (assoc opts :compact true) positional)
      (= "--resume" a) (recur more (assoc opts :resume true) positional)
      (= "--as-of" a) (if-let [t (first more)]
                        (recur (rest more)
                               (assoc opts :as-of (let [v (read-edn t "--as-of point")]
                                                    (if (or (integer? v) (inst? v))
                                                      v
                                                      (fail! (str "--as-of takes a t, a tx id or an #inst, not " t)))))
                               positional)
                        (fail! "--as-of needs a value: a t, a tx id or an #inst"))
      :else (recur more opts (conj positional a)))))

(defn- command
  "Runs one command; returns its exit status."
  [cmd more]
  (let [[opts more] (options more)]
    (case cmd
      ("--help" "-h" "help") (do (println usage) 0)
      "demo" (do (demo (first more)) 0)
      "import" (let [[dir file] more]
                 (when-not (and dir file) (fail! usage))
                 (import-file dir file opts)
                 0)
      "export" (let [[dir file] more]
                 (when-not (and dir file) (fail! usage))
                 (export-file dir file)
                 0)
      "query" (let [[dir q & inputs] more]
                (when-not (and dir q) (fail! usage))
                (query dir q inputs opts)
                0)
      "transact" (let [[dir tx] more]
                   (when-not (and dir tx) (fail! usage))
                   (transact dir tx opts)
                   0)
      "backup" (let [[dir dest] more]
                 (when-not (and dir dest) (fail! usage))
                 (backup dir dest opts)
                 0)
      "stats" (if-let [dir (first more)] (do (stats dir) 0) (fail! usage))
      "verify" (if-let [dir (first more)]
                 (if (:ok? (verify dir)) 0 2)
                 (fail! usage))
      "repair" (let [[dir new-dir] more]
                 (when-not (and dir new-dir) (fail! usage))
                 (if (:ok? (repair dir new-dir)) 0 2))
      (fail! usage))))

(defn run
  "Runs a command line (the strings after `datalith`), printing to *out* and *err*; returns
  the exit status: 0; 1 for a usage error or a failure, told in one line on *err* (with
  the ex-data of an ex-info that is not a usage error); 2 when verify or repair find
  problems."
  [args]
  (let [[cmd & more] args]
    (try
      (command cmd more)
      (catch clojure.lang.ExceptionInfo e
        (binding [*out* *err*]
          (println (ex-message e))
          (when-not (= :cli/usage (:error (ex-data e)))
            (prn (ex-data e))))
        1)
      (catch Exception e
        (binding [*out* *err*]
          (println (str "error: " (or (ex-message e) (.getName (class e))))))
        1))))

(defn -main [& args]
  (let [status (run args)]
    (flush)
    (shutdown-agents)
    (System/exit status)))
