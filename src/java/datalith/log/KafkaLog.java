package datalith.log;

import clojure.lang.ExceptionInfo;
import datalith.db.Errors;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The transaction log on an Apache Kafka topic of one partition (one partition: one total order).
 * Appends go through an idempotent producer with {@code acks=all} and {@code linger.ms=0} (a
 * transaction waits for its record, so batching would only delay it); the producer's retries
 * never duplicate a record. Reads go through a consumer with no group: it is assigned the
 * partition and seeks to the node's own offset (each node keeps its position in its own store,
 * with the datoms). The topic is created when missing, with one partition, retention forever,
 * records up to 16 MB and the broker's append time as each record's timestamp (the
 * transaction's instant).
 *
 * <p>An append that Kafka does not acknowledge within the timeout (the broker down, a lost
 * connection) has an unknown outcome, as a timed-out transaction in Datomic: the record may be
 * in the log, and then every node applies it. It fails with {@code :log/unknown-outcome}; the
 * caller learns the outcome by reading (after {@code sync}) for something the transaction
 * wrote, such as a unique id, before it retries. {@code :log/unavailable} and
 * {@code :log/refused} mean the record was not appended.
 */
public final class KafkaLog implements TxLog {
  /** How long a call to Kafka may take by default (append, end offset, opening the topic). */
  public static final long TIMEOUT_MS = 30_000;
  /** The largest record (a transaction, an import chunk): Kafka's default is 1 MB. */
  static final int MAX_RECORD_BYTES = 16 << 20;

  private final long timeoutMs;
  private final TopicPartition partition;
  private final Admin admin;
  private final KafkaProducer<byte[], byte[]> producer;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private long position = -1; // reader thread only: the consumer's next offset, -1 before a seek

  private KafkaLog(String bootstrap, String topic, long timeoutMs) {
    this.timeoutMs = timeoutMs;
    this.partition = new TopicPartition(topic, 0);
    Properties a = new Properties();
    a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    this.admin = Admin.create(a);
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(timeoutMs));
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(timeoutMs));
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(timeoutMs / 2));
    p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, String.valueOf(MAX_RECORD_BYTES));
    this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
    this.consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(),
        new ByteArrayDeserializer());
    consumer.assign(List.of(partition));
  }

  /**
   * Opens the log on {@code topic} of the cluster at {@code bootstrap} ("host:port,..."),
   * creating the topic when it is missing.
   *
   * @throws ExceptionInfo {@code :log/unavailable} when the cluster does not answer;
   *     {@code :log/topic} for a topic of more than one partition
   */
  public static KafkaLog open(String bootstrap, String topic) {
    return open(bootstrap, topic, TIMEOUT_MS);
  }

  /**
   * As {@link #open(String, String)}, with calls to Kafka taking at most {@code timeoutMs}
   * (an append that is not acknowledged by then fails with {@code :log/unknown-outcome}).
   *
   * @throws ExceptionInfo as {@link #open(String, String)}; {@code :db/invalid-options} for a
   *     timeout under 1000 ms
   */
  public static KafkaLog open(String bootstrap, String topic, long timeoutMs) {
    if (timeoutMs < 1000) {
      throw Errors.error("db/invalid-options", "The log's :timeout-ms is at least 1000",
          "timeout-ms", timeoutMs);
    }
    KafkaLog log = new KafkaLog(bootstrap, topic, timeoutMs);
    try {
      log.ensureTopic();
      return log;
    } catch (RuntimeException e) {
      log.close();
      throw e;
    }
  }

  private void ensureTopic() {
    String topic = partition.topic();
    try {
      NewTopic t = new NewTopic(topic, Optional.of(1), Optional.empty()).configs(Map.of(
          "message.timestamp.type", "LogAppendTime", "retention.ms", "-1",
          "retention.bytes", "-1", "max.message.bytes", String.valueOf(MAX_RECORD_BYTES)));
      try {
        admin.createTopics(List.of(t)).all().get(timeoutMs, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) {
          throw e;
        }
      }
      TopicDescription d = describe(topic, System.nanoTime()
          + TimeUnit.MILLISECONDS.toNanos(timeoutMs));
      if (d.partitions().size() != 1) {
        throw Errors.error("log/topic", "The log's topic " + topic + " has "
            + d.partitions().size() + " partitions: it must have one (one total order)",
            "topic", topic, "partitions", d.partitions().size());
      }
    } catch (ExecutionException | TimeoutException e) {
      throw unavailable(e, "open the topic " + topic);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable(e, "open the topic " + topic);
    }
  }

  /**
   * The description of {@code topic}, asked again while the cluster does not know it yet until
   * {@code deadline} (System.nanoTime): a topic just created reaches the brokers' metadata a
   * little later than the controller's answer to its creation.
   */
  private TopicDescription describe(String topic, long deadline)
      throws ExecutionException, TimeoutException, InterruptedException {
    while (true) {
      try {
        return admin.describeTopics(List.of(topic)).allTopicNames()
            .get(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())),
                TimeUnit.MILLISECONDS).get(topic);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)
            || System.nanoTime() - deadline >= 0) {
          throw e;
        }
        Thread.sleep(50);
      }
    }
  }

  private ExceptionInfo unavailable(Exception e, String what) {
    Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    return Errors.errorWithCause(cause, "log/unavailable", "Kafka could not " + what + ": "
        + cause, "topic", partition.topic());
  }

  @Override
  public long append(byte[] key, byte[] value) {
    try {
      return appendAsync(key, value).get();
    } catch (ExecutionException e) {
      throw (RuntimeException) e.getCause(); // appendAsync fails with an ex-info only
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Errors.errorWithCause(e, "log/unknown-outcome", "Interrupted while the log took the"
          + " record: it may still be appended", "topic", partition.topic());
    }
  }

  @Override
  public CompletableFuture<Long> appendAsync(byte[] key, byte[] value) {
    CompletableFuture<Long> f = new CompletableFuture<>();
    try {
      producer.send(new ProducerRecord<>(partition.topic(), 0, key, value), (m, e) -> {
        if (e == null) {
          f.complete(m.offset());
        } else {
          f.completeExceptionally(sendFailure(e, value.length));
        }
      });
    } catch (RuntimeException e) { // the producer did not take the record (closed, interrupted)
      f.completeExceptionally(unavailable(e, "append the record"));
    }
    return f;
  }

  /**
   * The ex-info of a send the producer took and then failed: {@code :log/refused} when the
   * broker refused the record for what it is (never written); else {@code :log/unknown-outcome}
   * (a timeout, a lost connection: the record may have been written, and then every node
   * applies it).
   */
  private ExceptionInfo sendFailure(Exception e, int bytes) {
    if (e instanceof RecordTooLargeException || e instanceof RecordBatchTooLargeException
        || e instanceof InvalidRecordException) {
      return Errors.errorWithCause(e, "log/refused", "Kafka refused the record (" + bytes
          + " bytes): " + e.getMessage() + "; it was not written", "topic", partition.topic(),
          "bytes", bytes);
    }
    return Errors.errorWithCause(e, "log/unknown-outcome", "Kafka did not acknowledge the"
        + " record: " + e + ". The outcome is unknown: the transaction may still be in the log,"
        + " and then it commits on every node (look for it after d/sync before retrying)",
        "topic", partition.topic());
  }

  @Override
  public List<Entry> read(long from, Duration wait) {
    if (from != position) {
      consumer.seek(partition, from);
      position = from;
    }
    List<Entry> out = new ArrayList<>();
    try {
      for (ConsumerRecord<byte[], byte[]> r : consumer.poll(wait)) {
        out.add(new Entry(r.offset(), r.key(), r.value(), r.timestamp()));
        position = r.offset() + 1;
      }
    } catch (WakeupException e) {
      return out;
    } catch (RuntimeException e) {
      position = -1;
      throw readFailure(e);
    }
    return out;
  }

  /**
   * The ex-info of a failed poll: {@code :log/unavailable}, marked {@code :retriable} when Kafka
   * classifies the error (or its cause) as retriable ({@link TxLog#isTransient}).
   */
  private ExceptionInfo readFailure(RuntimeException e) {
    boolean retriable = e instanceof RetriableException
        || e.getCause() instanceof RetriableException;
    return Errors.errorWithCause(e, "log/unavailable", "Kafka could not read the log: " + e,
        "topic", partition.topic(), "retriable", retriable);
  }

  /** {@inheritDoc} The consumer's lag after its last fetch (the partition's high watermark). */
  @Override
  public long behind() {
    return consumer.currentLag(partition).orElse(0);
  }

  @Override
  public void wakeup() {
    consumer.wakeup();
  }

  @Override
  public long endOffset() {
    try {
      return admin.listOffsets(Map.of(partition, OffsetSpec.latest())).partitionResult(partition)
          .get(timeoutMs, TimeUnit.MILLISECONDS).offset();
    } catch (ExecutionException | TimeoutException e) {
      throw unavailable(e, "read the log's end offset");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable(e, "read the log's end offset");
    }
  }

  @Override
  public void close() {
    Duration d = Duration.ofSeconds(5);
    producer.close(d);
    consumer.close(CloseOptions.timeout(d));
    admin.close(d);
  }
}
