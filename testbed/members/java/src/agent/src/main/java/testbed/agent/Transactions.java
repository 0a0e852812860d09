package testbed.agent;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;

/** Offsets committed through a producer's transaction (KafkaProducer.sendOffsetsToTransaction, then
 * commitTransaction): the exactly-once way to commit, which never goes through the consumer. They are `committed` when
 * the transaction's commit returned, with its outcome, and the records processed so far are written before them, as
 * for a commit of the consumer's; an aborted transaction moved no offset and writes nothing.
 *
 * The consumer they belong to is the one that polled last on the thread sending them (a consume-transform-produce
 * loop, a Kafka Streams thread and its main consumer), else the JVM's only recording consumer; with neither (a
 * producer thread of its own beside several consumers) they are not recorded. */
public final class Transactions {
    private static final Map<Object, List<Sent>> PENDING = Collections.synchronizedMap(new WeakHashMap<>());
    /** Nested calls of the producer's API (2.x-3.x's sendOffsetsToTransaction(offsets, groupId) calls the other one):
     * only the outermost records. */
    private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);

    private Transactions() {}

    private static final class Sent {
        final ConsumerState st;
        final Offsets offsets;

        Sent(ConsumerState st, Offsets offsets) {
            this.st = st;
            this.offsets = offsets;
        }
    }

    /** Entering a recorded producer method: whether this call is the outermost one and the agent records. */
    public static boolean enter() {
        return ++DEPTH.get()[0] == 1 && Recorder.AGENT != null;
    }

    public static void leave() {
        int[] depth = DEPTH.get();
        if (depth[0] > 0) {
            depth[0]--;
        }
    }

    /** sendOffsetsToTransaction returned: what the program processed is written, the offsets wait for the commit. */
    public static void offsetsSent(Object producer, Object offsets) {
        ConsumerState st = owner();
        if (st == null) {
            return;
        }
        try {
            st.beforeCommit();
        } catch (Throwable t) {
            st.agent.failed("transaction offsets", t);
        }
        Offsets sent = Recorder.offsets(null, offsets);
        synchronized (PENDING) {
            PENDING.computeIfAbsent(producer, k -> new ArrayList<>()).add(new Sent(st, sent));
        }
    }

    /** commitTransaction begins: the trigger of its offsets (null: a nested call, or nothing records). */
    public static String committing() {
        return enter() ? Recorder.trigger() : null;
    }

    /** commitTransaction returned: its offsets are committed (or failed, with its error). A timeout leaves the
     * transaction open for the program to retry the commit, so its offsets stay pending. */
    public static void commitReturned(Object producer, String trigger, Throwable thrown) {
        List<Sent> sent;
        boolean open = thrown != null && thrown.getClass().getSimpleName().equals("TimeoutException");
        synchronized (PENDING) {
            sent = open ? PENDING.get(producer) : PENDING.remove(producer);
            sent = sent == null ? null : new ArrayList<>(sent); // kept for a retry: another call may add to it
        }
        if (sent == null) {
            return;
        }
        for (Sent s : sent) {
            try {
                s.st.beforeAnswer();
            } catch (Throwable t) {
                s.st.agent.failed("transaction commit", t);
            }
            Recorder.committed(s.st, trigger, s.offsets, thrown);
        }
    }

    public static void aborted(Object producer) {
        PENDING.remove(producer);
    }

    /** The consumer whose offsets these are: the last to poll on this thread, else the only one recording. */
    static ConsumerState owner() {
        ConsumerState st = Recorder.POLLING.get();
        if (st != null && !st.gone && !st.closed) {
            return st;
        }
        Agent agent = Recorder.AGENT;
        ConsumerState only = null;
        for (ConsumerState c : agent == null ? List.<ConsumerState>of() : agent.consumers) {
            if (c.started && !c.gone && !c.closed) {
                if (only != null) {
                    return null;
                }
                only = c;
            }
        }
        return only;
    }
}
