(ns datalith.platform-threads-test
  "datalith.store.PlatformThreads (package-private, called by reflection): a task runs in
  place on a platform thread, and on a pooled platform thread when the caller is virtual
  (Java 21+; that part is skipped, with a note, on older JVMs); its long result unboxed
  (callLong), its exception thrown to the caller."
  (:require [clojure.test :refer [deftest is testing]])
  (:import (java.lang.reflect InvocationTargetException Method)
           (java.util.concurrent Callable ExecutorService)
           (java.util.function LongSupplier Supplier)))

(set! *warn-on-reflection* true)

(def ^:private platform-threads (Class/forName "datalith.store.PlatformThreads"))

(defn- method ^Method [name arg]
  (doto (.getDeclaredMethod ^Class platform-threads name (into-array Class [arg]))
    (.setAccessible true)))

(defn- invoke
  "Calls PlatformThreads' static `name` with `task`, throwing what it throws."
  [name arg task]
  (try (.invoke (method name arg) nil (object-array [task]))
       (catch InvocationTargetException e (throw (.getCause e)))))

(defn- call-long [f] (invoke "callLong" LongSupplier (reify LongSupplier (getAsLong [_] (f)))))
(defn- call [f] (invoke "call" Supplier (reify Supplier (get [_] (f)))))

(defn- virtual? [^Thread t]
  (boolean (clojure.lang.Reflector/invokeInstanceMethod t "isVirtual" (object-array 0))))

(defn- checks
  "What the calls see from the calling thread: their results, the threads they ran on."
  []
  (let [caller (Thread/currentThread)
        ran-on (atom nil)]
    {:long (call-long (fn [] (reset! ran-on (Thread/currentThread)) Long/MIN_VALUE))
     :long-thread @ran-on
     :value (call (fn [] (reset! ran-on (Thread/currentThread)) :done))
     :value-thread @ran-on
     :caller caller
     :thrown (try (call-long (fn [] (throw (ex-info "refused" {:error :test/refused}))))
                  (catch clojure.lang.ExceptionInfo e (:error (ex-data e))))}))

(deftest callLong-runs-in-place-on-a-platform-thread
  (is (= Long/TYPE (.getReturnType (method "callLong" LongSupplier))) "a primitive long")
  (let [r (checks)]
    (is (= Long/MIN_VALUE (:long r)))
    (is (identical? (:caller r) (:long-thread r)))
    (is (= :done (:value r)))
    (is (identical? (:caller r) (:value-thread r)))
    (is (= :test/refused (:thrown r)))))

(deftest callLong-runs-on-a-platform-thread-for-a-virtual-caller
  (if-not (some #(= "newVirtualThreadPerTaskExecutor" (.getName ^Method %))
                (.getMethods java.util.concurrent.Executors))
    (println "platform-threads-test: no virtual threads on Java"
             (System/getProperty "java.version") "- the virtual caller's checks skipped")
    (let [^ExecutorService pool (clojure.lang.Reflector/invokeStaticMethod
                                 "java.util.concurrent.Executors"
                                 "newVirtualThreadPerTaskExecutor" (object-array 0))]
      (try
        (let [r (.get (.submit pool ^Callable checks))]
          (is (virtual? (:caller r)))
          (is (= Long/MIN_VALUE (:long r)))
          (is (not (virtual? (:long-thread r))))
          (is (= "datalith-lmdb-write" (.getName ^Thread (:long-thread r))))
          (is (= :done (:value r)))
          (is (not (virtual? (:value-thread r))))
          (is (= :test/refused (:thrown r))))
        (finally (.shutdown pool))))))
