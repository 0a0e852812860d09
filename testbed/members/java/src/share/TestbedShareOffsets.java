// The share-partition start offsets of one share group (KIP-932), as the share coordinator persisted them: every
// offset below a partition's start offset is in a terminal state (acknowledged, or archived). Admin's
// listShareGroupOffsets (kafka-clients 4.1 and later; `kafka-share-groups --describe --offsets` shows the same).
//
// Compiled with TestbedShareMember.java (its JSON quoting). Arguments: <bootstrap servers> <group id> <timeout ms>
// Prints one JSON line: {"group_id": ..., "offsets": [{"topic": ..., "partition": ..., "start_offset": n|null}]}.
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

public class TestbedShareOffsets {
    public static void main(String[] args) throws Exception {
        String group = args[1];
        long timeoutMs = Long.parseLong(args[2]);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeoutMs);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.min(timeoutMs, 10_000));
        try (Admin admin = Admin.create(props)) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin
                    .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                    .partitionsToOffsetAndMetadata(group).get(timeoutMs, TimeUnit.MILLISECONDS);
            List<String> items = new ArrayList<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                items.add("{\"topic\":" + TestbedShareMember.quote(e.getKey().topic()) + ",\"partition\":" + e.getKey().partition()
                        + ",\"start_offset\":" + (e.getValue() == null ? "null" : Long.toString(e.getValue().offset()))
                        + "}");
            }
            System.out.println("{\"group_id\":" + TestbedShareMember.quote(group) + ",\"offsets\":[" + String.join(",", items) + "]}");
        }
    }
}
