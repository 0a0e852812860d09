import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.UUID;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** A plain Java read loop for benchmarks/java_agent_overhead.py: reads TOTAL records of TOPIC in a fresh group and
 * prints {"records", "seconds", "cpu_seconds"} from its first record to its last.
 *
 * Cases: "poll" does nothing with a record (the agent's worst case: its share of the time is largest); "parse"
 * decodes each value's "order" number from its JSON and commits synchronously after each batch, auto-commit off,
 * the at-least-once loop a service runs. Usage: ReadLoop CASE BOOTSTRAP TOPIC TOTAL */
public final class ReadLoop {
    public static void main(String[] args) {
        String kase = args[0];
        boolean parse = kase.equals("parse");
        long total = Long.parseLong(args[3]);
        Properties p = new Properties();
        p.put("bootstrap.servers", args[1]);
        p.put("group.id", "bench-" + UUID.randomUUID().toString().substring(0, 8));
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", String.valueOf(!parse));
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long got = 0;
        long first = 0;
        long cpu = 0;
        long orders = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(args[2]));
            while (got < total) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofSeconds(1));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (first == 0) {
                        first = System.nanoTime();
                        cpu = os.getProcessCpuTime();
                    }
                    if (parse) {
                        orders += order(new String(r.value(), StandardCharsets.UTF_8));
                    }
                    got++;
                }
                if (parse && !records.isEmpty()) {
                    consumer.commitSync();
                }
            }
            double seconds = (System.nanoTime() - first) / 1e9;
            double cpuSeconds = (os.getProcessCpuTime() - cpu) / 1e9;
            System.out.println("{\"records\":" + got + ",\"seconds\":" + seconds + ",\"cpu_seconds\":" + cpuSeconds
                    + ",\"orders\":" + orders + "}");
        }
    }

    /** The value of "order" in {"order": N, ...}: the decoding a service does with each record. */
    static long order(String json) {
        int at = json.indexOf("\"order\"");
        int i = json.indexOf(':', at) + 1;
        while (json.charAt(i) == ' ') {
            i++;
        }
        long n = 0;
        while (i < json.length() && Character.isDigit(json.charAt(i))) {
            n = n * 10 + (json.charAt(i++) - '0');
        }
        return n;
    }
}
