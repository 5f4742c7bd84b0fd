(ns datalith.kafka-broker
  "A real Apache Kafka broker for the ^:kafka tests: one KRaft node (broker and controller)
  from org.apache.kafka/kafka_2.13 (the test profile only), in a child JVM on this JVM's
  classpath, on free ports, its log in a temporary directory. `start` formats the log
  directory and starts the broker, returning once it accepts connections; `stop` ends it
  (gracefully, or with kill -9), `restart` starts it again on the same ports and log."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [datalith.test-util :as tu])
  (:import (java.io File)
           (java.net InetSocketAddress ServerSocket Socket)
           (java.util.concurrent TimeUnit)))

(defn- free-port []
  (with-open [s (ServerSocket. 0)]
    (.getLocalPort s)))

(defn- java-command
  "A child JVM's command line running `main` with `args`: small and quick to start."
  [main & args]
  (concat [(str (System/getProperty "java.home") "/bin/java")
           "-cp" (System/getProperty "java.class.path")
           "-Xmx384m" "-Xms64m" "-XX:+UseSerialGC" "-XX:TieredStopAtLevel=1" "-Xshare:auto"
           main]
          args))

(defn- properties [{:keys [port controller-port ^File log-dir]}]
  (str/join "\n"
            ["process.roles=broker,controller"
             "node.id=1"
             (str "controller.quorum.voters=1@127.0.0.1:" controller-port)
             (str "listeners=PLAINTEXT://127.0.0.1:" port ",CONTROLLER://127.0.0.1:" controller-port)
             (str "advertised.listeners=PLAINTEXT://127.0.0.1:" port)
             "controller.listener.names=CONTROLLER"
             "inter.broker.listener.name=PLAINTEXT"
             "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
             (str "log.dirs=" (.getAbsolutePath log-dir))
             "num.partitions=1"
             "offsets.topic.replication.factor=1"
             "offsets.topic.num.partitions=1"
             "transaction.state.log.replication.factor=1"
             "transaction.state.log.min.isr=1"
             "share.coordinator.state.topic.replication.factor=1"
             "group.initial.rebalance.delay.ms=0"
             "auto.create.topics.enable=false"
             ""]))

(defn- run-tool
  "Runs a child JVM to its end (at most 120 s), its output to `out`; throws unless it exits 0."
  [^File out cmd]
  (let [p (-> (ProcessBuilder. ^java.util.List (vec cmd))
              (.redirectErrorStream true)
              (.redirectOutput out)
              (.start))]
    (when-not (.waitFor p 120 TimeUnit/SECONDS)
      (.destroyForcibly p)
      (throw (ex-info "Kafka tool timed out" {:cmd cmd :output (slurp out)})))
    (when-not (zero? (.exitValue p))
      (throw (ex-info "Kafka tool failed" {:cmd cmd :output (slurp out)})))
    (slurp out)))

(defn- listening? [port]
  (try (with-open [s (Socket.)]
         (.connect s (InetSocketAddress. "127.0.0.1" (int port)) 200)
         true)
       (catch java.io.IOException _ false)))

(defn- launch
  "Starts the broker process of `b` and waits (at most 90 s) until its port listens."
  [{:keys [^File dir port] :as b}]
  (let [p (-> (ProcessBuilder. ^java.util.List
                               (vec (java-command "kafka.Kafka" (str (io/file dir "server.properties")))))
              (.redirectErrorStream true)
              (.redirectOutput (java.lang.ProcessBuilder$Redirect/appendTo (io/file dir "broker.out")))
              (.start))
        deadline (+ (System/nanoTime) (* 90 1000000000))]
    (loop []
      (cond (listening? port) (assoc b :process p)
            (not (.isAlive p)) (throw (ex-info "The Kafka broker exited"
                                               {:output (slurp (io/file dir "broker.out"))}))
            (> (System/nanoTime) deadline) (do (.destroyForcibly p)
                                               (throw (ex-info "The Kafka broker did not start"
                                                               {:output (slurp (io/file dir "broker.out"))})))
            :else (do (Thread/sleep 100) (recur))))))

(defn start
  "Formats a new KRaft log directory and starts a broker on it; returns the broker map
  {:bootstrap \"127.0.0.1:port\" :port :controller-port :dir :process}."
  []
  (let [dir (tu/temp-dir)
        b {:dir dir :log-dir (io/file dir "log") :port (free-port) :controller-port (free-port)}
        props (io/file dir "server.properties")
        out (io/file dir "tool.out")]
    (spit props (properties b))
    (let [uuid (str/trim (last (str/split-lines
                                (run-tool out (java-command "kafka.tools.StorageTool" "random-uuid")))))]
      (run-tool out (java-command "kafka.tools.StorageTool" "format" "-t" uuid "-c" (str props)
                              "--standalone")))
    (assoc (launch b) :bootstrap (str "127.0.0.1:" (:port b)))))

(defn stop
  "Ends the broker's process: gracefully (its controlled shutdown), or with `:kill` as kill -9
  does. Returns the broker map without its process."
  ([b] (stop b nil))
  ([{:keys [^Process process] :as b} how]
   (when process
     (if (= how :kill) (.destroyForcibly process) (.destroy process))
     (when-not (.waitFor process 60 TimeUnit/SECONDS)
       (.destroyForcibly process)
       (.waitFor process)))
   (dissoc b :process)))

(defn restart
  "Starts a stopped broker again on its ports and log directory."
  [b]
  (launch (stop b)))

(defn delete
  "Stops the broker and deletes its directory."
  [b]
  (tu/delete-tree (:dir (stop b :kill))))
