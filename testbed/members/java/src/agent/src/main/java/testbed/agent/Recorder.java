package testbed.agent;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.WeakHashMap;
import java.util.regex.Pattern;

/** What the advice woven into KafkaConsumer calls. Its arguments are JDK types only (or the consumer as an Object):
 * this class lives on the system class path and never names a Kafka class, so it works whichever class loader the
 * program's kafka-clients comes from (a Spring Boot fat jar's, an application server's). */
public final class Recorder {
    static volatile Agent AGENT;
    /** The oldest kafka-clients the agent instruments: ConsumerGroupMetadata and onPartitionsLost (2.5). */
    public static final int[] SINCE = {2, 5};

    private static final Map<Object, ConsumerState> STATES = Collections.synchronizedMap(new WeakHashMap<>());
    /** Calls of the public API nested in another (an old KafkaConsumer's commitSync() calls commitSync(Duration)):
     * only the outermost records. Reset inside the program's callbacks, whose calls are the program's own. */
    static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);
    /** Inside a revoke or lost callback / inside close: the trigger of a commit made there. */
    static final ThreadLocal<int[]> IN_REVOKE = ThreadLocal.withInitial(() -> new int[1]);
    static final ThreadLocal<int[]> IN_CLOSE = ThreadLocal.withInitial(() -> new int[1]);
    /** The consumer whose public method this thread is in (outermost call), and whether inside a commit of the
     * program's: a commit the client's coordinator makes on its own meanwhile is an auto-commit of that consumer. */
    static final ThreadLocal<ConsumerState> CURRENT = new ThreadLocal<>();
    static final ThreadLocal<int[]> IN_PROGRAM_COMMIT = ThreadLocal.withInitial(() -> new int[1]);
    /** The consumer that polled last on this thread: a Kafka Streams thread's main consumer, whose records its tasks
     * process; the consumer whose offsets a transaction on this thread commits. */
    static final ThreadLocal<ConsumerState> POLLING = new ThreadLocal<>();
    /** Each recorded consumer-protocol consumer by its SubscriptionState, which its background thread's
     * CommitRequestManager shares: how an auto-commit made there finds its consumer. */
    private static final Map<Object, ConsumerState> SUBSCRIPTIONS = Collections.synchronizedMap(new WeakHashMap<>());
    /** The auto-commit a consumer-protocol consumer makes at close, until the commitSync it makes it with returned. */
    static final ThreadLocal<Object[]> CLOSING_AUTO_COMMIT = new ThreadLocal<>();

    private static final String[] SECRET_WORDS = {"password", "secret", "token", "jaas", "credential", "oauthbearer", ".pem"};
    private static final Map<String, String> ASSIGNORS = new HashMap<>();

    static {
        ASSIGNORS.put("org.apache.kafka.clients.consumer.RangeAssignor", "range");
        ASSIGNORS.put("org.apache.kafka.clients.consumer.RoundRobinAssignor", "roundrobin");
        ASSIGNORS.put("org.apache.kafka.clients.consumer.StickyAssignor", "sticky");
        ASSIGNORS.put("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "cooperative-sticky");
    }

    /** The classic protocol's Streams assignor: the consumer it is set on is a stream thread's main consumer. */
    static final String STREAMS_ASSIGNOR = "org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor";

    private Recorder() {}

    // ---- the nesting guard ------------------------------------------------------------------------

    /** Entering a public method of the consumer: its state when this is the outermost call and it records. */
    public static Object enter(Object consumer) {
        int[] depth = DEPTH.get();
        depth[0]++;
        if (depth[0] != 1 || AGENT == null) {
            return null;
        }
        ConsumerState st = STATES.get(consumer);
        if (st == null || st.gone) {
            return null;
        }
        CURRENT.set(st);
        return st;
    }

    public static void leave() {
        int[] depth = DEPTH.get();
        if (depth[0] > 0) {
            depth[0]--;
        }
        if (depth[0] == 0) {
            CURRENT.remove();
        }
    }

    /** Whether the consumer records at all (the redirecting advice asks). */
    public static boolean active(Object consumer) {
        ConsumerState st = AGENT == null ? null : STATES.get(consumer);
        return st != null && !st.gone;
    }

    // ---- construction -----------------------------------------------------------------------------

    /** Each constructor's exit, innermost first: the first that carries a ConsumerConfig (or a map) decides. */
    public static void constructed(Object consumer, Object[] args) {
        Agent agent = AGENT;
        if (agent == null || STATES.containsKey(consumer)) {
            return;
        }
        try {
            Map<String, Object> values = null;
            Map<String, Object> originals = null;
            for (Object a : args) {
                if (a != null && a.getClass().getName().equals("org.apache.kafka.clients.consumer.ConsumerConfig")) {
                    values = stringKeys((Map<?, ?>) a.getClass().getMethod("values").invoke(a));
                    originals = stringKeys((Map<?, ?>) a.getClass().getMethod("originals").invoke(a));
                    break;
                }
                if (a instanceof Map || a instanceof Properties) {
                    originals = stringKeys((Map<?, ?>) a);
                    values = originals;
                }
            }
            if (values == null) {
                return; // an outer constructor's exit will have them
            }
            Object group = values.get("group.id");
            if (group == null || group.toString().isEmpty()) {
                return; // no group member (assign() only: Kafka Streams' restore and global consumers): not recorded
            }
            String version = clientVersion(consumer);
            ConsumerState st = new ConsumerState(agent, values, originals, version);
            Object strategy = values.get("partition.assignment.strategy");
            st.streams = strategy != null && strategy.toString().contains(STREAMS_ASSIGNOR);
            STATES.put(consumer, st);
            agent.consumers.add(st);
            Object delegate = StreamsRecorder.field(consumer, "delegate"); // KafkaConsumer's implementation (3.7+)
            Object subscriptions = StreamsRecorder.field(delegate == null ? consumer : delegate, "subscriptions");
            if (subscriptions != null) {
                SUBSCRIPTIONS.put(subscriptions, st);
            }
            if (!supported(version)) {
                st.gone = true;
                agent.history.error("UNSUPPORTED_CLIENT", "testbed's Java agent instruments kafka-clients "
                        + SINCE[0] + "." + SINCE[1] + " and later (to 4.x); this program's KafkaConsumer is "
                        + version, true);
                Agent.say("kafka-clients " + version + " is not instrumented (" + SINCE[0] + "." + SINCE[1] + "+)");
            }
        } catch (Throwable t) {
            agent.failed("KafkaConsumer constructor", t);
        }
    }

    /** An AsyncKafkaConsumer's constructor: recorded when Kafka Streams builds it as a stream thread's main consumer on
     * the streams protocol (an argument is a present Optional of StreamsRebalanceData); as a KafkaConsumer's
     * implementation it is recorded through that KafkaConsumer. */
    public static void constructedForStreams(Object consumer, Object[] args) {
        Object data = null;
        for (Object a : args) {
            if (a instanceof Optional && ((Optional<?>) a).isPresent() && ((Optional<?>) a).get().getClass().getName()
                    .equals("org.apache.kafka.clients.consumer.internals.StreamsRebalanceData")) {
                data = ((Optional<?>) a).get();
            }
        }
        if (data == null) {
            return;
        }
        constructed(consumer, args);
        ConsumerState st = STATES.get(consumer);
        if (st != null) {
            st.streams = true;
            st.streamsData = data;
        }
    }

    static Map<String, Object> stringKeys(Map<?, ?> map) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            out.put(String.valueOf(e.getKey()), e.getValue());
        }
        return out;
    }

    /** kafka-clients' version, from the resource every release carries (AppInfoParser, which reads it, moved to an
     * internals package in 4.4). */
    static String clientVersion(Object consumer) {
        ClassLoader loader = consumer.getClass().getClassLoader();
        try (java.io.InputStream in = loader == null ? null : loader.getResourceAsStream("kafka/kafka-version.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                String version = p.getProperty("version");
                if (version != null && !version.isEmpty()) {
                    return version.trim();
                }
            }
        } catch (Throwable ignored) {
            // fall through
        }
        for (String parser : new String[] {"org.apache.kafka.common.utils.AppInfoParser",
                "org.apache.kafka.common.utils.internals.AppInfoParser"}) {
            try {
                return String.valueOf(Class.forName(parser, false, loader).getMethod("getVersion").invoke(null));
            } catch (Throwable ignored) {
                // the other one
            }
        }
        return "unknown";
    }

    static boolean supported(String version) {
        String[] parts = version.split("[.-]");
        try {
            int major = Integer.parseInt(parts[0]);
            int minor = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
            return major > SINCE[0] || (major == SINCE[0] && minor >= SINCE[1]);
        } catch (NumberFormatException e) {
            return true; // a build of its own ("unknown"): try
        }
    }

    // ---- subscribe --------------------------------------------------------------------------------

    /** The listener the consumer is given: ours, recording, around the program's (null: none). */
    public static Object listener(Object consumer, Object user, Class<?> listenerInterface) {
        ConsumerState st = AGENT == null ? null : STATES.get(consumer);
        if (st == null || st.gone) {
            return user;
        }
        if (user != null && Proxy.isProxyClass(user.getClass())
                && Proxy.getInvocationHandler(user) instanceof RebalanceHandler) {
            return user; // ours already (a subscribe redirected to another)
        }
        try {
            return Proxy.newProxyInstance(listenerInterface.getClassLoader(), new Class<?>[] {listenerInterface},
                    new RebalanceHandler(st, consumer, user));
        } catch (Throwable t) {
            st.agent.failed("rebalance listener", t);
            return user;
        }
    }

    /** The StreamsRebalanceListener a streams-protocol main consumer is given: ours, recording, around Streams' own. */
    public static Object streamsListener(Object consumer, Object user) {
        ConsumerState st = AGENT == null ? null : STATES.get(consumer);
        if (st == null || st.gone || st.streamsData == null || user == null) {
            return user;
        }
        if (Proxy.isProxyClass(user.getClass()) && Proxy.getInvocationHandler(user) instanceof StreamsRebalanceHandler) {
            return user;
        }
        try {
            Class<?> type = Class.forName("org.apache.kafka.clients.consumer.internals.StreamsRebalanceListener", false,
                    consumer.getClass().getClassLoader());
            return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
                    new StreamsRebalanceHandler(st, consumer, user));
        } catch (Throwable t) {
            st.agent.failed("streams rebalance listener", t);
            return user;
        }
    }

    /** After a subscribe returned: `started`, once per consumer. */
    public static void subscribed(Object consumer, Object topicsOrPattern) {
        ConsumerState st = AGENT == null ? null : STATES.get(consumer);
        if (st == null || st.gone || st.started) {
            return;
        }
        st.started = true;
        if (st.streams) {
            if (st.agent.streamsStarted) {
                return; // another stream thread of the instance: one member, one `started`
            }
            st.agent.streamsStarted = true;
        }
        try {
            List<String> topics = new ArrayList<>();
            if (topicsOrPattern instanceof Pattern) {
                String p = ((Pattern) topicsOrPattern).pattern();
                topics.add(p.startsWith("^") ? p : "^" + p); // a regex subscription, as testbed reads one
            } else if (topicsOrPattern instanceof Collection) {
                for (Object t : (Collection<?>) topicsOrPattern) {
                    topics.add(String.valueOf(t));
                }
            } else if (topicsOrPattern != null) { // a SubscriptionPattern (KIP-848's broker-side regex, 4.0+)
                String p = String.valueOf(topicsOrPattern.getClass().getMethod("pattern").invoke(topicsOrPattern));
                topics.add(p.startsWith("^") ? p : "^" + p);
            }
            st.agent.history.write(startedLine(st, topics));
        } catch (Throwable t) {
            st.agent.failed("started", t);
        }
    }

    static StringBuilder startedLine(ConsumerState st, List<String> topics) {
        Map<String, Object> v = st.values;
        String protocol = st.groupProtocol();
        boolean classic = protocol.equals("classic");
        boolean consumerProtocol = protocol.equals("consumer");
        List<String> assignors = new ArrayList<>();
        if (classic) {
            Object strategy = v.get("partition.assignment.strategy");
            if (strategy instanceof Collection) {
                for (Object a : (Collection<?>) strategy) {
                    String name = a instanceof Class ? ((Class<?>) a).getName() : String.valueOf(a).trim();
                    assignors.add(ASSIGNORS.getOrDefault(name, name));
                }
            } else if (strategy != null) {
                for (String a : strategy.toString().split(",")) {
                    if (!a.trim().isEmpty()) {
                        assignors.add(ASSIGNORS.getOrDefault(a.trim(), a.trim()));
                    }
                }
            }
        }
        Object autoCommit = v.get("enable.auto.commit");
        boolean auto = autoCommit == null || Boolean.parseBoolean(autoCommit.toString());
        StringBuilder b = st.agent.history.begin("started");
        b.append(",\"client\":\"java\",\"client_version\":");
        Json.string(b, st.clientVersion);
        b.append(",\"group_id\":");
        Json.string(b, v.get("group.id") == null ? "" : v.get("group.id").toString());
        b.append(",\"topics\":");
        Json.value(b, topics);
        b.append(",\"assignors\":");
        Json.value(b, assignors);
        b.append(",\"group_protocol\":\"").append(protocol).append('"');
        b.append(",\"streams\":");
        Json.value(b, st.streams ? StreamsRecorder.startedBlock() : null);
        b.append(",\"remote_assignor\":");
        Json.value(b, consumerProtocol ? v.get("group.remote.assignor") : null);
        b.append(",\"rebalance_protocol\":");
        // Streams' own assignor is cooperative from 2.4 on (the versions the agent instruments); the streams protocol
        // reconciles per member on the broker's epochs, as the consumer protocol does
        Json.value(b, !classic ? "consumer" : st.streams ? "cooperative" : rebalanceProtocol(assignors));
        b.append(",\"group_instance_id\":");
        Json.value(b, v.get("group.instance.id"));
        b.append(",\"commit_mode\":\"").append(auto ? "auto" : "manual").append('"');
        b.append(",\"pid\":").append(ProcessHandle.current().pid());
        b.append(",\"spec\":");
        Json.value(b, st.agent.config.spec);
        b.append(",\"session_timeout_ms\":");
        Json.value(b, classic ? v.get("session.timeout.ms") : null);
        b.append(",\"max_poll_interval_ms\":");
        Json.value(b, v.get("max.poll.interval.ms"));
        b.append(",\"heartbeat_interval_ms\":");
        Json.value(b, classic ? v.get("heartbeat.interval.ms") : null);
        b.append(",\"settings\":");
        Json.value(b, settings(st.originals));
        b.append(",\"handler\":null,\"command\":");
        b.append(st.agent.config.commandJson == null ? "null" : st.agent.config.commandJson);
        b.append(",\"reports_lost\":true,\"instrumented\":true,\"listener_thread\":\"poll\",\"agent\":\"java\"}\n");
        return b;
    }

    /** The highest protocol every listed assignor supports: cooperative only when all are cooperative-sticky; null
     * when a custom class is listed (its protocols are its own). */
    static String rebalanceProtocol(List<String> assignors) {
        if (assignors.isEmpty()) {
            return null;
        }
        boolean allCooperative = true;
        for (String a : assignors) {
            if (!ASSIGNORS.containsValue(a)) {
                return null;
            }
            allCooperative &= a.equals("cooperative-sticky");
        }
        return allCooperative ? "cooperative" : "eager";
    }

    /** The program's settings for the history: no callbacks' objects as such, no secrets. */
    static Map<String, Object> settings(Map<String, Object> originals) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : originals.entrySet()) {
            String key = e.getKey();
            Object value = e.getValue();
            String lowered = key.toLowerCase();
            boolean secret = false;
            for (String w : SECRET_WORDS) {
                secret |= lowered.contains(w);
            }
            if (secret && value != null) {
                out.put(key, "***");
            } else if (value == null || value instanceof String || value instanceof Number || value instanceof Boolean
                    || value instanceof Class || value instanceof Collection) {
                out.put(key, value);
            } else {
                out.put(key, value.getClass().getName()); // an object given as a setting: named by its class
            }
        }
        return out;
    }

    // ---- poll -------------------------------------------------------------------------------------

    public static void beforePoll(Object state) {
        ConsumerState st = (ConsumerState) state;
        POLLING.set(st);
        try {
            st.settle();
        } catch (Throwable t) {
            st.agent.failed("poll", t);
        }
    }

    public static void pollFailed(Object state, Throwable thrown) {
        ConsumerState st = (ConsumerState) state;
        String name = thrown.getClass().getSimpleName();
        if (name.equals("WakeupException") || name.equals("InterruptException")) {
            return; // how a program (or Spring's container) stops its loop: no error of the client's
        }
        try {
            st.agent.history.error(errorCode(thrown), String.valueOf(thrown.getMessage()), !retriable(thrown));
        } catch (Throwable t) {
            st.agent.failed("error record", t);
        }
    }

    static boolean retriable(Throwable t) {
        for (Class<?> c = t.getClass(); c != null; c = c.getSuperclass()) {
            if (c.getName().equals("org.apache.kafka.common.errors.RetriableException")) {
                return true;
            }
        }
        return false;
    }

    /** An exception's Kafka error name where it maps to one (REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID), else its
     * class's simple name (CommitFailedException). */
    static String errorCode(Throwable t) {
        try {
            Class<?> errors = Class.forName("org.apache.kafka.common.protocol.Errors", false,
                    t.getClass().getClassLoader());
            Object e = errors.getMethod("forException", Throwable.class).invoke(null, t);
            String name = String.valueOf(errors.getMethod("name").invoke(e));
            if (!name.equals("UNKNOWN_SERVER_ERROR") && !name.equals("NONE")) {
                return name;
            }
        } catch (Throwable ignored) {
            // fall through
        }
        return t.getClass().getSimpleName();
    }

    // ---- commits ----------------------------------------------------------------------------------

    /** A commit of the program's begins: its trigger, after its processed records are written. */
    public static String beforeCommit(Object state) {
        ConsumerState st = (ConsumerState) state;
        try {
            st.beforeCommit();
        } catch (Throwable t) {
            st.agent.failed("commit", t);
        }
        IN_PROGRAM_COMMIT.get()[0]++;
        return trigger();
    }

    /** A commit of the program's returned: {@code entered} is what its enter advice kept ({state, trigger, offsets};
     * null: not recorded). A synchronous commit ({@code answered}) is recorded now with its outcome; an asynchronous
     * one when its answer comes, unless it was refused at once (no answer will come). */
    public static void commitReturned(Object[] entered, Throwable thrown, boolean answered) {
        if (entered == null) {
            return;
        }
        int[] inCommit = IN_PROGRAM_COMMIT.get();
        if (inCommit[0] > 0) {
            inCommit[0]--;
        }
        if (answered || thrown != null) {
            committed(entered[0], (String) entered[1], (Offsets) entered[2], thrown);
        }
    }

    // ---- auto-commits: the classic coordinator's own commits -----------------------------------------

    /** The consumer an auto-commit starting now is made for: the one this thread is in, unless it is in a commit of
     * the program's (whose commits go through the same coordinator methods). Auto-commits of the classic protocol run
     * on the program's thread: at a poll, before a rebalance, at close. */
    public static Object autoCommit() {
        ConsumerState st = CURRENT.get();
        return st == null || st.gone || IN_PROGRAM_COMMIT.get()[0] > 0 ? null : st;
    }

    /** A synchronous auto-commit (before a rebalance, at close) returned: {@code done} false is its timeout. */
    public static void autoCommitted(Object state, Offsets offsets, boolean done, Throwable thrown) {
        ConsumerState st = (ConsumerState) state;
        try {
            st.beforeAnswer();
        } catch (Throwable t) {
            st.agent.failed("auto-commit", t);
        }
        if (thrown == null && !done) {
            committed(st, "auto", offsets, new java.util.concurrent.TimeoutException("auto-commit not answered in time"));
        } else {
            committed(st, "auto", offsets, thrown);
        }
    }

    /** CommitRequestManager.requestAutoCommit(request) returned the future of its answer: an auto-commit of the
     * consumer protocol (KIP-848), made on the client's background thread (at the interval, when a poll comes, and
     * before a revocation, retried with the offsets then consumed), recorded with its outcome when the answer comes.
     * Its consumer is the one whose SubscriptionState the manager shares. */
    public static void autoCommitRequested(Object subscriptions, Object request, Object future) {
        ConsumerState st = subscriptions == null ? null : SUBSCRIPTIONS.get(subscriptions);
        if (st == null || st.gone || !(future instanceof java.util.concurrent.CompletableFuture)) {
            return;
        }
        try {
            Offsets sent = offsets(null, StreamsRecorder.field(request, "offsets"));
            if (sent.size() == 0) {
                return; // nothing consumed: no request is sent
            }
            ((java.util.concurrent.CompletableFuture<?>) future).whenComplete((answer, thrown) -> {
                try {
                    st.beforeAnswer();
                } catch (Throwable t) {
                    st.agent.failed("auto-commit", t);
                }
                committed(st, "auto", sent, thrown);
            });
        } catch (Throwable t) {
            st.agent.failed("auto-commit", t);
        }
    }

    /** AsyncKafkaConsumer.commitSyncAllConsumed: the consumer protocol's auto-commit at close, made through the
     * consumer's commitSync; its offsets are what the consumer consumed (SubscriptionState.allConsumed()). */
    public static void autoCommitOnClose(Object subscriptions) {
        ConsumerState st = subscriptions == null ? null : SUBSCRIPTIONS.get(subscriptions);
        if (st == null || st.gone) {
            return;
        }
        try {
            st.beforeCommit();
            CLOSING_AUTO_COMMIT.set(new Object[] {st, offsets(null, StreamsRecorder.call(subscriptions, "allConsumed"))});
        } catch (Throwable t) {
            st.agent.failed("auto-commit at close", t);
        }
    }

    /** The commitSync of the auto-commit at close returned (it swallows the commit's exception: seen here). */
    public static void autoCommitOnCloseReturned(Throwable thrown) {
        Object[] pending = CLOSING_AUTO_COMMIT.get();
        if (pending == null) {
            return;
        }
        CLOSING_AUTO_COMMIT.remove();
        committed(pending[0], "auto", (Offsets) pending[1], thrown);
    }

    /** commitSyncAllConsumed returned: an auto-commit at close whose commitSync never ran is not recorded. */
    public static void autoCommitOnCloseEnded() {
        CLOSING_AUTO_COMMIT.remove();
    }

    static String trigger() {
        if (IN_REVOKE.get()[0] > 0) {
            return "revoke";
        }
        if (IN_CLOSE.get()[0] > 0) {
            return "close";
        }
        return "batch";
    }

    public static void committed(Object state, String trigger, Offsets offsets, Throwable thrown) {
        ConsumerState st = (ConsumerState) state;
        if (offsets == null || offsets.size() == 0) {
            return;
        }
        try {
            st.agent.history.committed(offsets.sorted(), trigger, thrown == null ? null : errorCode(thrown));
        } catch (Throwable t) {
            st.agent.failed("commit record", t);
        }
    }

    /** commitAsync's callback: ours, recording the answer, then the program's (null: none). */
    public static Object commitCallback(Object state, String trigger, Offsets sent, Object user, Class<?> callbackInterface) {
        ConsumerState st = (ConsumerState) state;
        try {
            return Proxy.newProxyInstance(callbackInterface.getClassLoader(), new Class<?>[] {callbackInterface},
                    new CommitHandler(st, trigger, sent, user));
        } catch (Throwable t) {
            st.agent.failed("commit callback", t);
            return user;
        }
    }

    /** The offsets a commit sends: the map it was given ({TopicPartition: OffsetAndMetadata}), else (null) the
     * consumer's positions on its assigned partitions, which is what KafkaConsumer commits when given none. */
    public static Offsets offsets(Object consumer, Object given) {
        Offsets out = new Offsets();
        try {
            if (given instanceof Map) {
                for (Map.Entry<?, ?> e : ((Map<?, ?>) given).entrySet()) {
                    Object om = e.getValue();
                    out.add(topicOf(e.getKey()), partitionOf(e.getKey()), (Long) om.getClass().getMethod("offset").invoke(om));
                }
                return out;
            }
            Collection<?> assigned = (Collection<?>) consumer.getClass().getMethod("assignment").invoke(consumer);
            java.lang.reflect.Method position = null;
            for (Object tp : assigned) {
                if (position == null) {
                    position = consumer.getClass().getMethod("position", tp.getClass(), java.time.Duration.class);
                }
                try {
                    out.add(topicOf(tp), partitionOf(tp), (Long) position.invoke(consumer, tp, java.time.Duration.ZERO));
                } catch (java.lang.reflect.InvocationTargetException noPosition) {
                    // no valid position yet: KafkaConsumer does not commit that partition either
                }
            }
        } catch (Throwable t) {
            if (AGENT != null) {
                AGENT.failed("commit offsets", t);
            }
        }
        return out;
    }

    /** Records the poll returned, for the at-least-once rule: offsets {@code first} to {@code last} of one partition,
     * every offset between them once; the produce times of the first and the last (Long.MIN_VALUE: unknown). */
    public static void handed(Object state, String topic, int partition, long first, long last, long firstTs,
                              long lastTs) {
        ((ConsumerState) state).handed(topic, partition, first, last, firstTs, lastTs);
    }

    // ---- close ------------------------------------------------------------------------------------

    public static void beforeClose(Object state) {
        ConsumerState st = (ConsumerState) state;
        IN_CLOSE.get()[0]++;
        try {
            st.beforeCommit();
        } catch (Throwable t) {
            st.agent.failed("close", t);
        }
    }

    public static void closed(Object state, Throwable thrown) {
        ConsumerState st = (ConsumerState) state;
        IN_CLOSE.get()[0]--;
        boolean first = !st.closed;
        st.closed = true;
        try {
            if (first && st.started && !st.streams) { // a Streams instance stops when KafkaStreams.close() returns
                if (thrown != null) {
                    st.agent.history.error(errorCode(thrown), "close failed: " + thrown.getMessage(), false);
                }
                st.agent.history.stopped("clean");
            }
        } catch (Throwable t) {
            st.agent.failed("close record", t);
        }
    }

    // ---- reflection on Kafka's small types, for the handlers ----------------------------------------

    /** A callback of the program's (null: none), called as a call of the program's: the consumer calls it makes are
     * recorded, whatever call of the consumer's is calling it back. */
    static Object callProgram(java.lang.reflect.Method method, Object user, Object[] args) throws Throwable {
        if (user == null) {
            return null;
        }
        int[] depth = DEPTH.get();
        int saved = depth[0];
        ConsumerState current = CURRENT.get();
        depth[0] = 0;
        try {
            return method.invoke(user, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        } finally {
            depth[0] = saved;
            if (current != null) {
                CURRENT.set(current);
            }
        }
    }

    /** A TopicPartition's topic and partition. */
    static String topicOf(Object tp) throws Exception {
        return String.valueOf(tp.getClass().getMethod("topic").invoke(tp));
    }

    static int partitionOf(Object tp) throws Exception {
        return (Integer) tp.getClass().getMethod("partition").invoke(tp);
    }
}
