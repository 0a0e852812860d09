// Many Kafka consumers in one JVM, each in a thread of its own: testbed's member host for Java members.
//
// Commands on stdin, one a line:  start <member> <properties file> <topic[,topic...]> <sync|auto> <max records|0>
//                                 stop <member>
// The end of stdin stops every member. Each member prints VerifiableConsumer's JSON lines (startup_complete,
// partitions_assigned, partitions_revoked, records_consumed, offsets_committed, shutdown_complete), each with a
// "member" field, so that the Python side translates them exactly as it translates VerifiableConsumer's; and
// client_error {code, message, fatal} for an exception from the client (a retriable one from poll is polled past).
import java.io.BufferedReader;
import java.io.FileReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class TestbedMemberHost {
    private static final Object OUT = new Object();

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static void emit(String member, String name, String body) {
        String line = "{\"member\":" + quote(member) + ",\"name\":" + quote(name) + ",\"timestamp\":"
                + System.currentTimeMillis() + (body.isEmpty() ? "" : "," + body) + "}";
        synchronized (OUT) {
            System.out.println(line);
            System.out.flush();
        }
    }

    static String partitions(Collection<TopicPartition> parts) {
        List<String> items = new ArrayList<>();
        for (TopicPartition tp : parts) items.add("{\"topic\":" + quote(tp.topic()) + ",\"partition\":" + tp.partition() + "}");
        return "\"partitions\":[" + String.join(",", items) + "]";
    }

    static final class Member implements Runnable, ConsumerRebalanceListener {
        final String id;
        final Properties props;
        final List<String> topics;
        final boolean syncCommit;
        final long maxRecords;
        volatile boolean stopping;
        volatile KafkaConsumer<byte[], byte[]> consumer;

        Member(String id, Properties props, List<String> topics, boolean syncCommit, long maxRecords) {
            this.id = id; this.props = props; this.topics = topics; this.syncCommit = syncCommit; this.maxRecords = maxRecords;
        }

        void stop() {
            stopping = true;
            KafkaConsumer<byte[], byte[]> c = consumer;
            if (c != null) c.wakeup();
        }

        @Override public void onPartitionsRevoked(Collection<TopicPartition> parts) { emit(id, "partitions_revoked", partitions(parts)); }
        @Override public void onPartitionsAssigned(Collection<TopicPartition> parts) { emit(id, "partitions_assigned", partitions(parts)); }

        @Override public void run() {
            long total = 0;
            try {
                consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                emit(id, "startup_complete", "");
                consumer.subscribe(topics, this);
                while (!stopping) {
                    ConsumerRecords<byte[], byte[]> records;
                    try {
                        records = consumer.poll(Duration.ofMillis(500));
                    } catch (WakeupException e) {
                        break;
                    } catch (RetriableException e) {
                        // e.g. the consumer protocol's poll timing out on a starved background thread: an
                        // application polls again, so does this member; the error is recorded
                        error(e, false);
                        continue;
                    }
                    if (records.isEmpty()) continue;
                    List<String> summary = new ArrayList<>();
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (TopicPartition tp : records.partitions()) {
                        List<ConsumerRecord<byte[], byte[]>> recs = records.records(tp);
                        long min = recs.get(0).offset(), max = recs.get(recs.size() - 1).offset();
                        summary.add("{\"topic\":" + quote(tp.topic()) + ",\"partition\":" + tp.partition()
                                + ",\"count\":" + recs.size() + ",\"minOffset\":" + min + ",\"maxOffset\":" + max + "}");
                        next.put(tp, new OffsetAndMetadata(max + 1));
                    }
                    emit(id, "records_consumed", "\"count\":" + records.count() + ",\"partitions\":[" + String.join(",", summary) + "]");
                    total += records.count();
                    if (syncCommit) commit(next);
                    if (maxRecords > 0 && total >= maxRecords) break;
                }
            } catch (WakeupException e) {
                // asked to stop while in a callback or a commit
            } catch (Throwable e) {
                System.err.println("member " + id + " failed: " + e);
                e.printStackTrace();
                error(e, true);
            } finally {
                try {
                    if (consumer != null) consumer.close();
                } catch (Throwable e) {
                    System.err.println("member " + id + " close failed: " + e);
                }
                emit(id, "shutdown_complete", "");
            }
        }

        void error(Throwable e, boolean fatal) {
            emit(id, "client_error", "\"code\":" + quote(e.getClass().getSimpleName()) + ",\"message\":"
                    + quote(String.valueOf(e.getMessage())) + ",\"fatal\":" + fatal);
        }

        void commit(Map<TopicPartition, OffsetAndMetadata> offsets) {
            List<String> items = new ArrayList<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet())
                items.add("{\"topic\":" + quote(e.getKey().topic()) + ",\"partition\":" + e.getKey().partition()
                        + ",\"offset\":" + e.getValue().offset() + "}");
            String body = "\"offsets\":[" + String.join(",", items) + "]";
            try {
                consumer.commitSync(offsets);
                emit(id, "offsets_committed", body + ",\"success\":true");
            } catch (WakeupException e) {
                throw e;
            } catch (Exception e) {
                emit(id, "offsets_committed", body + ",\"success\":false,\"error\":" + quote(e.getClass().getSimpleName()));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, Member> members = new ConcurrentHashMap<>();
        List<Thread> threads = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            if (f.length == 6 && f[0].equals("start")) {
                Properties props = new Properties();
                try (FileReader r = new FileReader(f[2])) { props.load(r); }
                Member m = new Member(f[1], props, Arrays.asList(f[3].split(",")), f[4].equals("sync"), Long.parseLong(f[5]));
                members.put(m.id, m);
                Thread t = new Thread(m, "member-" + m.id);
                threads.add(t);
                t.start();
            } else if (f.length == 2 && f[0].equals("stop")) {
                Member m = members.get(f[1]);
                if (m != null) m.stop();
            } else if (!line.isBlank()) {
                System.err.println("member host: unknown command " + line);
            }
        }
        for (Member m : members.values()) m.stop();
        for (Thread t : threads) t.join(60_000);
        System.exit(0);
    }
}
