(ns datalith.key-order-test
  "The in-memory trees' key order (datalith.store.KeyOrder, package-private, called by
  reflection) against the JDK's unsigned order, over generated keys and ranges of them."
  (:require [clojure.test :refer [deftest is]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop])
  (:import [java.lang.reflect Method]
           [java.util Arrays]))

(set! *warn-on-reflection* true)

(def ^:private ^Method compare-method
  (doto (.getDeclaredMethod (Class/forName "datalith.store.KeyOrder") "compare"
                            (into-array Class [(Class/forName "[B") Integer/TYPE Integer/TYPE
                                               (Class/forName "[B") Integer/TYPE Integer/TYPE]))
    (.setAccessible true)))

(defn- key-order [^bytes a af at ^bytes b bf bt]
  (.invoke compare-method nil (object-array [a (int af) (int at) b (int bf) (int bt)])))

(def ^:private gen-byte (gen/frequency [[3 (gen/elements [0 1 127 -128 -1])] [2 gen/byte]]))

(def ^:private gen-pair
  ;; two keys sharing a prefix of any length (the trees' keys share 8 or 16 bytes and more),
  ;; each within an array with bytes before and after it
  (gen/let [shared (gen/vector gen-byte 0 40)
            a (gen/vector gen-byte 0 20)
            b (gen/vector gen-byte 0 20)
            [ab aa bb ba] (gen/vector (gen/vector gen-byte 0 9) 4)]
    {:a (byte-array (concat ab shared a aa)) :af (count ab) :at (+ (count ab) (count shared) (count a))
     :b (byte-array (concat bb shared b ba)) :bf (count bb) :bt (+ (count bb) (count shared) (count b))}))

(deftest key-order-is-the-unsigned-order
  (let [r (tc/quick-check 3000
                          (prop/for-all [{:keys [a af at b bf bt]} gen-pair]
                            (= (Long/signum (long (key-order a af at b bf bt)))
                               (Integer/signum (Arrays/compareUnsigned ^bytes a (int af) (int at)
                                                                       ^bytes b (int bf) (int bt)))
                               (- (Integer/signum (Arrays/compareUnsigned ^bytes b (int bf) (int bt)
                                                                          ^bytes a (int af) (int at)))))))]
    (is (:pass? r) (pr-str (select-keys r [:seed :shrunk])))))
