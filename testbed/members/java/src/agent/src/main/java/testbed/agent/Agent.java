package testbed.agent;

import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/** The JVM's instrumentation: its member, its history, its consumers, and how it fails. The agent must never be why a
 * program fails: whatever goes wrong in its own bookkeeping is printed to stderr as "testbed agent: ..." and written
 * to the history as an error with code INSTRUMENT_FAILED (once per place), and the program's call goes on. */
final class Agent {
    static final String FAILURE_CODE = "INSTRUMENT_FAILED";

    final AgentConfig config;
    final History history;
    final List<ConsumerState> consumers = new CopyOnWriteArrayList<>();
    /** A Kafka Streams instance's `started` is written (by its first main consumer's subscribe: one per JVM, whatever
     * its number of stream threads) / its `stopped` (when KafkaStreams.close() returned). */
    volatile boolean streamsStarted;
    volatile boolean streamsStopped;
    private final Set<String> reported = Collections.synchronizedSet(new HashSet<>());

    Agent(AgentConfig config) {
        this.config = config;
        this.history = new History(config.historyPath, config.memberId);
    }

    static void say(String message) {
        System.err.println("testbed agent: " + message);
        System.err.flush();
    }

    void failed(String where, Throwable t) {
        if (!reported.add(where)) {
            return;
        }
        String message = where + " failed: " + t.getClass().getSimpleName() + ": " + t.getMessage();
        say(message);
        try {
            history.error(FAILURE_CODE, message, false);
        } catch (Throwable w) {
            say("could not write to " + history.path + ": " + w);
        }
    }

    /** The JVM shuts down: the processed runs still open are written. Recording goes on (the program's own shutdown
     * hook may close its consumer after this one ran: its revoke and stop are recorded as they come). */
    void atExit() {
        for (ConsumerState st : consumers) {
            st.atExit();
        }
    }
}
