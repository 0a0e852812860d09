// The classic protocol's main consumer of testbed's Kafka Streams application from kafka-clients 4.1 on:
// TestbedStreamsApp.WatchedConsumer with close(CloseOptions) (kafka-clients 4.1+), the close
// StreamThread.completeShutdown calls from kafka-streams 4.2 on (before: unsubscribe() when leaving, then close()),
// revoking what the consumer owned before it leaves (TestbedStreamsApp.leaving). The application's client supplier
// builds this class where it was compiled, else WatchedConsumer (kafka-clients 3.9 and 4.0).
import java.util.Map;

import org.apache.kafka.clients.consumer.CloseOptions;

public class TestbedClassicConsumer extends TestbedStreamsApp.WatchedConsumer {
    public TestbedClassicConsumer(Map<String, Object> config) {
        super(config);
    }

    @Override
    public void close(CloseOptions option) {
        TestbedStreamsApp.leaving(this, () -> super.close(option));
    }
}
