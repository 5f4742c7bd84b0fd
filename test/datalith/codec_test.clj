(ns datalith.codec-test
  "Generative tests of datalith.codec.Codec: round trip, order, self-delimiting
  key parts, overflow, canonical EDN, coercion."
  (:require [clojure.test :refer [deftest is are testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop])
  (:import (clojure.lang BigInt ExceptionInfo PersistentArrayMap)
           (datalith.codec Codec)
           (java.math BigDecimal BigInteger)
           (java.net URI)
           (java.nio ByteBuffer ByteOrder)
           (java.util Arrays Collection Date LinkedHashSet Random UUID)))

(set! *warn-on-reflection* true)

(def ^:private trials
  (or (some-> (System/getenv "DATALITH_TRIALS") parse-long) 200))

;; ---------------------------------------------------------------------------
;; Helpers

(defn- enc ^bytes [v tag]
  (Codec/encode v (int tag)))

(defn- wrap ^ByteBuffer [^bytes b]
  (ByteBuffer/wrap b))

(defn- decode* [^bytes b]
  (Codec/decode (wrap b) 0))

(defn- compare-bytes ^long [^bytes a ^bytes b]
  (Codec/compareBytes (wrap a) 0 (alength a) (wrap b) 0 (alength b)))

(defn- sign ^long [^long x]
  (Long/signum x))

(defn- tag-of ^long [x]
  (if (nil? x) Codec/T_NIL (Codec/inferTag x)))

(defn- same?
  "Equal in value and class, NaN equal to itself, -0.0 not equal to 0.0,
  bigdecs equal only with equal scale, byte arrays by content, URIs by their
  string forms."
  [x y]
  (cond
    (and (bytes? x) (bytes? y)) (Arrays/equals ^bytes x ^bytes y)
    (and (instance? URI x) (instance? URI y)) (= (str x) (str y))
    (and (vector? x) (vector? y)) (and (= (count x) (count y)) (every? true? (map same? x y)))
    (or (nil? x) (nil? y)) (and (nil? x) (nil? y))
    :else (and (= (class x) (class y)) (.equals ^Object x y))))

(declare value-compare)

(defn- tuple-compare
  "Element by element, nil first, values of different types by tag; a proper
  prefix first."
  [xs ys]
  (or (first (remove zero? (map value-compare xs ys)))
      (compare (count xs) (count ys))))

(defn- value-compare
  "The order the codec promises: clojure compare within a type, except the
  total order of Double/compare for doubles and floats, scale after value for
  bigdecs, unsigned bytes for byte arrays, string forms for URIs, tuple-compare
  for vectors; by tag across types."
  ^long [x y]
  (let [tx (tag-of x) ty (tag-of y)]
    (cond
      (not= tx ty) (compare tx ty)
      (= tx Codec/T_DOUBLE) (Double/compare x y)
      (= tx Codec/T_FLOAT) (Float/compare x y)
      (= tx Codec/T_BYTES) (Arrays/compareUnsigned ^bytes x ^bytes y)
      (and (instance? URI x) (instance? URI y)) (compare (str x) (str y))
      (= tx Codec/T_BIGDEC) (let [c (compare x y)]
                              (if (zero? c) (compare (.scale ^BigDecimal x) (.scale ^BigDecimal y)) c))
      (vector? x) (tuple-compare x y)
      :else (compare x y))))

(defn- place
  "Copies the byte arrays one after another into a fresh buffer after 3 junk
  bytes: a little-endian direct buffer or a big-endian heap one. Returns
  [buffer offsets]."
  [direct? arrays]
  (let [n (+ 3 (reduce + (map alength arrays)))
        b (if direct?
            (.order (ByteBuffer/allocateDirect n) ByteOrder/LITTLE_ENDIAN)
            (ByteBuffer/allocate n))]
    (.put b (byte-array [0 -1 7]))
    (let [offsets (reduce (fn [offs ^bytes a] (.put b a) (conj offs (+ (peek offs) (alength a))))
                          [3] arrays)]
      [b (pop offsets)])))

(defn- self-delimiting?
  "The key parts of both full encodings, side by side in one buffer, are
  found, skipped, compared and (when inline) decoded in place, leaving the
  buffer's position and limit alone."
  [direct? ^bytes fx ^bytes fy]
  (let [kx (Codec/keyPart fx)
        ky (Codec/keyPart fy)
        [^ByteBuffer b [ox oy]] (place direct? [kx ky])
        pos (.position b)
        lim (.limit b)
        in-place? (fn [^bytes full ^bytes k off]
                    (if (identical? full k)
                      (and (not (Codec/isOverflow b off))
                           (same? (decode* full) (Codec/decode b off)))
                      (and (Codec/isOverflow b off)
                           (<= (alength k) Codec/MAX_INLINE))))]
    (and (= oy (Codec/skipKeyPart b ox))
         (= (.capacity b) (Codec/skipKeyPart b oy))
         (in-place? fx kx ox)
         (in-place? fy ky oy)
         (= (sign (compare-bytes kx ky))
            (sign (Codec/compareBytes b ox (alength kx) (wrap ky) 0 (alength ky))))
         (= pos (.position b))
         (= lim (.limit b)))))

(defn- pairs
  "Pairs of values from g: independent ones, and equal ones."
  [g]
  (gen/frequency [[9 (gen/tuple g g)]
                  [1 (gen/fmap (fn [x] [x x]) g)]]))

(defn- codec-prop
  "Coerce, encode, decode: round trip, order, self-delimiting."
  [tag pair-gen]
  (prop/for-all [[x y] pair-gen
                 direct? gen/boolean]
    (let [x (Codec/coerce x (int tag))
          y (Codec/coerce y (int tag))
          ex (enc x tag)
          ey (enc y tag)
          c (value-compare x y)
          cb (compare-bytes ex ey)]
      (and (some? x) (some? y)
           (= tag (aget ex 0))
           (same? x (decode* ex))
           (= (zero? c) (same? x y))
           (= (sign c) (sign cb))
           (self-delimiting? direct? ex ey)))))

;; ---------------------------------------------------------------------------
;; Generators

(def ^:private gen-long
  (gen/one-of [gen/large-integer
               (gen/elements [Long/MIN_VALUE Long/MAX_VALUE 0 -1 1 255 256 -256])]))

(def ^:private gen-double
  (gen/one-of [gen/double
               (gen/elements [##NaN ##Inf ##-Inf -0.0 0.0 Double/MIN_VALUE (- Double/MIN_VALUE)
                              Double/MAX_VALUE (- Double/MAX_VALUE) 1.0 -1.0])]))

(def ^:private gen-float
  (gen/fmap (fn [^Double d] (Float/valueOf (.floatValue d))) gen-double))

(def ^:private gen-bigint
  (gen/one-of [(gen/fmap bigint gen-long)
               (gen/fmap (fn [^bytes b] (bigint (BigInteger. b))) (gen/not-empty gen/bytes))
               (gen/fmap (fn [[n neg?]]
                           (let [x (.pow (BigInteger/valueOf 7) (int n))]
                             (bigint (if neg? (.negate x) x))))
                         (gen/tuple (gen/choose 0 1500) gen/boolean))]))

(def ^:private gen-bigdec
  (gen/one-of [(gen/fmap (fn [[^BigInt u scale zeros]]
                           (BigDecimal. (.multiply (.toBigInteger u) (.pow BigInteger/TEN (int zeros)))
                                        (int scale)))
                         (gen/tuple gen-bigint (gen/choose -40 40) (gen/choose 0 4)))
               (gen/elements [1.0M 1.00M 1M 0M 0.000M 0E+3M -1.0M -1.00M 1E+5M 0.1M -0.1M 0.105M -0.105M])]))

(def ^:private gen-instant
  (gen/fmap (fn [ms] (Date. (long ms))) gen-long))

(def ^:private gen-uuid
  (gen/one-of [gen/uuid
               (gen/fmap (fn [[a b]] (UUID. a b)) (gen/tuple gen-long gen-long))]))

(def ^:private gen-string
  "Strings of ASCII, any UTF-16 code unit (lone surrogates too), supplementary
  characters (surrogate pairs) and U+0000."
  (gen/fmap (partial apply str)
            (gen/vector (gen/one-of [(gen/fmap str gen/char-ascii)
                                     (gen/fmap (fn [c] (str (char c))) (gen/choose 0 0xFFFF))
                                     (gen/fmap (fn [cp] (String. (Character/toChars (int cp))))
                                               (gen/choose 0x10000 0x10FFFF))
                                     (gen/return "\u0000")])
                        0 12)))

(def ^:private string-pairs
  "Independent strings, and strings that share a prefix."
  (gen/one-of [(pairs gen-string)
               (gen/fmap (fn [[p s t]] [(str p s) (str p t)]) (gen/tuple gen-string gen-string gen-string))
               (gen/fmap (fn [[s t]] [s (str s t)]) (gen/tuple gen-string gen-string))]))

(def ^:private gen-uri
  "URIs the multi-argument constructor quotes (so any string makes one): with and without
  authority, opaque ones, schemes in other case, escapes and characters outside ASCII."
  (gen/fmap (fn [[scheme host path query opaque?]]
              (if opaque?
                (URI. scheme (str "x:" path) nil)
                (URI. scheme host (str "/" path) query nil)))
            (gen/tuple (gen/elements ["http" "https" "urn" "HTTP" "a+b.c-d"])
                       (gen/elements [nil "a.example" "A.example" "h"])
                       gen-string
                       (gen/one-of [(gen/return nil) gen/string-alphanumeric gen-string])
                       gen/boolean)))

(def ^:private gen-name
  (gen/one-of [gen/string-alphanumeric gen-string]))

(def ^:private gen-ns
  (gen/one-of [(gen/return nil) (gen/elements ["" "a" "a.b"]) gen-name]))

(def ^:private gen-keyword
  (gen/fmap (fn [[ns n]] (keyword ns n)) (gen/tuple gen-ns gen-name)))

(def ^:private gen-symbol
  (gen/fmap (fn [[ns n]] (symbol ns n)) (gen/tuple gen-ns gen-name)))

(def ^:private gen-ref
  (gen/one-of [(gen/large-integer* {:min 0})
               (gen/elements [0 Long/MAX_VALUE 255 256])]))

(def ^:private gen-bytes
  (gen/one-of [gen/bytes
               (gen/fmap byte-array (gen/vector (gen/elements [0 -1 1]) 0 6))]))

(def ^:private gen-tuple-element
  (gen/one-of [(gen/return nil)
               (gen/choose -2 2)
               (gen/elements ["" "a" "ab" "b" "\u0000"])
               (gen/elements [:a :b :x/a 'a])
               gen/boolean
               (gen/elements [1.5 -0.0 0.0 ##NaN 1.0M 1.00M])]))

(def ^:private gen-tuple
  (gen/vector gen-tuple-element 0 4))

(def ^:private gen-edn
  (gen/resize 30 gen/any-equatable))

(def ^:private typed-gens
  "[tag generator] for every type but tuple and EDN."
  [[Codec/T_BOOLEAN gen/boolean]
   [Codec/T_LONG gen-long]
   [Codec/T_DOUBLE gen-double]
   [Codec/T_FLOAT gen-float]
   [Codec/T_BIGINT gen-bigint]
   [Codec/T_BIGDEC gen-bigdec]
   [Codec/T_INSTANT gen-instant]
   [Codec/T_UUID gen-uuid]
   [Codec/T_STRING gen-string]
   [Codec/T_KEYWORD gen-keyword]
   [Codec/T_SYMBOL gen-symbol]
   [Codec/T_REF gen-ref]
   [Codec/T_BYTES gen-bytes]
   [Codec/T_URI gen-uri]])

;; ---------------------------------------------------------------------------
;; Round trip, order and self-delimiting, per type

(defspec boolean-codec trials (codec-prop Codec/T_BOOLEAN (pairs gen/boolean)))
(defspec long-codec trials (codec-prop Codec/T_LONG (pairs gen-long)))
(defspec double-codec trials (codec-prop Codec/T_DOUBLE (pairs gen-double)))
(defspec float-codec trials (codec-prop Codec/T_FLOAT (pairs gen-float)))
(defspec bigint-codec trials (codec-prop Codec/T_BIGINT (pairs gen-bigint)))
(defspec bigdec-codec trials (codec-prop Codec/T_BIGDEC (pairs gen-bigdec)))
(defspec instant-codec trials (codec-prop Codec/T_INSTANT (pairs gen-instant)))
(defspec uuid-codec trials (codec-prop Codec/T_UUID (pairs gen-uuid)))
(defspec string-codec trials (codec-prop Codec/T_STRING string-pairs))
(defspec keyword-codec trials (codec-prop Codec/T_KEYWORD (pairs gen-keyword)))
(defspec symbol-codec trials (codec-prop Codec/T_SYMBOL (pairs gen-symbol)))
(defspec ref-codec trials (codec-prop Codec/T_REF (pairs gen-ref)))
(defspec bytes-codec trials (codec-prop Codec/T_BYTES (pairs gen-bytes)))
(defspec tuple-codec trials (codec-prop Codec/T_TUPLE (pairs gen-tuple)))
(defspec uri-codec trials (codec-prop Codec/T_URI (pairs gen-uri)))

(defspec values-of-different-types-order-by-tag trials
  (prop/for-all [[tx x] (gen/bind (gen/elements typed-gens) (fn [[t g]] (gen/tuple (gen/return t) g)))
                 [ty y] (gen/bind (gen/elements typed-gens) (fn [[t g]] (gen/tuple (gen/return t) g)))]
    (let [cb (compare-bytes (enc (Codec/coerce x (int tx)) tx) (enc (Codec/coerce y (int ty)) ty))]
      (or (= tx ty) (= (sign (- tx ty)) (sign cb))))))

(deftest edge-values
  (testing "round trip"
    (are [v tag] (same? v (decode* (enc v tag)))
      Long/MIN_VALUE Codec/T_LONG
      Long/MAX_VALUE Codec/T_LONG
      ##NaN Codec/T_DOUBLE
      -0.0 Codec/T_DOUBLE
      (float -0.0) Codec/T_FLOAT
      Float/NaN Codec/T_FLOAT
      1.0M Codec/T_BIGDEC
      1.00M Codec/T_BIGDEC
      0E-7M Codec/T_BIGDEC
      (bigint (.pow (BigInteger/valueOf 10) 2000)) Codec/T_BIGINT
      "" Codec/T_STRING
      "\u0000" Codec/T_STRING
      "a\u0000b" Codec/T_STRING
      "😀 é ж 中" Codec/T_STRING
      :a Codec/T_KEYWORD
      :a.b/c Codec/T_KEYWORD
      (keyword "" "x") Codec/T_KEYWORD
      'a/b Codec/T_SYMBOL
      '/ Codec/T_SYMBOL
      [] Codec/T_TUPLE
      [nil] Codec/T_TUPLE
      [nil "a" 1 :k] Codec/T_TUPLE
      [[1 2] {:a #{1}} 1/2] Codec/T_TUPLE
      (URI. "urn:a") Codec/T_URI
      (URI. "http://h.example/%C3%A4/ä?q=%20#f") Codec/T_URI
      (URI. "") Codec/T_URI))
  (testing "order"
    (are [x y tag] (neg? (compare-bytes (enc x tag) (enc y tag)))
      ##-Inf -1.0 Codec/T_DOUBLE
      -1.0 -0.0 Codec/T_DOUBLE
      -0.0 0.0 Codec/T_DOUBLE
      0.0 Double/MIN_VALUE Codec/T_DOUBLE
      Double/MAX_VALUE ##Inf Codec/T_DOUBLE
      ##Inf ##NaN Codec/T_DOUBLE
      false true Codec/T_BOOLEAN
      "" "\u0000" Codec/T_STRING
      "\u0000" "\u0001" Codec/T_STRING
      "a" "a\u0000" Codec/T_STRING
      "\ud7ff" "😀" Codec/T_STRING
      "😀" "\ue000" Codec/T_STRING
      :z :a/a Codec/T_KEYWORD
      :a/z :b/a Codec/T_KEYWORD
      :a/b :a.b/a Codec/T_KEYWORD
      (keyword "a" "b") (keyword "a\u0000" "a") Codec/T_KEYWORD
      [] [nil] Codec/T_TUPLE
      [nil] [false] Codec/T_TUPLE
      [1] [1 nil] Codec/T_TUPLE
      [1 "b"] [2 "a"] Codec/T_TUPLE
      -10.5M -10.05M Codec/T_BIGDEC
      1.0M 1.00M Codec/T_BIGDEC
      ;; by the string form, where URI.compareTo puts the scheme first, ignoring its case
      (URI. "HTTP://b") (URI. "http://a") Codec/T_URI
      (URI. "http://a") (URI. "http://a/") Codec/T_URI))
  (testing "URIs equal by URI.equals but spelled apart are two values (README's Known limits)"
    (is (= (URI. "HTTP://a") (URI. "http://a")))
    (is (not (Arrays/equals (enc (URI. "HTTP://a") Codec/T_URI) (enc (URI. "http://a") Codec/T_URI)))))
  (testing "refs are 8 bytes big-endian after the tag"
    (is (Arrays/equals (byte-array [Codec/T_REF 0 0 0 0 0 0 1 2]) (enc 258 Codec/T_REF)))))

;; ---------------------------------------------------------------------------
;; Key parts and overflow

(defn- long-value-of-each-type []
  (let [s (apply str (repeat 300 "ab\u0000é"))]
    [[s Codec/T_STRING]
     [(keyword s "x") Codec/T_KEYWORD]
     [(symbol "x" s) Codec/T_SYMBOL]
     [(byte-array (range 1000)) Codec/T_BYTES]
     [(bigint (.pow (BigInteger/valueOf 7) 2000)) Codec/T_BIGINT]
     [(BigDecimal. (.pow (BigInteger/valueOf 7) 2000) -3) Codec/T_BIGDEC]
     [(URI. "http" "a.example" (str "/" s) nil) Codec/T_URI]
     [[1 s nil] Codec/T_TUPLE]
     [{:s s :n (range 100)} Codec/T_EDN]]))

(deftest overflow-key-parts
  (doseq [[v tag] (long-value-of-each-type)]
    (testing (str "tag " tag)
      (let [full (enc (Codec/coerce v (int tag)) tag)
            k (Codec/keyPart full)
            tail (enc 42 Codec/T_LONG)
            [^ByteBuffer b [ok ot]] (place true [k tail])]
        (is (> (alength full) Codec/MAX_INLINE))
        (is (<= (alength k) Codec/MAX_INLINE))
        (is (= tag (aget k 0)))
        (is (Codec/isOverflow b ok))
        (is (= ot (Codec/skipKeyPart b ok)))
        (is (= 42 (Codec/decode b ot)))
        (let [h (Codec/overflowHashOffset b ok)
              hash (byte-array 16)]
          (is (= (- ot 16) h))
          (.get (.duplicate b) h hash)
          (is (Arrays/equals hash (Codec/overflowHash full))))
        (is (= :store/corrupt (:error (ex-data (is (thrown? ExceptionInfo (Codec/decode b ok)))))))
        (is (same? (Codec/coerce v (int tag)) (decode* full)))))))

(defn- allocated-bytes
  "Bytes the current thread allocated while running f n times, after as many
  warm-up runs."
  ^long [n f]
  (let [mx ^com.sun.management.ThreadMXBean (java.lang.management.ManagementFactory/getThreadMXBean)]
    (f n)
    (let [before (.getCurrentThreadAllocatedBytes mx)]
      (f n)
      (- (.getCurrentThreadAllocatedBytes mx) before))))

(deftest hot-path-allocates-nothing
  (let [s (enc (apply str "key" (repeat 50 "\u0000é")) Codec/T_STRING)
        k (Codec/keyPart (enc (apply str (repeat 1000 "é")) Codec/T_STRING))
        [^ByteBuffer b [os ok ol]] (place true [s k (enc 7 Codec/T_LONG)])
        os (int os)
        ok (int ok)
        ol (int ol)
        n 200000]
    (is (< (allocated-bytes n (fn [^long n]
                                (loop [i 0 acc 0]
                                  (if (< i n)
                                    (recur (inc i) (+ acc (Codec/skipKeyPart b os) (Codec/skipKeyPart b ok)
                                                      (Codec/skipKeyPart b ol) (Codec/overflowHashOffset b ok)
                                                      (Codec/compareBytes b os (- ok os) b ok (- ol ok))))
                                    acc))))
           65536))
    (is (< (allocated-bytes n (fn [^long n]
                                (loop [i 0 acc 0]
                                  (if (< i n)
                                    (recur (inc i) (if (and (Codec/isOverflow b ok) (not (Codec/isOverflow b os)))
                                                     (inc acc)
                                                     acc))
                                    acc))))
           65536))))

(deftest short-values-are-their-own-key-part
  (let [full (enc "abc" Codec/T_STRING)]
    (is (identical? full (Codec/keyPart full)))
    (is (not (Codec/isOverflow (wrap full) 0)))
    (is (= :store/corrupt (:error (ex-data (is (thrown? ExceptionInfo
                                                         (Codec/overflowHashOffset (wrap full) 0)))))))
    (is (not (Codec/isOverflow (wrap (enc 1 Codec/T_LONG)) 0)))))

(deftest a-1000-char-string-fits
  (let [s (apply str (repeat 1000 "x"))
        k (Codec/keyPart (enc s Codec/T_STRING))]
    (is (<= (alength k) Codec/MAX_INLINE))
    (is (neg? (compare-bytes (enc "x" Codec/T_STRING) k)))
    (is (neg? (compare-bytes k (enc "y" Codec/T_STRING))))
    (is (neg? (compare-bytes k (Codec/keyPart (enc (str "x" (subs s 1 300) "y" s) Codec/T_STRING)))))))

(def ^:private long-string-pairs
  "Strings of 0 to 1100 characters that share prefixes of any length, with
  escaped zeros and multi-byte characters where the cut can fall."
  (let [piece (gen/elements ["a" "b" "\u0000" "é" "\uffff"])
        text (fn [lo hi] (gen/fmap (partial apply str) (gen/vector piece lo hi)))]
    (gen/fmap (fn [[base i j s t]]
                [(str (subs base 0 (min i (count base))) s)
                 (str (subs base 0 (min j (count base))) t)])
              (gen/tuple (text 300 500) (gen/choose 0 500) (gen/choose 0 500) (text 0 600) (text 0 600)))))

(defn- mismatch
  "Index of the first differing byte, or the shorter length."
  ^long [^bytes a ^bytes b]
  (let [m (Arrays/mismatch a b)]
    (if (neg? m) (alength a) m)))

(defn- exact-order?
  "Whether the key parts of fa and fb must compare like the values: the fulls
  differ before any overflow marker, or the other value is inline and ends no
  later than the marker's unit."
  [^bytes fa ^bytes ka ^bytes fb ^bytes kb]
  (let [m (mismatch fa fb)
        ok? (fn [^bytes full ^bytes k ^bytes other-k]
              (or (identical? full k)
                  (let [marker (- (alength k) 18)]
                    (or (< m marker)
                        (and (not= (alength other-k) (alength k))
                             (<= (alength other-k) Codec/MAX_INLINE)
                             (<= (alength other-k) (+ marker 2))
                             (not (Codec/isOverflow (wrap other-k) 0)))))))]
    (and (ok? fa ka kb) (ok? fb kb ka))))

(defspec key-parts-of-long-strings trials
  (prop/for-all [[x y] long-string-pairs]
    (let [fx (enc x Codec/T_STRING)
          fy (enc y Codec/T_STRING)
          kx (Codec/keyPart fx)
          ky (Codec/keyPart fy)
          ck (compare-bytes kx ky)]
      (and (<= (alength kx) Codec/MAX_INLINE)
           (self-delimiting? false fx fy)
           (= (= x y) (zero? ck))
           (or (not (exact-order? fx kx fy ky))
               (= (sign (compare x y)) (sign ck)))))))

;; ---------------------------------------------------------------------------
;; EDN

(defn- scramble
  "A value = to v, built differently: maps and sets in another order and
  class, sequentials as lists, seqs or vectors, longs as ints or bigints where
  they fit, metadata added. Inside any set or map key (hashed?) no Java
  collection, whose hash differs from Clojure's; inside a Java set or map key
  (exact?) no other number class either, which .equals would not find."
  ([^Random rnd v] (scramble rnd false false v))
  ([^Random rnd hashed? exact? v]
   (let [shuffled (fn [^Collection xs]
                    (let [l (java.util.ArrayList. xs)]
                      (java.util.Collections/shuffle l rnd)
                      (vec l)))
         pick (fn [fs] ((nth fs (.nextInt rnd (count fs)))))
         java (fn [f] (if hashed? [] [f]))
         again (fn [hashed? exact?] (fn [x] (scramble rnd hashed? exact? x)))]
     (cond
       (map? v)
       (let [kvs (fn [hashed-key? exact-key?]
                   (shuffled (map (fn [[k x]] [((again hashed-key? exact-key?) k) ((again hashed? exact?) x)]) v)))]
         (pick (concat [#(into {} (kvs true exact?))
                        #(apply hash-map (apply concat (kvs true exact?)))
                        #(PersistentArrayMap. (object-array (apply concat (kvs true exact?))))
                        #(with-meta (into {} (kvs true exact?)) {:m 1})]
                       (java #(java.util.HashMap. ^java.util.Map (into {} (kvs true true)))))))

       (set? v)
       (let [xs (fn [hashed-element? exact-element?]
                  (shuffled (map (again hashed-element? exact-element?) v)))]
         (pick (concat [#(set (xs true exact?))
                        #(with-meta (set (xs true exact?)) {:m 1})]
                       (java #(LinkedHashSet. ^Collection (xs true true))))))

       (sequential? v)
       (let [xs (mapv (again hashed? exact?) v)]
         (pick (concat [#(apply list xs)
                        #(or (seq xs) ())
                        #(map identity xs)
                        #(with-meta xs {:m 1})]
                       (java #(java.util.ArrayList. ^Collection xs)))))

       (and (int? v) (not exact?) (<= Integer/MIN_VALUE v Integer/MAX_VALUE))
       (pick [#(int v) #(bigint v) (constantly v)])

       :else v))))

(defspec edn-round-trips-and-is-canonical trials
  (prop/for-all [v gen-edn
                 w gen-edn
                 seed gen/large-integer]
    (let [ev (enc v Codec/T_EDN)
          scrambled (scramble (Random. seed) v)]
      (and (= v (decode* ev))
           (= v (Codec/coerce v Codec/T_EDN))
           (= v scrambled)
           (Arrays/equals ev (enc scrambled Codec/T_EDN))
           (Arrays/equals ev (enc (decode* ev) Codec/T_EDN))
           (= (= v w) (Arrays/equals ev (enc w Codec/T_EDN)))
           (self-delimiting? true ev (enc w Codec/T_EDN))))))

(deftest edn-values-that-are-equal-encode-identically
  (are [a b] (and (= a b) (Arrays/equals (enc a Codec/T_EDN) (enc b Codec/T_EDN)))
    {:a 1 :b 2} {:b 2 :a 1}
    (array-map :a 1 :b 2) (hash-map :b 2 :a 1)
    {:m {:x 1 :y 2}} {:m {:y 2 :x 1}}
    (zipmap (range 20) (range 20)) (into (sorted-map) (zipmap (range 20) (range 20)))
    [1 2] '(1 2)
    [1 2] (map inc [0 1])
    [] ()
    #{1 2 3} (sorted-set 3 2 1)
    {1 :a} {(int 1) :a}
    {:n 1} {:n 1N}
    {:n 1} {:n (biginteger 1)}
    {:d 1.0M} {:d 1.00M}
    {:f 1.5} {:f (float 1.5)}
    {:z 0.0} {:z -0.0}
    (with-meta [1] {:m 1}) [1]
    {:a #{[1 2]}} {:a #{'(1 2)}}
    (java.util.HashMap. {:a 1}) {:a 1}))

(deftest edn-leaves-frozen-by-nippy
  (are [v] (= v (decode* (enc v Codec/T_EDN)))
    \a
    1/3
    [\a 1/3 {:r 22/7}]
    (java.net.URI. "http://example.com")))

;; ---------------------------------------------------------------------------
;; Tags and coercion

(deftest inferred-tags
  (are [v tag] (= tag (Codec/inferTag v))
    true Codec/T_BOOLEAN
    1 Codec/T_LONG
    (int 1) Codec/T_LONG
    (short 1) Codec/T_LONG
    (byte 1) Codec/T_LONG
    1.5 Codec/T_DOUBLE
    (float 1.5) Codec/T_FLOAT
    1N Codec/T_BIGINT
    (biginteger 1) Codec/T_BIGINT
    1.5M Codec/T_BIGDEC
    (Date. 0) Codec/T_INSTANT
    (UUID. 0 0) Codec/T_UUID
    "s" Codec/T_STRING
    :k Codec/T_KEYWORD
    'k Codec/T_SYMBOL
    (byte-array 1) Codec/T_BYTES
    [1 2] Codec/T_EDN
    '(1 2) Codec/T_EDN
    {:a 1} Codec/T_EDN
    #{1} Codec/T_EDN
    1/2 Codec/T_EDN
    \c Codec/T_EDN
    (URI. "urn:a") Codec/T_EDN)
  (is (thrown? IllegalArgumentException (Codec/inferTag nil))))

(deftest coerce-accepts
  (are [v tag expected] (same? expected (Codec/coerce v (int tag)))
    true Codec/T_BOOLEAN true
    1 Codec/T_LONG 1
    (int 5) Codec/T_LONG 5
    (short 5) Codec/T_LONG 5
    (byte -5) Codec/T_LONG -5
    1.5 Codec/T_DOUBLE 1.5
    (float 1.5) Codec/T_DOUBLE 1.5
    (float 1.5) Codec/T_FLOAT (float 1.5)
    1.5 Codec/T_FLOAT (float 1.5)
    ##NaN Codec/T_FLOAT Float/NaN
    ##-Inf Codec/T_FLOAT Float/NEGATIVE_INFINITY
    5 Codec/T_BIGINT 5N
    (int 5) Codec/T_BIGINT 5N
    (biginteger 5) Codec/T_BIGINT 5N
    5N Codec/T_BIGINT 5N
    1.50M Codec/T_BIGDEC 1.50M
    (Date. 5) Codec/T_INSTANT (Date. 5)
    (java.sql.Timestamp. 5) Codec/T_INSTANT (Date. 5)
    (UUID. 1 2) Codec/T_UUID (UUID. 1 2)
    (URI. "urn:a") Codec/T_URI (URI. "urn:a")
    (URI. "urn:a") Codec/T_ANY (URI. "urn:a")
    "s" Codec/T_STRING "s"
    :k Codec/T_KEYWORD :k
    'k Codec/T_SYMBOL 'k
    0 Codec/T_REF 0
    (int 7) Codec/T_REF 7
    (byte-array [1 2]) Codec/T_BYTES (byte-array [1 2])
    '(1 "a" nil) Codec/T_TUPLE [1 "a" nil]
    [(int 1) [1 2] (float 1.5)] Codec/T_TUPLE [1 [1 2] (float 1.5)]
    [] Codec/T_TUPLE []
    '(1 2) Codec/T_EDN [1 2]
    (int 1) Codec/T_ANY 1
    (biginteger 1) Codec/T_ANY 1N
    '(1 2) Codec/T_ANY [1 2]))

(deftest coerce-refuses
  (are [v tag] (nil? (Codec/coerce v (int tag)))
    nil Codec/T_LONG
    nil Codec/T_ANY
    1 Codec/T_BOOLEAN
    "true" Codec/T_BOOLEAN
    1.0 Codec/T_LONG
    1N Codec/T_LONG
    "1" Codec/T_LONG
    1 Codec/T_DOUBLE
    1.5M Codec/T_DOUBLE
    0.1 Codec/T_FLOAT
    1e300 Codec/T_FLOAT
    1.5 Codec/T_BIGINT
    1 Codec/T_BIGDEC
    1.5 Codec/T_BIGDEC
    1 Codec/T_INSTANT
    (java.time.Instant/ofEpochMilli 1) Codec/T_INSTANT
    "00000000-0000-0000-0000-000000000000" Codec/T_UUID
    "urn:a" Codec/T_URI
    (java.net.URL. "http://a.example/") Codec/T_URI
    :a Codec/T_STRING
    "a" Codec/T_KEYWORD
    'a Codec/T_KEYWORD
    :a Codec/T_SYMBOL
    -1 Codec/T_REF
    1.0 Codec/T_REF
    (short 1) Codec/T_REF
    "ab" Codec/T_BYTES
    "abc" Codec/T_TUPLE
    #{1} Codec/T_TUPLE
    [(fn [])] Codec/T_TUPLE
    (fn []) Codec/T_EDN
    (doto (java.util.HashMap.) (.put 1 :a) (.put (int 1) :b)) Codec/T_EDN
    (LinkedHashSet. ^Collection (list 1 (int 1))) Codec/T_EDN)
  (is (thrown? IllegalArgumentException (Codec/coerce 1 99)))
  (is (thrown? IllegalArgumentException (Codec/encode 1 Codec/T_ANY)))
  (is (thrown? IllegalArgumentException (Codec/encode -1 Codec/T_REF)))
  (is (thrown? IllegalArgumentException (Codec/encode nil Codec/T_LONG))))

;; ---------------------------------------------------------------------------
;; Damaged bytes: what a damaged store hands the decoder

(def ^:private gen-damaged
  "A full encoding (of any type, tuples and EDN too) cut short, with bytes
  overwritten, or random bytes."
  (gen/one-of
   [(gen/let [[tag g] (gen/elements (conj typed-gens [Codec/T_TUPLE gen-tuple]
                                          [Codec/T_EDN (gen/resize 8 gen/any-equatable)]))
              v g
              cut gen/nat
              flips (gen/vector (gen/tuple gen/nat gen/byte) 0 3)]
      (let [^bytes full (enc v tag)
            ^bytes b (Arrays/copyOf full (int (max 1 (- (alength full) (mod cut 4)))))]
        (doseq [[i x] flips] (aset b (int (mod i (alength b))) (byte x)))
        b))
    (gen/fmap byte-array (gen/vector (gen/frequency [[3 (gen/choose 0 20)] [1 gen/byte] [1 (gen/return 0)]])
                                     1 40))]))

(defn- corrupt-or-value
  "Calls f: its value, :corrupt for a :store/corrupt ex-info, else the exception."
  [f]
  (try (f) (catch ExceptionInfo e (if (= :store/corrupt (:error (ex-data e))) :corrupt e))
       (catch Throwable t t)))

(defspec damaged-bytes-decode-to-a-value-or-store-corrupt trials
  (prop/for-all [^bytes b gen-damaged]
    (not-any? #(instance? Throwable %)
              (for [f [#(Codec/decode (wrap b) 0) #(Codec/skipKeyPart (wrap b) 0)
                       #(Codec/isOverflow (wrap b) 0) #(Codec/overflowHashOffset (wrap b) 0)]]
                (corrupt-or-value f)))))

(deftest damaged-nippy-bytes-are-store-corrupt
  ;; an EDN value nippy froze, its bytes damaged: nippy's own ex-info on thaw (found by the
  ;; property above, seed 1796158758755) is :store/corrupt like every other malformed value
  (let [b (byte-array [16 35 -127 1 9 -17 -68 -62 68 -99 -44 75 -8 7 95 -113 -3 -8 92 120 13
                       36 -127 1 78 80 89 0 -1 10 0 -1 0 -1 0 0])]
    (is (= :corrupt (corrupt-or-value #(Codec/decode (wrap b) 0))))))
