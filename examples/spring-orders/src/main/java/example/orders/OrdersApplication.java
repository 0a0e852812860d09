package example.orders;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import jakarta.annotation.PreDestroy;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/** An orders service: each order event is written to the orders store (SQLite over JDBC), and the listener container
 * commits the offsets after the listener returned (AckMode BATCH).
 *
 * orders.write picks how: "record" (an insert per order before the listener returns), or "executor" (the bug: the
 * listener hands each order to a background writer that flushes every 30 s and returns at once, so the container
 * commits orders that are not written yet, and a crash loses them; a clean stop flushes, so only a crash shows it). */
@SpringBootApplication
public class OrdersApplication {
    public static void main(String[] args) {
        SpringApplication.run(OrdersApplication.class, args);
    }
}

@Component
class OrdersListener {
    private static final Logger LOG = LoggerFactory.getLogger(OrdersListener.class);
    private static final String INSERT = "INSERT INTO orders (topic, partition, offset, body) VALUES (?, ?, ?, ?)";

    private final JdbcTemplate jdbc;
    private final String write;
    private final List<Object[]> buffered = new ArrayList<>();
    private final ScheduledExecutorService writer = Executors.newSingleThreadScheduledExecutor();

    OrdersListener(JdbcTemplate jdbc, @Value("${orders.write:record}") String write) {
        this.jdbc = jdbc;
        this.write = write;
        jdbc.execute("CREATE TABLE IF NOT EXISTS orders (topic TEXT, partition INTEGER, offset INTEGER, body TEXT)");
        if (write.equals("executor")) {
            writer.scheduleWithFixedDelay(this::flush, 30, 30, TimeUnit.SECONDS);
        }
        LOG.info("orders service started, write={}", write);
    }

    @KafkaListener(topics = "${orders.topic}")
    void onOrder(ConsumerRecord<String, String> order) {
        Object[] row = {order.topic(), order.partition(), order.offset(), order.value()};
        if (write.equals("executor")) {
            synchronized (buffered) {
                buffered.add(row); // the bug: written later, committed now
            }
            return;
        }
        jdbc.update(INSERT, row);
    }

    private void flush() {
        List<Object[]> rows;
        synchronized (buffered) {
            rows = new ArrayList<>(buffered);
            buffered.clear();
        }
        if (!rows.isEmpty()) {
            jdbc.batchUpdate(INSERT, rows);
        }
    }

    @PreDestroy
    void stop() {
        writer.shutdown();
        flush(); // a clean stop writes what it holds: only a crash shows the bug
    }
}
