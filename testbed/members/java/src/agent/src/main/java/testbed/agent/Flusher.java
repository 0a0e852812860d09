package testbed.agent;

import java.util.IdentityHashMap;
import java.util.Map;

/** A daemon thread that writes a consumer's processed runs once their window is over, whatever the program is doing
 * (blocked in a long poll, or in its own work), as testbed.instrument.flusher does: a SIGKILL then loses at most the
 * records of the last window. */
final class Flusher implements Runnable {
    static final Flusher FLUSHER = new Flusher();

    private final Map<ConsumerState, Long> due = new IdentityHashMap<>();
    private Thread thread;

    /** Called under the consumer's lock, with the time its oldest open run is due. */
    synchronized void due(ConsumerState st, long dueNs) {
        Long known = due.get(st);
        if (known != null && known <= dueNs) {
            return;
        }
        due.put(st, dueNs);
        if (thread == null) {
            thread = new Thread(this, "testbed-agent-flusher");
            thread.setDaemon(true);
            thread.start();
        }
        notifyAll();
    }

    private synchronized ConsumerState[] ready() throws InterruptedException {
        while (true) {
            long now = System.nanoTime();
            long earliest = Long.MAX_VALUE;
            java.util.List<ConsumerState> out = new java.util.ArrayList<>();
            for (Map.Entry<ConsumerState, Long> e : due.entrySet()) {
                if (e.getValue() <= now) {
                    out.add(e.getKey());
                } else {
                    earliest = Math.min(earliest, e.getValue());
                }
            }
            if (!out.isEmpty()) {
                for (ConsumerState st : out) {
                    due.remove(st);
                }
                return out.toArray(new ConsumerState[0]);
            }
            if (earliest == Long.MAX_VALUE) {
                wait();
            } else {
                long ns = earliest - now;
                wait(Math.max(1L, ns / 1_000_000L), 0);
            }
        }
    }

    @Override
    public void run() {
        while (true) {
            ConsumerState[] ready;
            try {
                ready = ready();
            } catch (InterruptedException e) {
                return;
            }
            for (ConsumerState st : ready) {
                st.flushDue();
            }
        }
    }
}
