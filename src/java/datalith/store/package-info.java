/**
 * Storage: a sorted key-value store with named sub-databases ({@link datalith.store.SubDb}),
 * MVCC snapshots and one writer at a time, behind the {@link datalith.store.Store} interface.
 * {@link datalith.store.LmdbStore} keeps it on disk in LMDB; {@link datalith.store.MemStore}
 * keeps it in memory as persistent B+trees. Both order keys by unsigned lexicographic bytes, limit
 * keys to 1..511 bytes, and behave alike.
 *
 * <p>Threading: stores are thread-safe. Read transactions never block each other or the writer
 * (LMDB: except for a brief wait while its map grows); {@code beginWrite()} waits while another
 * write transaction is open. A transaction or cursor is used by one thread at a time, and may be
 * closed by any thread. Read transactions must be short: an open one pins storage (LMDB: pages of
 * the file, a reader slot, and the map at its current size). Virtual threads may call every
 * method: LMDB's own write transaction (begun and committed inside a commit) runs on a platform
 * thread when the caller is virtual ({@code PlatformThreads}), since LMDB's write mutex belongs
 * to the OS thread that took it.
 *
 * <p>Processes: several may open one LMDB directory. The write transaction holds the directory's
 * writer lock (a lock file, {@code writer.lock}) from {@code beginWrite()} until it closes, so
 * one write transaction runs at a time across the processes, and a read begun after
 * {@code beginWrite()} returns sees the last commit of any of them. A write transaction can
 * {@code expect} a key's value at commit, as a guard against writers that ignore the lock. A
 * process whose map another process outgrew grows its own before it reads. The operating
 * system's file locks belong to the process, and closing any descriptor of a file drops them
 * all: a store keeps every descriptor of a locked file (writer.lock, open.lock, LMDB's lock.mdb)
 * open until its close, and closes them all there, after LMDB's environment (writer.lock's and
 * lock.mdb's: {@link datalith.store.LmdbLockFiles}). A
 * {@link datalith.store.MemStore} belongs to its process.
 *
 * <p>Memory: buffers returned by reads are read-only, big-endian, at position 0, and valid only
 * while their transaction is open (a cursor's only until it moves). They are not copies: LMDB's
 * point into its memory map, MemStore's are the stored entries, shared by every reader. Read them
 * with absolute gets, or read a {@code duplicate()}; leave their position and limit alone.
 * Buffers passed to writes are copied before the call returns. A direct buffer passed as a key
 * to a read is read where it lies (by LMDB, or by the Java page reader's comparisons), and kept
 * reachable until then ({@code Reference.reachabilityFence}): a probe the caller made for the
 * call alone would otherwise be collectable once its address is taken, and a collection in the
 * read would free its memory under the comparison.
 *
 * <p>Reads: a call into LMDB through JNR costs as much as reading a leaf page, and LMDB's C code
 * reads a page as it finds it, so a read transaction's pages are read in Java, by LMDB 0.9's
 * layout ({@link datalith.store.LmdbLayout}): a cursor's seeks, first and last keys descend the
 * tree from its root, its steps within a leaf page read that page, and its crossings to the next
 * or previous leaf follow the branch pages it descended; a cursor warmed for a few seeks
 * ({@code Cursor.warm}) descends for all of them at once, side by side so that their cache misses
 * overlap, and each of those seeks takes its descent and its place on the leaf page over; point
 * gets descend the same way; the sub-databases' roots are read from the main database's pages
 * (see {@link datalith.store.LmdbTree}, {@link datalith.store.LmdbSnapshot},
 * {@link datalith.store.LmdbCursor}). LMDB's code reads no page of a read transaction: it only
 * begins and ends it. The option {@code "page-reader" "lmdb"} turns this off (and the page
 * filling of writes): every read is then a call into LMDB, the plain path the tests check the
 * Java reader against ({@link datalith.store.LmdbPlainCursor}); so is a store whose LMDB's
 * structs do not read as the layout says. Pages of any size LMDB 0.9 makes (the system's page
 * when the file was made: 4 KiB on x86-64 Linux, 16 KiB on Apple silicon) are read in Java.
 *
 * <p>Damaged files: the Java reader checks every page number against the snapshot's pages in
 * the file (its pages 2 to its last, that the file holds) before it reads the page; the page must
 * say it is that page, of the kind the tree's depth expects at its level (so a descent takes
 * exactly the tree's depth steps), with its bounds in order; a node, key or value must lie in its
 * page, or on overflow pages of the snapshot that say they are; a tree's record must have a depth a
 * path can hold; every step (within a page or across to the next) must reach a key after the one it
 * left, and a seek a key at least its probe, so that no scan that seeks on from the keys it reads
 * goes round a damaged page for ever. With {@code "page-reader" "lmdb"}, every key and value LMDB
 * returns is checked to lie in the snapshot's pages before it is read, and its steps and seeks are
 * checked in the same order, but LMDB's own reading of a damaged page is not checked otherwise: a
 * node offset on the file's last pages that points past its end can still stop the process inside
 * LMDB. Before LMDB maps a data file, its meta pages are read and checked against the file's size,
 * the pages of its main database (the named sub-databases' records, which LMDB's open of each
 * sub-database descends in C) are read and checked as the Java reader checks a tree's, and the lock
 * file is written to its full size (see {@link datalith.store.LmdbFiles}; the pages are read by the
 * one walk of LMDB's pages from outside LMDB, {@link datalith.store.LmdbOldPages}, at the file's
 * page size). So a truncated, empty or damaged file, or a full disk at open, is an ex-info rather
 * than a crash of the JVM, on the Java reader. Write transactions are LMDB's own: a commit reads
 * the pages it descends, splits and merges, and the free list it takes pages from, in C, as it
 * finds them; so before a store's first write (and before a compacting backup, whose walk of the
 * trees is LMDB's too) every page of the last commit's trees and its free list is read from the
 * file and checked as LMDB's writes read it: flags exactly a branch's, a leaf's or an overflow
 * page's (a page flagged P_DIRTY LMDB would write where it lies, in the read-only map), every node,
 * key and value in its page, a node's flags those of its tree, every overflow run as long as its
 * first page says (at least what its value needs), every page once in the trees, the free list's
 * entries a transaction id each, their page ids in descending order, within the snapshot and in no
 * tree ({@link datalith.store.LmdbPagesCheck}, {@link datalith.store.LmdbOldPages}). A store that
 * fails refuses writes with {@code :store/corrupt} and writes nothing. Once it passes, every page a
 * later write reads is one a checked write wrote, so the check runs once an open store (not at all
 * for a file its open made): it reads every page of the trees where it lies in the map (31 ms for a
 * data file of 278 MB, warm). With write-behind, a file that cannot be read then is left to the
 * write-backs, which check before they write.

 * <p>Writes: a write transaction's puts and deletes are logged, then applied in one LMDB
 * transaction in key order, copied in that order a batch at a time into a direct buffer whose
 * bytes LMDB reads where they lie (a log of 4,096 entries or more has the sub-databases after its
 * first sorted by a helper thread while LMDB puts the first's: {@link datalith.store.WriteLog};
 * {@link datalith.store.LmdbWrite}, holding the
 * {@link datalith.store.LmdbWriterLock}, whose permit a thread waits for with its reads parked,
 * which a commit that must grow the map closes ({@link datalith.store.LmdbReadParking}); the
 * map grows by {@link datalith.store.LmdbMapGrowth},
 * which keeps resizes out of open reads by {@link datalith.store.LmdbMapLock}, a lock whose
 * readers count on their own thread's stripe, and read transactions are pooled by
 * {@link datalith.store.LmdbReaderPool}); runs of keys that land in the middle of a tree (new
 * entities' datoms at the end of an attribute's keys) are written so that LMDB fills each page
 * before it starts the next, rather than leaving pages half full, the keys after a run moved
 * out of its way whatever their values (see {@link datalith.store.LmdbReplay}). A bulk
 * load may pause the fsync of commits ({@code Store.pauseSync}; on LMDB without the log,
 * MDB_NOSYNC set and cleared by {@code LmdbSyncPause}) and sync once when it ends. A bulk load
 * that built its result in memory replaces every sub-database at once ({@code Store.replaceAll});
 * on LMDB that writes no B-tree puts: under the writer lock and LMDB's own (a write transaction
 * that writes nothing, so that writers knowing only LMDB's wait), fresh trees are written in key
 * order, page after page past the last commit's pages, with positional writes of the file ({@link
 * datalith.store.LmdbTreeWriter}, {@link datalith.store.LmdbPageSink}; a sub-database whose
 * source cursor is a MemStore's is read from its B+tree's leaves, their arrays of keys as they are,
 * any other through its cursor, each key copied; a MemStore's trees on two threads, the
 * caller's into the file, a helper's into memory, then appended renumbered, so that the file is
 * the same whoever wrote which: {@link datalith.store.LmdbTreeWrites}), then a new main database,
 * one meta page and the lock file's txnid make them the last commit ({@link
 * datalith.store.LmdbDirectCommit}; through the log, the checkpoint holding that meta page is
 * durable before the txnid publishes it); the old trees' pages go to the free list under the new
 * transaction's id ({@link datalith.store.LmdbOldPages}), for later commits to reuse, except the
 * leaf pages a new tree takes as they are: where its source reads the last commit's own tree
 * (a staged import's merge of it with the delta), each old leaf page the merge passes whole
 * becomes a leaf of the new tree, checked, with its values' overflow pages, and stays out of the
 * free list ({@link datalith.store.LmdbTakenPages}; {@code LmdbStore.pageAccountingProblem}
 * checks that no page is both in a tree and free). The pages are of the store's size (4 KiB,
 * 16 KiB on Apple silicon, ...); files that do not read as the layout says take the generic way
 * (deletes and puts through one write transaction).
 *
 * <p>MemStore's writes ({@link datalith.store.BTree}, edited by
 * {@link datalith.store.BTreeEditor}): a write transaction keeps its puts and
 * deletes and applies them at commit, sorted by sub-database and key (its first 48 bytes; a
 * stable sort: writes of one key keep their order; {@link datalith.store.MemWrites}), as LMDB's
 * log is; it copies each
 * node it changes once, and publishes the new roots at commit. A store opened in place
 * ({@code MemStore.openInPlace}, a layered store's delta) copies only when a read is open at
 * commit: otherwise one editor a tree, kept across commits, changes its own nodes where they
 * lie, and reads begin after the commit; such a commit of many writes (8,192 or more, a
 * staging's chunk) on a machine of two cores applies the trees of few writes itself (META's,
 * which every snapshot reads at once), then returns once it has handed the others to two helper
 * threads, each applying the next tree, largest first, while the committer goes on (its next
 * chunk's transactor): a
 * read of a tree waits until its writes are in, the next commit until all are, and the next
 * transaction logs into a second set of arrays. Any other commit of many writes applies them on
 * two threads, the caller and a helper each taking the next tree, largest first, sorting its
 * writes and applying them (a large transaction on a {@code :mem} connection). Branch keys are lower bounds of their
 * children (LMDB's layout), so a run of ascending keys landing anywhere in a tree appends to one
 * leaf, and a node that overflows during a run splits after the run (one filled by an append
 * stays full), so that runs leave full nodes behind; a put tries first where the last one went,
 * and a branch then searches forward from there in doubling steps (sorted puts that scatter over a
 * tree, such as the AVET keys of a chunk's refs, go a few children on).
 * A transaction logs its keys back to back in one array, and a leaf keeps its keys back to
 * back in one stretch of an array (a put copies the key's bytes there): no object a key. A
 * store opened in place (whose trees are dropped whole) gives its leaves their room in slabs,
 * arrays of many leaves' keys that double up to 8 MiB, which G1 allocates as humongous objects
 * that young collections never copy: a staged import's trees, which live through many of
 * them, are then a few small objects a leaf to copy; any other store's leaf has an array of
 * its own.
 * An index's leaves hold no values (all empty), and a leaf's key views are made on its first
 * read, once it is immutable (an edit in place drops them).
 *
 * <p>Layers: a {@link datalith.store.LayeredStore} lays a delta in memory over a snapshot of
 * another store (one read transaction of it, held until it closes): its writes go to two
 * {@code MemStore}s, one of the entries put and one of the base's keys deleted (an index's
 * values are empty, so a deletion is a key of its own tree, not a value), published together
 * on commit; its reads merge the base with the delta in key order
 * ({@link datalith.store.MergedCursor}, a merge join that steps each cursor once a key; a
 * sub-database the base holds nothing of, with no deletion, reads the delta's own
 * {@code MemStore} cursor). The delta goes back into the base store in one commit, by one write
 * transaction of its puts and deletes in key order, or, when it is large against the base, by
 * {@code replaceAll} of the merged view. Its transactions are for one thread at a time (the
 * base snapshot's rule), and its delta's commits edit the trees in place while no read of it
 * is open. Staged imports and catch-up runs ({@code datalith.conn.Staged}) are its use; they
 * let it <em>derive</em> AEVT from EAVT and HAEVT from HEAVT (the same fields, the first two
 * swapped): their write transactions say so ({@code WriteTxn.derives}), the transactor leaves
 * those keys out, and a read of them (mostly the write-back's) builds them from the EAVT keys
 * by bucketing them by attribute, bottom up ({@code BTree.build}), with no sort and no B-tree
 * put. They make AVET too, an attribute at a time: the transactor leaves out the AVET keys of
 * the attributes it does not read as it writes (all but the unique ones), asking the store
 * first ({@code WriteTxn.omits}); a read that stays within one attribute the store does not
 * make ({@code Cursor.within}, which every index scan gives) reads the delta's own AVET, any
 * other the delta's own with the made keys (EAVT's of those attributes, reordered, radix-sorted
 * attribute by attribute: {@code DerivedKeys}). The write-back's read
 * ({@code LayeredStore.beginWriteBack}) builds them on a helper thread while the writer writes
 * the other trees ({@code ReadTxn.ready} says which may wait).
 *
 * <p>Durability ({@code LmdbStore.open}'s option {@code "commit"}): with {@code "wal"}, LMDB
 * runs with MDB_NOSYNC and a commit is durable once its one record (its logged puts and deletes,
 * the txnid LMDB gives it, a length and a crc32c) is in the write-ahead log ({@code wal.0},
 * {@code wal.1}: preallocated with zeros, grown by doubling) and the log fdatasynced; only then
 * does LMDB's commit make it visible, so a commit seen is a commit kept. A commit of
 * {@code LmdbWrite.LOG_AHEAD_BYTES} (64 KiB) of writes or more has its record appended and
 * fdatasynced by a helper thread while LMDB puts the writes, and waits for it before LMDB's
 * commit; when the puts fail (the map full), the record is cancelled before the commit is tried
 * again. A commit that fails
 * after its record is durable cancels the record (zeros its magic, fdatasync); when even that
 * fails, the store takes no more writes ({@code :store/io}). After 1024 commits or 8 MiB of log
 * ({@link datalith.store.LmdbWal}), a checkpoint syncs the map, pins the last commit X with a
 * read transaction (LMDB then reuses no page X references, whatever becomes of the unsynced
 * pages written after it), and writes a checkpoint record {X, X's meta page, the writer} at the
 * start of the other segment; closing takes one too, so a clean reopen replays nothing. Once
 * 256 KiB of log have come since the last, a background thread fdatasyncs the map's file
 * ({@link datalith.store.LmdbFlusher}): under large commits the checkpoint's sync, on the
 * committing thread, then finds little left to write (durability rests on that sync alone). An open
 * that is alone on the directory (it locks {@code open.lock}'s byte 1 exclusively; every open
 * store holds it shared, and opens take byte 0 in turn) recovers
 * ({@link datalith.store.LmdbWalRecovery}): when the log holds records after its last
 * checkpoint X, or LMDB's last commit is not X, X's meta page is written back over both meta
 * pages, and the records replayed in txnid order, X pinned by a read transaction until the
 * checkpoint that ends the recovery (a crash in the middle of the replay finds X whole). A torn last record (never acknowledged) is
 * dropped; a damaged record followed by a valid one is {@code :store/corrupt}. Processes share
 * the log under the writer lock: a writer whose process did not write the last checkpoint takes
 * one first, so the pin is always held by a live writer. A bulk load ({@code Store.pauseSync})
 * takes a checkpoint and writes a pause record (with the operating system's boot id), its
 * commits skip the log, and its end takes a checkpoint; recovery after a pause record trusts
 * LMDB's file as it is when the boot is the same (only processes died), and otherwise goes back
 * to the pause's checkpoint, which the pin kept whole (the pause's own contract: an
 * operating-system crash may lose what the pause wrote, and the unsynced file may be torn). A store that commits
 * without the log ({@code "lmdb-sync"}, LMDB's own fsync of each commit, or {@code "sync"}
 * false) syncs the map and zeros the log's checkpoints before it writes, so that a later
 * recovery never rolls its commits back.
 *
 * <p>Write-behind ({@code LmdbStore.open}'s option {@code "write-behind"}, with {@code "wal"};
 * the default since stop 38):
 * a commit is durable once its record is in the log, as above, but is then laid in memory over
 * LMDB's last commit rather than put into LMDB's trees: a layer of two {@code MemStore}s (the
 * entries put, the keys deleted), which a thread of the store ({@link
 * datalith.store.LmdbBehind}) freezes and writes back into LMDB in one commit that writes no
 * record, every 1024 commits, 16 MiB of log (less in a small heap) or 50 ms; it syncs LMDB's
 * file, then takes a checkpoint of that commit which says where the records of the commits
 * made meanwhile begin in the other segment, and the txnid of the first (they are not copied:
 * recovery replays them, then the records after the checkpoint, as LMDB's next commits).
 * Reads take the layers, then an LMDB read transaction, and merge them
 * ({@link datalith.store.LmdbBehindRead}, a {@code MergedCursor} a layer); with no layer they
 * are LMDB's own, and so are writes while the directory is shared or the sync paused
 * ({@link datalith.store.LmdbBehindDirect}). Recovery is the
 * log's. Only a store alone on its directory has write-behind (its commits are not in LMDB's
 * file, where another process would read them): it holds bytes of {@code open.lock} that make
 * another process's open ask it for a hand-off and wait; its write-back thread sees the request
 * (it looks every 20 ms), writes every commit back, and from then on the store commits into
 * LMDB directly, as one without write-behind, beside the other process
 * ({@code LmdbWalRecovery.OpenLock}); a store opened beside another process starts so. Once the
 * others have closed the directory, the thread (looking every 250 ms) takes the bytes back and
 * commits are laid over LMDB again, the first taking a checkpoint of this process's. A pause,
 * {@code replaceAll}, a backup and closing write every commit back first.
 *
 * <p>Backups: {@link datalith.store.LmdbBackup} copies an open LMDB store's last commit into an
 * empty directory with LMDB's own copy, from one snapshot while reads and writes go on; page
 * for page (only the meta pages read) or compacted (every page read through LMDB).
 *
 * <p>Errors are {@code ex-info}s whose {@code :error} is {@code :store/lmdb},
 * {@code :store/map-full}, {@code :store/map-resized}, {@code :store/conflict},
 * {@code :store/key-size}, {@code :store/option}, {@code :store/corrupt} (a damaged file: its
 * data names the sub-database and page where one is known) or {@code :store/io} (a file that
 * cannot be read or written); use after close throws an
 * {@link java.lang.IllegalStateException} whose {@code ex-data} has
 * {@code :error :store/closed}.
 */
package datalith.store;
