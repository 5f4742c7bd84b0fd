(ns datalith.naive-query
  "A deliberately naive Datalog evaluator, the oracle the query property tests
  (datalith.query-property-test) hold the engine to. It shares no code with
  the engine. Its databases and :where clauses (data patterns, predicates,
  functions, not, or, rules, the work limit) are datalith.naive-where's; here a
  query is read, and its answer made of the rows its :where binds.

  - Aggregates group the distinct tuples of the :find and :with variables by
    the :find variables and pulls; each aggregate reads its group's values,
    repeats kept. Without aggregates, :with makes a bag: the distinct tuples of
    the :find and :with variables, each projected to the :find elements.
  - :order-by, :limit and :offset slice the answer (`sliced-answer`); windows
    are computed over the distinct rows of their variables (`window-answer`).
  - Aggregates, orders and windows order values as Datomic does
    (naive-where's `datomic-compare`)."
  (:require [datalith.naive-where :refer [datomic-compare source values-of variable?
                                          where-rows]]))

;; ---------------------------------------------------------------- aggregates

(defn- ascending [xs] (sort datomic-compare xs))

(def ^:private aggregates
  "The built-in aggregates over a group's bag of values (one value per distinct
  row of the :find and :with variables); a leading argument comes first."
  {'count count
   'count-distinct (fn [xs] (count (distinct xs)))
   'sum (fn [xs] (reduce + 0 xs))
   'avg (fn [xs] (/ (double (reduce + 0 xs)) (count xs)))
   'min (fn ([xs] (first (ascending xs)))
          ([n xs] (vec (take n (ascending xs)))))
   'max (fn ([xs] (last (ascending xs)))
          ([n xs] (vec (take n (reverse (ascending xs))))))
   'median (fn [xs]
             (let [s (vec (ascending xs)) n (count s) mid (quot n 2)]
               (if (odd? n) (s mid) (quot (+ (s (dec mid)) (s mid)) 2))))
   'distinct set})

;; ---------------------------------------------------------------- queries

(defn- query-map
  "A query (vector or map form) as a map {:find [...] :in [...] ...}."
  [q]
  (if (map? q)
    q
    (loop [m {} k nil [x & more :as xs] (seq q)]
      (cond (empty? xs) m
            (keyword? x) (recur (assoc m x []) x more)
            :else (recur (update m k conj x) k more)))))

(defn- find-kind [find]
  (cond (and (= 2 (count find)) (= '. (second find))) :scalar
        (and (= 1 (count find)) (vector? (first find)) (= '... (last (first find)))) :coll
        (and (= 1 (count find)) (vector? (first find))) :tuple
        :else :rel))

(defn- find-elements [find]
  (case (find-kind find)
    :scalar [(first find)]
    :coll [(first (first find))]
    :tuple (first find)
    :rel find))

(defn- pull? [el] (and (seq? el) (= 'pull (first el))))

(defn- aggregate? [el] (and (seq? el) (not (pull? el))))

(defn- element-var [el]
  (cond (pull? el) (first (filter variable? (rest el)))
        (seq? el) (last el)
        :else el))

(defn- aggregate
  "The groups of `rows` (tuples over `els`) by their variables and pulls, one
  tuple each, every aggregate applied to its group's values, with repeats."
  [els rows]
  (let [groups (group-by (fn [row] (vec (keep-indexed (fn [i el] (when-not (aggregate? el) (row i))) els)))
                         rows)]
    (set (for [[_ group] groups]
           (vec (map-indexed (fn [i el]
                               (if (aggregate? el)
                                 (let [f (or (aggregates (first el))
                                             (throw (ex-info "unknown aggregate" {:aggregate el})))]
                                   (apply f (concat (butlast (rest el)) [(map #(nth % i) group)])))
                                 ((first group) i)))
                             els))))))

(defn- pull
  "(pull ?e pattern) of entity `e`, for a pattern of :db/id and attributes of
  cardinality one: the map of those it has, nil when it has none."
  [db pattern e]
  (not-empty (into {} (for [a pattern
                            :let [v (if (= :db/id a) e (first (values-of db e a)))]
                            :when (some? v)]
                        [a v]))))

(defn- pulled
  "`tuples` with the entity of each (pull ?e pattern) element replaced by its pull."
  [ctx els tuples]
  (let [pull-at (keep-indexed (fn [i el] (when (pull? el) [i el])) els)
        pull-one (fn [t]
                   (reduce (fn [t [i el]]
                             (assoc t i (pull (source ctx (if (= 4 (count el)) (second el) '$))
                                              (last el) (t i))))
                           t pull-at))]
    (if (seq pull-at)
      (if (set? tuples) (set (map pull-one tuples)) (mapv pull-one tuples))
      tuples)))

(defn answer
  "{:kind :rel|:scalar|:coll|:tuple, :tuples #{[value ...]} (maps for :keys)}:
  every answer tuple of `query` on `inputs` (one per :in element; a database
  is the value of `db`, a source may also be a collection of tuples)."
  [query & inputs]
  (let [{:keys [find in where with keys]} (query-map query)
        in (or in ['$])
        _ (when (not= (count in) (count inputs))
            (throw (ex-info "wrong number of inputs" {:in in :inputs inputs})))
        [ctx rows] (where-rows in inputs where)
        els (find-elements find)
        cols (vec (distinct (concat (map element-var els) with)))
        projected (set (map (fn [r] (mapv #(if (contains? r %)
                                             (r %)
                                             (throw (ex-info "unbound find variable" {:var %})))
                                          cols))
                            rows))
        el-tuples (map (fn [row] (mapv #(row (.indexOf ^java.util.List cols (element-var %))) els))
                       projected)
        bag? (and (seq with) (not-any? aggregate? els))
        tuples (cond (some aggregate? els) (aggregate els el-tuples)
                     bag? (vec el-tuples)
                     :else (set el-tuples))
        tuples (pulled ctx els tuples)
        tuples (if keys
                 ((if bag? vec set) (map #(zipmap (map keyword keys) %) tuples))
                 tuples)]
    {:kind (find-kind find) :tuples tuples :bag? (boolean bag?)}))

(defn q
  "The answer of `query` on `inputs` in the shape Datomic returns: a set of
  vectors, a vector (collection), a vector (tuple) or a value (scalar); where
  Datomic may return any of several answers, one of them."
  [query & inputs]
  (let [{:keys [kind tuples]} (apply answer query inputs)
        some-tuple (first (sort-by pr-str tuples))]
    (case kind
      :rel tuples
      :coll (mapv first tuples)
      :scalar (first some-tuple)
      :tuple some-tuple)))

(defn agrees?
  "Whether `result`, returned by an engine for a query, is one the naive
  `answer` (of that query) allows. With :with and no aggregate the answer is a
  bag: the same tuples as often, in any order."
  [{:keys [kind tuples bag?]} result]
  (case kind
    :rel (if bag?
           (and (vector? result) (= (frequencies tuples) (frequencies result)))
           ;; a set's elements counted one by one too: a set built on rows it took to be
           ;; distinct can hold one twice and still be = to the answer
           (and (set? result) (= tuples result) (= (count tuples) (count (seq result)))))
    :coll (if bag?
            (and (vector? result) (= (frequencies (map first tuples)) (frequencies result)))
            (and (vector? result)
                 (= (count result) (count (set result)))
                 (= (set (map first tuples)) (set result))))
    :scalar (if (empty? tuples) (nil? result) (contains? (set (map first tuples)) result))
    :tuple (if (empty? tuples) (nil? result) (contains? tuples result))))

;; ---------------------------------------------------------------- order, limit, offset

(declare window-answer)

(defn- order-keys
  "The :order-by keys of query map `m` as [element desc?]: written [[?v :desc] ?w]
  (one vector in the vector form) or as its keys."
  [m]
  (let [ks (:order-by m)
        key? #(and (vector? %) (= 2 (count %)) (keyword? (second %)))
        ks (if (and (= 1 (count ks)) (vector? (first ks)) (not (key? (first ks)))) (first ks) ks)]
    (for [k ks] (if (key? k) [(first k) (= :desc (second k))] [k false]))))

(defn sliced-answer
  "`answer` of a query with :order-by, :limit and :offset, plus :ordered? and
  :sliced, the vector of tuples the slice keeps: with an order, the tuples
  sorted by the keys (each in Datomic's order, reversed for :desc), ties by the
  columns from the first; then the offset dropped and the limit taken."
  [query & inputs]
  (let [m (query-map query)
        windows? (some #(and (seq? %) (some #{:over} %)) (find-elements (:find m)))
        {:keys [tuples] :as ans} (apply (if windows? window-answer answer) query inputs)
        els (find-elements (:find m))
        single #(if (sequential? %) (first %) %)
        limit (single (:limit m))
        offset (or (single (:offset m)) 0)
        cols (for [[ref desc] (order-keys m)] [(.indexOf ^java.util.List els ref) desc])
        cmp (fn [a b]
              (or (first (remove zero? (concat (for [[i desc] cols]
                                                 (cond-> (datomic-compare (a i) (b i)) desc -))
                                               (map datomic-compare a b))))
                  0))
        ordered (if (seq cols) (vec (sort cmp tuples)) (vec tuples))]
    (assoc ans :ordered? (boolean (seq cols)) :limit limit :offset offset
           :sliced (vec (cond->> (drop offset ordered) limit (take limit))))))

(defn slice-agrees?
  "Whether `result` is one the naive `sliced-answer` allows: with an order,
  exactly its sliced tuples in order (a vector for a relation); without, as many
  tuples of the answer as the slice keeps, in the answer's shape."
  [{:keys [kind tuples bag? ordered? sliced limit offset]} result]
  (let [n (cond-> (max 0 (- (count tuples) offset)) limit (min limit))
        within? (fn [xs all] (let [f (frequencies all)]
                               (every? (fn [[x k]] (<= k (get f x 0))) (frequencies xs))))]
    (if ordered?
      (case kind
        :rel (and (vector? result) (= sliced result))
        :coll (= (mapv first sliced) result)
        :scalar (= (ffirst sliced) result)
        :tuple (= (first sliced) result))
      (case kind
        :rel (and (if bag? (vector? result) (set? result)) (= n (count result))
                  (within? (seq result) (if bag? tuples (set tuples))))
        :coll (and (vector? result) (= n (count result))
                   (within? result (map first (if bag? tuples (set tuples)))))
        :scalar (if (zero? n) (nil? result) (contains? (set (map first tuples)) result))
        :tuple (if (zero? n) (nil? result) (contains? (set tuples) result))))))

;; ---------------------------------------------------------------- windows

(defn- window? [el] (and (seq? el) (some #{:over} el)))

(defn- window-parts
  "{:fn :arg :offset :partition :order [[var desc?]]} of a window element."
  [el]
  (let [[f & more] el
        [args [_ spec]] (split-with #(not= :over %) more)
        ks (:order-by spec)
        key? #(and (vector? %) (= 2 (count %)) (keyword? (second %)))]
    {:fn f :arg (first args) :offset (or (second args) 1)
     :partition (vec (:partition-by spec))
     :order (vec (for [k (if (key? ks) [ks] ks)] (if (key? k) [(first k) (= :desc (second k))] [k false])))}))

(defn- window-vars [el]
  (let [{:keys [arg partition order]} (window-parts el)]
    (distinct (concat (when arg [arg]) partition (map first order)))))

(defn- window-values
  "{row value}: window `el` over `rows` (binding maps), ties broken by the
  values of `cols` in turn."
  [el rows cols]
  (let [{f :fn :keys [arg offset partition order]} (window-parts el)
        by (fn [ks] (fn [a b] (or (first (remove zero? (for [[v desc] ks]
                                                        (cond-> (datomic-compare (a v) (b v)) desc -))))
                                  0)))
        order-cmp (by order)
        cmp (fn [a b] (let [c (order-cmp a b)]
                        (if (zero? c) ((by (map vector cols (repeat false))) a b) c)))]
    (into {}
          (for [[_ part] (group-by #(mapv % partition) rows)
                :let [sorted (vec (sort cmp part))
                      n (count sorted)
                      peers (partition-by #(mapv % (map first order)) sorted)
                      peers (if (seq order) peers [sorted])]
                [gi group] (map-indexed vector peers)
                :let [before (apply concat (take gi peers))
                      upto (concat before group)
                      frame (if (seq order) upto sorted)
                      xs (map #(% arg) frame)]
                row group
                :let [i (.indexOf ^java.util.List sorted row)]]
            [row (case f
                   row-number (inc i)
                   rank (inc (count before))
                   dense-rank (inc gi)
                   count (count xs)
                   sum (reduce + 0 xs)
                   avg (/ (double (reduce + 0 xs)) (count xs))
                   min (first (ascending xs))
                   max (last (ascending xs))
                   lag (let [j (- i offset)] (when (<= 0 j) ((sorted j) arg)))
                   lead (let [j (+ i offset)] (when (< j n) ((sorted j) arg))))]))))

(defn window-answer
  "`answer` of a query whose :find holds windows (and no aggregates): the
  distinct rows of the :find, window and :with variables, each window's value
  computed over them, projected to the :find elements (a set, a bag with :with)."
  [query & inputs]
  (let [{:keys [find in where with]} (query-map query)
        in (or in ['$])
        [ctx rows] (where-rows in inputs where)
        els (find-elements find)
        ;; a window's own variable, as the engine's: its argument, else its first order or
        ;; partition variable
        el-var #(if (window? %)
                  (let [{:keys [arg partition order]} (window-parts %)]
                    (or arg (ffirst order) (first partition)))
                  (element-var %))
        cols (vec (distinct (concat (map el-var els) (mapcat #(when (window? %) (window-vars %)) els)
                                    with)))
        rows (vec (set (map #(select-keys % cols) rows)))
        values (into {} (for [el els :when (window? el)] [el (window-values el rows cols)]))
        tuples (map (fn [r] (mapv #(if (window? %) ((values %) r) (r (element-var %))) els)) rows)
        bag? (boolean (seq with))
        tuples (pulled ctx els (if bag? (vec tuples) (set tuples)))]
    {:kind (find-kind find) :tuples tuples :bag? bag?}))
