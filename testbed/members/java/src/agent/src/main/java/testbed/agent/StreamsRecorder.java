package testbed.agent;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.WeakHashMap;

/** What StreamsAdvice calls: a program's KafkaStreams instances, their state transitions, tasks and restorations, and
 * the records their tasks processed. JDK types only, reflection on Kafka Streams' objects (their types moved between
 * versions: thread metadata, task ids), as testbed's own Streams application reads them.
 *
 * One instance per JVM is what testbed measures (a member is an instance); a second KafkaStreams in the same JVM is
 * recorded into the same history. Its stream threads' main consumers' group events come through ConsumerAdvice: on
 * the classic protocol they are KafkaConsumers known by their assignor (StreamsPartitionAssignor); on the streams
 * protocol (KIP-1071) AsyncKafkaConsumers Streams builds itself, known by their StreamsRebalanceData. */
public final class StreamsRecorder {
    static final long TASKS_EVERY_MS = 10;
    private static final Map<Object, Instance> INSTANCES = Collections.synchronizedMap(new WeakHashMap<>());
    /** The Streams settings of the latest instance built (application.id, processing.guarantee, ...), for `started`. */
    static volatile Map<String, Object> SETTINGS;
    private static Thread poller;

    private StreamsRecorder() {}

    static final class Instance {
        volatile String tasks;
        volatile boolean closed;
        Object lastState; // the last state written (under the instance's lock)
    }

    // ---- the instance -----------------------------------------------------------------------------

    public static void created(Object streams) {
        Agent agent = Recorder.AGENT;
        if (agent == null || INSTANCES.containsKey(streams)) {
            return;
        }
        INSTANCES.put(streams, new Instance());
        try {
            Object config = field(streams, "applicationConfigs");
            if (config != null) {
                SETTINGS = Recorder.stringKeys((Map<?, ?>) config.getClass().getMethod("values").invoke(config));
            }
        } catch (Throwable t) {
            agent.failed("KafkaStreams settings", t);
        }
        try {
            // our restore listener alone; the program's, set later, is wrapped by RestoreListener's advice
            streams.getClass().getMethod("setGlobalStateRestoreListener", restoreListenerType(streams))
                    .invoke(streams, new Object[] {null});
        } catch (Throwable t) {
            agent.failed("KafkaStreams restore listener", t);
        }
        startPoller();
    }

    static Object field(Object target, String name) throws Exception {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                java.lang.reflect.Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                // the superclass
            }
        }
        return null;
    }

    static Class<?> restoreListenerType(Object streams) throws ClassNotFoundException {
        return Class.forName("org.apache.kafka.streams.processor.StateRestoreListener", false,
                streams.getClass().getClassLoader());
    }

    /** The `streams` block of a main consumer's `started`: a user's topology, with the settings that shape it. */
    static Map<String, Object> startedBlock() {
        Map<String, Object> s = SETTINGS;
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("topology", "program");
        b.put("num_standby_replicas", s == null ? null : s.get("num.standby.replicas"));
        b.put("processing_guarantee", s == null ? null : s.get("processing.guarantee"));
        b.put("application_id", s == null ? null : s.get("application.id"));
        b.put("state_dir", s == null ? null : s.get("state.dir"));
        b.put("num_stream_threads", s == null ? null : s.get("num.stream.threads"));
        b.put("commit_interval_ms", s == null ? null : s.get("commit.interval.ms")); // a Streams setting, not the consumer's
        return b;
    }

    // ---- state ------------------------------------------------------------------------------------

    public static Object state(Object streams) {
        try {
            return streams.getClass().getMethod("state").invoke(streams);
        } catch (Throwable t) {
            return null;
        }
    }

    public static void stateSet(Object streams, Object before) {
        Instance instance = INSTANCES.get(streams);
        if (instance != null) {
            written(instance, before, state(streams));
        }
    }

    /** A transition, written once: setState's exit, or close()'s, whichever comes first. KafkaStreams.setState calls
     * the state listeners after it released the waiters, so close() may return (and a shutdown hook end the JVM)
     * before setState's exit ran: close()'s exit writes the last transition itself. */
    static void written(Instance instance, Object before, Object after) {
        Agent agent = Recorder.AGENT;
        if (agent == null || after == null || after == before) {
            return;
        }
        // under the lock, the line too: close()'s exit writes `stopped` only after a concurrent setState's line
        synchronized (instance) {
            if (after == instance.lastState) {
                return;
            }
            if (instance.lastState != null) {
                before = instance.lastState;
            }
            instance.lastState = after;
            try {
                StringBuilder b = agent.history.begin("streams_state");
                b.append(",\"from_state\":");
                Json.string(b, String.valueOf(before));
                b.append(",\"to_state\":");
                Json.string(b, String.valueOf(after));
                agent.history.line(b);
            } catch (Throwable t) {
                agent.failed("streams_state", t);
            }
        }
    }

    public static void closed(Object streams) {
        Instance instance = INSTANCES.get(streams);
        if (instance == null) {
            return;
        }
        instance.closed = true;
        written(instance, null, state(streams));
        writeTasks(streams, instance);
        Agent agent = Recorder.AGENT;
        if (agent == null || !agent.streamsStarted || agent.streamsStopped) {
            return;
        }
        agent.streamsStopped = true;
        try {
            agent.history.stopped("clean");
        } catch (Throwable t) {
            agent.failed("streams stopped", t);
        }
    }

    // ---- tasks ------------------------------------------------------------------------------------

    private static synchronized void startPoller() {
        if (poller != null) {
            return;
        }
        poller = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(TASKS_EVERY_MS);
                } catch (InterruptedException e) {
                    return;
                }
                Object[] all;
                synchronized (INSTANCES) {
                    all = INSTANCES.keySet().toArray();
                }
                for (Object streams : all) {
                    Instance instance = INSTANCES.get(streams);
                    if (instance != null && !instance.closed) {
                        writeTasks(streams, instance);
                    }
                }
            }
        }, "testbed-agent-streams-tasks");
        poller.setDaemon(true);
        poller.start();
    }

    /** The instance's tasks (active and standby, each with its input partitions), written when they changed. The
     * metadata trails the assignment: Streams updates it when a thread runs again, after restoration. */
    static synchronized void writeTasks(Object streams, Instance instance) {
        Agent agent = Recorder.AGENT;
        if (agent == null) {
            return;
        }
        try {
            Collection<?> threads = threads(streams);
            List<Object> active = new ArrayList<>(), standby = new ArrayList<>();
            for (Object thread : threads) {
                active.addAll((Collection<?>) call(thread, "activeTasks"));
                standby.addAll((Collection<?>) call(thread, "standbyTasks"));
            }
            String now = "\"active\":" + tasksJson(active) + ",\"standby\":" + tasksJson(standby);
            if (now.equals(instance.tasks)) {
                return;
            }
            instance.tasks = now;
            StringBuilder b = agent.history.begin("streams_tasks");
            b.append(',').append(now);
            agent.history.line(b);
        } catch (Throwable t) {
            agent.failed("streams_tasks", t);
        }
    }

    /** metadataForLocalThreads() from 3.0, localThreadsMetadata() before; none while the instance is not running
     * (2.8's throws then). */
    static Collection<?> threads(Object streams) throws Exception {
        for (String name : new String[] {"metadataForLocalThreads", "localThreadsMetadata"}) {
            Method m;
            try {
                m = streams.getClass().getMethod(name);
            } catch (NoSuchMethodException e) {
                continue;
            }
            try {
                return (Collection<?>) m.invoke(streams);
            } catch (java.lang.reflect.InvocationTargetException e) {
                if (e.getCause() instanceof IllegalStateException) {
                    return Collections.emptyList();
                }
                throw e;
            }
        }
        return Collections.emptyList();
    }

    static Object call(Object target, String method) throws Exception {
        Method m = target.getClass().getMethod(method);
        m.setAccessible(true); // an implementation class may be package-private
        return m.invoke(target);
    }

    static String tasksJson(List<Object> tasks) throws Exception {
        TreeMap<String, List<String>> sorted = new TreeMap<>();
        for (Object t : tasks) {
            List<String> parts = new ArrayList<>();
            for (Object tp : (Collection<?>) call(t, "topicPartitions")) {
                StringBuilder p = new StringBuilder("[");
                Json.string(p, Recorder.topicOf(tp));
                parts.add(p.append(',').append(Recorder.partitionOf(tp)).append(']').toString());
            }
            Collections.sort(parts);
            sorted.put(String.valueOf(call(t, "taskId")), parts);
        }
        StringBuilder b = new StringBuilder("[");
        for (Map.Entry<String, List<String>> e : sorted.entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append("{\"task\":");
            Json.string(b, e.getKey());
            b.append(",\"partitions\":[").append(String.join(",", e.getValue())).append("]}");
        }
        return b.append(']').toString();
    }

    // ---- restorations -----------------------------------------------------------------------------

    /** The restore listener the instance is given: ours, recording, around the program's (null: none). */
    public static Object restoreListener(Object streams, Object user) {
        Agent agent = Recorder.AGENT;
        if (agent == null) {
            return user;
        }
        if (user != null && Proxy.isProxyClass(user.getClass())
                && Proxy.getInvocationHandler(user) instanceof RestoreHandler) {
            return user;
        }
        try {
            Class<?> type = restoreListenerType(streams);
            return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, new RestoreHandler(agent, user));
        } catch (Throwable t) {
            agent.failed("restore listener", t);
            return user;
        }
    }

    // ---- processing -------------------------------------------------------------------------------

    /** The record a PartitionGroup last handed out on this thread (read by processReturned, before 3.2). */
    private static final ThreadLocal<Object> NEXT = new ThreadLocal<>();

    public static void next(Object record) {
        NEXT.set(record);
    }

    public static void processReturned(boolean processed) {
        Object record = NEXT.get();
        NEXT.remove();
        if (processed) {
            processed(record);
        }
    }

    /** A record a task processed (StreamTask.doProcess returned): written with its thread's main consumer's
     * processed runs, so before that consumer's next commit and before its partition is revoked. */
    public static void processed(Object record) {
        ConsumerState st = Recorder.POLLING.get(); // the stream thread's main consumer
        if (st == null || !st.streams || record == null || st.gone) {
            return;
        }
        try {
            RecordAccess a = RecordAccess.of(record.getClass());
            String topic = String.valueOf(a.topic.invoke(record));
            int partition = (Integer) a.partition.invoke(record);
            long offset = (Long) a.offset.invoke(record);
            long ts = Runs.NO_TS;
            Object headers = a.headers.invoke(record);
            Object h = headers == null ? null : a.lastHeader(headers).invoke(headers, "ts");
            byte[] v = h == null ? null : (byte[]) a.value(h).invoke(h);
            if (v != null && v.length == 8) {
                ts = ByteBuffer.wrap(v).getLong();
            } else {
                long recordTs = a.timestamp.getLong(record);
                if (recordTs >= 0) {
                    ts = recordTs;
                }
            }
            st.processedNow(topic, partition, offset, ts);
        } catch (Throwable t) {
            st.agent.failed("streams processed", t);
        }
    }

    /** StampedRecord's accessors, looked up once per class: a lookup per record would cost more than the record. */
    static final class RecordAccess {
        private static volatile RecordAccess last;
        final Class<?> type;
        final Method topic, partition, offset, headers;
        final java.lang.reflect.Field timestamp; // Stamped's public final field
        private volatile Method lastHeader, value;

        private RecordAccess(Class<?> c) throws Exception {
            type = c;
            topic = c.getMethod("topic");
            partition = c.getMethod("partition");
            offset = c.getMethod("offset");
            headers = c.getMethod("headers");
            timestamp = c.getField("timestamp");
        }

        static RecordAccess of(Class<?> c) throws Exception {
            RecordAccess a = last;
            if (a == null || a.type != c) {
                a = new RecordAccess(c);
                last = a;
            }
            return a;
        }

        Method lastHeader(Object headers) throws Exception {
            Method m = lastHeader;
            if (m == null) {
                m = headers.getClass().getMethod("lastHeader", String.class);
                m.setAccessible(true);
                lastHeader = m;
            }
            return m;
        }

        Method value(Object header) throws Exception {
            Method m = value;
            if (m == null) {
                m = header.getClass().getMethod("value");
                m.setAccessible(true);
                value = m;
            }
            return m;
        }
    }
}
