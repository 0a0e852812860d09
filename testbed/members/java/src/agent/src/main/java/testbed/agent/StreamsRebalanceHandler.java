package testbed.agent;

import java.lang.ref.WeakReference;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The StreamsRebalanceListener a Kafka Streams main consumer on the streams protocol (KIP-1071) is given: Streams'
 * own, which moves tasks, inside ours, which records what that means for the consumer's partitions, as
 * RebalanceHandler does for a ConsumerRebalanceListener. The group hands out tasks; a task's partitions are its
 * sub-topology's input topics (source and repartition topics) at the task's partition, as the client's
 * StreamsMembershipManager maps them. onTasksAssigned gets the whole new set of active tasks: what it adds to the
 * consumer is written as `assigned` before Streams runs; onTasksRevoked names the active tasks that leave:
 * `revoked` after Streams closed (and committed) them; onAllTasksLost: every partition held, `lost` after.
 * Standby and warm-up tasks own no partition of the group's. */
final class StreamsRebalanceHandler implements InvocationHandler {
    private final ConsumerState st;
    private final WeakReference<Object> consumer;
    private final Object user;

    StreamsRebalanceHandler(ConsumerState st, Object consumer, Object user) {
        this.st = st;
        this.consumer = new WeakReference<>(consumer);
        this.user = user;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        if (Proxies.isObjectMethod(method)) {
            return Proxies.objectMethod(proxy, method, args, "streams listener", user);
        }
        String name = method.getName();
        Map<String, Object[]> moving = new TreeMap<>();
        String kind;
        try {
            synchronized (st.ownedByTasks) {
                if (name.equals("onTasksAssigned") && args != null && args.length == 1) {
                    kind = "assigned";
                    Map<String, Object[]> now = partitions(StreamsRecorder.call(args[0], "activeTasks"));
                    moving.putAll(now);
                    moving.keySet().removeAll(st.ownedByTasks.keySet());
                    // the membership manager revokes what leaves (onTasksRevoked) before it assigns: what is owned
                    // is a subset of the new set, which replaces it
                    st.ownedByTasks.clear();
                    st.ownedByTasks.putAll(now);
                } else if (name.equals("onTasksRevoked") && args != null && args.length == 1) {
                    kind = "revoked";
                    moving.putAll(partitions(args[0]));
                } else if (name.equals("onAllTasksLost")) {
                    kind = "lost";
                    moving.putAll(st.ownedByTasks);
                } else {
                    return callUser(method, args);
                }
            }
        } catch (Throwable t) {
            st.agent.failed("streams rebalance listener " + name, t);
            return callUser(method, args);
        }
        if (kind.equals("assigned")) {
            if (!moving.isEmpty()) {
                RebalanceHandler.record(st, consumer.get(), kind, topics(moving), numbers(moving));
            }
            return callUser(method, args);
        }
        synchronized (st.ownedByTasks) {
            st.ownedByTasks.keySet().removeAll(moving.keySet());
        }
        if (moving.isEmpty()) {
            return callUser(method, args);
        }
        return RebalanceHandler.release(st, consumer.get(), kind, topics(moving), numbers(moving),
                new ArrayList<>(moving.keySet()), () -> callUser(method, args));
    }

    /** The input partitions of a set of task ids (StreamsRebalanceData.TaskId: subtopologyId, partitionId), by
     * Runs.key. */
    private Map<String, Object[]> partitions(Object taskIds) throws Exception {
        Map<String, Object[]> out = new TreeMap<>();
        Map<?, ?> subtopologies = (Map<?, ?>) StreamsRecorder.call(st.streamsData, "subtopologies");
        for (Object task : (Collection<?>) taskIds) {
            Object subtopology = subtopologies.get(StreamsRecorder.call(task, "subtopologyId"));
            if (subtopology == null) {
                continue;
            }
            int partition = (Integer) StreamsRecorder.call(task, "partitionId");
            List<Object> topics = new ArrayList<>((Collection<?>) StreamsRecorder.call(subtopology, "sourceTopics"));
            topics.addAll(((Map<?, ?>) StreamsRecorder.call(subtopology, "repartitionSourceTopics")).keySet());
            for (Object topic : topics) {
                out.put(Runs.key(String.valueOf(topic), partition), new Object[] {String.valueOf(topic), partition});
            }
        }
        return out;
    }

    private static List<String> topics(Map<String, Object[]> partitions) {
        List<String> out = new ArrayList<>();
        for (Object[] tp : partitions.values()) {
            out.add((String) tp[0]);
        }
        return out;
    }

    private static List<Integer> numbers(Map<String, Object[]> partitions) {
        List<Integer> out = new ArrayList<>();
        for (Object[] tp : partitions.values()) {
            out.add((Integer) tp[1]);
        }
        return out;
    }

    private Object callUser(Method method, Object[] args) throws Throwable {
        return Recorder.callProgram(method, user, args);
    }
}
