(ns datalith.child-jvm
  "Child JVMs for the tests that must watch a process die: the damaged-file test (a crash
  is observed, not suffered) and the kill -9 harness. A child runs a test namespace's -main
  on this JVM's classpath; its lines come through a queue, so that the parent can wait with
  a timeout."
  (:require [clojure.java.io :as io]
            [clojure.string :as str])
  (:import (java.io BufferedReader File)
           (java.util.concurrent LinkedBlockingQueue)))

(defn command
  "The command line of a child JVM running namespace `main`'s -main with `args`; its JVM
  error file, should it crash, goes to directory `work`."
  [work main & args]
  (concat [(str (System/getProperty "java.home") "/bin/java")
           "-cp" (System/getProperty "java.class.path")
           "--add-opens=java.base/java.nio=ALL-UNNAMED"
           "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
           ;; short lives: start fast
           "-XX:+UseSerialGC" "-XX:TieredStopAtLevel=1" "-Xshare:auto"
           "-XX:+DisplayVMOutputToStderr" ; stdout carries the child's protocol only
           (str "-XX:ErrorFile=" work "/hs_err_%p.log")
           "clojure.main" "-m" main]
          (map str args)))

(defn start
  "Starts a child with `command` (a seq of strings), its stderr to file `err`; the Process."
  ^Process [command ^File err]
  (-> (ProcessBuilder. ^java.util.List (vec command))
      (.redirectError err)
      (.start)))

(defn line-queue
  "A queue that receives the lines of `in`, then :eof, from a daemon thread."
  ^LinkedBlockingQueue [in]
  (let [q (LinkedBlockingQueue.)
        ^BufferedReader r (io/reader in)]
    (doto (Thread. ^Runnable (fn []
                               (try (loop []
                                      (when-let [l (.readLine r)]
                                        (.put q l)
                                        (recur)))
                                    (catch java.io.IOException _))
                               (.put q :eof)))
      (.setDaemon true)
      (.start))
    q))

(defn drain
  "Every line left in q up to :eof (the child must have ended)."
  [^LinkedBlockingQueue q]
  (loop [out []]
    (let [l (.take q)]
      (if (= :eof l) out (recur (conj out l))))))

(defn crash-frame
  "What the newest JVM error file in dir says (its signal and problematic frame), deleting
  it; nil when there is none."
  [^File dir]
  (when-let [f (last (sort-by #(.lastModified ^File %)
                              (filter #(str/starts-with? (.getName ^File %) "hs_err")
                                      (.listFiles dir))))]
    (let [lines (str/split-lines (slurp f))
          at (some #(when (str/starts-with? (nth lines %) "# Problematic frame:") %)
                   (range (count lines)))
          signal (first (filter #(re-find #"SIG[A-Z]+" %) lines))]
      (.delete ^File f)
      {:signal (some-> signal str/trim)
       :frame (some-> at inc (->> (nth lines)) (subs 1) str/trim)})))

(defn thread-dump
  "The stacks of the threads of live child `p` (jstack's), trimmed to the threads that run
  datalith's or Clojure's code, for a report of a hang before the child is killed; nil when
  jstack is not to be had or does not answer in 20 s."
  [^Process p]
  (try
    (let [jstack (str (System/getProperty "java.home") "/bin/jstack")
          dumper (-> (ProcessBuilder. ^java.util.List [jstack (str (.pid p))])
                     (.redirectErrorStream true)
                     (.start))
          out (future (slurp (.getInputStream dumper)))]
      (if (.waitFor dumper 20 java.util.concurrent.TimeUnit/SECONDS)
        (->> (str/split @out #"\n\n")
             (filter #(re-find #"datalith|clojure\.main" %))
             (str/join "\n\n"))
        (do (.destroyForcibly dumper) nil)))
    (catch java.io.IOException _ nil)))

(defn exit-with-parent!
  "In a child: ends this JVM once its parent is gone (its stdin, a pipe from the parent,
  reaches end of file), so that a child never outlives an interrupted test."
  []
  (doto (Thread. ^Runnable (fn []
                             (try (while (not= -1 (.read System/in)))
                                  (catch java.io.IOException _))
                             (System/exit 3)))
    (.setDaemon true)
    (.start)))
