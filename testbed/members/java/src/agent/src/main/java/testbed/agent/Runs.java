package testbed.agent;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Processed records coalesced into runs, one `processed` event per partition per contiguous run, as
 * testbed.instrument.runs does for Python programs: a run is written when the next record of its partition does not
 * follow it, when the consumer flushes (a commit, a revoke or loss of the partition, close, exit), and at most
 * WINDOW_NS after the first record of the oldest open run (the flusher thread). Not thread-safe: the consumer's
 * state holds its lock around every call. */
final class Runs {
    static final long WINDOW_NS = 20_000_000L;
    static final long NEVER = Long.MAX_VALUE;
    static final long NO_TS = Long.MIN_VALUE;

    static final class Run {
        final String topic;
        final int partition;
        long first;
        long last;
        long count;
        long tsMin = Long.MAX_VALUE;
        long tsMax = Long.MIN_VALUE;
        long lastNs;

        Run(String topic, int partition, long offset, long ts, long nowNs) {
            this.topic = topic;
            this.partition = partition;
            this.first = offset;
            this.last = offset;
            this.count = 1;
            this.lastNs = nowNs;
            stamp(ts);
        }

        void stamp(long ts) {
            if (ts != NO_TS) {
                if (ts < tsMin) {
                    tsMin = ts;
                }
                if (ts > tsMax) {
                    tsMax = ts;
                }
            }
        }
    }

    private final History history;
    private final Map<String, Run> open = new HashMap<>();
    private Run current;
    long dueNs = NEVER;

    Runs(History history) {
        this.history = history;
    }

    static String key(String topic, int partition) {
        return topic + "\u0000" + partition;
    }

    /** The processed records first..last of one partition, every offset between them once, whose first and last
     * were produced at firstTs and lastTs: the run's produce times are taken from those two (a partition's records are
     * produced in about their offsets' order), as testbed.instrument.runs.ProcessedRuns.add_range does. */
    void add(String topic, int partition, long first, long last, long firstTs, long lastTs, long nowNs)
            throws IOException {
        Run run = current;
        if (run == null || run.partition != partition || !run.topic.equals(topic)) {
            run = open.get(key(topic, partition));
        }
        if (run != null && run.last + 1 != first) {
            open.remove(key(topic, partition));
            List<Run> one = new ArrayList<>(1);
            one.add(run);
            emit(one); // not contiguous: a seek, a redelivery, a gap the program left
            run = null;
        }
        if (run == null) {
            run = new Run(topic, partition, first, firstTs, nowNs);
            run.count = 0;
            open.put(key(topic, partition), run);
            if (dueNs == NEVER) {
                dueNs = nowNs + WINDOW_NS;
            }
        } else {
            run.stamp(firstTs);
        }
        current = run;
        run.last = last;
        run.count += last - first + 1;
        run.lastNs = nowNs;
        run.stamp(lastTs);
    }

    boolean isEmpty() {
        return open.isEmpty();
    }

    void flushDue(long nowNs) throws IOException {
        if (nowNs >= dueNs) {
            flush();
        }
    }

    void flush() throws IOException {
        List<Run> runs = new ArrayList<>(open.values());
        open.clear();
        current = null;
        dueNs = NEVER;
        emit(runs);
    }

    /** The runs of these partitions (keys of {@link #key}). */
    void flush(List<String> keys) throws IOException {
        List<Run> runs = new ArrayList<>();
        for (String k : keys) {
            Run r = open.remove(k);
            if (r != null) {
                runs.add(r);
                if (r == current) {
                    current = null;
                }
            }
        }
        if (open.isEmpty()) {
            dueNs = NEVER;
        }
        emit(runs);
    }

    private void emit(List<Run> runs) throws IOException {
        if (runs.isEmpty()) {
            return;
        }
        runs.sort((a, b) -> Long.compare(a.lastNs, b.lastNs));
        long nowWall = History.wallMs();
        long nowNs = System.nanoTime();
        StringBuilder lines = new StringBuilder(200 * runs.size());
        for (Run r : runs) {
            // ts_ms: when its last record became processed, on the wall clock, from its monotonic stamp
            StringBuilder b = history.begin("processed", nowWall - (nowNs - r.lastNs) / 1_000_000L, r.lastNs / 1_000_000L);
            b.append(",\"topic\":");
            Json.string(b, r.topic);
            b.append(",\"partition\":").append(r.partition).append(",\"first_offset\":").append(r.first)
                    .append(",\"last_offset\":").append(r.last).append(",\"count\":").append(r.count)
                    .append(",\"produce_ts_min_ms\":").append(r.tsMin == Long.MAX_VALUE ? "null" : String.valueOf(r.tsMin))
                    .append(",\"produce_ts_max_ms\":").append(r.tsMax == Long.MIN_VALUE ? "null" : String.valueOf(r.tsMax))
                    .append("}\n");
            lines.append(b);
        }
        history.write(lines);
    }
}
