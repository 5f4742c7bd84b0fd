(ns datalith.flip-child
  "The child JVM of datalith.flip-test: damages copies of a database, one byte each, and
  reads every copy, so that a JVM crash is seen by the parent instead of killing it (with
  WRITE, writes to it too).

    java ... clojure.main -m datalith.flip-child ORIGINAL-DIR WORK-DIR FROM-SEED TO-SEED [WRITE]

  For each seed it prints `start SEED`, then copies ORIGINAL-DIR/data.mdb, XORs the byte at
  a seeded offset (uniform over the whole file) with a seeded non-zero byte, opens the copy,
  reads everything (`answers`), runs d/verify, and prints one EDN map: {:seed :offset
  :open :read :verify :outcome}. :open and :read are :ok, :ex-info (a clear error, with its
  :error) or :raw (any other exception); :read is :same or :differ when it ran; :verify is
  :ok, :problems (with the kinds found) or :threw. The outcome is :harmless, :found (verify
  names the damage), :error (a clear ex-info on open or read), or a failure: :silent (wrong
  answers, no error, verify finds nothing), :raw (a raw exception nobody explains) or
  :verify-threw."
  (:require [clojure.java.io :as io]
            [datalith.child-jvm :as child]
            [datalith.core :as d])
  (:import (datalith.conn Conn)
           (datalith.store LmdbStore)
           (java.nio.file Files StandardCopyOption)
           (java.util Random)))

(defn answers
  "Everything a reader may ask of db, as data."
  [db]
  (let [dv (fn [ds] (mapv (fn [x] [(:e x) (:a x) (:v x) (:tx x) (:added x)]) ds))
        t (d/basis-t db)]
    {:t t
     :eavt (dv (d/datoms db :eavt))
     :aevt (dv (d/datoms db :aevt))
     :avet (dv (d/datoms db :avet))
     :vaet (dv (d/datoms db :vaet))
     :history (dv (d/datoms (d/history db) :eavt))
     :as-of (vec (for [i (range 0 (inc t) 3)] (dv (d/datoms (d/as-of db i) :eavt))))
     :log (vec (for [{:keys [t data]} (d/tx-range db nil nil)] [t (dv data)]))
     :schema (d/schema db)
     :names (d/q '[:find ?e ?n :where [?e :user/name ?n]] db)
     :by-email (vec (for [i (range 0 40 7)]
                      (d/q '[:find ?e . :in $ ?m :where [?e :user/email ?m]] db (str "u" i "@x"))))
     :friends (d/q '[:find ?a ?b :where [?a :user/friends ?b]] db)
     :pulls (vec (for [i (range 0 40 5)] (d/pull db '[*] [:user/email (str "u" i "@x")])))}))

(defn- attempt [f]
  (try {:ok (f)}
       (catch clojure.lang.ExceptionInfo e {:ex-info (:error (ex-data e))})
       (catch Throwable e {:raw (str (class e) ": " (ex-message e))})))

(defn- delete-tree [^java.io.File f]
  (when (.isDirectory f)
    (doseq [c (.listFiles f)] (delete-tree c)))
  (.delete f))

(defn- damage-copy!
  "Copies the original's data.mdb into dir and flips one byte; the offset."
  [original dir seed]
  (let [src (io/file original "data.mdb")
        dst (io/file dir "data.mdb")
        rnd (Random. seed)
        _ (.mkdirs (io/file dir))
        _ (Files/copy (.toPath src) (.toPath dst) (into-array [StandardCopyOption/REPLACE_EXISTING]))
        bytes (Files/readAllBytes (.toPath dst))
        off (.nextInt rnd (alength bytes))
        x (inc (.nextInt rnd 255))]
    (aset-byte bytes off (unchecked-byte (bit-xor (aget bytes off) x)))
    (Files/write (.toPath dst) bytes (make-array java.nio.file.OpenOption 0))
    off))

(defn check-copy
  "Damages a copy with `seed` and reads it (and with `write?`, writes a transaction into it);
  the result map."
  [original work expected seed write?]
  (let [dir (io/file work (str "copy-" seed))
        off (damage-copy! original dir seed)
        opened (attempt #(d/connect (.getPath dir)))
        conn (:ok opened)
        read (if conn
               (let [r (attempt #(answers (d/db conn)))]
                 (if (contains? r :ok) {:read (if (= expected (:ok r)) :same :differ)} {:read r}))
               {:read :not-opened})
        verified (attempt #(if conn (d/verify conn) (d/verify (.getPath dir))))
        ;; then a transaction, written back into LMDB's file (LMDB's C code reads the pages it
        ;; writes: a damaged one refuses the write, LmdbPagesCheck)
        written (when (and conn write?)
                  (attempt #(do (d/transact! conn [{:user/email "written@x" :user/name "W"}])
                                (.writeBehindCatchUp ^LmdbStore (.store ^Conn conn))
                                :done)))
        _ (some-> conn d/close)
        _ (delete-tree dir)
        report (:ok verified)
        verify (cond report (if (:ok? report) :ok {:problems (set (map (juxt :index :problem)
                                                                        (:problems report)))})
                     (:ex-info verified) {:threw verified}
                     :else {:threw verified})
        failed (fn [k] (or (contains? opened k) (and (map? (:read read)) (contains? (:read read) k))
                           (contains? written k)))
        outcome (cond
                  (and (map? verify) (:problems verify)) :found
                  (failed :ex-info) :error
                  (and (map? verify) (:threw verify)) :verify-threw
                  (failed :raw) :raw
                  (= :same (:read read)) :harmless
                  :else :silent)]
    {:seed seed :offset off
     :open (if conn :ok opened)
     :read (:read read)
     :verify verify
     :write (cond (nil? written) :not-tried (:ok written) :ok :else written)
     :outcome outcome}))

(defn -main [original work from to & [write]]
  (child/exit-with-parent!)
  (let [expected (with-open [c (d/connect original)] (answers (d/db c)))]
    (doseq [seed (range (parse-long from) (parse-long to))]
      (println "start" seed)
      (flush)
      (prn (check-copy original work expected seed (= "write" write)))
      (flush))
    (shutdown-agents)))
