// The main consumer of a Kafka Streams instance on the streams protocol (KIP-1071), watched after each poll as
// TestbedStreamsApp.WatchedConsumer watches the classic one: Streams builds that consumer itself and hands it to
// the wrapper its internal config __internal.consumer.wrapper__ names (kafka-streams 4.1 and later).
import java.time.Duration;

import org.apache.kafka.clients.consumer.ConsumerRecords;
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
}
