// One share-group member (KIP-932): a KafkaShareConsumer whose every acquisition and acknowledgement is printed
// as a JSON line, in the shape of testbed's history events (testbed.members.java.share writes them).
//
// Arguments: <properties file> <topic[,topic...]> <implicit|explicit> <processing ms per record> <release every|0>
//            <reject every|0> <max records|0>
// Lines: startup_complete; share_acquired {topic, partition, acquired [[offset, delivery count]...],
// produce_ts_min_ms, produce_ts_max_ms} per poll and partition; share_acknowledged {topic, partition,
// acknowledged [offsets], type, mode, sent_ms, error} when the broker's answer arrives (the acknowledgement commit
// callback, which the client runs on this thread inside poll, commitSync and close); share_ack_sent {topic,
// partition, acknowledged, type, mode, ts_ms} before the call that sends acknowledgements; client_error {code, message,
// fatal}; shutdown_complete. SIGTERM (a shutdown hook) wakes the consumer up, which then closes: close() commits
// what is pending (the last poll's records, in implicit mode) and leaves the group.
import java.io.FileReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class TestbedShareMember {
    static final String[] TYPES = {"accept", "release", "reject"};
    static final AcknowledgeType[] ACK = {AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT};

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static synchronized void emit(String name, String body) {
        System.out.println("{\"name\":" + quote(name) + ",\"timestamp\":" + System.currentTimeMillis()
                + (body.isEmpty() ? "" : "," + body) + "}");
        System.out.flush();
    }

    static String errorName(Exception e) {
        if (e == null) return null;
        Errors error = Errors.forException(e);
        return error == Errors.UNKNOWN_SERVER_ERROR ? e.getClass().getSimpleName() : error.name();
    }

    final String mode;
    final long releaseEvery, rejectEvery;
    // topic, partition, offset -> {type index, handed over at}: the callback reports offsets and one error only
    final Map<String, long[]> pending = new HashMap<>();
    final List<ConsumerRecord<byte[], byte[]>> unacked = new ArrayList<>();
    long received;

    TestbedShareMember(String mode, long releaseEvery, long rejectEvery) {
        this.mode = mode; this.releaseEvery = releaseEvery; this.rejectEvery = rejectEvery;
    }

    static String key(String topic, int partition, long offset) { return topic + "\u0000" + partition + "\u0000" + offset; }

    int typeOf(long nth) {
        if (rejectEvery > 0 && nth % rejectEvery == 0) return 2;
        if (releaseEvery > 0 && nth % releaseEvery == 0) return 1;
        return 0;
    }

    synchronized void handOver(ConsumerRecord<byte[], byte[]> r, int type, long now) {
        pending.put(key(r.topic(), r.partition(), r.offset()), new long[]{type, now});
    }

    synchronized void answered(Map<TopicIdPartition, Set<Long>> offsets, Exception exception) {
        String error = errorName(exception);
        for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet()) {
            String topic = e.getKey().topic();
            int partition = e.getKey().partition();
            Map<Integer, TreeSet<Long>> byType = new TreeMap<>();
            Map<Integer, Long> sent = new HashMap<>();
            for (long offset : e.getValue()) {
                long[] p = pending.remove(key(topic, partition, offset));
                int type = p == null ? 0 : (int) p[0];  // never handed over by us: the client's implicit accept
                byType.computeIfAbsent(type, t -> new TreeSet<>()).add(offset);
                if (p != null) sent.merge(type, p[1], Math::min);
            }
            for (Map.Entry<Integer, TreeSet<Long>> t : byType.entrySet()) {
                List<String> items = new ArrayList<>();
                for (long o : t.getValue()) items.add(Long.toString(o));
                Long when = sent.get(t.getKey());
                emit("share_acknowledged", "\"topic\":" + quote(topic) + ",\"partition\":" + partition
                        + ",\"acknowledged\":[" + String.join(",", items) + "],\"type\":" + quote(TYPES[t.getKey()])
                        + ",\"mode\":" + quote(mode) + ",\"sent_ms\":" + (when == null ? "null" : when)
                        + ",\"error\":" + (error == null ? "null" : quote(error)));
            }
        }
    }

    /** share_ack_sent per partition and type, before the call that sends them (a kill before the answer leaves
     *  the history saying what the broker may have taken). */
    void sent(List<ConsumerRecord<byte[], byte[]>> records, int[] types, long now) {
        Map<String, TreeSet<Long>> grouped = new java.util.LinkedHashMap<>();
        for (int i = 0; i < records.size(); i++) {
            ConsumerRecord<byte[], byte[]> r = records.get(i);
            grouped.computeIfAbsent(r.topic() + "\u0000" + r.partition() + "\u0000" + types[i], k -> new TreeSet<>())
                    .add(r.offset());
        }
        for (Map.Entry<String, TreeSet<Long>> e : grouped.entrySet()) {
            String[] parts = e.getKey().split("\u0000");
            List<String> items = new ArrayList<>();
            for (long o : e.getValue()) items.add(Long.toString(o));
            emit("share_ack_sent", "\"topic\":" + quote(parts[0]) + ",\"partition\":" + parts[1]
                    + ",\"acknowledged\":[" + String.join(",", items) + "],\"type\":"
                    + quote(TYPES[Integer.parseInt(parts[2])]) + ",\"mode\":" + quote(mode) + ",\"ts_ms\":" + now);
        }
    }

    static Long produceTs(ConsumerRecord<byte[], byte[]> r) {
        Header h = r.headers().lastHeader("ts");
        if (h != null && h.value() != null && h.value().length == 8) {
            long v = 0;
            for (byte b : h.value()) v = (v << 8) | (b & 0xff);
            return v;
        }
        return r.timestamp() >= 0 ? r.timestamp() : null;
    }

    static void error(Throwable e, boolean fatal) {
        String code = e instanceof Exception ? errorName((Exception) e) : e.getClass().getSimpleName();
        emit("client_error", "\"code\":" + quote(code) + ",\"message\":" + quote(String.valueOf(e.getMessage()))
                + ",\"fatal\":" + fatal);
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (FileReader r = new FileReader(args[0])) { props.load(r); }
        List<String> topics = Arrays.asList(args[1].split(","));
        String mode = args[2];
        double msPerRecord = Double.parseDouble(args[3]);
        TestbedShareMember m = new TestbedShareMember(mode, Long.parseLong(args[4]), Long.parseLong(args[5]));
        long maxRecords = Long.parseLong(args[6]);
        props.put("share.acknowledgement.mode", mode);
        KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
        consumer.setAcknowledgementCommitCallback(m::answered);
        final boolean[] stopping = {false};
        CountDownLatch done = new CountDownLatch(1);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (stopping) { stopping[0] = true; }
            try { consumer.wakeup(); } catch (RuntimeException e) { /* already closed: nothing to wake */ }
            try { done.await(); } catch (InterruptedException e) { main.interrupt(); }
        }));
        emit("startup_complete", "");
        long total = 0;
        try {
            consumer.subscribe(topics);
            while (true) {
                synchronized (stopping) { if (stopping[0]) break; }
                if (mode.equals("implicit")) {  // the previous poll's records: accepted by the poll about to be made
                    long now = System.currentTimeMillis();
                    m.sent(m.unacked, new int[m.unacked.size()], now);
                    for (ConsumerRecord<byte[], byte[]> r : m.unacked) m.handOver(r, 0, now);
                    m.unacked.clear();
                }
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(500));
                } catch (WakeupException e) {
                    break;
                } catch (RetriableException e) {
                    error(e, false);
                    continue;
                }
                if (records.isEmpty()) continue;
                Map<String, List<ConsumerRecord<byte[], byte[]>>> byPartition = new java.util.LinkedHashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records)
                    byPartition.computeIfAbsent(r.topic() + "\u0000" + r.partition(), k -> new ArrayList<>()).add(r);
                for (List<ConsumerRecord<byte[], byte[]>> recs : byPartition.values()) {
                    List<String> acquired = new ArrayList<>();
                    Long min = null, max = null;
                    for (ConsumerRecord<byte[], byte[]> r : recs) {
                        Optional<Short> count = r.deliveryCount();
                        acquired.add("[" + r.offset() + "," + (count.isPresent() ? count.get().toString() : "null") + "]");
                        Long ts = produceTs(r);
                        if (ts != null) { min = min == null ? ts : Math.min(min, ts); max = max == null ? ts : Math.max(max, ts); }
                    }
                    emit("share_acquired", "\"topic\":" + quote(recs.get(0).topic()) + ",\"partition\":"
                            + recs.get(0).partition() + ",\"acquired\":[" + String.join(",", acquired) + "]"
                            + ",\"produce_ts_min_ms\":" + min + ",\"produce_ts_max_ms\":" + max);
                }
                if (msPerRecord > 0) Thread.sleep((long) (records.count() * msPerRecord));
                if (mode.equals("implicit")) {
                    for (ConsumerRecord<byte[], byte[]> r : records) m.unacked.add(r);
                } else {
                    List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
                    for (ConsumerRecord<byte[], byte[]> r : records) batch.add(r);
                    int[] types = new int[batch.size()];
                    for (int i = 0; i < types.length; i++) types[i] = m.typeOf(++m.received);
                    long now = System.currentTimeMillis();
                    m.sent(batch, types, now);  // before acknowledge(): the client may send them with any request
                    for (int i = 0; i < types.length; i++) {
                        m.handOver(batch.get(i), types[i], now);
                        consumer.acknowledge(batch.get(i), ACK[types[i]]);
                    }
                    try {
                        consumer.commitSync();  // the answers arrive through the callback, inside this call
                    } catch (WakeupException e) {
                        break;
                    } catch (Exception e) {
                        error(e, false);
                    }
                }
                total += records.count();
                if (maxRecords > 0 && total >= maxRecords) break;
            }
        } catch (WakeupException e) {
            // asked to stop inside a call
        } catch (Throwable e) {
            System.err.println("share member failed: " + e);
            e.printStackTrace();
            error(e, true);
        } finally {
            long now = System.currentTimeMillis();
            m.sent(m.unacked, new int[m.unacked.size()], now);
            for (ConsumerRecord<byte[], byte[]> r : m.unacked) m.handOver(r, 0, now);
            try {
                consumer.close();
            } catch (Throwable e) {
                System.err.println("close failed: " + e);
            }
            emit("shutdown_complete", "");
            done.countDown();
        }
    }
}
