(ns datalith.cli-test
  "The command line (datalith.cli): through `run`, its entry function, and in a child JVM
  where the exit status matters."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [are deftest is testing]]
            [datalith.child-jvm :as child]
            [datalith.cli :as cli]
            [datalith.test-util :as tu])
  (:import (java.io File StringWriter)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- run
  "{:status :out :err} of the command line args run through datalith.cli/run."
  [& args]
  (let [err (StringWriter.)
        status (atom nil)
        out (with-out-str (binding [*err* err] (reset! status (cli/run args))))]
    {:status @status :out out :err (str err)}))

(defn- lines [s] (vec (remove str/blank? (str/split-lines s))))

(defmacro ^:private with-dir
  "Runs body with `dir` bound to the path of a directory that does not exist yet, inside a
  temporary directory deleted afterwards."
  [[dir] & body]
  `(let [parent# (tu/temp-dir)
         ~dir (.getPath (io/file parent# "db"))]
     (try ~@body (finally (tu/delete-tree parent#)))))

(deftest help-is-the-usage-on-stdout
  (doseq [flag ["--help" "-h" "help"]]
    (let [{:keys [status out err]} (run flag)]
      (is (= 0 status) flag)
      (is (str/starts-with? out "usage: datalith COMMAND") flag)
      (is (str/includes? out "--as-of") flag)
      (is (= "" err) flag)))
  (testing "no command, or an unknown one: the usage on stderr, status 1"
    (doseq [args [[] ["frobnicate"]]]
      (let [{:keys [status out err]} (apply run args)]
        (is (= 1 status) (pr-str args))
        (is (= "" out))
        (is (str/starts-with? err "usage: datalith COMMAND"))))))

(deftest transact-creates-the-directory
  (with-dir [dir]
    (let [{:keys [status out err]} (run "transact" dir "[{:db/id \"a\" :user/name \"Ada\"}]")]
      (is (= 0 status) err)
      (is (.isDirectory (io/file dir)))
      (is (= 1 (count (lines out))) "one line unless --pretty")
      (is (= {:basis-t 1 :datoms 4} (dissoc (edn/read-string out) :tempids)))
      (is (contains? (:tempids (edn/read-string out)) "a")))
    (testing "bad tx-data: a one-line error, nothing written"
      (let [{:keys [status err]} (run "transact" dir "[{:user/name")]
        (is (= 1 status))
        (is (= 1 (count (lines err))) err)
        (is (str/starts-with? err "Cannot read the tx-data as EDN"))))
    (testing "a failed transaction: its message and ex-data, status 1"
      (let [{:keys [status err]} (run "transact" dir "[[:db/add \"x\" :user/name nil]]")]
        (is (= 1 status))
        (is (str/includes? err ":error :tx/"))))))

(deftest query-prints-one-line-unless-pretty-and-takes-as-of
  (with-dir [dir]
    (let [names (mapv #(str "user-" %) (range 40))]
      (is (= 0 (:status (run "transact" dir "[{:user/name \"Ada\"}]"))))
      (is (= 0 (:status (run "transact" dir (pr-str (mapv #(hash-map :user/name %) names))))))
      (let [q "[:find [?n ...] :where [_ :user/name ?n]]"
            plain (run "query" dir q)
            pretty (run "query" dir "--pretty" q)
            everyone (set (cons "Ada" names))]
        (is (= 0 (:status plain)) (:err plain))
        (is (= 1 (count (lines (:out plain)))) "prn: one line")
        (is (= everyone (set (edn/read-string (:out plain)))))
        (is (= 0 (:status pretty)) (:err pretty))
        (is (< 1 (count (lines (:out pretty)))) "pprint: wrapped")
        (is (= everyone (set (edn/read-string (:out pretty)))))
        (testing "--as-of T: t, tx id or #inst, before or after the query"
          (are [args] (= ["Ada"] (edn/read-string (:out (apply run "query" dir args))))
            ["--as-of" "1" q]
            [q "--as-of" "1"]
            ["--as-of" "13194139533313" q])
          (is (= everyone (set (edn/read-string (:out (run "query" dir "--as-of" "2" q)))))))
        (testing "inputs after the query"
          (is (= "#{[\"Ada\"]}\n"
                 (:out (run "query" dir "[:find ?n :in $ ?n :where [_ :user/name ?n]]" "\"Ada\"")))))
        (testing "bad --as-of: one line, status 1"
          (doseq [args [["--as-of" "soon" q] [q "--as-of"]]]
            (let [{:keys [status out err]} (apply run "query" dir args)]
              (is (= 1 status) (pr-str args))
              (is (= "" out))
              (is (= 1 (count (lines err))) err)
              (is (str/includes? err "--as-of") err))))))))

(deftest query-of-a-missing-directory-is-one-line
  (with-dir [dir]
    (let [{:keys [status err]} (run "query" dir "[:find ?e :where [?e :a]]")]
      (is (= 1 status))
      (is (= [(str "No database directory " dir)] (lines err)))
      (is (not (.exists (io/file dir)))))))

(deftest import-of-a-missing-or-unreadable-file-is-one-line
  (with-dir [dir]
    (let [missing (str dir ".edn")
          {:keys [status out err]} (run "import" dir missing)]
      (is (= 1 status))
      (is (= "" out))
      (is (= [(str "No such file " missing)] (lines err)))
      (is (not (.exists (io/file dir))) "nothing created"))
    (let [bad (io/file (str dir ".edn"))]
      (spit bad "[{:user/name ")
      (let [{:keys [status err]} (run "import" dir (str bad))]
        (is (= 1 status))
        (is (= 1 (count (lines err))) err)
        (is (str/starts-with? err (str "Cannot read " bad " as EDN")))))))

(defn- run-child
  "{:status :out :err} of `datalith.cli` run in a child JVM with args."
  [^File work & args]
  (let [err (io/file work "stderr")
        p (child/start (apply child/command (.getPath work) "datalith.cli" args) err)
        out (future (slurp (.getInputStream p)))]
    (.close (.getOutputStream p))
    (if (.waitFor p 120 TimeUnit/SECONDS)
      {:status (.exitValue p) :out @out :err (slurp err)}
      (do (.destroyForcibly p) {:status :timeout}))))

(deftest exit-status-of-the-command-line
  (let [work (tu/temp-dir)]
    (try
      (testing "--help: the usage on stdout, status 0"
        (let [{:keys [status out err]} (run-child work "--help")]
          (is (= 0 status) err)
          (is (str/starts-with? out "usage: datalith COMMAND"))))
      (testing "a missing file: one line on stderr, status 1"
        (let [missing (.getPath (io/file work "missing.edn"))
              {:keys [status out err]} (run-child work "import" (.getPath (io/file work "db")) missing)]
          (is (= 1 status))
          (is (= "" out))
          (is (= [(str "No such file " missing)] (lines err)))))
      (finally (tu/delete-tree work)))))

(deftest backup-copies-a-database-directory
  (with-dir [dir]
    (is (= 0 (:status (run "transact" dir "[{:user/name \"Ada\"}]"))))
    (doseq [flags [[] ["--compact"]]]
      (let [dest (str dir "-copy" (count flags))
            {:keys [status out err]} (apply run "backup" dir dest flags)]
        (is (= 0 status) err)
        (is (str/starts-with? out (str "backed up " dir " (t 1) into " dest)))
        (is (= "#{[\"Ada\"]}\n" (:out (run "query" dest "[:find ?n :where [_ :user/name ?n]]"))))
        (testing "again into the same, now full, directory: refused"
          (let [{:keys [status err]} (apply run "backup" dir dest flags)]
            (is (= 1 status))
            (is (str/includes? err ":store/not-empty"))))))
    (testing "no such database directory"
      (let [{:keys [status err]} (run "backup" (str dir "-none") (str dir "-x"))]
        (is (= 1 status))
        (is (= [(str "No database directory " dir "-none")] (lines err)))))))

(deftest export-then-import-copies-a-database
  (with-dir [dir]
    (let [file (str dir ".edn")
          copy (str dir "-copy")]
      (try
        (is (= 0 (:status (run "transact" dir "[{:db/ident :k/n :db/valueType :db.type/long}]"))))
        (is (= 0 (:status (run "transact" dir "[{:k/n 1} {:k/n 2}]"))))
        (let [{:keys [status out]} (run "export" dir file)]
          (is (= 0 status))
          (is (str/starts-with? out "Exported 2 transactions") out))
        (let [{:keys [status out err]} (run "import" copy file)]
          (is (= 0 status) err)
          (is (str/starts-with? out "Imported 2 transactions") out)
          (is (str/includes? err "datoms/s") "the progress line"))
        (is (= (:out (run "query" dir "[:find ?e ?n :where [?e :k/n ?n]]"))
               (:out (run "query" copy "[:find ?e ?n :where [?e :k/n ?n]]"))))
        (testing "a rerun needs --resume, which skips what the copy has"
          (is (= 1 (:status (run "import" copy file))))
          (let [{:keys [status out]} (run "import" copy file "--resume")]
            (is (= 0 status))
            (is (str/starts-with? out "Imported 0 transactions, 0 datoms (2 skipped)") out)))
        (finally (tu/delete-tree (io/file copy)) (io/delete-file file true))))))
