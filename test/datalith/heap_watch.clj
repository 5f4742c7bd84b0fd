(ns datalith.heap-watch
  "A watch on the test JVM's heap for failures that end in an OutOfMemoryError far from their
  cause. The tests' live heap stays under about 1 GB (GC logs of store-test's runs); when the
  old generation still holds more than half the maximum heap after a collection, something is
  allocating without end, and by the time the OutOfMemoryError is thrown, in whichever thread
  allocates next, the thread doing it and what it holds are gone. So once, at that point, this
  prints to stderr every thread's stack and the heap's largest classes (the DiagnosticCommand
  MBean's class histogram: in process, no attach), which is what the CI log then shows."
  (:require [clojure.string :as str])
  (:import [java.lang.management ManagementFactory MemoryNotificationInfo MemoryPoolMXBean
            MemoryType]
           [javax.management Notification NotificationEmitter NotificationListener ObjectName]))

(set! *warn-on-reflection* true)

(defn class-histogram
  "The first `n` lines of the live heap's class histogram (a full collection first)."
  [n]
  (let [s (.invoke (ManagementFactory/getPlatformMBeanServer)
                   (ObjectName. "com.sun.management:type=DiagnosticCommand")
                   "gcClassHistogram"
                   (object-array [(into-array String [])])
                   (into-array String ["[Ljava.lang.String;"]))]
    (str/join "\n" (take n (str/split-lines (str s))))))

(defn- threads []
  (str/join "\n"
            (for [[^Thread t frames] (Thread/getAllStackTraces)]
              (str "\"" (.getName t) "\" " (.getState t) "\n"
                   (str/join "\n" (map #(str "    at " %) (take 30 frames)))))))

(defn report
  "What the watch prints: why, every thread's stack, the largest classes."
  ^String [why]
  (str "heap-watch: " why "\n" (threads) "\n" (class-histogram 40) "\n"))

(defonce ^:private reported (atom false))

(def ^:private listener
  (reify NotificationListener
    (handleNotification [_ n _]
      (when (and (= MemoryNotificationInfo/MEMORY_COLLECTION_THRESHOLD_EXCEEDED
                    (.getType ^Notification n))
                 (compare-and-set! reported false true))
        (let [info (MemoryNotificationInfo/from (.getUserData ^Notification n))]
          (.println System/err
                    ^String (report (str (.getPoolName info) " holds "
                                         (quot (.getUsed (.getUsage info)) (* 1024 1024))
                                         " MiB after a collection"))))))))

(defonce ^:private watching (atom false))

(defn- old-generation? [^MemoryPoolMXBean p]
  (and (= MemoryType/HEAP (.getType p))
       (.isCollectionUsageThresholdSupported p)
       (re-find #"Old|Tenured" (.getName p))))

(defn watch!
  "Installs the watch once a JVM: it reports when the old generation holds more than
  `fraction` (default one half) of the maximum heap after a collection."
  ([] (watch! 0.5))
  ([fraction]
   (when (compare-and-set! watching false true)
     (let [max-heap (.getMax (.getHeapMemoryUsage (ManagementFactory/getMemoryMXBean)))]
       (doseq [^MemoryPoolMXBean p (ManagementFactory/getMemoryPoolMXBeans)
               :when (old-generation? p)]
         (.setCollectionUsageThreshold p (long (* fraction max-heap))))
       (.addNotificationListener ^NotificationEmitter (ManagementFactory/getMemoryMXBean)
                                 listener nil nil)))))
