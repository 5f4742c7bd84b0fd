(ns datalith.pull-test
  "d/pull, d/pull-many and (pull ?e pattern) in :find: every element and
  option of Datomic's pattern grammar, on both stores.

  Where Datomic's behaviour is an edge case, the test says which:
  - a missing entity id pulls as nil, except that `[:db/id]` and `[*]` give
    {:db/id n} (Datomic does; DataScript issue #187, Datomic forum
    \"pull $db ?entity pattern is undocumented\");
  - an id, ident or lookup ref that names no entity pulls as nil;
  - cardinality-many attributes (and non-component reverse refs) give at
    most 1000 values unless :limit says otherwise, :limit nil gives all;
  - a nested entity the sub-pattern matches nothing of is left out, and an
    attribute left with no values is omitted (\"non-matching results are
    removed entirely\");
  - :xform sees the value, nil when the attribute is missing; :default is not
    transformed and stands in when the result is nil;
  - recursion as Datomic does it (pull_recursion_test has the cases,
    checked against Datomic Local): past the depth limit an entity gives only
    what the pattern asks of :db/id (and is left out when it asks nothing);
    an entity reached again on the path from the root (the root not counted)
    is pulled once more with its recursion cut."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is are testing]]
            [datalith.core :as d]
            [datalith.test-util :refer [each-store]]))

(def schema
  {:user/email {:db/valueType :db.type/string :db/unique :db.unique/identity}
   :user/name {:db/valueType :db.type/string}
   :user/aliases {:db/valueType :db.type/string :db/cardinality :db.cardinality/many}
   :user/tags {:db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}
   :user/manager {:db/valueType :db.type/ref}
   :person/friends {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :issue/number {:db/valueType :db.type/long :db/unique :db.unique/value}
   :issue/title {:db/valueType :db.type/string}
   :issue/assignee {:db/valueType :db.type/ref}
   :issue/labels {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
   :issue/body {:db/valueType :db.type/ref :db/isComponent true}
   :issue/comments {:db/valueType :db.type/ref :db/cardinality :db.cardinality/many
                    :db/isComponent true}
   :comment/text {:db/valueType :db.type/string}
   :comment/reply {:db/valueType :db.type/ref :db/isComponent true}
   :label/name {:db/valueType :db.type/string}})

(defn- load-data
  "Transacts the test data; returns the tempids. Friends form a cycle
  ada -> bob -> cy -> ada; managers form a chain dan -> cy -> bob -> ada."
  [conn]
  (d/transact! conn [{:db/ident :label/bug}])
  (:tempids
   (d/transact! conn
                [{:db/id "ada" :user/email "ada@x" :user/name "Ada" :user/aliases #{"A" "Countess"}
                  :user/tags #{:math :code} :person/friends ["bob"]}
                 {:db/id "bob" :user/email "bob@x" :user/name "Bob" :user/manager "ada"
                  :person/friends ["cy"]}
                 {:db/id "cy" :user/email "cy@x" :user/name "Cy" :user/manager "bob"
                  :person/friends ["ada"]}
                 {:db/id "dan" :user/email "dan@x" :user/manager "cy"}
                 {:db/id "l1" :label/name "ui"}
                 {:db/id "i" :issue/number 7 :issue/title "Crash" :issue/assignee "bob"
                  :issue/labels ["l1" :label/bug]
                  :issue/body {:db/id "body" :comment/text "It crashes"
                               :comment/reply {:db/id "reply" :comment/text "Same here"}}
                  :issue/comments [{:db/id "c1" :comment/text "a"} {:db/id "c2" :comment/text "b"}]}
                 {:db/id "j" :issue/number 8 :issue/title "Typo" :issue/assignee "bob"}])))

(defn shout
  "An :xform: upper-cases a string, or \"NONE\" for nil."
  [s]
  (if (some? s) (str/upper-case s) "NONE"))

(defn- pull-error
  "The ex-data of the error pulling `pattern`, or :no-error."
  [db pattern eid]
  (try (d/pull db pattern eid) :no-error
       (catch clojure.lang.ExceptionInfo ex (assoc (ex-data ex) :message (ex-message ex)))))

(deftest wildcard
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob cy i j l1 body reply c1 c2]} (load-data conn)
          db (d/db conn)
          bug (d/entid db :label/bug)]
      (testing "every attribute, :db/id, cardinality many as vectors, refs as {:db/id n}"
        (is (= {:db/id ada :user/email "ada@x" :user/name "Ada" :user/aliases ["A" "Countess"]
                :user/tags [:code :math] :person/friends [{:db/id bob}]}
               (d/pull db '[*] ada))))
      (testing "components expanded recursively, other refs as {:db/id n}"
        (is (= {:db/id i :issue/number 7 :issue/title "Crash" :issue/assignee {:db/id bob}
                :issue/labels [{:db/id bug} {:db/id l1}] ; ids in order: :label/bug came first
                :issue/body {:db/id body :comment/text "It crashes"
                             :comment/reply {:db/id reply :comment/text "Same here"}}
                :issue/comments [{:db/id c1 :comment/text "a"} {:db/id c2 :comment/text "b"}]}
               (d/pull db '[*] i))))
      (testing "with a map spec for one attribute; the string \"*\" and a pattern given as EDN text"
        (are [pattern] (= {:db/id bob :user/email "bob@x" :user/name "Bob"
                           :user/manager {:user/name "Ada"} :person/friends [{:db/id cy}]}
                          (d/pull db pattern bob))
          '[* {:user/manager [:user/name]}]
          '["*" {:user/manager [:user/name]}]
          "[* {:user/manager [:user/name]}]"))
      (testing "a reverse ref next to the wildcard"
        (is (= [{:db/id i} {:db/id j}]
               (:issue/_assignee (d/pull db '[* :issue/_assignee] bob))))))))

(deftest attributes
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob i body reply]} (load-data conn)
          db (d/db conn)]
      (are [pattern eid expected] (= expected (d/pull db pattern eid))
        [:user/name] ada {:user/name "Ada"}
        [:user/name :user/email] ada {:user/name "Ada" :user/email "ada@x"}
        [:db/id] ada {:db/id ada}
        [:db/id :user/name] ada {:db/id ada :user/name "Ada"}
        [:user/aliases] ada {:user/aliases ["A" "Countess"]}
        [:user/tags] ada {:user/tags [:code :math]}
        [:user/manager] bob {:user/manager {:db/id ada}}
        [:person/friends] ada {:person/friends [{:db/id bob}]}
        ;; missing attributes are omitted, not nil
        [:user/name :user/manager] ada {:user/name "Ada"}
        [:user/name :no/such-attr] ada {:user/name "Ada"}
        ;; nothing matches: nil
        [:user/manager] ada nil
        [:issue/title] ada nil
        ;; a component named explicitly is expanded with [*]
        [:issue/body] i {:issue/body {:db/id body :comment/text "It crashes"
                                      :comment/reply {:db/id reply :comment/text "Same here"}}})
      (testing "cardinality many values are vectors"
        (is (vector? (:user/aliases (d/pull db [:user/aliases] ada))))
        (is (vector? (:person/friends (d/pull db [:person/friends] ada))))))))

(deftest nested-maps
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob cy i l1]} (load-data conn)
          db (d/db conn)]
      (are [pattern eid expected] (= expected (d/pull db pattern eid))
        '[:issue/title {:issue/assignee [:user/name]}] i
        {:issue/title "Crash" :issue/assignee {:user/name "Bob"}}

        '[{:issue/assignee [:user/name {:user/manager [:user/email]}]}] i
        {:issue/assignee {:user/name "Bob" :user/manager {:user/email "ada@x"}}}

        '[{:issue/labels [:db/id :label/name]}] i
        {:issue/labels [{:db/id (d/entid db :label/bug)} {:db/id l1 :label/name "ui"}]}

        '[{:issue/labels [:db/ident]}] i
        {:issue/labels [{:db/ident :label/bug}]}

        '[{:issue/comments [:comment/text]}] i
        {:issue/comments [{:comment/text "a"} {:comment/text "b"}]}

        '[{:issue/body [:comment/text {:comment/reply [:comment/text]}]}] i
        {:issue/body {:comment/text "It crashes" :comment/reply {:comment/text "Same here"}}}

        '[{:person/friends [:user/name {:person/friends [:user/name]}]}] ada
        {:person/friends [{:user/name "Bob" :person/friends [{:user/name "Cy"}]}]}

        '[{:user/manager [*]}] cy
        {:user/manager {:db/id bob :user/email "bob@x" :user/name "Bob"
                        :user/manager {:db/id ada} :person/friends [{:db/id cy}]}}

        ;; nested entities the sub-pattern matches nothing of are left out
        '[:user/name {:person/friends [:issue/title]}] ada
        {:user/name "Ada"}

        '[{:issue/labels [:label/name]}] i
        {:issue/labels [{:label/name "ui"}]}

        '[{:user/manager [:no/such-attr]}] bob
        nil))))

(deftest reverse-refs
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob cy dan i j body c1 reply]} (load-data conn)
          db (d/db conn)]
      (are [pattern eid expected] (= expected (d/pull db pattern eid))
        [:issue/_assignee] bob {:issue/_assignee [{:db/id i} {:db/id j}]}
        [:user/_manager] ada {:user/_manager [{:db/id bob}]}
        [:user/name :user/_manager] cy {:user/name "Cy" :user/_manager [{:db/id dan}]}
        [{:issue/_assignee [:issue/title]}] bob {:issue/_assignee [{:issue/title "Crash"} {:issue/title "Typo"}]}
        [{:user/_manager [:user/name {:user/_manager [:user/email]}]}] ada
        {:user/_manager [{:user/name "Bob" :user/_manager [{:user/email "cy@x"}]}]}
        ;; in a nested map
        [{:issue/assignee [:user/name {:issue/_assignee [:issue/number]}]}] j
        {:issue/assignee {:user/name "Bob" :issue/_assignee [{:issue/number 7} {:issue/number 8}]}}
        ;; a component's reverse ref is its single owner
        [:issue/_body] body {:issue/_body {:db/id i}}
        [:issue/_comments] c1 {:issue/_comments {:db/id i}}
        [{:issue/_comments [:issue/title]}] c1 {:issue/_comments {:issue/title "Crash"}}
        [{:comment/_reply [:comment/text {:issue/_body [:issue/number]}]}] reply
        {:comment/_reply {:comment/text "It crashes" :issue/_body {:issue/number 7}}}
        ;; nothing points here
        [:issue/_assignee] ada nil
        [:user/name :issue/_assignee] ada {:user/name "Ada"})
      (testing "a reverse attribute must be a ref"
        (is (= :pull/pattern (:error (pull-error db [:user/_name] ada))))))))

(deftest attribute-options
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob dan i j]} (load-data conn)
          db (d/db conn)]
      (are [pattern eid expected] (= expected (d/pull db pattern eid))
        ;; :as
        '[[:user/name :as "Name"]] ada {"Name" "Ada"}
        '[[:user/name :as :name] [:user/email :as :email]] ada {:name "Ada" :email "ada@x"}
        '[[:db/id :as :id] :user/name] ada {:id ada :user/name "Ada"}
        '[[:issue/_assignee :as :issues]] bob {:issues [{:db/id i} {:db/id j}]}
        '[{[:issue/assignee :as :who] [[:user/name :as :n]]}] i {:who {:n "Bob"}}
        ;; :limit
        '[[:user/aliases :limit 1]] ada {:user/aliases ["A"]}
        '[[:user/aliases :limit 5]] ada {:user/aliases ["A" "Countess"]}
        '[[:user/aliases :limit nil]] ada {:user/aliases ["A" "Countess"]}
        '[[:issue/_assignee :limit 1]] bob {:issue/_assignee [{:db/id i}]}
        '[{[:issue/_assignee :limit 1] [:issue/title]}] bob {:issue/_assignee [{:issue/title "Crash"}]}
        '[[:user/name :limit 1]] ada {:user/name "Ada"}
        ;; :default
        '[[:user/manager :default :none]] ada {:user/manager :none}
        '[[:user/name :default "?"]] ada {:user/name "Ada"}
        '[:user/name [:user/aliases :default []]] dan {:user/aliases []}
        '[[:issue/_assignee :default 0]] ada {:issue/_assignee 0}
        '[[:user/name :as :n :default "anon"]] dan {:n "anon"}
        ;; :xform, a fully qualified function symbol
        '[[:user/name :xform datalith.pull-test/shout]] ada {:user/name "ADA"}
        '[[:user/aliases :xform clojure.core/count]] ada {:user/aliases 2}
        '[[:db/id :xform clojure.core/str]] ada {:db/id (str ada)}
        '[[:user/manager :xform clojure.core/keys]] bob {:user/manager [:db/id]}
        '[[:user/name :xform datalith.pull-test/shout]] i {:user/name "NONE"}
        '[[:user/name :xform clojure.core/identity]] i nil
        '[[:user/name :xform clojure.core/identity :default "d"]] i {:user/name "d"}
        '[[:user/name :xform datalith.pull-test/shout :default "d"]] i {:user/name "NONE"}
        ;; list form
        '[(:user/aliases :limit 1)] ada {:user/aliases ["A"]}
        '[(:user/name :as :n)] ada {:n "Ada"}
        '[(:user/manager :default :none)] ada {:user/manager :none}
        '[(:user/aliases :limit 1 :as :a :xform clojure.core/first)] ada {:a "A"}
        ;; legacy expressions
        '[(limit :user/aliases 1)] ada {:user/aliases ["A"]}
        '[(limit :user/aliases nil)] ada {:user/aliases ["A" "Countess"]}
        '[(default :user/manager :none)] ada {:user/manager :none}
        '[(default :user/name "x")] ada {:user/name "Ada"}
        '[{(limit :issue/_assignee 1) [:issue/number]}] bob {:issue/_assignee [{:issue/number 7}]}))))

(deftest default-limit
  (each-store [conn {:schema schema}]
    (let [tags (set (map #(keyword (str "t" %)) (range 1100)))
          {:strs [big target]} (:tempids (d/transact! conn [{:db/id "big" :user/tags tags}
                                                            {:db/id "target" :user/name "T"}]))
          _ (d/transact! conn (for [n (range 1005)] {:user/manager target :user/email (str n "@x")}))
          db (d/db conn)]
      (testing "cardinality many: 1000 values unless :limit says otherwise"
        (are [pattern n] (= n (count (:user/tags (d/pull db pattern big))))
          [:user/tags] 1000
          [[:user/tags :limit nil]] 1100
          '[(limit :user/tags nil)] 1100
          [[:user/tags :limit 1050]] 1050
          [[:user/tags :limit 3]] 3))
      (testing "the first values in index order"
        (is (= (take 1000 (sort tags)) (:user/tags (d/pull db [:user/tags] big)))))
      (testing "a non-component reverse ref too"
        (are [pattern n] (= n (count (:user/_manager (d/pull db pattern target))))
          [:user/_manager] 1000
          [[:user/_manager :limit nil]] 1005
          [{[:user/_manager :limit nil] [:user/email]}] 1005)))))

(deftest recursion
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob cy dan]} (load-data conn)
          db (d/db conn)]
      (testing "unbounded recursion on a cycle: the root once more, then Bob with his recursion cut"
        (is (= {:user/name "Ada"
                :person/friends [{:user/name "Bob"
                                  :person/friends [{:user/name "Cy"
                                                    :person/friends [{:user/name "Ada"
                                                                      :person/friends [{:user/name "Bob"}]}]}]}]}
               (d/pull db '[:user/name {:person/friends ...}] ada)))
        (is (= {:db/id ada
                :person/friends [{:db/id bob
                                  :person/friends [{:db/id cy
                                                    :person/friends [{:db/id ada
                                                                      :person/friends [{:db/id bob
                                                                                        :person/friends [{:db/id cy}]}]}]}]}]}
               (d/pull db '[:db/id {:person/friends ...}] ada))))
      (testing "a chain without cycles: unbounded, forward and reverse"
        (is (= {:user/email "dan@x"
                :user/manager {:user/email "cy@x"
                               :user/manager {:user/email "bob@x"
                                              :user/manager {:user/email "ada@x"}}}}
               (d/pull db '[:user/email {:user/manager ...}] dan)))
        (is (= {:user/email "ada@x"
                :user/_manager [{:user/email "bob@x"
                                 :user/_manager [{:user/email "cy@x"
                                                  :user/_manager [{:user/email "dan@x"}]}]}]}
               (d/pull db '[:user/email {:user/_manager ...}] ada))))
      (testing "depth limits: past the limit an entity gives only its :db/id, if the pattern asks for it"
        (are [depth expected] (= expected (d/pull db [:user/email {:user/manager depth}] dan))
          1 {:user/email "dan@x" :user/manager {:user/email "cy@x"}}
          2 {:user/email "dan@x" :user/manager {:user/email "cy@x" :user/manager {:user/email "bob@x"}}}
          3 {:user/email "dan@x"
             :user/manager {:user/email "cy@x"
                            :user/manager {:user/email "bob@x" :user/manager {:user/email "ada@x"}}}}
          10 (d/pull db '[:user/email {:user/manager ...}] dan))
        (are [depth expected] (= expected (d/pull db [:db/id {:user/manager depth}] dan))
          1 {:db/id dan :user/manager {:db/id cy :user/manager {:db/id bob}}}
          2 {:db/id dan :user/manager {:db/id cy :user/manager {:db/id bob :user/manager {:db/id ada}}}}))
      (testing "two recursive attributes at once, each with its own depth"
        (is (= {:user/name "Cy"
                :user/manager {:user/name "Bob"
                               :person/friends [{:user/name "Cy"
                                                 :person/friends [{:user/name "Ada"
                                                                   :person/friends [{:user/name "Bob"}]}]}]}
                :person/friends [{:user/name "Ada"
                                  :person/friends [{:user/name "Bob"
                                                    :user/manager {:user/name "Ada"}
                                                    :person/friends [{:user/name "Cy"
                                                                      :user/manager {:user/name "Bob"}
                                                                      :person/friends [{:user/name "Ada"}]}]}]}]}
               (d/pull db '[:user/name {:user/manager 1} {:person/friends ...}] cy))))
      (testing "recursion with the wildcard"
        (is (= {:db/id dan :user/email "dan@x"
                :user/manager {:db/id cy :user/email "cy@x" :user/name "Cy"
                               :person/friends [{:db/id ada}] :user/manager {:db/id bob}}}
               (d/pull db '[* {:user/manager 1}] dan)))))))

(deftest deep-recursion
  (each-store [conn {:schema {:n/i {:db/valueType :db.type/long :db/unique :db.unique/identity}
                              :n/next {:db/valueType :db.type/ref}
                              :n/part {:db/valueType :db.type/ref :db/isComponent true}}}]
    (let [n 4000
          depth (fn [m k] (count (take-while some? (iterate k m))))]
      (d/transact! conn (for [i (range n)] {:n/i i}))
      (d/transact! conn (for [i (range 1 n)] [:db/add [:n/i i] :n/next [:n/i (dec i)]]))
      (d/transact! conn (for [i (range n (* 2 n))] {:n/i i}))
      (d/transact! conn (for [i (range (inc n) (* 2 n))] [:db/add [:n/i i] :n/part [:n/i (dec i)]]))
      (let [db (d/db conn)]
        (testing "a chain of refs far deeper than the Java stack would allow"
          (is (= n (depth (d/pull db '[:n/i {:n/next ...}] [:n/i (dec n)]) :n/next)))
          (is (= n (depth (d/pull db '[:n/i {:n/_next ...}] [:n/i 0]) (comp first :n/_next))))
          (testing "ten levels below the root, then nothing (the pattern has no :db/id)"
            (is (= 11 (depth (d/pull db '[:n/i {:n/next 10}] [:n/i (dec n)]) :n/next)))))
        (testing "a chain of components under the wildcard"
          (is (= n (depth (d/pull db '[*] [:n/i (dec (* 2 n))]) :n/part))))))))

(deftest entity-argument
  (each-store [conn {:schema schema}]
    (let [{:strs [ada i]} (load-data conn)
          db (d/db conn)
          missing 987654321]
      (testing "an id, a lookup ref or an ident"
        (are [eid expected] (= expected (d/pull db [:db/id :user/name] eid))
          ada {:db/id ada :user/name "Ada"}
          (int ada) {:db/id ada :user/name "Ada"}
          [:user/email "ada@x"] {:db/id ada :user/name "Ada"})
        (is (= {:issue/title "Crash"} (d/pull db [:issue/title] [:issue/number 7])))
        (is (= {:db/ident :label/bug} (d/pull db [:db/ident] :label/bug)))
        (is (= {:db/ident :user/email :db/unique {:db/id (d/entid db :db.unique/identity)}}
               (d/pull db [:db/ident :db/unique] :user/email))))
      (testing "an id with no datoms: nil, but {:db/id n} for [:db/id] and [*] (as Datomic)"
        (are [pattern expected] (= expected (d/pull db pattern missing))
          [:user/name] nil
          [:user/name :issue/_assignee] nil
          [:db/id] {:db/id missing}
          [:db/id :user/name] {:db/id missing}
          '[*] {:db/id missing}
          [[:user/name :default "none"]] {:user/name "none"}))
      (testing "a lookup ref or ident that names no entity: nil"
        (are [eid] (nil? (d/pull db '[*] eid))
          [:user/email "nobody@x"]
          [:issue/number 99]
          :no/such-ident)
        (is (nil? (d/pull db [:db/id] [:user/email "nobody@x"]))))
      (testing "a bad entity argument is an error"
        (are [eid] (= :pull/entity (:error (pull-error db [:user/name] eid)))
          [:user/name "Ada"]
          "ada"
          -1))
      (testing "a retracted entity looks missing"
        (d/transact! conn [[:db/retractEntity i]])
        (is (nil? (d/pull (d/db conn) [:issue/title] i)))
        (is (= {:db/id i} (d/pull (d/db conn) '[*] i)))))))

(deftest pull-many
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob cy]} (load-data conn)
          db (d/db conn)]
      (is (= [{:user/name "Cy"} {:user/name "Ada"} {:user/name "Bob"} {:user/name "Ada"}]
             (d/pull-many db [:user/name] [cy ada [:user/email "bob@x"] ada])))
      (testing "missing entities are nil in place"
        (is (= [{:user/name "Bob"} nil nil {:user/name "Cy"}]
               (d/pull-many db [:user/name] [bob 987654321 [:user/email "no@x"] cy])))
        (is (= [{:db/id 987654321} {:db/id ada}] (d/pull-many db [:db/id] [987654321 ada]))))
      (is (= [] (d/pull-many db '[*] [])))
      (is (vector? (d/pull-many db [:user/name] (list ada bob)))))))

(deftest pull-in-find
  (each-store [conn {:schema schema}]
    (let [{:strs [ada bob]} (load-data conn)
          db (d/db conn)]
      (testing "each find shape"
        (is (= #{[{:user/name "Ada"}] [{:user/name "Bob"}] [{:user/name "Cy"}]}
               (set (d/q '[:find (pull ?e [:user/name]) :where [?e :user/name]] db))))
        (is (= #{[bob {:issue/title "Crash"}] [bob {:issue/title "Typo"}]}
               (set (d/q '[:find ?u (pull ?i [:issue/title]) :where [?i :issue/assignee ?u]] db))))
        (is (= #{{:user/name "Ada"} {:user/name "Bob"} {:user/name "Cy"}}
               (set (d/q '[:find [(pull ?e [:user/name]) ...] :where [?e :user/name]] db))))
        (is (= {:db/id ada :user/email "ada@x"}
               (d/q '[:find (pull ?e [:db/id :user/email]) . :where [?e :user/name "Ada"]] db)))
        (is (= [{:user/name "Ada"} "ada@x"]
               (d/q '[:find [(pull ?e [:user/name]) ?m] :where [?e :user/email ?m] [?e :user/name "Ada"]]
                    db)))
        (is (= #{{:n "Ada" :p {:user/email "ada@x"}}}
               (set (d/q '[:find ?n (pull ?e [:user/email]) :keys n p
                           :where [?e :user/name ?n] [(= ?n "Ada")]] db)))))
      (testing "the pattern given as an :in input"
        (is (= #{[{:user/email "ada@x"}]}
               (set (d/q '[:find (pull ?e pattern) :in $ pattern :where [?e :user/name "Ada"]]
                         db [:user/email]))))
        (is (= #{[{:user/name "Ada"} {:user/email "ada@x"}]}
               (set (d/q '[:find (pull ?e p1) (pull ?e p2) :in $ p1 p2 :where [?e :user/name "Ada"]]
                         db [:user/name] [:user/email])))))
      (testing "nested, reverse and recursive patterns, and the wildcard"
        (is (= #{[{:user/name "Bob" :issue/_assignee [{:issue/number 7} {:issue/number 8}]
                   :user/manager {:user/name "Ada"}}]}
               (set (d/q '[:find (pull ?u [:user/name {:issue/_assignee [:issue/number]}
                                           {:user/manager [:user/name]}])
                           :where [?u :user/email "bob@x"]] db))))
        (is (= (d/pull db '[*] ada)
               (d/q '[:find (pull ?e [*]) . :where [?e :user/email "ada@x"]] db))))
      (testing "pull from a named source"
        (d/transact! conn [[:db/add ada :user/name "Ada L"]])
        (is (= #{[{:user/name "Ada"} {:user/name "Ada L"}]}
               (set (d/q '[:find (pull $before ?e [:user/name]) (pull ?e [:user/name])
                           :in $ $before :where [$before ?e :user/email "ada@x"]]
                         (d/db conn) db))))))))

(deftest malformed-patterns
  (each-store [conn {:schema schema}]
    (let [{:strs [ada]} (load-data conn)
          db (d/db conn)]
      (are [pattern element] (let [data (pull-error db pattern ada)]
                               (and (= :pull/pattern (:error data))
                                    (= element (:element data))
                                    (str/includes? (:message data) (pr-str element))))
        '[] []
        '[1] 1
        '["user/name"] "user/name"
        '[nil] nil
        '[:user/name {}] {}
        '[{:person/friends 0}] '{:person/friends 0}
        '[{:person/friends -1}] '{:person/friends -1}
        '[{:person/friends :deep}] '{:person/friends :deep}
        '[{1 [:user/name]}] 1
        '[[:user/name :as]] '[:user/name :as]
        '[[:user/name :limit 0]] '[:user/name :limit 0]
        '[[:user/name :limit "10"]] '[:user/name :limit "10"]
        '[[:user/name :colour :red]] '[:user/name :colour :red]
        '[[:user/name :xform :not-a-fn]] '[:user/name :xform :not-a-fn]
        '[[:user/name :xform no.such.ns/f]] '[:user/name :xform no.such.ns/f]
        '[[:user/name :xform clojure.core/no-such-fn]] '[:user/name :xform clojure.core/no-such-fn]
        '[(limit :user/aliases)] '(limit :user/aliases)
        '[(default :user/name)] '(default :user/name)
        '[(limit "user/aliases" 2)] '(limit "user/aliases" 2)
        '[(frobnicate :user/name 1)] '(frobnicate :user/name 1)
        '[[]] []
        '[[1 :as :x]] '[1 :as :x]
        '[:user/name {:person/friends [:user/name [:user/email :limit]]}] '[:user/email :limit])
      (testing "not a vector, or unreadable EDN"
        (are [pattern] (= :pull/pattern (:error (pull-error db pattern ada)))
          '{:user/name 1}
          '(:user/name)
          :user/name
          "[:user/name"))
      (testing "in a query"
        (is (= :pull/pattern
               (try (d/q '[:find (pull ?e [[:user/name :limit 0]]) :where [?e :user/name]] db)
                    (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex))))))))))

(deftest history-views-do-not-pull
  (each-store [conn {:schema schema}]
    (let [{:strs [ada]} (load-data conn)
          hist (d/history (d/db conn))]
      (is (= :pull/history (:error (pull-error hist '[*] ada))))
      (is (= :pull/history
             (try (d/pull-many hist [:user/name] [ada])
                  (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex))))))
      (is (= :pull/history
             (try (d/q '[:find (pull ?e [:user/name]) :where [?e :user/name]] hist)
                  (catch clojure.lang.ExceptionInfo ex (:error (ex-data ex)))))))))
