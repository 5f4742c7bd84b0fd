(ns datalith.lmdb-file
  "Reads and damages LMDB 0.9 data files (data.mdb) page by page, for the
  corruption tests: the layout of src/java/datalith/store/LmdbLayout.java, on a
  little-endian 64-bit system. Reads go through a FileChannel, never a map."
  (:import (java.io File)
           (java.nio ByteBuffer ByteOrder)
           (java.nio.channels FileChannel)
           (java.nio.charset StandardCharsets)
           (java.nio.file OpenOption StandardOpenOption)))

(set! *warn-on-reflection* true)

(defn data-file ^File [dir] (File. (str dir) "data.mdb"))

(defn- channel ^FileChannel [dir & opts]
  (FileChannel/open (.toPath (data-file dir)) (into-array OpenOption opts)))

(defn read-bytes
  "`n` bytes of the data file from `offset` (fewer at its end), little-endian."
  ^ByteBuffer [dir offset n]
  (with-open [ch (channel dir StandardOpenOption/READ)]
    (let [b (.order (ByteBuffer/allocate n) ByteOrder/LITTLE_ENDIAN)]
      (loop [] (when (and (.hasRemaining b) (pos? (.read ch b (+ offset (.position b))))) (recur)))
      (.flip b))))

(defn write-bytes!
  "Writes the bytes `xs` over the data file at `offset`."
  [dir offset ^bytes xs]
  (with-open [ch (channel dir StandardOpenOption/WRITE)]
    (.write ch (ByteBuffer/wrap xs) (long offset))))

(defn- le-bytes ^bytes [width v]
  (let [b (.order (ByteBuffer/allocate 8) ByteOrder/LITTLE_ENDIAN)]
    (.putLong b (long v))
    (java.util.Arrays/copyOf (.array b) (int width))))

(defn write-u16! [dir offset v] (write-bytes! dir offset (le-bytes 2 v)))
(defn write-u64! [dir offset v] (write-bytes! dir offset (le-bytes 8 v)))

(defn truncate!
  "Cuts the data file to `size` bytes."
  [dir size]
  (with-open [ch (channel dir StandardOpenOption/WRITE)]
    (.truncate ch (long size))))

(defn size [dir] (.length (data-file dir)))

;; ---------------------------------------------------------------- meta pages

(defn meta-page
  "Meta page `i` (0 or 1) of a data file of `psize`-byte pages."
  [dir psize i]
  (let [b (read-bytes dir (* i psize) 152)]
    {:number i
     :flags (bit-and 0xFFFF (.getShort b 10))
     :magic (bit-and 0xFFFFFFFF (.getInt b 16))
     :psize (.getInt b 40)
     :free-root (.getLong b 80)
     :main-root (.getLong b 128)
     :last-pg (.getLong b 136)
     :txnid (.getLong b 144)}))

(defn last-meta
  "The meta page of the last commit: the one with the larger txnid."
  [dir]
  (let [psize (:psize (meta-page dir 4096 0))
        [m0 m1] [(meta-page dir psize 0) (meta-page dir psize 1)]]
    (if (> (:txnid m1) (:txnid m0)) m1 m0)))

;; ---------------------------------------------------------------- pages

(defn page
  "Page `pgno`: its header, node offsets and nodes (each with its offset, flags,
  key, and its child page on a branch page or data size on a leaf page)."
  [dir psize pgno]
  (let [b (read-bytes dir (* pgno psize) psize)
        flags (bit-and 0xFFFF (.getShort b 10))
        lower (bit-and 0xFFFF (.getShort b 12))
        upper (bit-and 0xFFFF (.getShort b 14))
        n (quot (- lower 16) 2)
        u16 #(bit-and 0xFFFF (.getShort b (int %)))]
    {:pgno pgno :offset (* pgno psize) :header-pgno (.getLong b 0) :flags flags
     :lower lower :upper upper
     :nodes (vec (for [i (range n)
                       :let [at (u16 (+ 16 (* 2 i)))
                             ksize (u16 (+ at 6))
                             k (byte-array ksize)]]
                   (do (.get b (int (+ at 8)) k)
                       {:at at :flags (u16 (+ at 4)) :key k
                        :child (bit-or (u16 at) (bit-shift-left (u16 (+ at 2)) 16)
                                       (bit-shift-left (u16 (+ at 4)) 32))
                        :data-size (bit-or (u16 at) (bit-shift-left (u16 (+ at 2)) 16))
                        :data-at (+ at 8 ksize)})))}))

(def P_BRANCH 0x01)
(def P_LEAF 0x02)
(def F_BIGDATA 0x01)

(defn sub-db-roots
  "The root page of each named sub-database (nil for an empty one), read from
  the main database's leaf page (datalith's eleven names fit on one)."
  [dir]
  (let [{:keys [psize main-root]} (last-meta dir)
        {:keys [nodes]} (page dir psize main-root)]
    (into {} (for [{:keys [key data-at]} nodes
                   :let [root (.getLong (read-bytes dir (+ (* main-root psize) data-at 40) 8) 0)]]
               [(String. ^bytes key StandardCharsets/US_ASCII) (when-not (neg? root) root)]))))

(defn tree
  "The pages of the tree under `root`, level by level from the root: a vector of
  vectors of pages."
  [dir root]
  (let [psize (:psize (last-meta dir))]
    (loop [levels [] level [(page dir psize root)]]
      (if (= P_BRANCH (:flags (first level)))
        (recur (conj levels level)
               (vec (for [p level {:keys [child]} (:nodes p)] (page dir psize child))))
        (conj levels level)))))

;; ---------------------------------------------------------------- other page sizes

(def ^:private P_OVERFLOW 0x04)
(def ^:private F_SUBDATA 0x02)

(defn- live-pages
  "The pages of the last commit's trees, from the file: {:tree #{pgno} :runs {first pages}},
  the tree pages (branch and leaf pages of the free list, the main database and every
  sub-database) and the overflow runs their leaves point to."
  [dir psize]
  (let [{:keys [free-root main-root]} (last-meta dir)]
    (loop [todo (into [] (comp (remove neg?) (map (fn [r] [r (= r main-root)])))
                      [free-root main-root])
           tree #{} runs {}]
      (if-let [[n main?] (peek todo)]
        (let [todo (pop todo)
              {:keys [flags nodes]} (page dir psize n)]
          (if (= P_BRANCH flags)
            (recur (into todo (map (fn [nd] [(:child nd) main?])) nodes) (conj tree n) runs)
            (let [at (* n psize)
                  subs (for [{:keys [flags data-at]} nodes :when (and main? (= F_SUBDATA flags))
                             :let [root (.getLong (read-bytes dir (+ at data-at 40) 8) 0)]
                             :when (not (neg? root))]
                         [root false])
                  runs (into runs (for [{:keys [flags data-at]} nodes :when (= F_BIGDATA flags)
                                        :let [first-pg (.getLong (read-bytes dir (+ at data-at) 8) 0)]]
                                    [first-pg (.getInt (read-bytes dir (+ (* first-pg psize) 12) 4) 0)]))]
              (recur (into todo subs) (conj tree n) runs))))
        {:tree tree :runs runs}))))

(defn spread-pages!
  "Writes into directory `to` a copy of the LMDB data file of directory `from` (pages of 4 KiB)
  with pages of `psize` bytes (4 to 32 KiB), as LMDB would have laid it out on a system of
  that page size: every page keeps its number; a branch or leaf page keeps its header and node
  offsets, and its nodes move to the end of the larger page; an overflow run keeps its pages,
  its value as it was from its first page on (a run longer than the value needs, which LMDB
  reads and frees as its header says); meta pages say the new page size; free pages are
  zeros. Only the last commit's pages are kept: the older meta page still names its commit,
  whose own pages read as zeros."
  [from to psize]
  (let [old 4096
        delta (- psize old)
        {:keys [tree runs]} (live-pages from old)
        last-pg (:last-pg (last-meta from))
        out (data-file to)]
    (.mkdirs (.getParentFile out))
    (with-open [ch (FileChannel/open (.toPath out) (into-array OpenOption [StandardOpenOption/CREATE
                                                                          StandardOpenOption/WRITE
                                                                          StandardOpenOption/TRUNCATE_EXISTING]))]
      (loop [n 0]
        (when (<= n last-pg)
          (let [b (.order (ByteBuffer/allocate psize) ByteOrder/LITTLE_ENDIAN)
                skip (cond
                       (< n 2) (let [m (read-bytes from (* n old) old)]
                                 (.put b m) (.putInt b 40 (int psize)) 1)
                       (tree n) (let [p (read-bytes from (* n old) old)
                                      lower (bit-and 0xFFFF (.getShort p 12))
                                      upper (bit-and 0xFFFF (.getShort p 14))]
                                  (.put b 0 p 0 lower)
                                  (.put b (int (+ upper delta)) p (int upper) (int (- old upper)))
                                  (.putShort b 14 (short (+ upper delta)))
                                  (doseq [i (range 16 lower 2)]
                                    (.putShort b (int i) (short (+ delta (bit-and 0xFFFF (.getShort p (int i)))))))
                                  1)
                       (runs n) (let [k (runs n)
                                      r (read-bytes from (* n old) (* k old))
                                      b (.order (ByteBuffer/allocate (* k psize)) ByteOrder/LITTLE_ENDIAN)]
                                  (.put b r)
                                  (.write ch (.flip b) (long (* n psize)))
                                  k)
                       :else 1)]
            (when-not (runs n)
              (.write ch (.clear b) (long (* n psize))))
            (recur (+ n (long skip)))))))
    out))
