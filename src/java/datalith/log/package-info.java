/**
 * Replication: a node of a database whose transactions go through a totally ordered log that
 * every node follows, each keeping its own full copy of the indexes (issue #20).
 * {@link datalith.log.TxLog} is the log (append, read from an offset, end offset);
 * {@link datalith.log.KafkaLog} puts it on an Apache Kafka topic of one partition (idempotent
 * producer, {@code acks=all}; a consumer with no group, assigned and seeking). {@link
 * datalith.log.Node} is the connection's writer ({@code datalith.conn.Replicated}): its
 * {@code transact} appends the tx-data ({@code Records}: nippy, data only) and waits for its own
 * applier thread, which applies every record in log order through {@code datalith.conn.Logged}
 * (each write commits its transactions with the next offset) and completes the waiting
 * transaction of the node that wrote it. Its reader thread ({@code LogReader})
 * reads the log and decodes the records ahead of it, handing them over in log order, each once,
 * through a bounded queue (a few reads ahead), so that decoding overlaps applying; the reader
 * alone calls the log's {@code read}. The applier applies what one read of the log brings as
 * a run, through the connection's group commit (one store write for many records, each still
 * its own transaction); a node far behind the log's end (a fresh one, or one restarted after a
 * while) catches up in runs: into an LMDB store, staged in memory whatever the store holds
 * ({@code datalith.conn.StagedLog}: each record its own transaction in a layered store over
 * the store's snapshot, all of them written in one commit), else with the store's fsync paused
 * until it is level; either way it acknowledges its own transactions among those records only
 * once they are durable (after the run's write, or its sync), and moves its offset only then.
 *
 * <p>Determinism: a record is applied on the value after every record before it, dated by its
 * log time (never before the previous transaction), so every node gets the same datoms, entity
 * ids and ts, and the same failures. A record the node cannot read, or a store that fails, stops
 * the applier with that error; a record is never skipped (the reader stops there too, and the
 * applier applies the records before it, then stops). A transient read error (Kafka's
 * retriable ones) is retried by the reader with a backoff instead. Closing the node stops the
 * reader, then the applier, then closes the log: no read is running when it closes.
 *
 * <p>Outcomes: an append Kafka does not acknowledge in time fails with
 * {@code :log/unknown-outcome} (the record may be in the log, and then applies on every node);
 * {@code :log/unavailable} and {@code :log/refused} mean it was not appended. The producer is
 * idempotent, so its own retries never write a record twice.
 *
 * <p>Seeding: a node's position is in its store (META {@code log-offset}, committed with the
 * datoms), so a backup of a node ({@code d/backup}) opened as a new node continues from the
 * backup's offset.
 *
 * <p>Layering: above {@code datalith.conn}, below the APIs.
 */
package datalith.log;
