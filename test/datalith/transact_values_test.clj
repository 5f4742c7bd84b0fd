(ns datalith.transact-values-test
  "transact! and the values tx-data holds: Java arrays are refused (byte arrays
  are values), errors about values say what is wrong, and no depth of nesting
  overflows the stack."
  (:require [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]]
            [datalith.transact-support :refer [error-of schema]]))

;; ---------------------------------------------------------------- values

(defn- message-of [conn tx]
  (try (d/transact! conn tx) nil
       (catch clojure.lang.ExceptionInfo ex
         (when (= :tx/value-type (:error (ex-data ex))) (ex-message ex)))))

(deftest java-arrays-are-not-values
  ;; An array compares by identity, so a stored one could never be found or
  ;; retracted: refused wherever it appears, as Datomic refuses it. byte[]
  ;; is the bytes type.
  (each-store [conn {:schema schema}]
    (are [tx] (re-find #"Java array" (str (message-of conn tx)))
      [{:db/id "e" :user/tags (object-array [:a :b])}]
      [{:db/id "e" :user/friends (long-array [1 2])}]
      [{:db/id "e" :user/name "E" :issue/_assignee (object-array [1])}]
      [[:db/add "e" :user/tags (object-array [:a])]]
      [[:db/add "e" :user/friends (object-array [1])]]
      [[:db/add "e" :user/name (char-array "abc")]]
      [[:db/add "e" :free/x (object-array [1 2])]]
      [[:db/add "e" :free/x (int-array [1 2])]]
      [[:db/add "e" :free/x {:a (int-array [1])}]]
      [[:db/add "e" :free/x [1 [2 (object-array [3])]]]]
      [[:db/add "e" :free/x #{(to-array [1])}]]
      [[:db/add "e" :free/x (java.util.ArrayList. ^java.util.Collection (list (object-array [1])))]])
    (is (= 1 (d/basis-t (d/db conn))) "nothing was written (t 1 installed the schema)")
    (testing "byte arrays are values, compared by content"
      (let [e (get-in (d/transact! conn [{:db/id "e" :free/b (byte-array [1 2]) :free/m {:b (byte-array [3])}}])
                      [:tempids "e"])]
        (is (= [e] (map :e (d/datoms (d/db conn) :avet :free/b (byte-array [1 2])))))
        (d/transact! conn [[:db/retract e :free/b (byte-array [1 2])]])
        (is (empty? (d/datoms (d/db conn) :eavt e :free/b)))))))

(deftest value-errors-say-what-is-wrong
  (each-store [conn {:schema schema}]
    (are [tx expected] (re-find expected (str (message-of conn tx)))
      [[:db/add "e" :free/x inc]] #"^Value #object\[clojure.core\$inc .* of :free/x cannot be stored: datalith cannot encode a clojure.core\$inc \(:free/x has no :db/valueType"
      [[:db/add "e" :free/x (Object.)]] #"cannot encode a java.lang.Object"
      [[:db/add "e" :user/age "old"]] #"^Value \"old\" \(a java.lang.String\) is not a :db.type/long as :user/age requires$"
      [[:db/add "e" :user/tags "k"]] #"is not a :db.type/keyword as :user/tags requires"
      [[:db/add "e" :free/x (reduce (fn [v _] [v]) 1 (range 300))]]
      #"cannot be stored: it nests collections more than 256 levels deep"
      [[:db/add "e" :free/x (object-array 1)]] #"cannot be stored: it is a Java array \(Object\[\]\)"
      [[:db/add "e" :free/x (java.util.HashSet. ^java.util.Collection (list 1 (int 1)))]]
      #"cannot be stored: it holds a Java set or map with two members that are = to each other"
      [[:db/add "e" :free/x (map (fn [_] (throw (IllegalStateException. "lazy"))) [1])]]
      #"cannot encode a clojure.lang.LazySeq")
    (is (not-any? #(re-find #"null|nil as" (str (message-of conn %)))
                  [[[:db/add "e" :free/x inc]] [[:db/add "e" :free/x (Object.)]]]))
    (testing "a huge value is shown shortened"
      (is (< (count (message-of conn [[:db/add "e" :user/age (vec (range 100000))]])) 400)))))

;; ---------------------------------------------------------------- nesting

(defn overflow-fn [_db] (letfn [(f [n] (inc (f n)))] (f 0)))

(deftest deep-nesting
  ;; No depth of nesting that tx-data can hold overflows the stack: nested
  ;; maps are expanded with a stack of their own, component trees retracted
  ;; with a work list; what has no business being deep gets a clear limit.
  (each-store [conn {:schema schema}]
    (let [chain (fn [n] (reduce (fn [m i] {:comment/text (str i) :comment/replies [m]})
                                {:comment/text "leaf"} (range n)))]
      (testing "component maps 5,000 deep, with and transact!"
        (let [w (d/with (d/db conn) [(assoc (chain 5000) :db/id "top")])]
          (is (= 5001 (count (d/datoms (:db-after w) :aevt :comment/text)))))
        (let [top (get-in (d/transact! conn [(assoc (chain 5000) :db/id "top")]) [:tempids "top"])]
          (is (= 5001 (count (d/datoms (d/db conn) :aevt :comment/text))))
          (testing "and retracted through the components"
            (d/transact! conn [[:db/retractEntity top]])
            (is (empty? (d/datoms (d/db conn) :aevt :comment/text))))))
      (testing "a map that contains itself"
        (let [m (java.util.HashMap.)]
          (.put m :comment/text "loop")
          (.put m :comment/replies [m])
          (is (= :tx/too-deep (error-of #(d/transact! conn [m]))))))
      (testing "lookup refs in lookup refs"
        (d/transact! conn [{:db/ident :node/parent :db/valueType :db.type/ref
                            :db/unique :db.unique/identity}
                           {:db/id "root" :user/email "root@x"}])
        (d/transact! conn [{:db/id "n1" :node/parent [:user/email "root@x"]}])
        (d/transact! conn [{:db/id "n2" :node/parent [:node/parent [:user/email "root@x"]]}])
        (is (= "root@x" (-> (d/entity (d/db conn) [:node/parent [:node/parent [:user/email "root@x"]]])
                            :node/parent :node/parent :user/email)))
        (is (= :tx/too-deep
               (error-of #(d/transact! conn [[:db/add (reduce (fn [r _] [:node/parent r])
                                                              [:user/email "root@x"] (range 100))
                                                      :user/name "deep"]])))))
      (testing "EDN values"
        (is (= :tx/value-type
               (error-of #(d/transact! conn [[:db/add "e" :free/x (reduce (fn [v _] {:k v}) 1
                                                                          (range 100000))]])))))
      (testing "a transaction function that overflows the stack"
        (is (= :tx/fn-failed (error-of #(d/transact! conn [(list `overflow-fn)])))))
      (testing "the connection still works"
        (is (= "A" (:user/name (d/entity (:db-after (d/transact! conn [{:user/email "after@x"
                                                                         :user/name "A"}]))
                                         [:user/email "after@x"]))))))))
