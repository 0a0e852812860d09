import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/** A Kafka Streams service as a team writes one, not testbed's application: the DSL, a count per key in a
 * persistent store, each new count to an output topic; it closes on SIGTERM (a shutdown hook) and logs its state
 * changes with a listener of its own. Run unchanged under testbed's Java agent by
 * tests/integration/test_java_streams_program.py.
 *
 * Environment: KAFKA_BOOTSTRAP, APPLICATION_ID, INPUT_TOPIC, OUTPUT_TOPIC, STATE_ROOT (each process takes a directory of its own
 * under it, as a replacement on a new machine does), PROCESSING_GUARANTEE (at_least_once when unset), GROUP_PROTOCOL
 * (classic when unset; streams: KIP-1071, kafka-streams 4.1 and later). */
public final class OrderTotals {
    public static void main(String[] args) throws InterruptedException {
        Properties p = new Properties();
        p.put("bootstrap.servers", System.getenv("KAFKA_BOOTSTRAP"));
        p.put("application.id", System.getenv("APPLICATION_ID"));
        p.put("state.dir", System.getenv("STATE_ROOT") + "/" + ProcessHandle.current().pid());
        p.put("session.timeout.ms", "10000");
        p.put("commit.interval.ms", "1000");
        String guarantee = System.getenv("PROCESSING_GUARANTEE");
        p.put("processing.guarantee", guarantee == null || guarantee.isEmpty() ? "at_least_once" : guarantee);
        String protocol = System.getenv("GROUP_PROTOCOL");
        if (protocol != null && !protocol.isEmpty()) {
            p.put("group.protocol", protocol);
        }
        String input = System.getenv("INPUT_TOPIC");

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.Bytes(), Serdes.Bytes()))
                .groupByKey()
                .count(Materialized.as("totals"))
                .toStream()
                .to(System.getenv("OUTPUT_TOPIC"), Produced.with(Serdes.Bytes(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((to, from) -> System.err.println("order-totals: " + from + " -> " + to));
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            done.countDown();
        }));
        streams.start();
        done.await();
    }
}
