(defproject datalith "0.1.0-SNAPSHOT"
  :description "Embedded, durable, immutable Datalog database for the JVM"
  :license {:name "Apache License 2.0" :url "https://www.apache.org/licenses/LICENSE-2.0"}
  :dependencies [[org.clojure/clojure "1.12.3"]
                 [org.lmdbjava/lmdbjava "0.9.1"]
                 ;; lz4-java: kafka-clients' 1.8.0 from Maven Central, in both builds (Debian's
                 ;; nippy names its own repackaged "debian" version, which Leiningen's nearest-wins
                 ;; took and tools.deps' newest-wins did not)
                 [com.taoensso/nippy "3.1.3" :exclusions [org.clojure/clojure org.lz4/lz4-java]]
                 ;; the replicated transaction log (datalith.log.KafkaLog)
                 [org.apache.kafka/kafka-clients "4.1.0"]]
  :java-source-paths ["src/java"]
  :source-paths ["src/clj"]
  :test-paths ["test"]
  :resource-paths ["resources"]
  ;; -Xpkginfo:always: javac writes package-info.class even for a package-info.java
  ;; with no annotation, so Leiningen, which recompiles a .java without a newer
  ;; .class, does not recompile the package-info files on every run.
  :javac-options ["-source" "17" "-target" "17" "-Xlint:unchecked" "-Werror" "-Xlint:-options"
                  "-Xpkginfo:always"]
  ;; No :global-vars {*warn-on-reflection* true}: Leiningen would set it before
  ;; evaluating its own init form, which then warns about itself on every run.
  ;; Each namespace under src/ and bench/ sets it; `lein check` (bin/test) warns
  ;; on reflection whatever the namespace says.
  :jvm-opts ["--add-opens=java.base/java.nio=ALL-UNNAMED"
             "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"]
  ;; lein test :kafka runs only the tests against a real Kafka broker (the whole suite runs them too)
  :test-selectors {:default (constantly true)
                   :kafka :kafka}
  ;; lein bench --scale 100k --systems datalith-lmdb,datomic,sqlite --reps 200   (see bench/README.md)
  ;; lein jmh [REGEX]                                                          (JMH, see bench/README.md)
  ;; lein bench-synthetic --reps 100 --systems datalith-mem,datalith-lmdb        (see bench/README.md)
  ;; lein kill-test 2000 [PER-DIR [PAGE-SIZE]]                                 (kill -9 harness, test/datalith/kill_harness.clj)
  :aliases {"bench" ["with-profile" "+bench" "run" "-m" "datalith.bench.main"]
            "kill-test" ["run" "-m" "datalith.kill-harness"]
            "bench-synthetic" ["with-profile" "+bench" "run" "-m" "datalith.bench.synthetic"]
            "jmh" ["with-profile" "+jmh" "run" "-m" "datalith.bench.jmh"]}
  ;; Keep :bench and :jmh in step with the deps.edn aliases of the same name (bin/check-deps);
  ;; deps.edn's :bench-synthetic alias only swaps :bench's main for datalith.bench.synthetic.
  :profiles {:dev {:dependencies [[org.clojure/test.check "1.1.1"]
                                  ;; the KRaft broker the ^:kafka tests start (test/datalith/kafka_broker.clj)
                                  [org.apache.kafka/kafka_2.13 "4.1.0"]
                                  ;; kafka-clients logs through slf4j: silent in tests
                                  [org.slf4j/slf4j-nop "1.7.36"]]
                   ;; The pinned Clojure's jar, first on the classpath of lein run/test/repl
                   ;; (never in the jar: :dev is not packaged). Debian's jars (nippy, nrepl,
                   ;; ... from /usr/share/maven-repo, when Clojars is unreachable) name
                   ;; /usr/share/java/clojure.jar (1.11.1) in their manifest Class-Path,
                   ;; which the JVM searches right after the jar naming it, ahead of the
                   ;; classpath's own Clojure; a path here precedes every dependency. Its
                   ;; version is the one in :dependencies (datalith.classpath-test checks).
                   ;; Named only once it is there: Leiningen makes a directory of a resource
                   ;; path that does not exist, where Maven would then fail to put the jar
                   ;; (bin/setup fetches it first, with `lein deps`).
                   :resource-paths ~(let [jar (str (System/getProperty "user.home")
                                                   "/.m2/repository/org/clojure/clojure/1.12.3/clojure-1.12.3.jar")]
                                      (if (.isFile (java.io.File. jar)) [jar] []))}
             :bench {:target-path "target/bench"
                     :source-paths ["bench/clj"]
                     :dependencies [[com.datomic/local "1.0.291"]
                                    [org.xerial/sqlite-jdbc "3.50.3.0"]
                                    [org.knowm.xchart/xchart "3.8.8"
                                     :exclusions [org.junit.jupiter/junit-jupiter]]]
                     :jvm-opts ["-Xmx8g" "-XX:+UseG1GC"]}
             :jmh {:target-path "target/jmh"
                   :source-paths ["bench/jmh/clj"]
                   :java-source-paths ["bench/jmh/java"]
                   ;; JMH's annotation processor writes the benchmark classes and
                   ;; META-INF/BenchmarkList next to the compiled benchmarks
                   :javac-options ["-processor" "org.openjdk.jmh.generators.BenchmarkProcessor"
                                   "-implicit:class"]
                   :dependencies [[org.openjdk.jmh/jmh-core "1.37"]
                                  [org.openjdk.jmh/jmh-generator-annprocess "1.37"]]}})
