package datalith.log;

import clojure.lang.ExceptionInfo;
import datalith.db.Errors;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
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
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The transaction log on an Apache Kafka topic of one partition (one partition: one total order).
 * Appends go through an idempotent producer with {@code acks=all} and {@code linger.ms=0} (a
 * transaction waits for its record, so batching would only delay it); the producer's retries
 * never duplicate a record. Reads go through a consumer with no group: it is assigned the
 * partition and seeks to the node's own offset (each node keeps its position in its own store,
 * with the datoms). The topic is created when missing, with one partition, retention forever and
 * the broker's append time as each record's timestamp (the transaction's instant).
 */
public final class KafkaLog implements TxLog {
  private static final long TIMEOUT_MS = 30_000;

  private final TopicPartition partition;
  private final Admin admin;
  private final KafkaProducer<byte[], byte[]> producer;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private long position = -1; // reader thread only: the consumer's next offset, -1 before a seek

  private KafkaLog(String bootstrap, String topic) {
    this.partition = new TopicPartition(topic, 0);
    Properties a = new Properties();
    a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    this.admin = Admin.create(a);
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(TIMEOUT_MS));
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS / 2));
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
    KafkaLog log = new KafkaLog(bootstrap, topic);
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
          "retention.bytes", "-1"));
      try {
        admin.createTopics(List.of(t)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) {
          throw e;
        }
      }
      TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).get(topic);
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

  private ExceptionInfo unavailable(Exception e, String what) {
    Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    return Errors.errorWithCause(cause, "log/unavailable", "Kafka could not " + what + ": "
        + cause, "topic", partition.topic());
  }

  @Override
  public long append(byte[] key, byte[] value) {
    try {
      return producer.send(new ProducerRecord<>(partition.topic(), 0, key, value)).get().offset();
    } catch (ExecutionException e) {
      throw unavailable(e, "append the record");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable(e, "append the record");
    } catch (RuntimeException e) {
      throw unavailable(e, "append the record");
    }
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
      throw unavailable(e, "read the log");
    }
    return out;
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
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).offset();
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
