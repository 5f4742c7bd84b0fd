(defproject datalith "0.1.0-SNAPSHOT"
  :description "Embedded, durable, immutable Datalog database for the JVM"
  :license {:name "Apache License 2.0" :url "https://www.apache.org/licenses/LICENSE-2.0"}
  :dependencies [[org.clojure/clojure "1.12.3"]
                 [org.clojure/data.avl "0.2.0"]
                 [org.lmdbjava/lmdbjava "0.9.1"]
                 [com.taoensso/nippy "3.1.3" :exclusions [org.clojure/clojure]]]
  :java-source-paths ["src/java"]
  :source-paths ["src/clj"]
  :test-paths ["test"]
  :resource-paths ["resources"]
  :javac-options ["-source" "17" "-target" "17" "-Xlint:unchecked" "-Werror" "-Xlint:-options"]
  :global-vars {*warn-on-reflection* true}
  :jvm-opts ["--add-opens=java.base/java.nio=ALL-UNNAMED"
             "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"]
  :profiles {:dev {:dependencies [[org.clojure/test.check "1.1.1"]]}})
