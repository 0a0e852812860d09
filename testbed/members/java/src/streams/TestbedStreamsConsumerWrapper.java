// The main consumer of a Kafka Streams instance on the streams protocol (KIP-1071), watched after each poll as
// TestbedStreamsApp.WatchedConsumer watches the classic one: Streams builds that consumer itself and hands it to
// the wrapper its internal config __internal.consumer.wrapper__ names. Compiled for kafka-streams 4.2 and later,
// where the streams protocol runs (in 4.1 the wrapper exists but StreamsRebalanceListener's methods return
// Optional<Exception>). A lost-all (onAllTasksLost: the member fenced) and an unsubscribe() while the instance runs
// (StreamThread.handleTaskMigrated: its EOS producer fenced) are written as lost, after Streams closed the tasks.
// Its close(...) (StreamThread.completeShutdown, after every task closed; the member leaves the group inside it) and
// an unsubscribe() while the instance shuts down write revoked for what it owned, before delegating
// (TestbedStreamsApp.leaving).
import java.time.Duration;
import java.util.Collection;
import java.util.Set;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.internals.StreamsRebalanceData;
import org.apache.kafka.clients.consumer.internals.StreamsRebalanceListener;
import org.apache.kafka.streams.internals.ConsumerWrapper;

public class TestbedStreamsConsumerWrapper extends ConsumerWrapper {
    @Override
    public ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
        try {
            return super.poll(timeout);
        } finally {
            TestbedStreamsApp.watch(this, assignment());
        }
    }

    /** Streams' listener (DefaultStreamsRebalanceListener), its onAllTasksLost followed by the lost line. */
    @Override
    public void subscribe(Collection<String> topics, StreamsRebalanceListener listener) {
        super.subscribe(topics, new StreamsRebalanceListener() {
            @Override
            public void onTasksRevoked(Set<StreamsRebalanceData.TaskId> tasks) {
                listener.onTasksRevoked(tasks);
            }

            @Override
            public void onTasksAssigned(StreamsRebalanceData.Assignment assignment) {
                listener.onTasksAssigned(assignment);
            }

            @Override
            public void onAllTasksLost() {
                String id = TestbedStreamsApp.memberId(TestbedStreamsConsumerWrapper.this);
                try {
                    listener.onAllTasksLost();
                } finally {
                    TestbedStreamsApp.lost(TestbedStreamsConsumerWrapper.this, id);
                }
            }
        });
    }

    @Override
    public void unsubscribe() {
        TestbedStreamsApp.unsubscribed(this, super::unsubscribe);
    }

    // ConsumerWrapper's three closes each call the delegate's own (none through another): all three watched.
    @Override
    public void close() {
        TestbedStreamsApp.leaving(this, super::close);
    }

    @SuppressWarnings("deprecation")
    @Override
    public void close(Duration timeout) {
        TestbedStreamsApp.leaving(this, () -> super.close(timeout));
    }

    @Override
    public void close(CloseOptions option) {
        TestbedStreamsApp.leaving(this, () -> super.close(option));
    }
}
