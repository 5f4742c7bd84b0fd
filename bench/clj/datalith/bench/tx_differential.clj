(ns datalith.bench.tx-differential
  "Generated transactions run by datalith and by Datomic Local, compared: the
  transactor's differential check, beside `datalith.bench.differential`'s of
  queries and pulls (and its table of hand-written transactions, `--kind tx`).

  Each trial takes tx-property-test's generators (datalith.tx-property-support's:
  a schema of fixed roles whose types vary: an identity, a unique value, a name,
  tags, three refs, one maybe a component; then up to eight transactions of
  upserts, maps with nested and reverse refs, lookup refs, retractions of values,
  of attributes and of entities, cas, re-assertions, assertions about the
  transaction, and schema alterations of cardinality, uniqueness and
  components), reads
  each transaction's concrete tx-data from the naive model of datalith's
  database (as the test does), and runs it on a datalith :mem database and on a
  Datomic Local in-memory one. The generated forms outside Datomic's language
  are left out: explicit ids nothing allocated and transaction ids as values
  (datalith takes the former, deliberately; README's Known limits), attributes
  installed by their first use, DataScript's `:db.fn/retractAttribute`, and
  (deliberate differences, in README's Known limits) a reverse attribute given
  several entities or a nested map, the retractEntity of a transaction, and an
  identity value asserted on the transaction (\"datomic.tx\" in tx-data); a cas's
  old value given by lookup ref or ident is given by its id, and one given by tempid is
  left out (Datomic resolves neither); of two alterations asserting one property of one
  attribute, the second is left out (Datomic takes both).
  Every entity a transaction makes gets a tempid (a map without :db/id gets
  one of its own, which means what no :db/id means), so that both systems'
  entities can be named by the tempid that made them; ids in the tx-data are
  datalith's, put into Datomic's through those names.

  Compared after every transaction: taken or refused (the error kinds are
  printed, not compared), and when both took it, every current datom of the
  schema's attributes, named. A transaction one system refuses ends the
  trial: the states would part.

    lein with-profile +bench run -m datalith.bench.tx-differential [options]
      --trials N   trials (default 200)
      --seed S     the first trial's seed (default: the clock); trial i uses S + i
      --size N     test.check's size for the generators (default 30)

  One difference is Datomic's own: Datomic Local 1.0.291 refuses to make a long attribute
  unique while an entity holds the value -1 (:db.error/unique-violation naming a datom
  [-1 -1 -1]), which no other value does (seed 1502984 at size 60): such a refusal ends
  the trial, counted apart.

  Prints each difference whole (seed, schema, the transactions so far, both
  outcomes), then the counts; exits 1 when any came."
  (:require [clojure.string :as str]
            [clojure.test.check.generators :as gen]
            [clojure.walk :as walk]
            [datalith.bench.differential]
            [datalith.core :as d]
            [datalith.naive :as naive]
            [datalith.tx-property-support :as tp]
            [datomic.client.api :as dc]))

(set! *warn-on-reflection* true)

(def ^:private interpret-tx @#'tp/interpret-tx)
(def ^:private engine-new-eid @#'tp/engine-new-eid)
(def ^:private datomic-schema @#'datalith.bench.differential/datomic-schema)

(defn- choices
  "The [kind n] choices in an abstract op."
  [op]
  (let [out (volatile! [])]
    (walk/postwalk #(do (when (and (vector? %) (= 2 (count %)) (keyword? (first %))
                                   (integer? (second %)))
                          (vswap! out conj (first %)))
                        %)
                   op)
    @out))

(defn- datomic-shaped?
  "Whether an abstract op stays within Datomic's language once interpreted: no explicit id
  nothing allocated, no transaction id as an entity or a value (their ids differ between the
  systems, and a future one is refused by both)."
  [op]
  (not (some #{:new-id :tx-id} (choices op))))

(defn- reverse-attr
  "The forward attribute of a reverse one (:k/_likes -> :k/likes), else nil."
  [a]
  (when (and (keyword? a) (str/starts-with? (name a) "_"))
    (keyword (namespace a) (subs (name a) 1))))

(defn- forms-datomic-takes
  "The concrete forms of a transaction that Datomic's language has: none naming an attribute
  outside the schema (schema alterations aside), nor DataScript's :db.fn/retractAttribute."
  [schema tx-data]
  (let [known? (fn [a] (or (contains? schema a) (contains? schema (reverse-attr a))
                           (#{:db/id :db/cardinality :db/unique :db/isComponent} a)))]
    (vec (remove (fn [form]
                   (if (map? form)
                     (some (complement known?) (keys form))
                     (or (= :db.fn/retractAttribute (first form))
                         (and (#{:db/add :db/retract :db/cas} (first form))
                              (not (known? (nth form 2)))))))
                 tx-data))))

(defn- single-reverse-refs
  "tx-data whose maps give a reverse attribute one entity, as Datomic's maps take it (a
  collection of them, or a nested map, is datalith's and DataScript's, README's Known limits):
  a collection of one becomes its element; a larger one, or a map, is left out."
  [tx-data]
  (walk/prewalk (fn [x]
                  (if (and (map? x) (not (record? x)))
                    (into {} (keep (fn [[k v]]
                                     (cond (not (reverse-attr k)) [k v]
                                           (map? v) nil
                                           (not (coll? v)) [k v]
                                           (and (= 1 (count v)) (not (map? (first v)))) [k (first v)])))
                          x)
                    x))
                tx-data))

(defn- transactions-as-datalith-takes-them
  "tx-data without the two forms about transactions' entities that the systems take
  differently, deliberately (README's Known limits): the retractEntity of a transaction
  (datalith retracts what else it holds and keeps its :db/txInstant; Datomic refuses the
  transaction, :db.error/reset-tx-instant), and an identity asserted on \"datomic.tx\"
  (Datomic upserts the tempid, so that it names the past transaction holding the value;
  datalith's \"datomic.tx\" is always this transaction, which then conflicts)."
  [schema tx-data]
  (vec (remove #(and (vector? %)
                     (or (and (= :db/retractEntity (first %)) (integer? (second %))
                              (>= (second %) naive/tx0))
                         (and (= :db/add (first %)) (= "datomic.tx" (second %))
                              (= :identity (get-in schema [(nth % 2) :unique])))))
               tx-data)))

(defn- cas-old-values-as-ids
  "tx-data whose :db/cas of a ref attribute gives its old value as an entity id where it gave
  a lookup ref or an ident naming one in `db`, and without those that give it as a tempid:
  datalith resolves such an old value as it resolves a new one; Datomic compares it as given,
  so its cas fails (README's Known limits)."
  [schema db tx-data]
  (into [] (keep (fn [form]
                   (if (and (vector? form) (= :db/cas (first form))
                            (naive/ref-attr? schema (nth form 2)))
                     (let [old (nth form 3)]
                       (cond (string? old) nil
                             (or (keyword? old) (vector? old))
                             (if-let [id (try (d/entid db old) (catch Exception _ nil))]
                               (assoc form 3 id)
                               form)
                             :else form))
                     form)))
        tx-data))

(defn- one-alteration-per-property
  "tx-data with only the first of two schema alterations asserting one property of one
  attribute: datalith refuses two values of :db/cardinality (or :db/unique) in one
  transaction, as of any cardinality-one attribute; Datomic takes them (README's Known
  limits)."
  [tx-data]
  (let [seen (volatile! #{})]
    (into [] (filter (fn [form]
                       (if (and (vector? form) (= :db/add (first form)) (keyword? (second form))
                                (#{:db/cardinality :db/unique :db/isComponent} (nth form 2)))
                         (let [k [(second form) (nth form 2)]]
                           (when-not (@seen k) (vswap! seen conj k)))
                         true)))
          tx-data)))

(defn- with-tempids
  "tx-data whose every map, nested ones too, names its entity: a map without :db/id gets
  the tempid `prefix`-i of its own."
  [prefix tx-data]
  (let [n (volatile! 0)]
    (walk/prewalk (fn [x]
                    (if (and (map? x) (not (contains? x :db/id)) (not (record? x)))
                      (assoc x :db/id (str prefix (vswap! n inc)))
                      x))
                  tx-data)))

(defn- translate
  "tx-data with datalith's entity ids (entity positions and ref values) put into Datomic's
  by `e->d` (a datalith id Datomic has no entity for stays as it is: Datomic then refuses
  or makes what it makes, a difference to look at)."
  [schema e->d tx-data]
  (let [ent (fn [x] (if (integer? x) (e->d x x) x))
        ref-val (fn ref-val [x]
                  (cond (integer? x) (ent x)
                        (map? x) (into {} (map (fn [[k v]] [k (if (= k :db/id) (ent v) v)])) x)
                        (set? x) (set (map ref-val x))
                        (sequential? x) (if (and (= 2 (count x)) (keyword? (first x)))
                                          x ; a lookup ref
                                          (mapv ref-val x))
                        :else x))
        map-form (fn map-form [m]
                   (into {} (for [[k v] m]
                              [k (cond (= k :db/id) (ent v)
                                       (or (naive/ref-attr? schema k) (reverse-attr k))
                                       (let [v' (ref-val v)]
                                         (cond (map? v') (map-form v')
                                               (set? v') (set (map #(if (map? %) (map-form %) %) v'))
                                               :else v'))
                                       :else v)])))]
    (vec (for [form tx-data]
           (if (map? form)
             (map-form form)
             (let [[op e a & more] form]
               (case op
                 (:db/add :db/retract :db/cas)
                 (into [op (ent e) a] (map #(if (naive/ref-attr? schema a) (ref-val %) %) more))
                 :db/retractEntity [op (ent e)]
                 form)))))))

(defn- named-datoms
  "The current datoms of the schema's attributes as [name a v], entities (and ref values)
  named by `name-of`."
  [schema datoms attr-of name-of]
  (set (for [x datoms
             :let [a (attr-of (:a x))]
             :when (contains? schema a)]
         [(name-of (:e x)) a (if (naive/ref-attr? schema a) (name-of (:v x)) (:v x))])))

(defn- attempt [f]
  (try {:report (f)}
       (catch clojure.lang.ExceptionInfo e
         {:error (or (:error (ex-data e)) (:db/error (ex-data e))
                     (:cognitect.anomalies/category (ex-data e)))
          :message (ex-message e)})
       (catch Throwable t {:crash (str t)})))

(def ^:private counts
  "Transactions run, by outcome on both: :taken, :refused (the same on both), :forms; and
  :minus-one, trials ended by Datomic's refusal of uniqueness over a held -1."
  (atom {:taken 0 :refused 0 :forms 0 :minus-one 0}))

(defn- datomic-minus-one?
  "Whether Datomic refused an alteration to unique naming its sentinel datom [-1 -1 -1]
  rather than two entities (see the namespace's docstring)."
  [dm]
  (and (= :db.error/invalid-alter-attribute (:error dm))
       (str/includes? (str (:message dm)) "#datom[-1 -1 -1 ")))

(defn- trial
  "One trial: nil when the systems agree throughout, else the difference."
  [client n seed size]
  (let [[schema txs] (gen/generate (gen/tuple tp/gen-schema tp/gen-txs) size seed)
        eschema (tp/engine-schema schema)
        conn (d/connect :mem {:schema eschema :sync false})
        db-name (str "tx-" n)
        _ (dc/delete-database client {:db-name db-name})
        _ (dc/create-database client {:db-name db-name})
        dconn (dc/connect client {:db-name db-name})
        _ (dc/transact dconn {:tx-data (datomic-schema eschema)})
        d-attrs (let [db (dc/db dconn)]
                  (into {} (for [a (keys schema)] [(:db/id (dc/pull db [:db/id] a)) a])))
        l-attrs (let [db (d/db conn)] (into {} (for [a (keys schema)] [(d/entid db a) a])))
        l-attr #(if (keyword? %) % (l-attrs %))]
    (try
      (let [db0 (d/db conn)
            model0 (naive/empty-db schema (d/basis-t db0) (set (map :e (d/datoms db0 :eavt))))]
        (loop [model model0, names {:l {} :d {} :l->d {}}, done [], txs txs, i 0]
          (when-let [[ops & more] (seq txs)]
            (let [tx-data (->> (interpret-tx model (filterv datomic-shaped? ops))
                               (forms-datomic-takes schema)
                               single-reverse-refs
                               (transactions-as-datalith-takes-them schema)
                               (cas-old-values-as-ids schema (d/db conn))
                               one-alteration-per-property
                               (with-tempids (str "m" i "-")))
                  d-tx (translate schema (:l->d names) tx-data)
                  l (attempt #(d/transact! conn tx-data))
                  dm (attempt #(dc/transact dconn {:tx-data d-tx}))
                  done (conj done tx-data)
                  differ (fn [kind & kvs]
                           (merge {:seed seed :kind kind :schema schema :txs done
                                   :datomic-tx d-tx
                                   :datalith (dissoc l :report) :datomic (dissoc dm :report)}
                                  (apply hash-map kvs)))]
              (cond
                (or (:crash l) (:crash dm)) (differ :crash)
                ;; Datomic's own refusal (see the namespace's docstring): the trial ends there
                (and (:report l) (datomic-minus-one? dm)) (do (swap! counts update :minus-one inc)
                                                              nil)
                (not= (boolean (:report l)) (boolean (:report dm))) (differ :taken-differently)
                (:error l) (do (swap! counts update :refused inc)
                               (recur model names done more (inc i)))
                :else
                (let [lr (:report l)
                      dr (:report dm)
                      _ (swap! counts #(-> % (update :taken inc) (update :forms + (count tx-data))))
                      ;; a new entity is named by its tempid, the first that named it
                      names (reduce (fn [nm [tmp le]]
                                      (let [de (get (:tempids dr) tmp)
                                            nm-name [i tmp]]
                                        (cond-> nm
                                          (not (get-in nm [:l le])) (assoc-in [:l le] nm-name)
                                          (and de (not (get-in nm [:d de]))) (assoc-in [:d de] nm-name)
                                          (and de (not (get-in nm [:l->d le]))) (assoc-in [:l->d le] de))))
                                    names
                                    (filter (comp string? key) (:tempids lr)))
                      l-state (named-datoms schema (d/datoms (:db-after lr) :eavt) l-attr
                                            #(get-in names [:l %] [:unnamed %]))
                      d-state (named-datoms schema (dc/datoms (:db-after dr) {:index :eavt :limit -1})
                                            d-attrs #(get-in names [:d %] [:unnamed %]))]
                  (if (not= l-state d-state)
                    (differ :states-differ
                            :only-datalith (sort-by str (remove d-state l-state))
                            :only-datomic (sort-by str (remove l-state d-state)))
                    (recur (:model (naive/transact model tx-data (engine-new-eid lr)))
                           names done more (inc i)))))))))
      (finally
        (d/close conn)
        (dc/delete-database client {:db-name db-name})))))

(defn -main [& args]
  (let [opts (apply hash-map args)
        trials (parse-long (get opts "--trials" "200"))
        seed0 (parse-long (get opts "--seed" (str (System/currentTimeMillis))))
        size (parse-long (get opts "--size" "30"))
        client (dc/client {:server-type :datomic-local :system "datalith-tx-differential"
                           :storage-dir :mem})
        diffs (into [] (keep (fn [n]
                               (let [seed (+ seed0 n)
                                     diff (try (trial client n seed size)
                                               (catch Throwable t
                                                 {:seed seed :kind :harness-error :error (str t)}))]
                                 (when diff (prn diff))
                                 diff)))
                    (range trials))]
    (println (format "%d trials from seed %d: %d differed %s; transactions taken by both %d (%d forms), refused by both %d; %d trials ended by Datomic's refusal over -1"
                     trials seed0 (count diffs)
                     (pr-str (into (sorted-map) (frequencies (map :kind diffs))))
                     (:taken @counts) (:forms @counts) (:refused @counts) (:minus-one @counts)))
    (shutdown-agents)
    (System/exit (if (seq diffs) 1 0))))
