// One instance of a Kafka Streams application of testbed's own, whose rebalances, tasks, restorations and
// processing are printed as JSON lines in the shape of testbed's history events (testbed.members.java.streams
// writes them).
//
// Arguments: <properties file> <input topic> <output topic> <stateless|stateful> <processing ms per record>
//   or: --check <properties file> <the spec's client_config keys, comma-separated>: the settings checked as Kafka
//       Streams takes them, without connecting; prints {"errors": [{"key": <key or null>, "message": ...}]}
// Topologies (one sub-topology, so task 0_p reads input partition p and nothing is repartitioned):
//   stateless: every input record forwarded unchanged to the output topic;
//   stateful: a count per key (the partition for a record without key) in a persistent RocksDB store "counts"
//             with its changelog; the new count goes to the output topic under the record's key.
// Lines: startup_complete; assigned / revoked {partitions, kafka_member_id} when the main consumer's assignment
// (its active tasks' input partitions) changes, seen at the end of the poll whose rebalance callbacks changed it, so
// before a record of a new partition is processed and after a revoked task closed (a consumer of testbed's own
// through the client supplier under the classic protocol; the internal consumer wrapper,
// TestbedStreamsConsumerWrapper, under the streams protocol); lost {partitions, kafka_member_id} when the instance
// gives up every task it held without a revocation, written after the tasks closed: a fenced member's lost-all
// callback (onPartitionsLost under the classic protocol, onAllTasksLost under the streams protocol) or the
// main consumer's unsubscribe() while the instance runs, whose one caller then is StreamThread.handleTaskMigrated
// (its EOS producer fenced: close all tasks, leave, rejoin); the assigned line of what comes back follows as usual
// (kafka_member_id: the consumer's groupMetadata().memberId(), else the last one it had; left out when never known);
// state {from, to} (KafkaStreams.State); tasks {active [{task, partitions}], standby [...]}
// whenever the instance's thread metadata changes (read every 10 ms; Streams updates it when a thread is RUNNING
// again, so it trails the assignment by the restoration); restore {phase start|batch|end|suspended|stable, store, topic,
// partition, start_offset, end_offset, records}: stable (exactly-once only) is the changelog partition's last stable
// offset in end_offset, asked of an Admin client (listOffsets, READ_COMMITTED) when a restoration starts or is
// suspended and written when the answer comes (none on a failure): the start's end_offset is the high watermark
// (Streams reads it READ_UNCOMMITTED, KAFKA-10167) while the restore consumer reads committed, so a restoration
// behind an open transaction never reaches it; processed {topic, partition, first_offset, last_offset, count,
// produce_ts_min_ms, produce_ts_max_ms} per task, for records that went through the topology (written every
// 100 ms of wall time and when the task closes, so before its partition leaves the instance); client_error
// {code, message, fatal}; shutdown_complete. SIGTERM (a shutdown hook) closes the instance as a deployed app does
// (KafkaStreams.close(): under the classic protocol it does not leave the group). A closing instance's ownership
// ends when its main consumer leaves: StreamThread.completeShutdown closes (and commits) every task, then closes
// the main consumer, where the member leaves the group; that consumer's close(...) (and its unsubscribe() while
// the instance shuts down) writes revoked for what it owned before delegating, so no later than the leave and after
// the tasks' last processed lines. What is still owned when KafkaStreams.close() returns is revoked then (never lost:
// from the instance's shutdown on, a lost-all callback or an unsubscribe writes no lost).
import java.io.FileReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.streams.processor.internals.DefaultKafkaClientSupplier;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

public class TestbedStreamsApp {
    static final String STORE = "counts";
    static final long FLUSH_MS = 100;
    static final long TASKS_EVERY_MS = 10;

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

    static Long produceTs(Header h, long recordTs) {
        if (h != null && h.value() != null && h.value().length == 8) {
            long v = 0;
            for (byte b : h.value()) v = (v << 8) | (b & 0xff);
            return v;
        }
        return recordTs >= 0 ? recordTs : null;
    }

    /** The records one task processed since its last flush, as runs of consecutive offsets. */
    static final class Recorder implements Processor<byte[], byte[], byte[], byte[]> {
        final boolean stateful;
        final double msPerRecord;
        ProcessorContext<byte[], byte[]> ctx;
        KeyValueStore<Bytes, Long> counts;
        String topic;
        int partition = -1;
        long first = -1, last = -1, count;
        Long tsMin, tsMax;
        double owedMs;

        Recorder(boolean stateful, double msPerRecord) { this.stateful = stateful; this.msPerRecord = msPerRecord; }

        @Override
        public void init(ProcessorContext<byte[], byte[]> context) {
            ctx = context;
            if (stateful) counts = context.getStateStore(STORE);
            context.schedule(Duration.ofMillis(FLUSH_MS), PunctuationType.WALL_CLOCK_TIME, now -> flush());
        }

        @Override
        public void process(Record<byte[], byte[]> record) {
            RecordMetadata md = ctx.recordMetadata().orElseThrow();
            if (msPerRecord > 0) simulate();
            byte[] out = record.value();
            if (stateful) {
                byte[] key = record.key() != null ? record.key() : ("p" + md.partition()).getBytes(StandardCharsets.UTF_8);
                Bytes k = Bytes.wrap(key);
                Long before = counts.get(k);
                long now = before == null ? 1 : before + 1;
                counts.put(k, now);
                out = Long.toString(now).getBytes(StandardCharsets.UTF_8);
            }
            ctx.forward(record.withValue(out));
            note(md.topic(), md.partition(), md.offset(), produceTs(record.headers().lastHeader("ts"), record.timestamp()));
        }

        void simulate() {
            owedMs += msPerRecord;
            if (owedMs >= 1) {
                long whole = (long) owedMs;
                owedMs -= whole;
                try { Thread.sleep(whole); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
            }
        }

        void note(String t, int p, long offset, Long ts) {
            if (count > 0 && (p != partition || !t.equals(topic) || offset != last + 1)) flush();
            if (count == 0) { topic = t; partition = p; first = offset; tsMin = ts; tsMax = ts; }
            last = offset;
            count++;
            if (ts != null) {
                tsMin = tsMin == null ? ts : Math.min(tsMin, ts);
                tsMax = tsMax == null ? ts : Math.max(tsMax, ts);
            }
        }

        void flush() {
            if (count == 0) return;
            emit("processed", "\"topic\":" + quote(topic) + ",\"partition\":" + partition + ",\"first_offset\":" + first
                    + ",\"last_offset\":" + last + ",\"count\":" + count + ",\"produce_ts_min_ms\":" + tsMin
                    + ",\"produce_ts_max_ms\":" + tsMax);
            count = 0;
        }

        @Override
        public void close() { flush(); }
    }

    /** The kafka-clients version on the classpath, from the file its jar carries (AppInfoParser, which reads it,
     *  moved to an internals package in 4.4). */
    static String kafkaVersion() {
        try (java.io.InputStream in = KafkaConsumer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties p = new Properties();
            if (in != null) p.load(in);
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    /** A public method of a Streams metadata object called reflectively: its types moved between versions
     *  (org.apache.kafka.streams.processor.ThreadMetadata and String task ids before 3.0, interfaces in
     *  org.apache.kafka.streams with TaskId after), and this file compiles against kafka-streams 2.8 to 4.x. */
    static Object call(Object target, String method) {
        try {
            java.lang.reflect.Method m = target.getClass().getMethod(method);
            m.setAccessible(true);  // an implementation class may be package-private; the classpath has no modules
            return m.invoke(target);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("kafka-streams " + kafkaVersion()
                    + ": " + target.getClass().getName() + "." + method + "()", e);
        }
    }

    static String tasksJson(java.util.Collection<Object> tasks) {
        TreeMap<String, List<String>> sorted = new TreeMap<>();
        for (Object t : tasks) {
            List<String> parts = new ArrayList<>();
            for (Object o : (java.util.Collection<?>) call(t, "topicPartitions")) {
                TopicPartition tp = (TopicPartition) o;
                parts.add("[" + quote(tp.topic()) + "," + tp.partition() + "]");
            }
            Collections.sort(parts);
            sorted.put(String.valueOf(call(t, "taskId")), parts);
        }
        List<String> items = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : sorted.entrySet())
            items.add("{\"task\":" + quote(e.getKey()) + ",\"partitions\":[" + String.join(",", e.getValue()) + "]}");
        return "[" + String.join(",", items) + "]";
    }

    /** The instance's threads' metadata: metadataForLocalThreads() from 3.0, localThreadsMetadata() before (gone in 4.0);
     *  none once the instance stopped (2.8's throws IllegalStateException when it is not running, 3.0's answers). */
    static java.util.Collection<?> localThreads(KafkaStreams streams) {
        for (String name : new String[]{"metadataForLocalThreads", "localThreadsMetadata"}) {
            try {
                return (java.util.Collection<?>) KafkaStreams.class.getMethod(name).invoke(streams);
            } catch (NoSuchMethodException e) {
                // the other name
            } catch (ReflectiveOperationException e) {
                Throwable cause = e.getCause();
                if (cause instanceof IllegalStateException && !streams.state().isRunningOrRebalancing()) return List.of();
                if (cause instanceof RuntimeException) throw (RuntimeException) cause;
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("KafkaStreams has neither metadataForLocalThreads() nor localThreadsMetadata()");
    }

    static String tasksLine(KafkaStreams streams) {
        java.util.HashSet<Object> active = new java.util.HashSet<>(), standby = new java.util.HashSet<>();
        for (Object thread : localThreads(streams)) {
            active.addAll((java.util.Collection<?>) call(thread, "activeTasks"));
            standby.addAll((java.util.Collection<?>) call(thread, "standbyTasks"));
        }
        return "\"active\":" + tasksJson(active) + ",\"standby\":" + tasksJson(standby);
    }

    static void restore(String phase, TopicPartition tp, String store, Long start, Long end, Long records) {
        emit("restore", "\"phase\":" + quote(phase) + ",\"store\":" + quote(store) + ",\"topic\":" + quote(tp.topic())
                + ",\"partition\":" + tp.partition() + ",\"start_offset\":" + start + ",\"end_offset\":" + end
                + ",\"records\":" + records);
    }

    /** The Admin client asking for changelogs' last stable offsets (exactly-once only; else null). */
    static volatile Admin stableAdmin;
    static final int STABLE_TIMEOUT_MS = 5000;

    /** The changelog partition's last stable offset (listOffsets latest, READ_COMMITTED) as a restore line of
     *  phase stable, when the answer comes: the caller (a restore listener, on the thread restoring) never waits.
     *  A failure (no leader, timeout) writes nothing but a stderr line. */
    static void stable(TopicPartition tp, String store) {
        Admin admin = stableAdmin;
        if (admin == null) return;
        try {
            ListOffsetsOptions options = new ListOffsetsOptions(IsolationLevel.READ_COMMITTED);
            options.timeoutMs(STABLE_TIMEOUT_MS);
            admin.listOffsets(Map.of(tp, OffsetSpec.latest()), options).partitionResult(tp).whenComplete((info, e) -> {
                if (e == null) restore("stable", tp, store, null, info.offset(), null);
                else System.err.println("last stable offset of " + tp + ": " + e);
            });
        } catch (RuntimeException e) {  // the client already closed
            System.err.println("last stable offset of " + tp + ": " + e);
        }
    }

    static final Map<Consumer<?, ?>, java.util.Set<TopicPartition>> OWNED =
            new java.util.concurrent.ConcurrentHashMap<>();
    static final Map<Consumer<?, ?>, String> MEMBER_IDS = new java.util.concurrent.ConcurrentHashMap<>();
    /** The instance is shutting down (KafkaStreams.close(), or an error's shutdown): nothing is lost from here on. */
    static volatile boolean closing;

    static String partitionsJson(java.util.Collection<TopicPartition> tps) {
        List<String> parts = new ArrayList<>();
        for (TopicPartition tp : tps) parts.add("[" + quote(tp.topic()) + "," + tp.partition() + "]");
        Collections.sort(parts);
        return "[" + String.join(",", parts) + "]";
    }

    /** The broker's member id of a main consumer, else the last one it had (a classic consumer forgets its id when
     *  its generation is reset; a closed one throws); null when never known. */
    static String memberId(Consumer<?, ?> consumer) {
        try {
            String id = consumer.groupMetadata().memberId();
            if (id != null && !id.isEmpty()) {
                MEMBER_IDS.put(consumer, id);
                return id;
            }
        } catch (RuntimeException e) {
            // closed, or not in a group yet: the last id known
        }
        return MEMBER_IDS.get(consumer);
    }

    static String ownership(java.util.Collection<TopicPartition> tps, String memberId) {
        return "\"partitions\":" + partitionsJson(tps)
                + (memberId == null ? "" : ",\"kafka_member_id\":" + quote(memberId));
    }

    /** A main consumer's assignment after a poll: what left it and what joined it since the last one. */
    static void watch(Consumer<?, ?> consumer, java.util.Set<TopicPartition> now) {
        java.util.Set<TopicPartition> before = OWNED.getOrDefault(consumer, java.util.Set.of());
        if (before.equals(now)) return;
        java.util.Set<TopicPartition> gone = new java.util.HashSet<>(before), added = new java.util.HashSet<>(now);
        gone.removeAll(now);
        added.removeAll(before);
        String id = memberId(consumer);
        if (!gone.isEmpty()) emit("revoked", ownership(gone, id));
        if (!added.isEmpty()) emit("assigned", ownership(added, id));
        OWNED.put(consumer, new java.util.HashSet<>(now));
    }

    /** Every partition a main consumer held, lost (its tasks already closed): written unless the instance is
     *  shutting down (closedAll revokes what is left then). {@code memberId}: read before the loss reset it. */
    static void lost(Consumer<?, ?> consumer, String memberId) {
        java.util.Set<TopicPartition> owned = OWNED.getOrDefault(consumer, java.util.Set.of());
        if (closing || owned.isEmpty()) return;
        emit("lost", ownership(owned, memberId));
        OWNED.put(consumer, new java.util.HashSet<>());
    }

    /** A main consumer's unsubscribe(): while the instance runs its one caller is StreamThread.handleTaskMigrated
     *  (TaskManager's other call is for an empty named topology, which this app never has), after
     *  TaskManager.handleLostAll closed every task: what the consumer still held is lost. While the instance shuts
     *  down, a leave (see leaving): revoked. */
    static void unsubscribed(Consumer<?, ?> consumer, Runnable unsubscribe) {
        if (closing) {
            leaving(consumer, unsubscribe);
            return;
        }
        String id = memberId(consumer);
        try {
            unsubscribe.run();
        } finally {
            lost(consumer, id);
        }
    }

    /** What a main consumer owned, revoked now (its tasks already closed) and forgotten: its ownership ends. */
    static void revokeAll(Consumer<?, ?> consumer, String memberId) {
        java.util.Set<TopicPartition> owned = OWNED.getOrDefault(consumer, java.util.Set.of());
        if (owned.isEmpty()) return;
        emit("revoked", ownership(owned, memberId));
        OWNED.put(consumer, new java.util.HashSet<>());
    }

    /** A main consumer's close(...), or its unsubscribe() while the instance shuts down: the member leaves the group
     *  inside it (the streams protocol always; the classic one when asked to). StreamThread.completeShutdown (4.3.1)
     *  calls TaskManager.shutdown first, which closes every task (each Recorder's last processed line) and commits,
     *  and only then mainConsumer.close(CloseOptions) (3.9 to 4.1: unsubscribe() when leaving, then close()); so
     *  what the consumer owned is revoked here, before delegating: no earlier than the tasks' last records, no later
     *  than the leave after which the group hands the tasks to another instance. */
    static void leaving(Consumer<?, ?> consumer, Runnable leave) {
        revokeAll(consumer, memberId(consumer));
        leave.run();
    }

    /** What the instance still owned when KafkaStreams.close() returned (a consumer never closed, e.g. a close that
     *  timed out): revoked then. */
    static void closedAll() {
        for (Consumer<?, ?> consumer : OWNED.keySet()) watch(consumer, java.util.Set.of());
    }

    /** The classic protocol's main consumer: Streams' own, watched after each poll; its lost partitions
     *  (onPartitionsLost, then Streams' handleLostAll) and its unsubscribe() while running written as lost; its
     *  close() revokes what it owned (see leaving). close(CloseOptions), the one StreamThread calls from 4.2 on, is
     *  TestbedClassicConsumer's (CloseOptions is kafka-clients 4.1+; this file compiles against 3.9 too). */
    static class WatchedConsumer extends KafkaConsumer<byte[], byte[]> {
        WatchedConsumer(Map<String, Object> config) {
            super(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        @Override
        public ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
            try {
                return super.poll(timeout);
            } finally {
                watch(this, assignment());
            }
        }

        // Streams subscribes by topic names (the Pattern variant is for a pattern-sourced topology: not this app's).
        @Override
        public void subscribe(java.util.Collection<String> topics, ConsumerRebalanceListener listener) {
            super.subscribe(topics, new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(java.util.Collection<TopicPartition> partitions) {
                    listener.onPartitionsRevoked(partitions);
                }

                @Override
                public void onPartitionsAssigned(java.util.Collection<TopicPartition> partitions) {
                    listener.onPartitionsAssigned(partitions);
                }

                @Override
                public void onPartitionsLost(java.util.Collection<TopicPartition> partitions) {
                    String id = memberId(WatchedConsumer.this);
                    try {
                        listener.onPartitionsLost(partitions);
                    } finally {
                        lost(WatchedConsumer.this, id);
                    }
                }
            });
        }

        @Override
        public void unsubscribe() {
            unsubscribed(this, super::unsubscribe);
        }

        @Override
        public void close() {
            leaving(this, super::close);
        }

        @SuppressWarnings("deprecation")
        @Override
        public void close(Duration timeout) {
            leaving(this, () -> super.close(timeout));
        }
    }

    static final class WatchingSupplier extends DefaultKafkaClientSupplier {
        /** TestbedClassicConsumer where it was compiled (kafka-clients 4.1+), else WatchedConsumer. */
        @SuppressWarnings("unchecked")
        @Override
        public Consumer<byte[], byte[]> getConsumer(Map<String, Object> config) {
            Class<?> classic;
            try {
                classic = Class.forName("TestbedClassicConsumer");
            } catch (ClassNotFoundException e) {
                return new WatchedConsumer(config);
            }
            try {
                return (Consumer<byte[], byte[]>) classic.getConstructor(Map.class).newInstance(config);
            } catch (ReflectiveOperationException e) {
                Throwable cause = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
                if (cause instanceof RuntimeException) throw (RuntimeException) cause;
                throw new IllegalStateException(cause);
            }
        }
    }

    static Properties load(String path) throws IOException {
        Properties props = new Properties();
        try (FileReader r = new FileReader(path, StandardCharsets.UTF_8)) { props.load(r); }
        return props;
    }

    /** An Admin client's settings: the application's bootstrap servers. */
    static Properties adminProps(Properties props) {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, props.getProperty(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG));
        return admin;
    }

    /** A topic's description: DescribeTopicsResult.allTopicNames() from 3.1, all() before (gone in 4.0). */
    @SuppressWarnings("unchecked")
    static TopicDescription describe(Admin admin, String topic) throws Exception {
        Object result = admin.describeTopics(List.of(topic));
        java.lang.reflect.Method all;
        try {
            all = result.getClass().getMethod("allTopicNames");
        } catch (NoSuchMethodException e) {
            all = result.getClass().getMethod("all");
        }
        return ((org.apache.kafka.common.KafkaFuture<Map<String, TopicDescription>>) all.invoke(result)).get().get(topic);
    }

    /** The output topic, created like the input (partitions, replication) when it does not exist yet. */
    static void ensureOutput(Properties props, String input, String output) throws Exception {
        try (Admin a = Admin.create(adminProps(props))) {
            TopicDescription d = describe(a, input);
            short rf = (short) d.partitions().get(0).replicas().size();
            try {
                a.createTopics(List.of(new NewTopic(output, d.partitions().size(), rf))).all().get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) throw e;
            }
        }
    }

    static final String[] PREFIXES = {"main.consumer.", "restore.consumer.", "global.consumer.", "consumer.",
            "producer.", "admin.", "topic."};

    static String unprefixed(String key) {
        for (String prefix : PREFIXES) if (key.startsWith(prefix)) return key.substring(prefix.length());
        return key;
    }

    /** Whether Streams, or a client it builds, knows this setting (prefixed ones by their unprefixed name). */
    static boolean known(String key) {
        for (String prefix : PREFIXES) {
            if (key.startsWith(prefix)) {
                String rest = key.substring(prefix.length());
                if (prefix.equals("topic.")) return !rest.isEmpty();  // any topic config; the broker judges it
                if (prefix.equals("producer.")) return org.apache.kafka.clients.producer.ProducerConfig.configNames().contains(rest);
                if (prefix.equals("admin.")) return AdminClientConfig.configNames().contains(rest);
                return org.apache.kafka.clients.consumer.ConsumerConfig.configNames().contains(rest);
            }
        }
        return StreamsConfig.configDef().names().contains(key)
                || org.apache.kafka.clients.consumer.ConsumerConfig.configNames().contains(key)
                || org.apache.kafka.clients.producer.ProducerConfig.configNames().contains(key)
                || AdminClientConfig.configNames().contains(key);
    }

    /** The settings parsed as Streams parses them (and the consumer and producer configs it derives); a
     *  ConfigException names one setting at a time, so the key it names is taken out and the rest parsed again. */
    static void check(Properties props, String keyList) {
        List<String> keys = new ArrayList<>();
        for (String k : keyList.split(",")) if (!k.isEmpty()) keys.add(k);
        List<String> errors = new ArrayList<>();
        for (String k : keys) {
            if (!known(k)) {
                errors.add("{\"key\":" + quote(k) + ",\"message\":" + quote("kafka-streams "
                        + kafkaVersion() + " knows no setting " + k) + "}");
                props.remove(k);
            }
        }
        for (int round = 0; round <= keys.size(); round++) {
            String message = null;
            try {
                StreamsConfig config = new StreamsConfig(props);
                // Streams hands its clients (de)serializer instances; the configs alone lack them.
                Map<String, Object> consumer = config.getMainConsumerConfigs("check", "check", 0);
                consumer.put("key.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class);
                consumer.put("value.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class);
                new org.apache.kafka.clients.consumer.ConsumerConfig(consumer);
                Map<String, Object> producer = config.getProducerConfigs("check");
                producer.put("key.serializer", org.apache.kafka.common.serialization.ByteArraySerializer.class);
                producer.put("value.serializer", org.apache.kafka.common.serialization.ByteArraySerializer.class);
                new org.apache.kafka.clients.producer.ProducerConfig(producer);
            } catch (Exception e) {
                message = String.valueOf(e.getMessage());
            }
            if (message == null) break;
            String named = null;
            for (String k : keys) if (props.containsKey(k) && message.contains(unprefixed(k))) named = k;
            errors.add("{\"key\":" + (named == null ? "null" : quote(named)) + ",\"message\":" + quote(message) + "}");
            if (named == null) break;
            props.remove(named);
        }
        System.out.println("{\"errors\":[" + String.join(",", errors) + "]}");
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("--check")) {
            check(load(args[1]), args.length > 2 ? args[2] : "");
            return;
        }
        Properties props = load(args[0]);
        String input = args[1], output = args[2];
        boolean stateful = args[3].equals("stateful");
        double msPerRecord = Double.parseDouble(args[4]);
        ensureOutput(props, input, output);
        if (String.valueOf(props.getProperty("processing.guarantee")).startsWith("exactly_once")) {
            stableAdmin = Admin.create(adminProps(props));  // the changelogs' last stable offsets; closed at the end
        }

        // The Processor API of kafka-streams 2.7 on (the DSL's processValues is 3.3+, its transformValues gone in 4.0):
        // source, the recorder (with the store when stateful), sink; one sub-topology, task 0_p for input partition p.
        Topology topology = new Topology();
        topology.addSource("input", new ByteArrayDeserializer(), new ByteArrayDeserializer(), input);
        topology.addProcessor("recorder", () -> new Recorder(stateful, msPerRecord), "input");
        if (stateful) {
            topology.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), Serdes.Bytes(),
                    Serdes.Long()), "recorder");
        }
        topology.addSink("output", output, new ByteArraySerializer(), new ByteArraySerializer(), "recorder");

        if ("streams".equals(props.getProperty("group.protocol"))) {  // StreamsConfig.GROUP_PROTOCOL_CONFIG: 4.1+
            // The streams protocol's main consumer is built inside Streams; its wrapper is the one way to watch it.
            props.put("__internal.consumer.wrapper__", "TestbedStreamsConsumerWrapper");
        }
        KafkaStreams streams = new KafkaStreams(topology, props, new WatchingSupplier());
        streams.setStateListener((to, from) -> {
            if (!to.isRunningOrRebalancing()) closing = true;  // PENDING_SHUTDOWN, PENDING_ERROR, ...: shutting down
            emit("state", "\"from\":" + quote(from.name()) + ",\"to\":" + quote(to.name()));
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                restore("start", tp, store, start, end, null);
                stable(tp, store);
            }
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) { restore("batch", tp, store, null, batchEnd, n); }
            public void onRestoreEnd(TopicPartition tp, String store, long total) { restore("end", tp, store, null, null, total); }
            public void onRestoreSuspended(TopicPartition tp, String store, long total) {
                restore("suspended", tp, store, null, null, total);
                stable(tp, store);  // whether the last stable offset moved while the restoration was stuck
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            emit("client_error", "\"code\":" + quote(e.getClass().getSimpleName()) + ",\"message\":"
                    + quote(String.valueOf(e.getMessage())) + ",\"fatal\":true");
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });

        CountDownLatch stop = new CountDownLatch(1), closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.countDown();
            try { closed.await(); } catch (InterruptedException ignored) { }
        }));
        emit("startup_complete", "");  // the instance is built; its first state change comes with start()
        try {
            streams.start();
            String last = null;
            while (!stop.await(TASKS_EVERY_MS, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                String now = tasksLine(streams);
                if (!now.equals(last)) emit("tasks", now);
                last = now;
                KafkaStreams.State state = streams.state();
                if (state == KafkaStreams.State.ERROR || state == KafkaStreams.State.NOT_RUNNING) break;
            }
            closing = true;
            streams.close();
            closedAll();
            Admin admin = stableAdmin;
            if (admin != null) {
                stableAdmin = null;
                admin.close(Duration.ofSeconds(5));
            }
            String now = tasksLine(streams);
            if (!now.equals(last)) emit("tasks", now);
            emit("shutdown_complete", "");
        } finally {
            closed.countDown();  // a main that failed must not hold the shutdown hook (and so SIGTERM) forever
        }
    }
}
