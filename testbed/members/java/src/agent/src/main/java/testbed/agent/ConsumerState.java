package testbed.agent;

import java.io.IOException;
import java.util.List;
import java.util.Map;

/** What the agent keeps on one KafkaConsumer: its settings, whether its `started` is written, the records its last
 * poll handed over (processed at the program's next poll, commit or close: the at-least-once rule of
 * testbed.instrument.tracker) and its open processed runs. */
final class ConsumerState {
    final Agent agent;
    final Map<String, Object> values; // the settings in force (ConsumerConfig.values(): defaults filled in)
    final Map<String, Object> originals; // what the program configured
    final String clientVersion;
    volatile boolean started;
    volatile boolean closed;
    volatile boolean gone; // the version is not one the agent instruments: nothing is recorded
    // A Kafka Streams main consumer (its assignor is StreamsPartitionAssignor): what its poll returns waits in the
    // tasks' queues; a record is processed when a task processed it (StreamsRecorder.processed), not at the next poll.
    volatile boolean streams;
    // The streams protocol's main consumer (KIP-1071: an AsyncKafkaConsumer Streams builds itself): its
    // StreamsRebalanceData, which names each sub-topology's input topics, and the input partitions of the active tasks
    // it holds (topic and partition by Runs.key), kept across the re-subscribe after a fenced instance rejoins.
    volatile Object streamsData;
    final Map<String, Object[]> ownedByTasks = new java.util.TreeMap<>();

    private final Runs runs;
    // The last poll's records, not yet processed: ranges of offsets per partition, filled on the polling thread.
    private String[] pTopic = new String[16];
    private int[] pPartition = new int[16];
    private long[] pFirst = new long[16];
    private long[] pLast = new long[16];
    private long[] pFirstTs = new long[16];
    private long[] pLastTs = new long[16];
    private int pending;

    ConsumerState(Agent agent, Map<String, Object> values, Map<String, Object> originals, String clientVersion) {
        this.agent = agent;
        this.values = values;
        this.originals = originals;
        this.clientVersion = clientVersion;
        this.runs = new Runs(agent.history);
    }

    /** classic, consumer (KIP-848) or streams (KIP-1071, a Streams main consumer built by Streams). */
    String groupProtocol() {
        if (streamsData != null) {
            return "streams";
        }
        Object p = values.get("group.protocol");
        return p != null && p.toString().equalsIgnoreCase("consumer") ? "consumer" : "classic";
    }

    /** Whether the group counts member epochs, not generations (the consumer and the streams protocol). */
    boolean epochs() {
        return !groupProtocol().equals("classic");
    }

    // ---- records handed to the program (the poll advice, on the polling thread) ------------------

    /** Records a poll returns: offsets first..last of one partition (every one between once), the produce times of
     * the first and the last (Runs.NO_TS: unknown). */
    void handed(String topic, int partition, long first, long last, long firstTs, long lastTs) {
        if (streams) {
            return;
        }
        if (pending == pFirst.length) {
            int n = pending * 2;
            pTopic = java.util.Arrays.copyOf(pTopic, n);
            pPartition = java.util.Arrays.copyOf(pPartition, n);
            pFirst = java.util.Arrays.copyOf(pFirst, n);
            pLast = java.util.Arrays.copyOf(pLast, n);
            pFirstTs = java.util.Arrays.copyOf(pFirstTs, n);
            pLastTs = java.util.Arrays.copyOf(pLastTs, n);
        }
        pTopic[pending] = topic;
        pPartition[pending] = partition;
        pFirst[pending] = first;
        pLast[pending] = last;
        pFirstTs[pending] = firstTs;
        pLastTs[pending] = lastTs;
        pending++;
    }

    /** Called with the lock held: what was handed over is processed now. */
    private void settleLocked(long nowNs) throws IOException {
        int n = pending;
        pending = 0;
        for (int i = 0; i < n; i++) {
            runs.add(pTopic[i], pPartition[i], pFirst[i], pLast[i], pFirstTs[i], pLastTs[i], nowNs);
            pTopic[i] = null;
        }
        if (runs.dueNs != Runs.NEVER) {
            Flusher.FLUSHER.due(this, runs.dueNs);
        }
    }

    /** A Streams task processed this record (on the stream thread, between its main consumer's polls). */
    synchronized void processedNow(String topic, int partition, long offset, long ts) throws IOException {
        runs.add(topic, partition, offset, offset, ts, ts, System.nanoTime());
        if (runs.dueNs != Runs.NEVER) {
            Flusher.FLUSHER.due(this, runs.dueNs);
        }
    }

    /** The program polls again: what it was handed is processed. */
    synchronized void settle() throws IOException {
        long now = System.nanoTime();
        settleLocked(now);
        runs.flushDue(now);
    }

    /** A commit (or close) of the program's: its records so far are processed, and written before it. */
    synchronized void beforeCommit() throws IOException {
        settleLocked(System.nanoTime());
        runs.flush();
    }

    /** A commit's answer is about to be written: the runs already processed go first. */
    synchronized void beforeAnswer() throws IOException {
        runs.flush();
    }

    /** Partitions revoked or lost: their processed records are written before that is. */
    synchronized void beforeRevoke(List<String> keys) throws IOException {
        settleLocked(System.nanoTime());
        runs.flush(keys);
    }

    /** The flusher's call. */
    synchronized void flushDue() {
        try {
            runs.flushDue(System.nanoTime());
            if (runs.dueNs != Runs.NEVER) {
                Flusher.FLUSHER.due(this, runs.dueNs);
            }
        } catch (Throwable t) {
            agent.failed("flush", t);
        }
    }

    /** The JVM shuts down: write what was processed. */
    synchronized void atExit() {
        try {
            runs.flush();
        } catch (Throwable t) {
            agent.failed("exit flush", t);
        }
    }
}
