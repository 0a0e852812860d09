import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** A plain KafkaConsumer service as a team writes one, not a testbed runner: it parses each record, commits after
 * each batch and in its revoke callback (a commit refused there is logged: the records come again), and stops on SIGTERM (a shutdown hook wakes the loop, which closes).
 * Run unchanged under testbed's Java agent by tests/integration/test_java_program.py.
 *
 * Environment: KAFKA_BOOTSTRAP, KAFKA_GROUP, INPUT_TOPIC; GROUP_PROTOCOL (classic, consumer); LISTENER=none
 * subscribes without a rebalance listener; COMMIT=async commits with commitAsync; AUTO_COMMIT=true leaves the commits to
 * the client (enable.auto.commit, every second, and before a rebalance and at close). */
public final class PlainConsumer {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", System.getenv("KAFKA_BOOTSTRAP"));
        p.put("group.id", System.getenv("KAFKA_GROUP"));
        boolean auto = "true".equals(System.getenv("AUTO_COMMIT"));
        p.put("enable.auto.commit", String.valueOf(auto));
        p.put("auto.commit.interval.ms", "1000");
        p.put("auto.offset.reset", "earliest");
        p.put("group.protocol", System.getenv().getOrDefault("GROUP_PROTOCOL", "classic"));
        if (!"consumer".equals(p.get("group.protocol"))) {
            p.put("session.timeout.ms", "10000"); // the assignors are the client's default: range, then cooperative-sticky
        }
        boolean async = "async".equals(System.getenv("COMMIT"));
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
        Thread loop = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try {
                loop.join(20_000);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }));
        List<String> topics = List.of(System.getenv("INPUT_TOPIC"));
        if ("none".equals(System.getenv("LISTENER"))) {
            consumer.subscribe(topics);
        } else {
            consumer.subscribe(topics, new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    if (auto) {
                        return;
                    }
                    try {
                        consumer.commitSync();
                    } catch (RebalanceInProgressException | CommitFailedException e) {
                        System.out.println("commit on revoke refused, the records come again: " + e);
                    }
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    System.out.println("lost " + partitions + ": nothing to commit");
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    System.out.println("assigned " + partitions);
                }
            });
        }
        long parsed = 0;
        try {
            while (true) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    String value = r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8);
                    parsed += value.length();
                }
                if (!records.isEmpty() && !auto) {
                    if (async) {
                        consumer.commitAsync();
                    } else {
                        try {
                            consumer.commitSync();
                        } catch (RebalanceInProgressException | CommitFailedException e) {
                            System.out.println("commit refused in a rebalance, the records come again: " + e);
                        }
                    }
                }
            }
        } catch (WakeupException stopping) {
            System.out.println("stopping after " + parsed + " characters");
        } finally {
            consumer.close();
        }
    }
}
