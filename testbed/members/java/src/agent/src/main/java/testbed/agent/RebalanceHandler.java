package testbed.agent;

import java.lang.ref.WeakReference;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/** The ConsumerRebalanceListener the consumer is given: it records `assigned` before the program's
 * onPartitionsAssigned runs, and `revoked` / `lost` after its onPartitionsRevoked / onPartitionsLost returned (so a
 * commit made there is written first, trigger revoke), the processed records of those partitions before either. A
 * java.lang.reflect.Proxy of the program's own ConsumerRebalanceListener interface, so it needs no Kafka class here. */
final class RebalanceHandler implements InvocationHandler {
    private final ConsumerState st;
    private final WeakReference<Object> consumer;
    private final Object user;

    RebalanceHandler(ConsumerState st, Object consumer, Object user) {
        this.st = st;
        this.consumer = new WeakReference<>(consumer);
        this.user = user;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        String name = method.getName();
        if (Proxies.isObjectMethod(method)) {
            return Proxies.objectMethod(proxy, method, args, "listener", user);
        }
        String kind = name.equals("onPartitionsAssigned") ? "assigned"
                : name.equals("onPartitionsRevoked") ? "revoked" : name.equals("onPartitionsLost") ? "lost" : null;
        if (kind == null || args == null || args.length != 1 || !(args[0] instanceof Collection)) {
            return callUser(method, args);
        }
        List<String> topics = new ArrayList<>();
        List<Integer> partitions = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        try {
            for (Object tp : (Collection<?>) args[0]) {
                String topic = Recorder.topicOf(tp);
                int partition = Recorder.partitionOf(tp);
                topics.add(topic);
                partitions.add(partition);
                keys.add(Runs.key(topic, partition));
            }
        } catch (Throwable t) {
            st.agent.failed("on_partitions_" + kind, t);
        }
        if (kind.equals("assigned")) {
            record(st, consumer.get(), kind, topics, partitions);
            return callUser(method, args);
        }
        return release(st, consumer.get(), kind, topics, partitions, keys, () -> callUser(method, args));
    }

    /** What the program's callback runs in: a revoke or a loss. */
    interface Callback {
        Object call() throws Throwable;
    }

    /** Partitions leave the consumer (revoked or lost): their processed records are written first, then the
     * program's callback runs (a commit made there is trigger revoke), then the ownership ends, whether or not the
     * callback raised. */
    static Object release(ConsumerState st, Object consumer, String kind, List<String> topics, List<Integer> partitions,
                          List<String> keys, Callback callback) throws Throwable {
        try {
            st.beforeRevoke(keys);
        } catch (Throwable t) {
            st.agent.failed("on_partitions_" + kind, t);
        }
        int[] inRevoke = Recorder.IN_REVOKE.get();
        inRevoke[0]++;
        try {
            return callback.call();
        } finally {
            inRevoke[0]--;
            record(st, consumer, kind, topics, partitions);
        }
    }

    /** An ownership event, with the member's generation (classic) or epoch and its id as the consumer tells them. */
    static void record(ConsumerState st, Object c, String kind, List<String> topics, List<Integer> partitions) {
        if (st.gone) {
            return;
        }
        try {
            sortTogether(topics, partitions);
            Integer generation = null;
            Integer epoch = null;
            String memberId = null;
            if (c != null) {
                try {
                    Object meta = c.getClass().getMethod("groupMetadata").invoke(c);
                    int gen = (Integer) meta.getClass().getMethod("generationId").invoke(meta);
                    memberId = String.valueOf(meta.getClass().getMethod("memberId").invoke(meta));
                    if (memberId.isEmpty()) {
                        memberId = null;
                    }
                    if (gen >= 0) {
                        if (st.epochs()) {
                            epoch = gen; // under KIP-848 and KIP-1071 the metadata's generation is the member epoch
                        } else {
                            generation = gen;
                        }
                    }
                } catch (Throwable ignored) {
                    // a consumer without group metadata at this point: the event goes without it
                }
            }
            st.agent.history.partitions(kind, topics, partitions, generation, epoch, memberId);
        } catch (Throwable t) {
            st.agent.failed("on_partitions_" + kind + " record", t);
        }
    }

    private static void sortTogether(List<String> topics, List<Integer> partitions) {
        Integer[] order = Offsets.order(topics, partitions);
        List<String> t = new ArrayList<>();
        List<Integer> p = new ArrayList<>();
        for (int i : order) {
            t.add(topics.get(i));
            p.add(partitions.get(i));
        }
        topics.clear();
        topics.addAll(t);
        partitions.clear();
        partitions.addAll(p);
    }

    private Object callUser(Method method, Object[] args) throws Throwable {
        return Recorder.callProgram(method, user, args);
    }
}
